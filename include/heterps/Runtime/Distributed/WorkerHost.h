//===- WorkerHost.h - a stage replica's process -----------------*- C++ -*-===//
//
// The gRPC side of a worker process: the coordinator's RunStep, Abort,
// Weights, Heartbeat, Reset and Shutdown calls, and the streams on which
// neighbouring replicas deliver activations and gradients (into a Mailbox that
// exists from the start, so a neighbour may send before this process is ready).
// Its StageLinks is the trainer's StageExchange: values for a replica in
// this process stay in the mailbox, the others go out on a stream to that
// replica's process.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_RUNTIME_DISTRIBUTED_WORKERHOST_H
#define HETERPS_RUNTIME_DISTRIBUTED_WORKERHOST_H

#include "heterps/Runtime/Distributed/GrpcTransport.h"
#include "heterps/Runtime/Distributed/Roles.h"
#include "heterps/Runtime/Distributed/Security.h"
#include "heterps/Runtime/Distributed/Services.pb.h"
#include "heterps/Runtime/PipelineTrain/PipelineTrainer.h"

namespace heterps::runtime::distributed {

class WorkerHost {
public:
  /// Listens on `address`; RunStep calls wait until attach().
  static llvm::Expected<std::unique_ptr<WorkerHost>>
  start(const std::string &address, SecurityOptions security);
  ~WorkerHost();

  int port() const;
  /// The exchange for this process's replicas `local`, reaching the others
  /// at the addresses of `map`; `replicas` per stage. `server` is the
  /// trainer's parameter server: an Abort cancels its calls, a Reset
  /// (after a failure) moves it to the new epoch and addresses. Stops the
  /// process when the coordinator's heartbeats stop for
  /// `heartbeatTimeout`.
  pipeline::StageExchange &links(const RegisterResponse &map,
                                 std::vector<pipeline::ReplicaId> local,
                                 std::vector<int> replicas,
                                 GrpcTransport &server,
                                 std::chrono::milliseconds heartbeatTimeout);
  /// Its parts of the job's checkpoints go to `dir` (before attach).
  void setCheckpointDir(std::string dir);
  /// Steps may run (the trainer outlives this host).
  void attach(pipeline::PipelineTrainer &trainer);
  /// Blocks until the coordinator's Shutdown, SIGTERM or SIGINT (which the
  /// caller blocked before starting any thread: see blockStopSignals);
  /// which of them, or the failure that stopped it.
  StopReason waitForShutdown();
  /// Ends the step that may still run and stops serving: before the
  /// trainer it drives goes away.
  void stop();

private:
  struct Impl;
  explicit WorkerHost(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl;
};

} // namespace heterps::runtime::distributed

#endif // HETERPS_RUNTIME_DISTRIBUTED_WORKERHOST_H
