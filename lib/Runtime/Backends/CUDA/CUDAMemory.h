//===- CUDAMemory.h - a GPU's memory, from a caching pool -------*- C++ -*-===//
//
// One space per CUDA backend (each has its own stream): a freed buffer goes
// back to the space's pool and is handed out again without cudaMalloc. A
// buffer freed while kernels of the backend's stream may still use it is
// only ever reused by later work on that same stream, so stream order makes
// the reuse safe (the scheme PyTorch's caching allocator uses). Spaces live
// as long as the process; a backend that goes away gives its cached blocks
// back to the driver.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_RUNTIME_BACKENDS_CUDA_CUDAMEMORY_H
#define HETERPS_LIB_RUNTIME_BACKENDS_CUDA_CUDAMEMORY_H

#include "heterps/Runtime/MemorySpace.h"

#include <map>
#include <mutex>

namespace heterps::runtime::cuda {

class CUDAMemory final : public MemorySpace {
public:
  /// A new space on GPU `device` ("cuda:0", then "cuda:0.1", ...).
  static CUDAMemory &create(int device);

  /// From the pool, else cudaMalloc. Out of device memory (after giving the
  /// cached blocks back) the process stops with one line saying so.
  std::shared_ptr<uint8_t> allocate(size_t bytes) override;
  /// Frees the cached blocks no tensor holds.
  void releaseCached();

  int device() const { return gpu; }
  struct Stats {
    size_t inUse = 0, cached = 0, peak = 0;
    int64_t mallocs = 0;
  };
  Stats stats() const;

private:
  CUDAMemory(std::string name, int device);
  void giveBack(uint8_t *block, size_t size);

  int gpu;
  mutable std::mutex mutex;
  /// Free blocks by size.
  std::multimap<size_t, uint8_t *> freeBlocks;
  Stats counts;
};

} // namespace heterps::runtime::cuda

#endif // HETERPS_LIB_RUNTIME_BACKENDS_CUDA_CUDAMEMORY_H
