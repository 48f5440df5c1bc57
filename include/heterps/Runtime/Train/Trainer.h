//===- Trainer.h - single-process training of a plan ------------*- C++ -*-===//
//
// A Trainer turns an inference plan into a training job: every step runs
// the plan's ops forward in training mode (TrainKernel), the loss, the ops'
// backwards in reverse order (summing the gradients of values used twice)
// and an optimizer update of every trainable parameter. The trainable
// parameters are the f32 weights that come from the model's initializers
// and lie on a gradient path, less the frozen ones. Evaluation runs the
// inference executor on the current weights.
//
// The plan must have one graph input (the samples) and one graph output
// (what the loss reads); dimensions of -1 (the batch) take any size.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_RUNTIME_TRAIN_TRAINER_H
#define HETERPS_RUNTIME_TRAIN_TRAINER_H

#include "heterps/Runtime/Data/Dataset.h"
#include "heterps/Runtime/Plan.pb.h"
#include "heterps/Runtime/Train/Backprop.h"
#include "heterps/Runtime/Train/Loss.h"
#include "heterps/Runtime/Train/Optimizer.h"
#include "heterps/Runtime/Train/SparseRows.h"
#include "heterps/Runtime/Train/TrainKernel.h"
#include "heterps/Runtime/Weights.h"

namespace heterps::runtime::train {

struct TrainerOptions {
  /// Threads per kernel (0: OpenMP's default).
  int numThreads = 0;
  /// Seeds dropout.
  uint64_t seed = 1;
  /// Train ops placed on device kinds no backend serves on the emulated
  /// device (DeviceOptions::emulateMissingDevices).
  bool emulateMissingDevices = false;
  LossKind loss = LossKind::SoftmaxCrossEntropy;
  OptimizerOptions optimizer;
  /// Initializer names whose values stay fixed.
  std::vector<std::string> frozen;
};

struct EvalResult {
  double loss = 0;
  /// Correct / judged predictions (see LossResult); judged is 0 for mse.
  int64_t correct = 0, judged = 0;
  double accuracy() const { return judged ? double(correct) / judged : 0; }
  /// Area under the ROC curve (bce-logits with one logit per sample);
  /// -1 otherwise.
  double auc = -1;
};

class Trainer {
public:
  static llvm::Expected<std::unique_ptr<Trainer>>
  create(const plan::Plan &plan, WeightMap weights, TrainerOptions options);
  ~Trainer();

  /// An error unless samples of `data` fit the model input and its targets
  /// fit the loss (one line naming both shapes).
  llvm::Error checkData(const data::Dataset &data) const;

  /// One step on a batch at learning rate `lr`: forward, loss, backward and
  /// update. Returns the batch's loss (before the update).
  llvm::Expected<LossResult> step(const Tensor &inputs, const Tensor &targets,
                                  float lr);

  /// Loss and accuracy on `data` with the current weights, in batches of
  /// `batchSize`, inference mode (running statistics, no dropout).
  llvm::Expected<EvalResult> evaluate(const data::Dataset &data,
                                      int64_t batchSize) const;

  /// The current weights (parameters and running statistics), plain.
  /// Tensors the trainer holds plain are shared, not copied: the next step
  /// updates them.
  llvm::Expected<WeightMap> weights() const;
  /// Trainable parameters: initializer names and their element count.
  const std::vector<std::pair<std::string, int64_t>> &parameters() const {
    return paths.params;
  }
  const plan::Plan &plan() const { return program; }
  /// Value indices of the trainable parameters.
  llvm::ArrayRef<int32_t> parameterValues() const { return paths.paramValues; }
  const TrainerOptions &settings() const { return options; }
  /// Op types placed on a device whose backend cannot train them, which
  /// train on the CPU instead (Devices::fallbacks).
  std::vector<std::string> fallbacks() const { return devices->fallbacks(); }

  /// Everything a step changes: the weights, the optimizer's state (by
  /// parameter value index), each kernel's random draws and, in pipelined
  /// runs, the sparse tables' stored rows (by value index).
  /// A file of a checkpoint that a process of a distributed job wrote
  /// itself (a parameter-server shard's tables, a worker's weights), in
  /// DIR/step-N of its checkpoint directory.
  struct Part {
    std::string name;
    int64_t bytes = 0;
    uint64_t xxh3 = 0;
  };
  struct State {
    WeightMap weights;
    std::map<int, Optimizer::State> optimizer;
    std::vector<uint64_t> randomDraws;
    std::map<int32_t, SparseRows> sparse;
    /// A distributed job's state is in these files of step `partsStep`
    /// instead (weights, optimizer and sparse rows then stay empty).
    std::vector<Part> parts;
    int64_t partsStep = 0;
  };
  /// A deep copy of the current state, plain.
  llvm::Expected<State> state() const;
  /// Puts `state` back; an error if it does not fit this trainer's plan.
  llvm::Error restore(State state);

private:
  Trainer(plan::Plan plan, WeightMap weights, TrainerOptions options);
  llvm::Error prepare();

  plan::Plan program;
  /// Parameters a kernel keeps in a layout of its own (a convolution's
  /// blocked weights) stay in it between steps; see Optimizer::update.
  WeightMap weightMap;
  TrainerOptions options;
  std::unique_ptr<Devices> devices;
  Optimizer optimizer;
  std::unique_ptr<OpSequence> ops;
  GradientPaths paths;
};

/// An error unless `plan` has one input (the samples) and one output (what
/// the loss reads).
llvm::Error checkTrainingPlan(const plan::Plan &plan);

/// Gives every BatchNormalization its own running mean and variance where
/// the plan shares their value with another reader. An exporter that merges
/// equal initializers (PyTorch's: a new BatchNorm's running variance is all
/// ones like its scale, its running mean all zeros like its bias) would
/// otherwise have the training forward's in-place update of the statistics
/// overwrite the parameters. The copies are new plan values without an
/// initializer: a saved model keeps the shared initializer's trained value.
void separateRunningStatistics(plan::Plan &plan, WeightMap &weights);

/// The devices trainers run on: `numThreads` per kernel, and ops of device
/// kinds no backend serves on the emulated device when `emulateMissing`.
DeviceOptions trainingDevices(int numThreads, bool emulateMissing);

/// An error unless samples of `data` fit the input of `plan` and its
/// targets fit `loss` (one line naming both shapes); labels are checked.
llvm::Error checkTrainingData(const plan::Plan &plan, LossKind loss,
                              const data::Dataset &data);

/// Loss and accuracy of `plan` with `weights` on `data`, in batches of
/// `batchSize`, run by the inference executor (running statistics, no
/// dropout).
llvm::Expected<EvalResult>
evaluateModel(const plan::Plan &plan, const WeightMap &weights, LossKind loss,
              const data::Dataset &data, int64_t batchSize, int numThreads);

} // namespace heterps::runtime::train

#endif // HETERPS_RUNTIME_TRAIN_TRAINER_H
