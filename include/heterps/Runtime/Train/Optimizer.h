//===- Optimizer.h - parameter updates and LR schedules ---------*- C++ -*-===//
//
// The updates follow PyTorch's torch.optim so that runs can be compared
// step for step: weight decay is added to the gradient (g += wd * p), then
//   sgd       p -= lr g
//   momentum  b = mu b + g (b = g at the first step); p -= lr b, or with
//             Nesterov p -= lr (g + mu b)
//   adam      m, v moving averages of g and g^2 with bias correction;
//             p -= lr m^ / (sqrt(v^) + eps)
//   adagrad   s += g^2; p -= lr g / (sqrt(s) + eps)
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_RUNTIME_TRAIN_OPTIMIZER_H
#define HETERPS_RUNTIME_TRAIN_OPTIMIZER_H

#include "heterps/Runtime/Tensor.h"

#include <map>

namespace heterps::runtime::train {

enum class OptimizerKind { SGD, Momentum, Adam, Adagrad };

/// "sgd", "momentum", "adam" or "adagrad"; an error lists them.
llvm::Expected<OptimizerKind> parseOptimizer(llvm::StringRef name);

struct OptimizerOptions {
  OptimizerKind kind = OptimizerKind::SGD;
  float momentum = 0.9f;
  bool nesterov = false;
  float beta1 = 0.9f, beta2 = 0.999f;
  /// Adam's epsilon; Adagrad uses 1e-10 as PyTorch does unless set.
  float epsilon = -1;
  float weightDecay = 0;
};

class Optimizer {
public:
  explicit Optimizer(OptimizerOptions options) : options(options) {}

  /// Updates parameter `slot` (any stable id; its state lives under it)
  /// in place from `grad` (same shape) at learning rate `lr`. The update
  /// is elementwise, so it runs in whatever layout the gradient comes in:
  /// the parameter and its state are moved into that layout first when
  /// they are in another (a convolution's blocked weights then stay
  /// blocked from step to step instead of being reordered twice a step).
  llvm::Error update(int slot, Tensor &param, const Tensor &grad, float lr);

  /// A slot's state: the moments (null until the first update, unused ones
  /// stay null) and the updates so far.
  struct State {
    Tensor first, second;
    int64_t steps = 0;
  };
  const std::map<int, State> &slots() const { return states; }
  /// Replaces every slot's state (a checkpoint being restored).
  void setSlots(std::map<int, State> slots) { states = std::move(slots); }
  const OptimizerOptions &settings() const { return options; }

private:
  OptimizerOptions options;
  std::map<int, State> states;
};

/// Learning rate per epoch: constant; "step" multiplies by `gamma` every
/// `stepEpochs` epochs; "cosine" anneals from the base rate to 0 over
/// `epochs` (PyTorch's StepLR and CosineAnnealingLR, stepped per epoch).
struct LRSchedule {
  enum class Kind { Constant, Step, Cosine } kind = Kind::Constant;
  float base = 0.01f;
  int stepEpochs = 1;
  float gamma = 0.1f;
  int epochs = 1;

  float at(int epoch) const;
};

/// "constant", "step" or "cosine"; an error lists them.
llvm::Expected<LRSchedule::Kind> parseSchedule(llvm::StringRef name);

} // namespace heterps::runtime::train

#endif // HETERPS_RUNTIME_TRAIN_OPTIMIZER_H
