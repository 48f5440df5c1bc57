//===- PSServer.h - a parameter-server shard behind gRPC --------*- C++ -*-===//
//
// Serves one ParameterServer (holding some of a job's shards) to the job's
// processes. Every call is checked against the job token before the server
// sees it; a refused call is logged with its peer, at most once a second
// per reason.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_RUNTIME_DISTRIBUTED_PSSERVER_H
#define HETERPS_RUNTIME_DISTRIBUTED_PSSERVER_H

#include "heterps/Runtime/Distributed/Heartbeats.h"
#include "heterps/Runtime/Distributed/Security.h"
#include "heterps/Runtime/PS/ParameterServer.h"

#include "llvm/Support/raw_ostream.h"

#include <chrono>

namespace heterps::runtime::distributed {

class PSServer {
public:
  /// Listens on `address` (HOST:PORT; port 0 picks a free one) for calls to
  /// `server`, which must outlive this. Refusals are logged to `log`.
  static llvm::Expected<std::unique_ptr<PSServer>>
  start(ps::ParameterServer &server, const std::string &address,
        SecurityOptions security, llvm::raw_ostream &log = llvm::errs());
  /// Stops listening and finishes the calls in flight.
  ~PSServer();

  /// The port it listens on.
  int port() const { return boundPort; }
  /// Calls refused so far (no token, a wrong token, fenced out).
  int64_t refusedCalls() const;
  /// Heartbeats go to `watchdog` (null: nowhere).
  void setWatchdog(Watchdog *watchdog);
  /// Its part of a job's checkpoints is shard `shard`, in `dir` (before
  /// any call).
  void setCheckpointDir(std::string dir, int shard);

private:
  struct Impl;
  explicit PSServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl;
  int boundPort = 0;
};

struct PSShardOptions {
  int shard = 0, shards = 1;
  /// HOST:PORT to listen on (port 0: a free one).
  std::string listen = "127.0.0.1:0";
  /// The host name others reach it by (advertisedAddress).
  std::string advertise;
  /// Write the bound port here once listening, when given.
  std::string portFile;
  /// Register with this coordinator, when given, waiting for it at most
  /// `timeout`.
  std::string coordinator;
  std::chrono::milliseconds timeout = std::chrono::seconds(60);
  /// Stop when the coordinator's heartbeats stop for this long.
  std::chrono::milliseconds heartbeatTimeout = kDefaultHeartbeatTimeout;
  /// Where the shard writes its parts of the job's checkpoints (the job's
  /// --checkpoint directory: on a cluster, one every host sees).
  std::string checkpointDir;
};

/// Runs a parameter-server process: shard `shard` of `shards`, until the
/// coordinator's Shutdown, SIGTERM or SIGINT.
llvm::Error runPSShard(const PSShardOptions &options,
                       const SecurityOptions &security);

} // namespace heterps::runtime::distributed

#endif // HETERPS_RUNTIME_DISTRIBUTED_PSSERVER_H
