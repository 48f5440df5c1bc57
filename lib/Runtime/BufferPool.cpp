//===- BufferPool.cpp - reuse of large tensor buffers ---------------------===//

#include "heterps/Runtime/BufferPool.h"

#include <algorithm>
#include <cstdlib>
#include <new>

using namespace heterps::runtime;

BufferPool &BufferPool::global() {
  // Never destroyed: tensors in static storage may outlive it otherwise.
  static BufferPool *pool = new BufferPool();
  return *pool;
}

BufferPool::BufferPool(size_t capacity) : capacity_(capacity) {}

BufferPool::~BufferPool() {
  std::lock_guard<std::mutex> lock(mutex_);
  evict(0);
}

static uint8_t *alignedAlloc(size_t rounded) {
  void *p = std::aligned_alloc(64, rounded);
  if (!p)
    throw std::bad_alloc();
  return static_cast<uint8_t *>(p);
}

std::shared_ptr<uint8_t> BufferPool::allocate(size_t bytes) {
  size_t rounded = (std::max<size_t>(bytes, 1) + 63) / 64 * 64;
  if (rounded < kMinPooledBytes)
    return std::shared_ptr<uint8_t>(alignedAlloc(rounded), std::free);
  uint8_t *buffer = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = free_.find(rounded);
    if (it != free_.end() && !it->second.empty()) {
      buffer = it->second.back();
      it->second.pop_back();
      stats_.cachedBytes -= rounded;
      ++stats_.hits;
    } else {
      ++stats_.misses;
    }
  }
  if (!buffer)
    buffer = alignedAlloc(rounded);
  return std::shared_ptr<uint8_t>(
      buffer, [this, rounded](uint8_t *p) { release(p, rounded); });
}

void BufferPool::release(uint8_t *buffer, size_t bytes) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stats_.cachedBytes + bytes <= capacity_) {
      free_[bytes].push_back(buffer);
      stats_.cachedBytes += bytes;
      return;
    }
  }
  std::free(buffer);
}

void BufferPool::evict(size_t keep) {
  for (auto it = free_.begin(); it != free_.end() && stats_.cachedBytes > keep;
       ++it)
    while (!it->second.empty() && stats_.cachedBytes > keep) {
      std::free(it->second.back());
      it->second.pop_back();
      stats_.cachedBytes -= it->first;
    }
}

void BufferPool::setCapacity(size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  capacity_ = bytes;
  evict(bytes);
}

void BufferPool::trim() {
  std::lock_guard<std::mutex> lock(mutex_);
  evict(0);
}

BufferPool::Stats BufferPool::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}
