//===- Distributed.h - heterps-run's processes of a distributed job -*- C++
//-*-===//
//
// The flags that make a training run a distributed job:
//  * --distributed=local runs the whole job as processes on this host:
//    this one coordinates, the others (parameter-server shards, one worker
//    per stage replica) are forked from it;
//  * --coordinator=HOST:PORT with a rank (--rank, or a launcher's
//    environment) makes this process one rank of a job started on several
//    hosts with the same command line;
//  * --ps=local|HOST:PORT,... keeps the stages here and puts only the
//    parameter server in other processes;
//  * --role=ps runs a parameter-server shard for --ps=HOST:PORT,....
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_TOOLS_HETERPS_RUN_DISTRIBUTED_H
#define HETERPS_TOOLS_HETERPS_RUN_DISTRIBUTED_H

#include "heterps/Runtime/Distributed/Roles.h"
#include "heterps/Runtime/PipelineTrain/PipelineTrainer.h"

#include "llvm/Support/CommandLine.h"

#include <functional>

namespace heterps::tools {

llvm::cl::OptionCategory &distributedCategory();

/// Whether --role was given, and running it (an exit code).
bool roleRequested();
int runRole();

/// Whether this run is one process of a distributed job (--distributed or
/// --coordinator), and which.
bool distributedRequested();
llvm::Expected<runtime::distributed::Role>
distributedRole(const runtime::distributed::JobShape &shape);

/// Whether this process starts a whole job on this host (--distributed=local),
/// or is one rank of a job whose ranks are started by a launcher
/// (--coordinator).
bool launchesLocalJob();
bool ranksStartedElsewhere();

/// This process's arguments (argv[0] left out), less every option named in
/// `withValue` ("--x=v" or "--x v") and in `flags` ("--x", "--x=true").
llvm::Expected<std::vector<std::string>>
ownArgumentsWithout(llvm::ArrayRef<llvm::StringRef> withValue,
                    llvm::ArrayRef<llvm::StringRef> flags);

/// A local job's children place the model by `placementFile` (the launcher's
/// choice, as hps-place save= writes it) instead of searching again as the
/// command line's --strategy says: a search bounded by wall-clock time (rl)
/// or by measured steps (tapp) need not find the same plan twice, and the
/// coordinator refuses ranks whose plan differs from its own.
void placeChildrenBy(std::string placementFile);

/// Whether this process is a rank of a job other than its coordinator
/// (which alone reads data and writes reports, models and checkpoints).
bool helperRank();

/// A parameter-server rank; the exit code.
int runPSRank(const runtime::distributed::Role &role,
              const runtime::distributed::JobShape &shape);

/// Makes a worker's trainer from the server and stage links it is given.
using WorkerTrainerFactory = std::function<llvm::Expected<
    std::unique_ptr<runtime::pipeline::PipelineTrainer>>(
    runtime::ps::Transport &server, runtime::pipeline::StageExchange &links)>;
/// A worker rank: registers, makes its trainer, serves the coordinator's
/// steps until it says stop; the exit code.
int runWorkerRank(const runtime::distributed::Role &role,
                  const runtime::distributed::JobShape &shape,
                  const std::string &job, const WorkerTrainerFactory &make);

/// The other processes of a job this process drives.
class JobProcesses {
public:
  virtual ~JobProcesses();
  /// The parameter server's shards.
  virtual runtime::ps::Transport &server() = 0;
  /// The stage replicas' processes; null when the stages run here (--ps).
  virtual runtime::pipeline::ReplicaRunner *runner() = 0;
  /// What brings the job back when one of its processes dies; null when
  /// none does (--ps).
  virtual runtime::pipeline::JobRecovery *recovery() { return nullptr; }
  /// What has the job's processes write their own parts of checkpoints;
  /// null when the trainer gathers them (--ps).
  virtual runtime::pipeline::CheckpointStore *checkpoints() { return nullptr; }
  /// The trainer exists and has made its tables: the job's processes go.
  virtual void started() = 0;
  /// Training is over or failed: the processes stop.
  virtual void finish() = 0;
};

/// --max-restarts.
int maxRestarts();

/// Whether --ps was given.
bool remoteServerRequested();
/// --ps: the parameter server's `shards` processes, started or reached.
llvm::Expected<std::unique_ptr<JobProcesses>> startRemoteServer(int shards);
/// The coordinator of a --distributed or --coordinator job: starts the
/// local processes (before any gRPC state exists here), waits for every
/// rank to register with `job`, and reaches them.
llvm::Expected<std::unique_ptr<JobProcesses>>
startJob(const runtime::distributed::JobShape &shape, const std::string &job);

} // namespace heterps::tools

#endif // HETERPS_TOOLS_HETERPS_RUN_DISTRIBUTED_H
