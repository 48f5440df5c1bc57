//===- Backprop.h - forward and backward over op ranges ---------*- C++ -*-===//
//
// The pieces a training step is made of, shared by the single-stage
// Trainer and the pipeline's stage workers: an OpSequence runs the training
// kernels of a contiguous range of plan ops forward and then backward over
// a value environment (tensors by value index), and GradientPaths says
// which values the loss has a gradient for and which weights are trained.
// Training kernels have one output: a Split of k outputs runs as k Slices
// of its input (the backward sums their gradients).
//
// Each op runs on its device's backend (Devices.h). Values the range reads
// from outside (inputs, weights) and values it hands out (graph outputs,
// values later ops read) are host tensors in `values`; inside the range a
// value lives in its producer's memory, and an op on another device reads
// a copy. Gradients flow back the same way: a copy's gradient is moved to
// the memory of the value it copies and summed there.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_RUNTIME_TRAIN_BACKPROP_H
#define HETERPS_RUNTIME_TRAIN_BACKPROP_H

#include "heterps/Runtime/Devices.h"

#include "llvm/ADT/STLFunctionalExtras.h"

namespace heterps::runtime::train {

/// Ops [begin, end) of a plan with their training kernels. The plan and
/// the devices (prepared for training) must outlive the sequence; one
/// thread runs it at a time.
class OpSequence {
public:
  /// A kernel the caller makes for plan op `op` instead of the backend's,
  /// or null; it runs on the host.
  using KernelOverride =
      llvm::function_ref<std::unique_ptr<TrainKernel>(int op)>;

  /// Kernels for the ops; `weights` are the plan's weights (kernels read
  /// shapes from them). An op without a backward is an error naming it.
  static llvm::Expected<OpSequence> create(const plan::Plan &plan,
                                           const WeightMap &weights, int begin,
                                           int end, const Devices &devices,
                                           KernelOverride custom = nullptr);

  int begin() const { return first; }
  int end() const { return last; }
  /// The (first) kernel of plan op `op` (in [begin, end)).
  TrainKernel &kernel(int op) const {
    return *steps[firstStep[op - first]].kernel;
  }

  /// Runs the ops forward; `values` holds a tensor per plan value, at
  /// least the ops' inputs (it grows by slots for copies on devices).
  llvm::Error forward(std::vector<Tensor> &values) const;
  /// After `forward`: from the gradients in `grads` (by value; null where
  /// none flows) runs the ops' backwards in reverse order, adding each
  /// input's gradient into `grads` (values used twice sum). The ops'
  /// outputs are released from `values` as their backwards finish.
  llvm::Error backward(std::vector<Tensor> &values, std::vector<Tensor> &grads,
                       const std::vector<bool> &requiresGrad) const;

private:
  OpSequence(const plan::Plan &plan, const Devices &devices, int first,
             int last)
      : program(&plan), devices(&devices), first(first), last(last),
        numSlots(plan.values_size()) {}

  /// A value's copy in another memory space, made before a step.
  struct Copy {
    int32_t from, to;
  };
  /// One kernel computing output `output` of plan op `op`, in `space`.
  struct Step {
    int op, output;
    std::unique_ptr<TrainKernel> kernel;
    MemorySpace *space = nullptr;
    /// The slots it reads (values or their copies) and writes: the output
    /// value, or for a value handed out from a device, a slot whose host
    /// copy the value then gets.
    std::vector<int32_t> args;
    int32_t out = -1;
    std::vector<Copy> copiesBefore;
  };

  /// Adds `grad` (in `space`) into grads[slot].
  llvm::Error addGradient(std::vector<Tensor> &grads, int32_t slot, Tensor grad,
                          MemorySpace &space) const;
  /// Moves the gradients of `slot`'s copies into grads[slot] (in `space`).
  llvm::Error gatherCopyGradients(std::vector<Tensor> &grads, int32_t slot,
                                  MemorySpace &space) const;

  const plan::Plan *program;
  const Devices *devices;
  int first, last;
  /// Value slots: the plan's values, then copies.
  int32_t numSlots;
  std::vector<Step> steps;
  /// Per slot that has copies: the copies' slots.
  std::map<int32_t, std::vector<int32_t>> copiesOf;
  /// Values the range reads from outside that have copies.
  std::vector<int32_t> importedCopied;
  /// Per op of the range: the index of its first step.
  std::vector<size_t> firstStep;
  /// The Slices a Split runs as (their kernels' OpInfo referred to them).
  std::vector<std::unique_ptr<plan::Op>> splitPieces;
};

/// Where gradients flow. Trainable parameters are the f32 weights that
/// come from the model's initializers and are differentiable inputs of
/// some op, less the frozen ones.
struct GradientPaths {
  /// Per value: whether the loss has a gradient with respect to it.
  std::vector<bool> requiresGrad;
  /// Value indices of the trainable parameters, ascending, and their
  /// initializer names and element counts.
  std::vector<int32_t> paramValues;
  std::vector<std::pair<std::string, int64_t>> params;
};

/// The gradient paths of `plan`, whose op `i` has kernel `kernelOf(i)`.
/// Errors: a frozen name that is no initializer, running statistics that
/// are no weight, no trainable parameter at all.
llvm::Expected<GradientPaths>
findGradientPaths(const plan::Plan &plan, const WeightMap &weights,
                  llvm::function_ref<const TrainKernel &(int)> kernelOf,
                  llvm::ArrayRef<std::string> frozen);

} // namespace heterps::runtime::train

#endif // HETERPS_RUNTIME_TRAIN_BACKPROP_H
