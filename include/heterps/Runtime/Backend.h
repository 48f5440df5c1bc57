//===- Backend.h - device backends and their registry -----------*- C++ -*-===//
//
// A backend runs plan ops on one kind of device (cpu, cuda, emulated). It
// owns everything device-specific: its kernels (KernelRegistry), its
// training kernels (train::TrainBackend), the plan rewrites its kernels
// want (fusions), the memory space its tensors live in, and the transfers
// between that space and the host's. The core (Executor, Pipeline, the
// trainers) reaches devices only through this interface; Devices.h picks a
// backend per op from the plan's device kinds and inserts the transfers.
//
// Backends register a factory per kind (registerBackend); the built-in ones
// are registered by lib/Runtime/Backends/Builtin.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_RUNTIME_BACKEND_H
#define HETERPS_RUNTIME_BACKEND_H

#include "heterps/Runtime/Kernel.h"
#include "heterps/Runtime/Weights.h"

#include "llvm/ADT/STLFunctionalExtras.h"

#include <future>

namespace heterps::runtime {

namespace train {
class TrainBackend;
struct TrainBackendOptions;
} // namespace train

/// What every backend is made with.
struct BackendOptions {
  /// Threads per kernel (0: the device's default).
  int numThreads = 0;
  /// Choose between kernel algorithms by timing them on each shape; the
  /// choice can change the last bits of results between runs.
  bool autotune = true;
  /// Pass NaN on through Relu, Clip and MaxPool as ONNX specifies, where
  /// the device's kernels would not.
  bool propagateNaN = false;
  /// Apply the backend's optional inference rewrites (fusions); rewrites
  /// that do not change results (constant folding) always run.
  bool fuse = true;
  /// Each kernel's run() returns only once its work is done, so that the
  /// time around it is the op's (ExecutorOptions::timeOps); asynchronous
  /// devices otherwise return once the work is queued.
  bool synchronous = false;
};

/// The end of asynchronous device work; default-constructed: done.
class Completion {
public:
  Completion() = default;
  /// Completes when `pending` is ready; its string is empty on success,
  /// else the error.
  explicit Completion(std::shared_future<std::string> pending)
      : pending(std::move(pending)) {}
  /// Blocks until the work is done; its error, if it failed.
  llvm::Error wait() const;

private:
  std::shared_future<std::string> pending;
};

/// A copy under way: the destination tensor, allocated at once, whose
/// contents are valid once `done` completes.
struct Transfer {
  Tensor tensor;
  Completion done;
};

/// Which plan ops a rewrite may change: those of the backend making it.
using OpFilter = llvm::function_ref<bool(const plan::Op &)>;

class Backend {
public:
  virtual ~Backend();
  /// "cpu", "emulated:v100": for messages.
  virtual llvm::StringRef name() const = 0;
  /// The memory the backend's kernels read and write.
  virtual MemorySpace &memory() const = 0;
  virtual const KernelRegistry &kernels() const = 0;
  /// Whether the backend has a kernel for `op` (its type, and attributes
  /// some kernels take only some values of); Devices runs the ops a device
  /// backend does not support on the CPU.
  virtual bool supports(const plan::Op &op) const {
    return kernels().lookup(op.type()) != nullptr;
  }
  /// Creates the kernel for `info.op`, whose constants live in memory(); an
  /// unsupported op type is an error.
  llvm::Expected<std::unique_ptr<Kernel>> createKernel(const OpInfo &info);

  /// Rewrites the ops `mine` accepts before inference kernels are made
  /// (fusions); may add weights. Outputs stay the same up to rounding.
  virtual void rewriteForInference(plan::Plan &plan, WeightMap &weights,
                                   OpFilter mine) const {}
  /// The same before training kernels are made; `weights` are the initial
  /// values (patterns match their constants), which a rewrite never changes.
  virtual void rewriteForTraining(plan::Plan &plan, const WeightMap &weights,
                                  OpFilter mine) const {}
  /// The backend's training kernels.
  virtual llvm::Expected<std::unique_ptr<train::TrainBackend>>
  createTrainBackend(const train::TrainBackendOptions &options) const;

  /// Whether copy() moves tensors from `from` to `to`. Every backend copies
  /// between the host and memory(); some also between device spaces.
  virtual bool canCopy(const MemorySpace &from, const MemorySpace &to) const;
  /// Starts copying the plain tensor `src` into a new tensor in `to`.
  /// Asynchronous where the device allows: `src` must not change until
  /// the transfer completes.
  virtual llvm::Expected<Transfer> copy(const Tensor &src, MemorySpace &to) = 0;

  /// Called in a thread before it runs kernels (thread counts are set here).
  virtual void enterThread() {}
  /// Named counters for tests and reports (oneDNN's primitive caches...).
  virtual std::vector<std::pair<std::string, int64_t>> counters() const {
    return {};
  }
};

/// Makes a backend for the device type `deviceType` (a name from the
/// cluster spec, "" for the host's CPU).
using BackendFactory = std::function<llvm::Expected<std::unique_ptr<Backend>>(
    const BackendOptions &options, llvm::StringRef deviceType)>;

/// Registers the backend of device kind `kind`, replacing an earlier one.
void registerBackend(llvm::StringRef kind, BackendFactory factory);
/// The factory of `kind`, or null when no backend serves it.
const BackendFactory *findBackend(llvm::StringRef kind);
/// Sorted kinds that have a backend.
std::vector<std::string> backendKinds();

/// Defined in lib/Runtime/Backends/Builtin.cpp: registers the backends
/// built into the library (findBackend does it once, on first use).
void registerBuiltinBackends();

} // namespace heterps::runtime

#endif // HETERPS_RUNTIME_BACKEND_H
