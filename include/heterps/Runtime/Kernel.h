//===- Kernel.h - kernels and the kernel registry ---------------*- C++ -*-===//
//
// A backend (Backend.h) turns each plan op into a Kernel through its
// KernelRegistry, keyed by op type. A kernel reads its
// attributes once, when created, and is then run on every batch; it may cache
// per-shape state (oneDNN primitives), so one kernel object is used by one
// thread at a time.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_RUNTIME_KERNEL_H
#define HETERPS_RUNTIME_KERNEL_H

#include "heterps/Runtime/Attributes.h"
#include "heterps/Runtime/Tensor.h"

#include "llvm/ADT/StringMap.h"

#include <functional>
#include <memory>
#include <optional>

namespace heterps::runtime {

/// What a kernel factory sees of its op.
struct OpInfo {
  OpInfo(const plan::Op &op, std::vector<const Tensor *> constants)
      : op(op), attrs(op), constants(std::move(constants)) {}

  const plan::Op &op;
  OpAttributes attrs;
  /// Per input: the weight tensor when the input is a plan weight (its value
  /// never changes), else null. Absent optional inputs are null too.
  std::vector<const Tensor *> constants;

  int numInputs() const { return op.inputs_size(); }
  int numOutputs() const { return op.outputs_size(); }
  /// Whether optional input `i` is given.
  bool hasInput(int i) const { return i < numInputs() && op.inputs(i) >= 0; }
  /// An error unless the op has [minIn, maxIn] inputs, the first minIn
  /// present, and `outputs` outputs.
  llvm::Error checkArity(int minIn, int maxIn, int outputs = 1) const;
};

/// Where a kernel that joins its inputs into one output (Concat) would have
/// them: a new output tensor and, per input, the part of it (Tensor::part)
/// that input becomes, or a null tensor where it cannot be computed in place.
struct JoinDestinations {
  Tensor output;
  std::vector<Tensor> inputs;
};

class Kernel {
public:
  virtual ~Kernel();
  /// Whether the kernel takes inputs in a backend layout as they are;
  /// otherwise the executor hands it plain tensors.
  virtual bool acceptsLayouts() const { return false; }
  /// Computes `outputs` (already sized) from `inputs` (null pointers for
  /// absent optional inputs). An input whose buffer no other tensor shares
  /// (Tensor::ownsBufferAlone) may be overwritten or become an output's: a
  /// caller that reads it afterwards keeps a tensor on that buffer (the
  /// Executor hands over the values an op reads last).
  /// An output is a null tensor, or a destination the caller offers (see
  /// joinDestinations): a kernel writes into it when it has the shape and
  /// layout the kernel produces, and replaces it otherwise.
  virtual llvm::Error run(llvm::ArrayRef<const Tensor *> inputs,
                          llvm::MutableArrayRef<Tensor> outputs) = 0;
  /// Whether run() writes into offered outputs of the right shape and
  /// layout (kernels that do not just replace them).
  virtual bool fillsOfferedOutputs() const { return false; }
  /// Whether the kernel joins its inputs into its output (see
  /// joinDestinations).
  virtual bool joinsInputs() const { return false; }
  /// For a kernel that joins its inputs: destinations for the next run, in
  /// which producers that fill offered outputs compute the inputs in place
  /// and run() then copies nothing for them; offered to run() as its output.
  /// Based on the inputs of the last run; std::nullopt when there was none
  /// or their parts of the output are not contiguous.
  virtual std::optional<JoinDestinations> joinDestinations() {
    return std::nullopt;
  }
};

using KernelFactory =
    std::function<llvm::Expected<std::unique_ptr<Kernel>>(const OpInfo &)>;

/// Op type -> kernel factory.
class KernelRegistry {
public:
  /// Registers `factory` for `opType`, replacing an earlier one.
  void add(llvm::StringRef opType, KernelFactory factory);
  const KernelFactory *lookup(llvm::StringRef opType) const;
  /// Sorted op types.
  std::vector<std::string> opTypes() const;

private:
  llvm::StringMap<KernelFactory> factories;
};

} // namespace heterps::runtime

#endif // HETERPS_RUNTIME_KERNEL_H
