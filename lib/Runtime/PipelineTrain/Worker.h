//===- Worker.h - one replica of one pipeline stage -------------*- C++ -*-===//
//
// Internal to the pipeline trainer. A Worker owns a thread, the training
// kernels of its stage's ops (one set per micro-batch it may hold at once),
// its copy of the stage's weights and a parameter-server client. Workers of
// neighbouring stages hand each other activations and gradients through
// a StageExchange.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_RUNTIME_PIPELINETRAIN_WORKER_H
#define HETERPS_LIB_RUNTIME_PIPELINETRAIN_WORKER_H

#include "heterps/Runtime/PS/Client.h"
#include "heterps/Runtime/PipelineTrain/PipelineTrainer.h"
#include "heterps/Runtime/Train/Backprop.h"

#include "SparseGather.h"

#include <condition_variable>
#include <functional>
#include <map>
#include <optional>
#include <thread>

namespace heterps::runtime::pipeline {

/// Which values cross each stage boundary, and where things live.
struct PipelineTrainer::Layout {
  /// live[b]: values defined at stage <= b (or graph inputs) and used
  /// after it, ascending.
  std::vector<std::vector<int32_t>> live;
  /// Per stage: the weights its ops read (sparse tables not included),
  /// the dense trainable parameters among them and its sparse tables.
  std::vector<std::vector<int32_t>> weights, params, sparse;
  /// Dense parameters that more than one stage reads (tied weights, or
  /// equal initializers an exporter merged into one): those stages,
  /// ascending. Every replica of each pushes its share of the gradient.
  std::map<int32_t, std::vector<int>> sharedBy;

  /// How many workers push parameter `v`'s gradient each step, and the
  /// index among them of stage `stage`'s first replica.
  std::pair<int, int> pushers(int32_t v, int stage,
                              llvm::ArrayRef<int> replicas) const;
};

class PipelineTrainer::Worker {
public:
  Worker(const PipelineTrainer &trainer, const Layout &layout, int stage,
         int replica, std::vector<Task> order);
  ~Worker();

  /// Kernels (for as many micro-batches as the order holds at once), the
  /// stage's weights out of `weights` and the server client.
  llvm::Error prepare(const WeightMap &weights, ps::Transport &transport);
  /// The first kernel set (evaluation runs it).
  const train::OpSequence &kernels() const { return slots.front(); }
  /// The table version sparse lookups pull (set before an evaluation).
  void setVersion(int64_t v) { version = v; }
  int stage() const { return stageIndex; }
  int replicaIndex() const { return replica; }
  WeightMap &localWeights() { return weights; }
  ps::PSClient &client() { return *psClient; }

  /// Runs `job` on the worker's thread; `join` waits for it.
  void post(std::function<void()> job);
  void join();

  /// The worker's part of a step; errors name the stage and replica, and
  /// nothing comes back when another worker's failure aborted the step.
  std::optional<std::string> runStep(StepInputs &step, StageExchange &exchange,
                                     ReplicaStepStats &stats);

private:
  llvm::Error pull(StepInputs &step);
  llvm::Error push(StepInputs &step);
  /// Forward of micro-batch `j` into kernel set `slot`; false when aborted.
  llvm::Expected<bool> forward(StepInputs &step, StageExchange &exchange, int j,
                               int slot);
  llvm::Expected<bool> backward(StepInputs &step, StageExchange &exchange,
                                int j, int slot);
  /// Records a span on this worker's trace track, if tracing.
  void trace(std::string name, const char *category,
             TraceRecorder::Clock::time_point begin);

  const PipelineTrainer &trainer;
  const Layout &layout;
  int stageIndex, replica;
  std::vector<Task> order;
  int traceTrack = -1;
  /// When the running task's input had arrived.
  TraceRecorder::Clock::time_point taskStart;

  /// The stage's backends (made in prepare).
  std::unique_ptr<Devices> devices;
  std::vector<train::OpSequence> slots;
  WeightMap weights;
  std::unique_ptr<ps::PSClient> psClient;
  /// Per micro-batch in flight: its values and gradients.
  std::vector<std::vector<Tensor>> stash;
  /// Per trainable parameter of the stage: its summed gradient.
  std::map<int32_t, Tensor> gradSums;
  /// Per sparse table of the stage: its rows' summed gradients.
  std::map<int32_t, SparseGradSum> sparseSums;
  /// The step's version, read by the sparse lookups.
  int64_t version = 0;

  std::thread thread;
  std::mutex jobMutex;
  std::condition_variable jobChanged;
  std::function<void()> job;
  bool busy = false, stopping = false;
};

} // namespace heterps::runtime::pipeline

#endif // HETERPS_LIB_RUNTIME_PIPELINETRAIN_WORKER_H
