//===- Supervisor.h - a distributed job brought back after failures -*- C++
//-*-===//
//
// The coordinator's side of failure handling. It watches every process of
// the job (HeartbeatMonitor); when one dies, the step in flight ends at
// once (RemoteReplicas::interrupt, the server calls cancelled). Then, as
// the trainer's JobRecovery:
//  1. the dead processes are restarted (by the local launcher, or on a
//     cluster by its scheduler) and register again;
//  2. the job moves to a new epoch: every shard is fenced (a process given
//     up for dead that wakes later is refused), the replaced shards get
//     their tables again, every worker is reset to the new epoch and the
//     new addresses;
//  3. the training loop restores the last checkpoint everywhere and goes
//     on from there.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_RUNTIME_DISTRIBUTED_SUPERVISOR_H
#define HETERPS_RUNTIME_DISTRIBUTED_SUPERVISOR_H

#include "heterps/Runtime/Distributed/Coordinator.h"
#include "heterps/Runtime/Distributed/GrpcTransport.h"
#include "heterps/Runtime/Distributed/Heartbeats.h"
#include "heterps/Runtime/Distributed/RemoteReplicas.h"

namespace heterps::runtime::distributed {

struct SupervisorOptions {
  JobShape shape;
  SecurityOptions security;
  /// A process silent this long is dead (and one that exited at once).
  std::chrono::milliseconds heartbeatTimeout = kDefaultHeartbeatTimeout;
  /// How long replacements have to register.
  std::chrono::milliseconds rejoinTimeout = std::chrono::seconds(120);
  /// Restarts rank `rank`'s process (the local launcher); null on a
  /// cluster, whose scheduler restarts it.
  std::function<llvm::Error(int rank)> restart;
  /// Called about once a second: the launcher reports the local children
  /// that exited (Supervisor::declareDead), and an error while waiting
  /// for replacements (one that exited again).
  std::function<void()> probe;
  std::function<llvm::Error()> check;
};

class Supervisor : public pipeline::JobRecovery,
                   public pipeline::CheckpointStore {
public:
  /// Starts watching the processes of `map`.
  Supervisor(Coordinator &coordinator, GrpcTransport &server,
             RemoteReplicas &workers, const RegisterResponse &map,
             SupervisorOptions options);
  ~Supervisor() override;

  llvm::Error recover(const std::string &failure,
                      const std::function<llvm::Error(const std::vector<int> &)>
                          &remakeTables) override;
  /// The process of `rank` is gone (it exited).
  void declareDead(int rank, const std::string &why);

  llvm::Expected<std::vector<train::Trainer::Part>> save(int64_t step) override;
  llvm::Error load(int64_t step,
                   const std::vector<train::Trainer::Part> &parts) override;

private:
  void watch(const RegisterResponse &map);
  /// Calls `call` for every process of the job at once (rank 1 on), each
  /// with its role and address; the first failure, naming the process.
  llvm::Error forEachProcess(
      const std::function<llvm::Error(const Role &, const std::string &address)>
          &call);

  /// Where the processes are now, and the job's epoch.
  RegisterResponse current;

  Coordinator &coordinator;
  GrpcTransport &server;
  RemoteReplicas &workers;
  SupervisorOptions options;
  std::unique_ptr<HeartbeatMonitor> monitor;
};

} // namespace heterps::runtime::distributed

#endif // HETERPS_RUNTIME_DISTRIBUTED_SUPERVISOR_H
