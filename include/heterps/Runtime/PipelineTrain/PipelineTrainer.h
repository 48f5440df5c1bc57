//===- PipelineTrainer.h - pipelined training through the PS ----*- C++ -*-===//
//
// The HeterPS runtime for training: the plan's stages (Op::stage) run as a
// pipeline, stage s on k_s replicas (worker threads, or worker processes of
// a distributed job: see PipelineTrainerOptions::runner), its trainable
// parameters in dense tables of a parameter server (in this process, or
// shards in others: PipelineTrainerOptions::remoteServer).
//
// One step on a batch of B samples:
//  1. every replica pulls its stage's parameters (under BSP, the version
//     the previous step produced);
//  2. the batch is cut into m micro-batches (sizes differ by at most one);
//     micro-batch j goes to replica j % k_s of each stage, and each replica
//     runs its forwards and backwards in the schedule's order (GPipe or
//     1F1B, Schedule.h), passing activations forward and their gradients
//     back to the neighbouring stages' replicas;
//  3. each replica sums its micro-batches' parameter gradients, each
//     weighted by b_j / B so the sum over all micro-batches is the
//     full-batch gradient, and pushes k_s times that sum: the server's BSP
//     mean over the k_s replicas is then the full-batch gradient, and the
//     optimizer at the server makes the same update single-stage training
//     would (equal up to the order of float additions). Under ASP every
//     replica's push (the mean gradient of its samples) is applied as it
//     arrives.
//
// A replica holds the forward state of a micro-batch (its activations and
// what its kernels keep for the backward) from its forward to its
// backward, in one of as many kernel sets as the schedule has micro-batches
// in flight there: m under GPipe, at most p - s under 1F1B.
//
// Sparse tables: a Gather table (see gatherTables) left out of the weights
// given to create() lives in a sparse PS table. Its rows start uniform in
// [-sparseInitScale, sparseInitScale) from the seed and the row id (the
// model's values are never read), a replica pulls the rows its
// micro-batch's ids touch and pushes their gradients, and the server
// applies sparseOptimizer (Adagrad by default) to those rows only: memory
// grows with the rows training touches, not with the table.
//
// Dropout masks depend on the seed, the op, the step and the micro-batch,
// not on the replica that draws them. Batch norm statistics are those of
// each micro-batch, and running statistics are kept per replica (replica
// 0's are reported), so a plan with batch norms is not equivalent to
// full-batch training.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_RUNTIME_PIPELINETRAIN_PIPELINETRAINER_H
#define HETERPS_RUNTIME_PIPELINETRAIN_PIPELINETRAINER_H

#include "heterps/Runtime/PS/Client.h"
#include "heterps/Runtime/PipelineTrain/Schedule.h"
#include "heterps/Runtime/PipelineTrain/StageExchange.h"
#include "heterps/Runtime/PipelineTrain/Trace.h"
#include "heterps/Runtime/Train/Trainer.h"

#include <functional>
#include <set>

namespace heterps::runtime::pipeline {

class ReplicaRunner;
class JobRecovery;
class CheckpointStore;

/// Which replica of which stage.
struct ReplicaId {
  int stage = 0, replica = 0;
  bool operator==(const ReplicaId &o) const {
    return stage == o.stage && replica == o.replica;
  }
};

struct PipelineTrainerOptions {
  /// The settings a pipelined trainer shares with a single-stage one
  /// (threads, seed, emulation, loss, optimizer, frozen weights); the rest
  /// at their defaults.
  static PipelineTrainerOptions from(const train::TrainerOptions &trainer);

  ScheduleKind schedule = ScheduleKind::GPipe;
  /// Micro-batches per step (m); a batch must have at least m samples.
  int microBatches = 1;
  /// Replicas per stage; empty: the plan's (Stage::replicas, at least 1).
  /// Each is a thread with its own copy of the stage: kMaxReplicas in all.
  std::vector<int> replicas;
  static constexpr int kMaxReplicas = 256;
  ps::Consistency consistency = ps::Consistency::BSP;
  int serverShards = 2;
  /// Threads per replica's kernels; 0: the machine's cores shared out
  /// among all replicas (at least 1 each), so that the stages do not
  /// oversubscribe the cores.
  int numThreads = 1;
  uint64_t seed = 1;
  /// Train ops placed on device kinds no backend serves on the emulated
  /// device (DeviceOptions::emulateMissingDevices).
  bool emulateMissingDevices = false;
  train::LossKind loss = train::LossKind::SoftmaxCrossEntropy;
  /// Applied at the parameter server.
  train::OptimizerOptions optimizer;
  /// Initializer names whose values stay fixed.
  std::vector<std::string> frozen;
  /// Sparse tables: their optimizer at the server and initial range.
  ps::SparseOptimizerOptions sparseOptimizer;
  float sparseInitScale = 0.01f;
  /// Records every task and PS call when set (outlives the trainer).
  TraceRecorder *trace = nullptr;
  /// The parameter server's shards in other processes (a GrpcTransport,
  /// which outlives the trainer); null: a server in this process. The
  /// trainer configures them and creates its tables there; checkpoints
  /// need the server in this process.
  ps::Transport *remoteServer = nullptr;
  /// Names the job on the servers (ServerConfig.job): a hash of the plan
  /// and the options that change what training computes.
  std::string job;

  /// Where the replicas run, when not all as threads of this trainer:
  ///  * a coordinator sets `runner`: every replica is in another process,
  ///    step() hands the step to the runner;
  ///  * a worker process sets `localReplicas` (its own replicas) and
  ///    `exchange` (which reaches the others); the coordinator drives it
  ///    through runLocal() and made the server's tables.
  ReplicaRunner *runner = nullptr;
  std::vector<ReplicaId> localReplicas;
  StageExchange *exchange = nullptr;
  /// A coordinator's: brings the job back when one of its processes dies
  /// (recover()).
  JobRecovery *recovery = nullptr;
  /// A coordinator's: the job's processes write and read their own parts
  /// of its checkpoints (state() and restore() then name the parts).
  CheckpointStore *checkpoints = nullptr;
};

/// What one replica did in the last step, in seconds.
struct ReplicaStepStats {
  int stage = 0, replica = 0;
  double pull = 0, forward = 0, backward = 0, push = 0;
  /// When its first task began and its last task ended, from the step's
  /// start: compute spans the pipeline fill and drain included.
  double computeBegin = 0, computeEnd = 0;
  int microBatches = 0;
  /// Kernel sets it holds (micro-batches in flight at most).
  int stashSlots = 0;
};

/// What all replicas share in one step.
struct StepInputs {
  /// The server's version the step starts from (steps done).
  int64_t version = 0;
  float lr = 0;
  int64_t batch = 0;
  /// Per micro-batch: its samples and targets (a worker process gets only
  /// those its replicas read: null tensors elsewhere), and sizes.
  std::vector<Tensor> inputs, targets;
  std::vector<int64_t> sizes;
  /// Filled by the last stage, per micro-batch.
  std::vector<train::LossResult> losses;
  TraceRecorder::Clock::time_point start;
};

/// Runs a step's replicas in other processes (Distributed/RemoteReplicas).
class ReplicaRunner {
public:
  virtual ~ReplicaRunner();
  /// Every replica's part of `step`: fills step.losses (the last stage's
  /// micro-batches; their gradients stay null) and `stats`, one per
  /// replica, stage by stage. An error names the replica that failed.
  virtual llvm::Error runStep(StepInputs &step,
                              std::vector<ReplicaStepStats> &stats) = 0;
  /// Stage `stage`'s replica-0 weights that are not parameters (running
  /// statistics).
  virtual llvm::Expected<WeightMap> stageWeights(int stage) = 0;
  /// Sets every replica's copies of `weights` (a checkpoint restored).
  virtual llvm::Error setWeights(const WeightMap &weights) = 0;
};

/// Brings a distributed job back after one of its processes failed
/// (Distributed/Supervisor).
class JobRecovery {
public:
  virtual ~JobRecovery();
  /// Called after `failure` (a step, or a call to the server, failed).
  /// Finds the processes that died, has them replaced and moves the job
  /// to a new epoch; `remakeTables(shards)` is called once the replaced
  /// parameter-server shards are reachable, to make their tables again.
  /// An error when no process died (the failure is the job's own) or the
  /// job cannot go on.
  virtual llvm::Error
  recover(const std::string &failure,
          const std::function<llvm::Error(const std::vector<int> &shards)>
              &remakeTables) = 0;
};

/// Has the processes of a distributed job write and read their own parts
/// of a checkpoint, each in step-N of its checkpoint directory
/// (Distributed/Supervisor).
class CheckpointStore {
public:
  virtual ~CheckpointStore();
  /// Every process writes its part of the checkpoint of step `step`, all
  /// at once; the parts' names, sizes and hashes.
  virtual llvm::Expected<std::vector<train::Trainer::Part>>
  save(int64_t step) = 0;
  /// Every process puts its part back, checked against `parts`.
  virtual llvm::Error load(int64_t step,
                           const std::vector<train::Trainer::Part> &parts) = 0;
};

struct PipelineStepStats {
  double seconds = 0;
  std::vector<ReplicaStepStats> replicas;
  /// 1 - (busy compute of all replicas) / (replicas x compute span): the
  /// share of the compute phase that replicas sat idle.
  double bubbleFraction() const;
};

class PipelineTrainer {
public:
  /// Workers, kernels and the parameter server for `plan` (one input, one
  /// output, like Trainer). Errors: a stage count or replica list that does
  /// not fit, a parameter used by two stages, m < 1, what Trainer rejects.
  static llvm::Expected<std::unique_ptr<PipelineTrainer>>
  create(const plan::Plan &plan, WeightMap weights,
         PipelineTrainerOptions options);
  ~PipelineTrainer();

  /// As Trainer::checkData.
  llvm::Error checkData(const data::Dataset &data) const;
  /// A worker process's part of a step (options.localReplicas): runs its
  /// replicas on `step`, filling the losses of the micro-batches they end
  /// and `stats`, one per local replica.
  llvm::Error runLocal(StepInputs &step, std::vector<ReplicaStepStats> &stats);
  /// A local replica's non-parameter weights, for the coordinator.
  llvm::Expected<WeightMap> localWeights(ReplicaId replica);
  /// Sets the local replicas' copies of `weights` (those they hold).
  void setLocalWeights(const WeightMap &weights);
  /// One step on a batch (see the file comment). Returns its mean loss and
  /// accuracy counts (no gradient).
  llvm::Expected<train::LossResult> step(const Tensor &inputs,
                                         const Tensor &targets, float lr);
  /// As Trainer::evaluate, on the server's current parameters. With sparse
  /// tables it runs the stages' training forwards on this thread.
  llvm::Expected<train::EvalResult> evaluate(const data::Dataset &data,
                                             int64_t batchSize);
  /// The current weights: parameters pulled from the server, the other
  /// weights (running statistics) from each stage's replica 0. Sparse
  /// tables are not included.
  llvm::Expected<WeightMap> weights();

  /// Everything a step changes, for a checkpoint: the weights, the
  /// server's optimizer state by parameter, and per op the forward calls
  /// so far (steps x m; masks depend on the step, not on a counter).
  llvm::Expected<train::Trainer::State> state();
  /// Puts `state` back as the state after `steps` steps (the server's
  /// version), in every replica wherever it runs; an error if it does not
  /// fit the plan.
  llvm::Error restore(train::Trainer::State state, int64_t steps);
  /// After `failure`: the job's processes replaced (options.recovery) and
  /// the replaced shards' tables made again; the caller then restores a
  /// checkpoint. The failure itself when there is no recovery, or when it
  /// does not succeed.
  llvm::Error recover(llvm::Error failure);

  const plan::Plan &plan() const { return program; }
  const std::vector<std::pair<std::string, int64_t>> &parameters() const {
    return paths.params;
  }
  int numStages() const { return static_cast<int>(options.replicas.size()); }
  llvm::ArrayRef<int> replicas() const { return options.replicas; }
  const PipelineTrainerOptions &settings() const { return options; }
  const PipelineStepStats &lastStep() const { return stats; }
  int64_t stepsDone() const { return steps; }
  /// Rows the server stores over all sparse tables (touched rows); -1 when
  /// the server is in other processes.
  int64_t storedSparseRows() const;
  llvm::ArrayRef<int32_t> sparse() const { return sparseTables; }

  class Worker;
  struct Layout;

private:
  PipelineTrainer(plan::Plan plan, PipelineTrainerOptions options);
  llvm::Error prepare(WeightMap weights);
  /// Configures the server and creates the plan's tables there (on the
  /// shards `only`, when not empty).
  llvm::Error createTables(const WeightMap &weights,
                           llvm::ArrayRef<int> only = {});
  /// The replica-0 worker of stage `s`.
  Worker &leader(int s) const;
  Worker *find(ReplicaId id) const;
  /// Runs `workers` on `in` through `exchange`.
  llvm::Error runWorkers(StepInputs &in, std::vector<ReplicaStepStats> &out);

  plan::Plan program;
  PipelineTrainerOptions options;
  train::GradientPaths paths;
  std::unique_ptr<Layout> layout;
  /// The server in this process (null when options.remoteServer is set).
  std::unique_ptr<ps::ParameterServer> server;
  std::unique_ptr<ps::InProcessTransport> inProcess;
  /// The server's transport, whichever it is, and the client that made
  /// the tables (checkpoints go through it; none in a worker process).
  ps::Transport *transport = nullptr;
  std::unique_ptr<ps::PSClient> admin;
  ps::ServerConfig serverConfig;
  /// Stage by stage, replica by replica: all of them, a worker process's
  /// own, or (a coordinator) each stage's replica 0 that evaluation and
  /// weights() read but no step runs.
  std::vector<std::unique_ptr<Worker>> workers;
  Mailbox mailbox;
  StageExchange *exchange = &mailbox;
  /// Value indices of the sparse tables.
  std::vector<int32_t> sparseTables;
  /// Weights no op reads, kept to hand back by weights().
  WeightMap unread;
  /// An earlier step failed: the replicas are out of step with the server.
  bool broken = false;
  PipelineStepStats stats;
  int64_t steps = 0;
};

/// Initializers that are only ever the table (input 0) of Gather ops on
/// axis 0, f32 [rows, dim] with rows >= minRows: the tables a pipelined run
/// can serve sparsely.
std::set<int32_t> gatherTables(const plan::Plan &plan, int64_t minRows);

} // namespace heterps::runtime::pipeline

#endif // HETERPS_RUNTIME_PIPELINETRAIN_PIPELINETRAINER_H
