//===- Optimizer.cpp - parameter updates and learning-rate schedules ------===//

#include "heterps/Runtime/Train/Optimizer.h"

#include "llvm/ADT/StringSwitch.h"

#include <cmath>
#include <cstring>
#include <optional>

using namespace heterps::runtime;
using namespace heterps::runtime::train;

llvm::Expected<OptimizerKind> train::parseOptimizer(llvm::StringRef name) {
  auto kind = llvm::StringSwitch<std::optional<OptimizerKind>>(name)
                  .Case("sgd", OptimizerKind::SGD)
                  .Case("momentum", OptimizerKind::Momentum)
                  .Case("adam", OptimizerKind::Adam)
                  .Case("adagrad", OptimizerKind::Adagrad)
                  .Default(std::nullopt);
  if (!kind)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "unknown optimizer '" + name +
            "' (expected sgd, momentum, adam or adagrad)");
  return *kind;
}

// Below this many elements a parallel region costs more than it saves.
// Each element is updated on its own, so threads never change the result.
static constexpr int64_t kParallelMin = 1 << 15;

/// Zeros in `t`'s layout (blocked layouts' padding included).
static Tensor zerosLike(const Tensor &t) {
  Tensor z = t.uninitialisedLike();
  std::memset(z.rawData(), 0, z.bytes());
  return z;
}

/// Moves `t` (unless null) into `grad`'s layout.
static llvm::Error conform(Tensor &t, const Tensor &grad) {
  if (t.isNull())
    return llvm::Error::success();
  llvm::Expected<Tensor> moved = t.toLayoutOf(grad); // `t` itself if it is
  if (!moved)
    return moved.takeError();
  t = std::move(*moved);
  return llvm::Error::success();
}

/// Heavy-ball momentum (PyTorch's form), Nesterov's variant a template
/// argument: a branch inside the loop kept it from vectorizing.
template <bool Nesterov>
static void momentumUpdate(float *p, float *b, const float *g0, int64_t n,
                           float lr, float mu, float wd) {
#pragma omp parallel for simd schedule(static) if (n > kParallelMin)
  for (int64_t i = 0; i < n; ++i) {
    float g = g0[i] + wd * p[i];
    float v = mu * b[i] + g;
    b[i] = v;
    p[i] -= lr * (Nesterov ? g + mu * v : v);
  }
}

llvm::Error Optimizer::update(int slot, Tensor &param, const Tensor &grad,
                              float lr) {
  State &s = states[slot];
  for (Tensor *t : {&param, &s.first, &s.second})
    if (llvm::Error e = conform(*t, grad))
      return e;
  ++s.steps;
  float *p = param.data<float>();
  const float *g0 = grad.data<float>();
  // Blocked layouts pad with zeros, which every update below keeps zero.
  auto n = static_cast<int64_t>(param.bytes() / sizeof(float));
  float wd = options.weightDecay;
  switch (options.kind) {
  case OptimizerKind::SGD:
#pragma omp parallel for simd schedule(static) if (n > kParallelMin)
    for (int64_t i = 0; i < n; ++i)
      p[i] -= lr * (g0[i] + wd * p[i]);
    break;
  case OptimizerKind::Momentum: {
    // A zero buffer makes the first step's buffer the gradient itself.
    if (s.first.isNull())
      s.first = zerosLike(param);
    float *b = s.first.data<float>(), mu = options.momentum;
    if (options.nesterov)
      momentumUpdate<true>(p, b, g0, n, lr, mu, wd);
    else
      momentumUpdate<false>(p, b, g0, n, lr, mu, wd);
    break;
  }
  case OptimizerKind::Adam: {
    if (s.first.isNull()) {
      s.first = zerosLike(param);
      s.second = zerosLike(param);
    }
    float *m = s.first.data<float>(), *v = s.second.data<float>();
    float b1 = options.beta1, b2 = options.beta2;
    float eps = options.epsilon >= 0 ? options.epsilon : 1e-8f;
    double c1 = 1 - std::pow(b1, s.steps), c2 = 1 - std::pow(b2, s.steps);
    auto step = static_cast<float>(lr / c1);
    auto root2 = static_cast<float>(std::sqrt(c2));
#pragma omp parallel for simd schedule(static) if (n > kParallelMin)
    for (int64_t i = 0; i < n; ++i) {
      float g = g0[i] + wd * p[i];
      m[i] = b1 * m[i] + (1 - b1) * g;
      v[i] = b2 * v[i] + (1 - b2) * g * g;
      p[i] -= step * m[i] / (std::sqrt(v[i]) / root2 + eps);
    }
    break;
  }
  case OptimizerKind::Adagrad: {
    if (s.first.isNull())
      s.first = zerosLike(param);
    float *sum = s.first.data<float>();
    float eps = options.epsilon >= 0 ? options.epsilon : 1e-10f;
#pragma omp parallel for simd schedule(static) if (n > kParallelMin)
    for (int64_t i = 0; i < n; ++i) {
      float g = g0[i] + wd * p[i];
      sum[i] += g * g;
      p[i] -= lr * g / (std::sqrt(sum[i]) + eps);
    }
    break;
  }
  }
  return llvm::Error::success();
}

float LRSchedule::at(int epoch) const {
  switch (kind) {
  case Kind::Constant:
    return base;
  case Kind::Step:
    return base * std::pow(gamma, epoch / std::max(stepEpochs, 1));
  case Kind::Cosine:
    return static_cast<float>(
        base * 0.5 * (1 + std::cos(M_PI * epoch / std::max(epochs, 1))));
  }
  return base;
}

llvm::Expected<LRSchedule::Kind> train::parseSchedule(llvm::StringRef name) {
  auto kind = llvm::StringSwitch<std::optional<LRSchedule::Kind>>(name)
                  .Case("constant", LRSchedule::Kind::Constant)
                  .Case("step", LRSchedule::Kind::Step)
                  .Case("cosine", LRSchedule::Kind::Cosine)
                  .Default(std::nullopt);
  if (!kind)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "unknown learning-rate schedule '" + name +
                                       "' (expected constant, step or cosine)");
  return *kind;
}
