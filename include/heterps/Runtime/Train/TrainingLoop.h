//===- TrainingLoop.h - epochs, evaluation, checkpoints ---------*- C++ -*-===//
//
// The loop every training run shares, whatever trains: the single-stage
// Trainer, the pipelined trainer with its replicas as threads, or one
// whose replicas are other processes (a distributed job's coordinator).
// Epoch by epoch: batches from a shuffling, prefetching loader at the
// schedule's learning rate, evaluation after each epoch, the weights
// checked finite, checkpoints (every N steps or after each epoch, and on
// a requested stop) and resumption from one. A tool only parses options
// and prints what the events report.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_RUNTIME_TRAIN_TRAININGLOOP_H
#define HETERPS_RUNTIME_TRAIN_TRAININGLOOP_H

#include "heterps/Runtime/Train/Checkpoint.h"

#include "llvm/Support/JSON.h"

#include <functional>
#include <type_traits>

namespace heterps::runtime::train {

/// What the loop drives.
class Trainable {
public:
  virtual ~Trainable();
  virtual const std::vector<std::pair<std::string, int64_t>> &
  parameters() const = 0;
  virtual llvm::Error checkData(const data::Dataset &data) const = 0;
  virtual llvm::Expected<LossResult> step(const Tensor &inputs,
                                          const Tensor &targets, float lr) = 0;
  virtual llvm::Expected<EvalResult> evaluate(const data::Dataset &data,
                                              int64_t batchSize) = 0;
  virtual llvm::Expected<WeightMap> weights() = 0;
  /// The plan it runs (its fusions applied).
  virtual const plan::Plan &plan() const = 0;
  /// Everything a step changes (for checkpoints), and putting it back as
  /// the state after `steps` steps.
  virtual llvm::Expected<Trainer::State> state() = 0;
  virtual llvm::Error restore(Trainer::State state, int64_t steps) = 0;
  /// Whether recover() can bring the job back after a failure (a
  /// distributed job: its processes are restarted).
  virtual bool canRecover() const { return false; }
  /// After `failure` of a step: success once the job can go on from a
  /// checkpoint, else the failure.
  virtual llvm::Error recover(llvm::Error failure) { return failure; }
};

/// A trainer (Trainer, PipelineTrainer) as a Trainable.
template <typename T> class TrainableOf final : public Trainable {
public:
  explicit TrainableOf(std::unique_ptr<T> trainer)
      : trainer(std::move(trainer)) {}
  const std::vector<std::pair<std::string, int64_t>> &
  parameters() const override {
    return trainer->parameters();
  }
  llvm::Error checkData(const data::Dataset &data) const override {
    return trainer->checkData(data);
  }
  llvm::Expected<LossResult> step(const Tensor &inputs, const Tensor &targets,
                                  float lr) override {
    return trainer->step(inputs, targets, lr);
  }
  llvm::Expected<EvalResult> evaluate(const data::Dataset &data,
                                      int64_t batchSize) override {
    return trainer->evaluate(data, batchSize);
  }
  llvm::Expected<WeightMap> weights() override { return trainer->weights(); }
  const plan::Plan &plan() const override { return trainer->plan(); }
  llvm::Expected<Trainer::State> state() override { return trainer->state(); }
  llvm::Error restore(Trainer::State state, int64_t steps) override {
    if constexpr (std::is_same_v<T, Trainer>)
      return trainer->restore(std::move(state));
    else
      return trainer->restore(std::move(state), steps);
  }
  bool canRecover() const override {
    if constexpr (std::is_same_v<T, Trainer>)
      return false;
    else
      return trainer->settings().recovery != nullptr;
  }
  llvm::Error recover(llvm::Error failure) override {
    if constexpr (std::is_same_v<T, Trainer>)
      return failure;
    else
      return trainer->recover(std::move(failure));
  }

  std::unique_ptr<T> trainer;
};

struct LoopOptions {
  int epochs = 1;
  int64_t batch = 32;
  /// Shuffles the batches.
  uint64_t seed = 1;
  LRSchedule schedule;
  /// Steps per epoch at most (0: all the data).
  int64_t maxSteps = 0;
  /// Evaluated after every epoch when set.
  const data::Dataset *eval = nullptr;
  int64_t evalBatch = 1000;
  /// Where checkpoints go (none when empty): every `checkpointEvery`
  /// steps, else after each epoch, and when the run stops early.
  std::string checkpointDir;
  int64_t checkpointEvery = 0;
  /// Continue from the checkpoint in checkpointDir, which must match `key`.
  bool resume = false;
  CheckpointKey key;
  /// Stop (checkpointed) once this many steps are done in all (0: never).
  int64_t stopAfter = 0;
  /// Training FLOPs per sample, for the epochs' GFLOP/s.
  double flopsPerSample = 0;
  /// A job that can recover (Trainable::canRecover) and has a checkpoint
  /// directory goes back to its last checkpoint after a failure, at most
  /// this many times; it writes a checkpoint when it starts, so there
  /// always is one.
  int maxRestarts = 3;
};

/// After each step.
struct StepEvent {
  int epoch = 0;
  int64_t step = 0, stepsPerEpoch = 0;
  /// Steps done in all, and when this run started (a resumed run starts
  /// later than 0).
  int64_t globalStep = 0, firstGlobalStep = 0;
  double meanLoss = 0, samplesPerSecond = 0, secondsLeft = 0;
};

/// A job brought back after a failure.
struct RecoveryEvent {
  std::string failure;
  /// The step it had reached, and the checkpoint's it goes on from.
  int64_t failedAt = 0, restoredTo = 0;
  int restarts = 0;
  /// From the failure to the restored state.
  double seconds = 0;
};

struct LoopEvents {
  std::function<void(const TrainingProgress &)> resumed;
  std::function<void(const RecoveryEvent &)> recovered;
  std::function<void(const StepEvent &)> stepped;
  /// Asked before each step: true stops the run as LoopOptions::stopAfter
  /// does (an embedding program's interrupt or its callback's wish).
  std::function<bool()> stopRequested;
  /// An epoch's report entry: epoch, lr, steps, loss, seconds,
  /// samples_per_s, gflops_per_s, train_accuracy, eval_loss,
  /// eval_accuracy, eval_auc (the last four when measured).
  std::function<void(const llvm::json::Object &)> epochEnded;
};

struct LoopResult {
  /// Every finished epoch's report entry, a resumed run's earlier ones
  /// first.
  llvm::json::Array epochs;
  /// Stopped by LoopOptions::stopAfter.
  bool stopped = false;
  int64_t globalStep = 0;
  /// Checkpoints written by this run: how many, their time in all (the
  /// state gathered and written, or the parts and the manifest) and the
  /// last one's size, its parts included.
  int64_t checkpoints = 0;
  double checkpointSeconds = 0;
  uint64_t checkpointBytes = 0;
};

/// FLOPs of one sample's training step (forward, backward-data and
/// backward-weights: three forward multiply-add counts x 2), from the
/// plan's static shapes: Conv, Gemm and MatMul; the rest is memory-bound
/// and not counted.
double trainingFlopsPerSample(const plan::Plan &plan);

/// Trains `job` on `train`. Errors are one line: a step that failed, a
/// NaN loss or weight (nothing is saved then), a checkpoint that cannot be
/// read, does not fit or cannot be written.
llvm::Expected<LoopResult> runTrainingLoop(Trainable &job,
                                           const data::Dataset &train,
                                           const LoopOptions &options,
                                           const LoopEvents &events = {});

} // namespace heterps::runtime::train

#endif // HETERPS_RUNTIME_TRAIN_TRAININGLOOP_H
