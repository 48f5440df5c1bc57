//===- Security.h - who may talk to a job's servers -------------*- C++ -*-===//
//
// Every server of a distributed job checks two things on every call:
//  * the job token, a secret shared by the job's processes, sent as call
//    metadata; a call without it, or with another, is refused and logged
//    before it reads or changes anything;
//  * with TLS, the peer's certificate: mutual TLS, both sides presenting a
//    certificate that the job's CA signed.
// Servers listen on loopback unless told otherwise, and a server on any
// other address needs TLS: the token must not cross a network in clear.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_RUNTIME_DISTRIBUTED_SECURITY_H
#define HETERPS_RUNTIME_DISTRIBUTED_SECURITY_H

#include "llvm/Support/Error.h"

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace grpc {
class ChannelArguments;
class ChannelCredentials;
class ServerCredentials;
class ServerContext;
class ClientContext;
} // namespace grpc

namespace heterps::runtime::distributed {

/// The environment variable a job token may come from.
inline constexpr const char *kTokenEnv = "HETERPS_JOB_TOKEN";

struct SecurityOptions {
  /// PEM files: the CA that signs the job's certificates, and this
  /// process's certificate and key. All three or none.
  std::string caFile, certFile, keyFile;
  /// The job token (never empty once loaded).
  std::string token;

  bool tls() const { return !caFile.empty(); }
};

/// Options from the flags' values: the token from `tokenFile` if given,
/// else from $HETERPS_JOB_TOKEN; an error when there is none, when it is
/// shorter than 16 bytes, or when the TLS files are partly given or cannot
/// be read.
llvm::Expected<SecurityOptions> loadSecurity(const std::string &caFile,
                                             const std::string &certFile,
                                             const std::string &keyFile,
                                             const std::string &tokenFile);

/// A fresh random token (64 hex digits) for a job launched here.
std::string newJobToken();

/// An error unless a server may listen on `address` (HOST:PORT) with
/// these options: loopback always; any other host only with TLS.
llvm::Error checkListenAddress(const std::string &address,
                               const SecurityOptions &security);

std::shared_ptr<grpc::ServerCredentials>
serverCredentials(const SecurityOptions &security);
std::shared_ptr<grpc::ChannelCredentials>
channelCredentials(const SecurityOptions &security);

/// Silences gRPC's own logging unless $GRPC_VERBOSITY is set: errors are
/// reported as this project's one line each. Called by every server and
/// channel setup.
void quietGrpcLog();

/// The arguments of every channel of a job: message limits
/// (kMaxMessageBytes) and reconnection backoff.
grpc::ChannelArguments channelArguments();
/// Channel arguments for large transfers, on clients and servers alike.
std::vector<std::pair<const char *, int>> transferTuning();

/// Adds the token to an outgoing call.
void attachToken(grpc::ClientContext &context, const SecurityOptions &security);
/// A unary call's start: the job's token, and its deadline `within` from
/// now (every call has one: a peer that never answers must not hold a
/// caller forever).
void startCall(grpc::ClientContext &context, const SecurityOptions &security,
               std::chrono::milliseconds within);
/// Empty when the call carries the job's token, else why it is refused.
std::string checkToken(const grpc::ServerContext &context,
                       const SecurityOptions &security);

} // namespace heterps::runtime::distributed

#endif // HETERPS_RUNTIME_DISTRIBUTED_SECURITY_H
