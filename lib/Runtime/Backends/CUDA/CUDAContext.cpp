//===- CUDAContext.cpp - what a CUDA backend's kernels share --------------===//

#include "CUDAContext.h"

#include <cstring>

using namespace heterps::runtime;
using namespace heterps::runtime::cuda;

llvm::Expected<std::shared_ptr<CUDAContext>>
CUDAContext::create(int device, bool autotune) {
  int count = 0;
  cudaError_t probe = cudaGetDeviceCount(&count);
  if (probe != cudaSuccess || count == 0) {
    cudaGetLastError();
    return cudaFailure(llvm::Twine("no CUDA device (") +
                       (probe == cudaSuccess
                            ? llvm::Twine("cudaGetDeviceCount found none")
                            : llvm::Twine("cudaGetDeviceCount: ") +
                                  cudaGetErrorString(probe)) +
                       ")");
  }
  if (device >= count)
    return cudaFailure("no CUDA device " + llvm::Twine(device) +
                       " (there are " + llvm::Twine(count) + ")");
  HPS_CUDA_CHECK(cudaSetDevice(device));
  std::shared_ptr<CUDAContext> ctx(
      new CUDAContext(device, autotune, CUDAMemory::create(device)));
  HPS_CUDA_CHECK(cudaStreamCreateWithFlags(&ctx->queue, cudaStreamNonBlocking));
  HPS_CUDA_CHECK(cudnnCreate(&ctx->dnn));
  HPS_CUDA_CHECK(cudnnSetStream(ctx->dnn, ctx->queue));
  HPS_CUDA_CHECK(cublasLtCreate(&ctx->blasLt));
  return ctx;
}

CUDAContext::~CUDAContext() {
  cudaSetDevice(gpu);
  if (queue)
    cudaStreamSynchronize(queue);
  for (Staging &s : stagings) {
    if (s.host)
      cudaFreeHost(s.host);
    if (s.free)
      cudaEventDestroy(s.free);
  }
  scratch.reset();
  if (blasLt)
    cublasLtDestroy(blasLt);
  if (dnn)
    cudnnDestroy(dnn);
  if (queue)
    cudaStreamDestroy(queue);
  space.releaseCached();
}

llvm::Expected<void *> CUDAContext::workspace(size_t bytes) {
  if (bytes == 0)
    return nullptr;
  if (bytes > scratchBytes) {
    // The old buffer goes back to the pool; stream order keeps work queued
    // on it safe.
    scratch = space.allocate(bytes);
    scratchBytes = bytes;
  }
  return scratch.get();
}

llvm::Expected<CUDAContext::Staging *> CUDAContext::staging(size_t bytes) {
  Staging &s = stagings[nextStaging];
  nextStaging = 1 - nextStaging;
  if (!s.free)
    HPS_CUDA_CHECK(cudaEventCreateWithFlags(&s.free, cudaEventDisableTiming));
  // The copy that last read this buffer must be done before it is refilled.
  HPS_CUDA_CHECK(cudaEventSynchronize(s.free));
  if (s.bytes < bytes) {
    if (s.host)
      HPS_CUDA_CHECK(cudaFreeHost(s.host));
    s.host = nullptr;
    s.bytes = 0;
    HPS_CUDA_CHECK(cudaMallocHost(&s.host, bytes));
    s.bytes = bytes;
  }
  return &s;
}

llvm::Error CUDAContext::toDevice(const void *host, void *device,
                                  size_t bytes) {
  if (bytes == 0)
    return llvm::Error::success();
  llvm::Expected<Staging *> s = staging(bytes);
  if (!s)
    return s.takeError();
  std::memcpy((*s)->host, host, bytes);
  HPS_CUDA_CHECK(cudaMemcpyAsync(device, (*s)->host, bytes,
                                 cudaMemcpyHostToDevice, queue));
  HPS_CUDA_CHECK(cudaEventRecord((*s)->free, queue));
  return llvm::Error::success();
}

llvm::Error CUDAContext::toHost(const void *device, void *host, size_t bytes) {
  if (bytes == 0)
    return synchronize();
  llvm::Expected<Staging *> s = staging(bytes);
  if (!s)
    return s.takeError();
  HPS_CUDA_CHECK(cudaMemcpyAsync((*s)->host, device, bytes,
                                 cudaMemcpyDeviceToHost, queue));
  HPS_CUDA_CHECK(cudaEventRecord((*s)->free, queue));
  HPS_CUDA_CHECK(cudaEventSynchronize((*s)->free));
  std::memcpy(host, (*s)->host, bytes);
  return llvm::Error::success();
}

llvm::Error CUDAContext::synchronize() {
  HPS_CUDA_CHECK(cudaStreamSynchronize(queue));
  return llvm::Error::success();
}

llvm::Error CUDAContext::launched(llvm::StringRef kernel) {
  cudaError_t s = cudaGetLastError();
  if (s != cudaSuccess)
    return statusError(s, kernel);
  return llvm::Error::success();
}
