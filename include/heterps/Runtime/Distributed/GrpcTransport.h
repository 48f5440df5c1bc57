//===- GrpcTransport.h - the parameter server over gRPC ---------*- C++ -*-===//
//
// A ps::Transport whose shards are servers (PSServer) in other processes or
// on other hosts: shard i is the server at address i. Each call carries the
// job token and the job's epoch (a server refuses calls of an epoch it has
// fenced out), and has a deadline; a lost connection or a passed deadline
// is a TransientError, which the client retries (a push is applied at most
// once). With TLS the channel is mutual TLS. Messages may be as large
// as kMaxMessageBytes, set on both sides on purpose: a dense shard's range
// travels in one message, and gRPC's 4 MiB default would refuse a 16 MB
// table.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_RUNTIME_DISTRIBUTED_GRPCTRANSPORT_H
#define HETERPS_RUNTIME_DISTRIBUTED_GRPCTRANSPORT_H

#include "heterps/Runtime/Distributed/Security.h"
#include "heterps/Runtime/PS/Client.h"

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>

namespace heterps::runtime::distributed {

/// 1 GiB: below Protobuf's 2 GiB limit on one message.
inline constexpr int kMaxMessageBytes = 1 << 30;

class GrpcTransport : public ps::Transport {
public:
  /// Channels to every shard's server, each reached within `timeout`; an
  /// error names the first address that cannot be reached, or an address
  /// listed twice.
  static llvm::Expected<std::unique_ptr<GrpcTransport>>
  connect(const std::vector<std::string> &addresses, SecurityOptions security,
          std::chrono::milliseconds timeout = std::chrono::seconds(10));
  ~GrpcTransport() override;

  llvm::Error call(const ps::Request &request, ps::Response &response) override;
  /// All in flight at once.
  llvm::Error callMany(llvm::ArrayRef<ps::Request> requests,
                       llvm::MutableArrayRef<ps::Response> responses) override;
  /// A range comes in 8 pieces or so, of 256 KB to 4 MB, all in flight:
  /// one large response waits on HTTP/2 flow control, pieces overlap.
  int64_t pieceBytes(int64_t rangeBytes) const override;
  int numServers() const;
  /// Tells every shard's process to exit (the job is over).
  void shutdownServers();

  /// Each attempt's deadline, and how long a call is retried.
  void setCallTimeout(std::chrono::milliseconds timeout);
  std::chrono::milliseconds retryFor() const override;

  /// The epoch later calls carry (the job's incarnation).
  void setEpoch(int64_t epoch);
  /// Cancels the calls in flight and fails later ones at once, until
  /// setEpoch (a step given up: nothing must wait on a dead peer).
  void abortCalls();
  /// Shard i's server is now at `addresses[i]` (a shard restarted
  /// elsewhere); channels to unchanged addresses are kept.
  void redirect(const std::vector<std::string> &addresses);

private:
  struct Shard;
  struct Call;
  GrpcTransport();
  std::shared_ptr<Shard> shard(int index) const;
  /// Registers a call's context (so abortCalls can cancel it), or an
  /// error when calls are aborted.
  llvm::Error begin(grpc::ClientContext &context);
  void end(grpc::ClientContext &context);
  static std::shared_ptr<Shard> open(const std::string &address,
                                     const SecurityOptions &security);

  SecurityOptions security;
  mutable std::mutex mutex;
  std::vector<std::string> addresses;
  std::vector<std::shared_ptr<Shard>> shards;
  std::set<grpc::ClientContext *> inFlight;
  bool aborted = false;
  std::atomic<int64_t> currentEpoch{0};
  std::atomic<int64_t> callTimeoutMs{120000};
};

/// The metadata key of a call's epoch.
inline constexpr const char *kEpochKey = "x-heterps-epoch";
/// The epoch a call carries (0, the first, if it names none).
int64_t callEpoch(const grpc::ServerContext &context);

/// "HOST:PORT,HOST:PORT,..." split and checked: each has a host and a port
/// in 1..65535, and none repeats.
llvm::Expected<std::vector<std::string>> parseAddresses(llvm::StringRef list);

} // namespace heterps::runtime::distributed

#endif // HETERPS_RUNTIME_DISTRIBUTED_GRPCTRANSPORT_H
