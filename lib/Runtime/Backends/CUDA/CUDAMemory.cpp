//===- CUDAMemory.cpp - a GPU's memory, from a caching pool ---------------===//

#include "CUDAMemory.h"

#include "llvm/Support/raw_ostream.h"

#include <atomic>
#include <cstdlib>
#include <cuda_runtime.h>

using namespace heterps::runtime;
using namespace heterps::runtime::cuda;

/// Small buffers in steps of 512 bytes, large ones of 1 MiB, so that a
/// freed block fits the next request of about its size.
static size_t roundSize(size_t bytes) {
  size_t step = bytes < (size_t(1) << 20) ? 512 : (size_t(1) << 20);
  return (std::max<size_t>(bytes, 1) + step - 1) / step * step;
}

CUDAMemory &CUDAMemory::create(int device) {
  static std::atomic<int> created{0};
  int n = created++;
  std::string name = "cuda:" + std::to_string(device);
  if (n > 0)
    name += "." + std::to_string(n);
  // Never destroyed: tensors may outlive the backend that made them.
  return *new CUDAMemory(std::move(name), device);
}

CUDAMemory::CUDAMemory(std::string name, int device)
    : MemorySpace(std::move(name), /*hostAccessible=*/false), gpu(device) {}

std::shared_ptr<uint8_t> CUDAMemory::allocate(size_t bytes) {
  size_t size = roundSize(bytes);
  uint8_t *block = nullptr;
  {
    std::lock_guard lock(mutex);
    // The smallest free block that fits, unless it wastes more than half.
    auto it = freeBlocks.lower_bound(size);
    if (it != freeBlocks.end() && it->first <= 2 * size) {
      size = it->first;
      block = it->second;
      freeBlocks.erase(it);
      counts.cached -= size;
    }
  }
  if (!block) {
    cudaSetDevice(gpu);
    void *p = nullptr;
    if (cudaMalloc(&p, size) != cudaSuccess) {
      cudaGetLastError();
      releaseCached();
      if (cudaMalloc(&p, size) != cudaSuccess) {
        llvm::errs() << "heterps: error: " << name()
                     << " is out of memory: " << size << " bytes asked for, "
                     << stats().inUse << " in use\n";
        std::_Exit(1);
      }
    }
    block = static_cast<uint8_t *>(p);
    std::lock_guard lock(mutex);
    ++counts.mallocs;
  }
  {
    std::lock_guard lock(mutex);
    counts.inUse += size;
    counts.peak = std::max(counts.peak, counts.inUse);
  }
  return std::shared_ptr<uint8_t>(
      block, [this, size](uint8_t *b) { giveBack(b, size); });
}

void CUDAMemory::giveBack(uint8_t *block, size_t size) {
  std::lock_guard lock(mutex);
  counts.inUse -= size;
  counts.cached += size;
  freeBlocks.emplace(size, block);
}

void CUDAMemory::releaseCached() {
  std::multimap<size_t, uint8_t *> blocks;
  {
    std::lock_guard lock(mutex);
    blocks.swap(freeBlocks);
    counts.cached = 0;
  }
  if (blocks.empty())
    return;
  cudaSetDevice(gpu);
  // Work still queued may use them: the device finishes it first.
  cudaDeviceSynchronize();
  for (auto &[size, block] : blocks)
    cudaFree(block);
}

CUDAMemory::Stats CUDAMemory::stats() const {
  std::lock_guard lock(mutex);
  return counts;
}
