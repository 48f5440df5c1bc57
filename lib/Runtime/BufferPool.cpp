//===- BufferPool.cpp - reuse of large tensor buffers ---------------------===//

#include "heterps/Runtime/BufferPool.h"
#include "heterps/Runtime/MemoryLimit.h"

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <new>

using namespace heterps::runtime;

BufferPool &BufferPool::global() {
  // Never destroyed: tensors in static storage may outlive it otherwise.
  static BufferPool *pool =
      new BufferPool(size_t(2) << 30, /*followPeak=*/true);
  return *pool;
}

BufferPool::BufferPool(size_t capacity, bool followPeak)
    : capacity_(capacity), peakLimit_(followPeak ? memoryLimitBytes() / 2 : 0) {
}

BufferPool::~BufferPool() {
  std::lock_guard<std::mutex> lock(mutex_);
  evict(0);
}

static uint8_t *alignedAlloc(size_t rounded) {
  // More than the process may use fails now rather than in the page faults
  // that overcommitted memory would take (the OOM killer, no message).
  if (rounded > (size_t(1) << 30) && rounded > memoryLimitBytes())
    throw std::bad_alloc();
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
  size_t size = rounded;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // The most recently freed buffer that fits without wasting more than
    // kMaxSlack times the request: likely still in cache.
    for (auto it = free_.rbegin(); it != free_.rend(); ++it)
      if (it->second >= rounded && it->second <= kMaxSlack * rounded) {
        buffer = it->first;
        size = it->second;
        free_.erase(std::next(it).base());
        stats_.cachedBytes -= size;
        ++stats_.hits;
        break;
      }
    if (!buffer)
      ++stats_.misses;
    stats_.inUseBytes += size;
    stats_.peakInUseBytes = std::max(stats_.peakInUseBytes, stats_.inUseBytes);
  }
  if (!buffer)
    buffer = alignedAlloc(rounded);
  return std::shared_ptr<uint8_t>(
      buffer, [this, size](uint8_t *p) { release(p, size); });
}

void BufferPool::release(uint8_t *buffer, size_t bytes) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stats_.inUseBytes -= bytes;
    size_t keep = std::max(capacity_,
                           std::min<size_t>(stats_.peakInUseBytes, peakLimit_));
    if (stats_.cachedBytes + bytes <= keep) {
      free_.push_back({buffer, bytes});
      stats_.cachedBytes += bytes;
      return;
    }
  }
  std::free(buffer);
}

void BufferPool::evict(size_t keep) {
  // The least recently freed first.
  size_t k = 0;
  for (; k < free_.size() && stats_.cachedBytes > keep; ++k) {
    std::free(free_[k].first);
    stats_.cachedBytes -= free_[k].second;
  }
  free_.erase(free_.begin(), free_.begin() + static_cast<ptrdiff_t>(k));
}

void BufferPool::setCapacity(size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  capacity_ = bytes;
  peakLimit_ = 0;
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
