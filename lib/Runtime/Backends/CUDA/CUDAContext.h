//===- CUDAContext.h - what a CUDA backend's kernels share ------*- C++ -*-===//
//
// One per backend: its GPU, its stream (every kernel, library call and copy
// of the backend is queued on it, in order), cuDNN and cuBLASLt handles
// bound to that stream, one scratch workspace, the pinned host buffers that
// stage copies, and the backend's memory. Used by one thread at a time, as
// the backend's kernels are.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_RUNTIME_BACKENDS_CUDA_CUDACONTEXT_H
#define HETERPS_LIB_RUNTIME_BACKENDS_CUDA_CUDACONTEXT_H

#include "CUDAMemory.h"
#include "CUDAStatus.h"

#include "heterps/Runtime/Tensor.h"

#include <atomic>
#include <memory>

namespace heterps::runtime::cuda {

class CUDAContext {
public:
  /// A context on GPU `device`; an error when there is no such device.
  static llvm::Expected<std::shared_ptr<CUDAContext>> create(int device,
                                                             bool autotune);
  ~CUDAContext();
  CUDAContext(const CUDAContext &) = delete;
  CUDAContext &operator=(const CUDAContext &) = delete;

  int device() const { return gpu; }
  cudaStream_t stream() const { return queue; }
  cudnnHandle_t cudnn() const { return dnn; }
  cublasLtHandle_t lt() const { return blasLt; }
  CUDAMemory &memory() const { return space; }
  /// Whether kernels choose algorithms by timing them.
  bool autotune() const { return timed; }

  /// A new uninitialised tensor in this GPU's memory.
  Tensor make(DType type, Shape shape) const {
    return Tensor(type, std::move(shape), space);
  }
  /// Scratch memory of at least `bytes` for work queued next on the stream.
  llvm::Expected<void *> workspace(size_t bytes);

  /// Queues a copy of `bytes` host bytes to device memory; `host` may change
  /// once this returns (the bytes go through a pinned staging buffer).
  llvm::Error toDevice(const void *host, void *device, size_t bytes);
  /// Copies device bytes to the host once the work queued before is done.
  llvm::Error toHost(const void *device, void *host, size_t bytes);
  /// Waits for everything queued so far.
  llvm::Error synchronize();
  /// The error of the last kernel launch, if any.
  llvm::Error launched(llvm::StringRef kernel);

  /// Counters for reports: convolution algorithm searches, cuBLASLt plans.
  std::atomic<int64_t> convSearches{0}, matmulPlans{0};

private:
  CUDAContext(int device, bool autotune, CUDAMemory &space)
      : gpu(device), timed(autotune), space(space) {}

  /// A pinned buffer and the event that tells when the copy from it ended.
  struct Staging {
    void *host = nullptr;
    size_t bytes = 0;
    cudaEvent_t free = nullptr;
  };
  llvm::Expected<Staging *> staging(size_t bytes);

  int gpu;
  bool timed;
  CUDAMemory &space;
  cudaStream_t queue = nullptr;
  cudnnHandle_t dnn = nullptr;
  cublasLtHandle_t blasLt = nullptr;
  std::shared_ptr<uint8_t> scratch;
  size_t scratchBytes = 0;
  /// Two, used in turn, so that filling one overlaps the copy of the other.
  Staging stagings[2];
  int nextStaging = 0;
};

using CUDAContextPtr = std::shared_ptr<CUDAContext>;

/// The device address of a tensor in GPU memory.
template <typename T = void> T *devicePtr(const Tensor &t) {
  return static_cast<T *>(t.viewIn(MemorySpace::host()).rawData());
}

} // namespace heterps::runtime::cuda

#endif // HETERPS_LIB_RUNTIME_BACKENDS_CUDA_CUDACONTEXT_H
