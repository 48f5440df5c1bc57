//===- Security.cpp - TLS credentials and the job token -------------------===//

#include "heterps/Runtime/Distributed/Security.h"
#include "heterps/Runtime/Distributed/GrpcTransport.h"
#include "heterps/Support/PrintableLine.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/MemoryBuffer.h"

#include <grpc/support/log.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/security/server_credentials.h>

#include <cstdlib>
#include <mutex>
#include <random>

using namespace heterps::runtime;
using namespace heterps::runtime::distributed;

/// The metadata key that carries the token (lower case, as gRPC requires).
static constexpr const char *kTokenKey = "x-heterps-job-token";

/// Messages echo what peers sent: one printable line.
static llvm::Error securityError(const llvm::Twine &message) {
  return heterps::printableError(message);
}

static llvm::Expected<std::string> readFile(const std::string &path,
                                            const char *flag) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return securityError(llvm::Twine(flag) + " " + path + ": " +
                         buffer.getError().message());
  return (*buffer)->getBuffer().str();
}

llvm::Expected<SecurityOptions> distributed::loadSecurity(
    const std::string &caFile, const std::string &certFile,
    const std::string &keyFile, const std::string &tokenFile) {
  SecurityOptions out;
  int given = !caFile.empty() + !certFile.empty() + !keyFile.empty();
  if (given != 0 && given != 3)
    return securityError("TLS needs all of --tls-ca, --tls-cert and "
                         "--tls-key");
  if (given == 3) {
    // Read now, so that a bad path fails before anything starts.
    for (auto [path, flag] : {std::pair{&caFile, "--tls-ca"},
                              {&certFile, "--tls-cert"},
                              {&keyFile, "--tls-key"}}) {
      auto text = readFile(*path, flag);
      if (!text)
        return text.takeError();
      if (llvm::StringRef(*text).find("-----BEGIN") == llvm::StringRef::npos)
        return securityError(llvm::Twine(flag) + " " + *path +
                             ": not a PEM file");
    }
    out.caFile = caFile;
    out.certFile = certFile;
    out.keyFile = keyFile;
  }
  if (!tokenFile.empty()) {
    auto text = readFile(tokenFile, "--job-token-file");
    if (!text)
      return text.takeError();
    out.token = llvm::StringRef(*text).trim().str();
  } else if (const char *env = std::getenv(kTokenEnv)) {
    out.token = llvm::StringRef(env).trim().str();
  }
  if (out.token.empty())
    return securityError(llvm::Twine("a distributed job needs a job token: "
                                     "--job-token-file or $") +
                         kTokenEnv);
  if (out.token.size() < 16)
    return securityError("the job token is " + llvm::Twine(out.token.size()) +
                         " bytes; at least 16 are needed");
  for (char c : out.token)
    if (c < 0x21 || c > 0x7e)
      return securityError("the job token must be printable ASCII without "
                           "spaces");
  return out;
}

std::string distributed::newJobToken() {
  std::random_device device;
  std::string token;
  static const char digits[] = "0123456789abcdef";
  for (int i = 0; i < 64; ++i)
    token += digits[device() & 15];
  return token;
}

llvm::Error distributed::checkListenAddress(const std::string &address,
                                            const SecurityOptions &security) {
  llvm::StringRef host = llvm::StringRef(address).rsplit(':').first;
  if (host.consume_front("["))
    host.consume_back("]");
  bool loopback =
      host == "localhost" || host == "::1" || host.starts_with("127.");
  if (loopback || security.tls())
    return llvm::Error::success();
  return securityError("listening on " + address +
                       " (beyond loopback) needs TLS: --tls-ca, --tls-cert "
                       "and --tls-key");
}

/// The PEM text of a file loadSecurity has already read once.
static std::string pem(const std::string &path) {
  auto text = readFile(path, "pem");
  if (!text) {
    llvm::consumeError(text.takeError());
    return {};
  }
  return *text;
}

std::shared_ptr<grpc::ServerCredentials>
distributed::serverCredentials(const SecurityOptions &security) {
  quietGrpcLog();
  if (!security.tls())
    return grpc::InsecureServerCredentials();
  grpc::SslServerCredentialsOptions options(
      GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  options.pem_root_certs = pem(security.caFile);
  options.pem_key_cert_pairs.push_back(
      {pem(security.keyFile), pem(security.certFile)});
  return grpc::SslServerCredentials(options);
}

std::shared_ptr<grpc::ChannelCredentials>
distributed::channelCredentials(const SecurityOptions &security) {
  if (!security.tls())
    return grpc::InsecureChannelCredentials();
  grpc::SslCredentialsOptions options;
  options.pem_root_certs = pem(security.caFile);
  options.pem_private_key = pem(security.keyFile);
  options.pem_cert_chain = pem(security.certFile);
  return grpc::SslCredentials(options);
}

void distributed::quietGrpcLog() {
  static std::once_flag once;
  std::call_once(once, [] {
    // gRPC's own log lines (a refused handshake, a port in use) would come
    // beside the one line that says what failed; GRPC_VERBOSITY keeps them.
    if (!std::getenv("GRPC_VERBOSITY"))
      gpr_set_log_function([](gpr_log_func_args *) {});
  });
}

grpc::ChannelArguments distributed::channelArguments() {
  quietGrpcLog();
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(kMaxMessageBytes);
  args.SetMaxSendMessageSize(kMaxMessageBytes);
  // A job's processes start together: one that comes up a moment after
  // its peer tried to reach it is retried within 100 ms, not gRPC's 1 s.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  for (auto [name, value] : transferTuning())
    args.SetInt(name, value);
  return args;
}

std::vector<std::pair<const char *, int>> distributed::transferTuning() {
  // Tables and activations are megabytes: HTTP/2 frames, flow-control
  // windows and socket reads sized for them, not for small RPCs.
  return {{GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, 64 << 20},
          {GRPC_ARG_HTTP2_MAX_FRAME_SIZE, (16 << 20) - 1},
          {GRPC_ARG_HTTP2_WRITE_BUFFER_SIZE, 8 << 20},
          {GRPC_ARG_TCP_MAX_READ_CHUNK_SIZE, 8 << 20},
          {GRPC_ARG_TCP_READ_CHUNK_SIZE, 1 << 20}};
}

void distributed::attachToken(grpc::ClientContext &context,
                              const SecurityOptions &security) {
  if (!security.token.empty())
    context.AddMetadata(kTokenKey, security.token);
}

void distributed::startCall(grpc::ClientContext &context,
                            const SecurityOptions &security,
                            std::chrono::milliseconds within) {
  attachToken(context, security);
  context.set_deadline(std::chrono::system_clock::now() + within);
}

std::string distributed::checkToken(const grpc::ServerContext &context,
                                    const SecurityOptions &security) {
  const auto &metadata = context.client_metadata();
  auto it = metadata.find(kTokenKey);
  if (it == metadata.end())
    return "no job token";
  llvm::StringRef given(it->second.data(), it->second.size());
  // Compared in time independent of where the strings differ.
  unsigned char diff = given.size() != security.token.size();
  for (size_t i = 0; i < security.token.size(); ++i)
    diff |= static_cast<unsigned char>(security.token[i] ^
                                       (i < given.size() ? given[i] : 0));
  return diff ? "a wrong job token" : "";
}
