//===- CPUBackend.h - the oneDNN CPU backend --------------------*- C++ -*-===//
//
// Kernels on oneDNN primitives, created once per input shape and cached in
// the kernel. Activations may stay in oneDNN's blocked formats between
// kernels that accept them (convolution, pooling, normalisation,
// element-wise, same-shape binary ops, concat); other kernels and graph
// outputs get plain tensors.
//
// Threading: Debian's libdnnl uses the OpenMP runtime, so the thread count
// is OpenMP's, set per calling thread in `enterThread`.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_RUNTIME_CPU_CPUBACKEND_H
#define HETERPS_RUNTIME_CPU_CPUBACKEND_H

#include "heterps/Runtime/Kernel.h"

namespace heterps::runtime {

namespace cpu {
struct CPUContext;
} // namespace cpu

struct CPUBackendOptions {
  /// Threads per kernel; 0 keeps OpenMP's default (OMP_NUM_THREADS or all
  /// cores).
  int numThreads = 0;
  /// Choose between kernel algorithms by timing them on each shape (Conv:
  /// Winograd or direct). Faster, but the choice can differ between runs
  /// and with it the last bits of the results; false uses fixed rules only.
  bool autotune = true;
  /// Relu, Clip and MaxPool pass NaN on, as ONNX specifies, at the cost of
  /// a pass over their inputs (oneDNN turns NaN into 0 or drops it).
  bool propagateNaN = false;
};

/// Counters of the primitive caches of all kernels of one backend.
struct PrimitiveCacheStats {
  /// oneDNN primitives (and their descriptors) created.
  int64_t created = 0;
  /// Kernel runs that found their primitive in the cache.
  int64_t hits = 0;
  /// Concat inputs found computed in place in the Concat's output (not
  /// copied; see Kernel::joinDestinations).
  int64_t joinedInPlace = 0;
};

class CPUBackend : public Backend {
public:
  explicit CPUBackend(CPUBackendOptions options = {});
  ~CPUBackend() override;

  llvm::StringRef name() const override { return "cpu"; }
  const KernelRegistry &kernels() const override { return registry; }
  void enterThread() override;

  PrimitiveCacheStats cacheStats() const;

private:
  CPUBackendOptions options;
  std::shared_ptr<cpu::CPUContext> context;
  KernelRegistry registry;
};

} // namespace heterps::runtime

#endif // HETERPS_RUNTIME_CPU_CPUBACKEND_H
