//===- TrainKernel.h - one op forward and backward --------------*- C++ -*-===//
//
// Training runs each plan op through a TrainKernel: `forward` in training
// mode (batch statistics, dropout masks) keeping what the backward pass
// needs, then `backward` from the gradient of the op's output to the
// gradients of its inputs. Each backend makes its own (a TrainBackend);
// the CPU backend's run on oneDNN's training primitives and may keep
// activations and gradients in oneDNN's blocked layouts.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_RUNTIME_TRAIN_TRAINKERNEL_H
#define HETERPS_RUNTIME_TRAIN_TRAINKERNEL_H

#include "heterps/Runtime/Kernel.h"

#include <cstdint>

namespace heterps::runtime::train {

class TrainKernel {
public:
  virtual ~TrainKernel();

  /// Whether input `i` has a gradient (a Reshape's shape or a batch norm's
  /// running statistics do not).
  virtual bool differentiable(int i) const { return i == 0; }
  /// Whether input `i` is state that `forward` updates in place (a batch
  /// norm's running statistics); such inputs must be weights.
  virtual bool updatesInput(int i) const { return false; }

  /// How many random draws the kernel has made (Dropout: its forward
  /// calls), and setting it back: what a checkpoint keeps so that a
  /// resumed run draws what the uninterrupted one would have.
  virtual uint64_t randomDraws() const { return 0; }
  virtual void setRandomDraws(uint64_t) {}

  /// Computes the single output from `inputs` (null for absent optional
  /// inputs) in training mode.
  virtual llvm::Error forward(llvm::ArrayRef<const Tensor *> inputs,
                              Tensor &output) = 0;
  /// After `forward` on the same `inputs` and `output`: from `dOutput`, the
  /// gradient of the loss with respect to the output, sets `dInputs[i]` for
  /// every `i` with `needGrad[i]` (those are differentiable inputs). When no
  /// other tensor shares `dOutput`'s buffer (Tensor::ownsBufferAlone) the
  /// kernel may overwrite it: a caller that reads it afterwards keeps a
  /// tensor on that buffer.
  virtual llvm::Error backward(llvm::ArrayRef<const Tensor *> inputs,
                               const Tensor &output, const Tensor &dOutput,
                               llvm::ArrayRef<bool> needGrad,
                               llvm::MutableArrayRef<Tensor> dInputs) = 0;
};

struct TrainBackendOptions {
  /// Threads per kernel (0: OpenMP's default).
  int numThreads = 0;
  /// Seeds the dropout masks (each op draws from its own stream).
  uint64_t seed = 1;
};

/// A backend's training kernels (Backend::createTrainBackend). Kernels and
/// gradients live in the backend's memory.
class TrainBackend {
public:
  virtual ~TrainBackend();

  /// The kernel of `info.op`, the `opIndex`-th op of its plan; an op type
  /// without a backward is an error naming it.
  virtual llvm::Expected<std::unique_ptr<TrainKernel>>
  createKernel(const OpInfo &info, int opIndex) const = 0;
  /// Sorted op types that can be trained.
  virtual std::vector<std::string> opTypes() const = 0;
  /// Sets the calling thread's kernel thread count.
  virtual void enterThread() const {}

  /// Adds `src` into `dst` (same shape; layouts may differ): gradients of a
  /// value used by several ops are summed.
  virtual llvm::Error accumulate(Tensor &dst, const Tensor &src) const = 0;
};

} // namespace heterps::runtime::train

#endif // HETERPS_RUNTIME_TRAIN_TRAINKERNEL_H
