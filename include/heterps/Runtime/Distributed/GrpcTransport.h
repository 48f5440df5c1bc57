//===- GrpcTransport.h - the parameter server over gRPC ---------*- C++ -*-===//
//
// A ps::Transport whose shards are servers (PSServer) in other processes or
// on other hosts: shard i is the server at address i. Each call carries the
// job token; with TLS the channel is mutual TLS. Messages may be as large
// as kMaxMessageBytes, set on both sides on purpose: a dense shard's range
// travels in one message, and gRPC's 4 MiB default would refuse a 16 MB
// table.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_RUNTIME_DISTRIBUTED_GRPCTRANSPORT_H
#define HETERPS_RUNTIME_DISTRIBUTED_GRPCTRANSPORT_H

#include "heterps/Runtime/Distributed/Security.h"
#include "heterps/Runtime/PS/Client.h"

#include <chrono>

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
  int numServers() const { return static_cast<int>(addresses.size()); }
  /// Tells every shard's process to exit (the job is over).
  void shutdownServers();

private:
  struct Shard;
  GrpcTransport() = default;

  std::vector<std::string> addresses;
  SecurityOptions security;
  std::vector<std::unique_ptr<Shard>> shards;
};

/// "HOST:PORT,HOST:PORT,..." split and checked: each has a host and a port
/// in 1..65535, and none repeats.
llvm::Expected<std::vector<std::string>> parseAddresses(llvm::StringRef list);

} // namespace heterps::runtime::distributed

#endif // HETERPS_RUNTIME_DISTRIBUTED_GRPCTRANSPORT_H
