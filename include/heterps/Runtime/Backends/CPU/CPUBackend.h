//===- CPUBackend.h - the oneDNN CPU backend --------------------*- C++ -*-===//
//
// Kernels on oneDNN primitives, created once per input shape and cached in
// the kernel. Activations may stay in oneDNN's blocked formats between
// kernels that accept them (convolution, pooling, normalisation,
// element-wise, same-shape binary ops, concat); other kernels and graph
// outputs get plain tensors. Its memory is the host's; its plan rewrites
// are the fusions of Fusion.h; its training kernels are in Train/.
//
// Threading: Debian's libdnnl uses the OpenMP runtime, so the thread count
// is OpenMP's, set per calling thread in `enterThread`.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_RUNTIME_BACKENDS_CPU_CPUBACKEND_H
#define HETERPS_RUNTIME_BACKENDS_CPU_CPUBACKEND_H

#include "heterps/Runtime/Backend.h"

namespace heterps::runtime {

namespace cpu {
struct CPUContext;
} // namespace cpu

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
  explicit CPUBackend(BackendOptions options = {});
  ~CPUBackend() override;

  llvm::StringRef name() const override { return "cpu"; }
  MemorySpace &memory() const override { return MemorySpace::host(); }
  const KernelRegistry &kernels() const override { return registry; }
  void rewriteForInference(plan::Plan &plan, WeightMap &weights,
                           OpFilter mine) const override;
  void rewriteForTraining(plan::Plan &plan, const WeightMap &weights,
                          OpFilter mine) const override;
  llvm::Expected<std::unique_ptr<train::TrainBackend>>
  createTrainBackend(const train::TrainBackendOptions &options) const override;
  llvm::Expected<Transfer> copy(const Tensor &src, MemorySpace &to) override;
  void enterThread() override;
  /// "primitives_created", "primitive_cache_hits", "joined_in_place".
  std::vector<std::pair<std::string, int64_t>> counters() const override;

  PrimitiveCacheStats cacheStats() const;

private:
  BackendOptions options;
  std::shared_ptr<cpu::CPUContext> context;
  KernelRegistry registry;
};

} // namespace heterps::runtime

#endif // HETERPS_RUNTIME_BACKENDS_CPU_CPUBACKEND_H
