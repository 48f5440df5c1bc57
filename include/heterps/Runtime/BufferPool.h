//===- BufferPool.h - reuse of large tensor buffers -------------*- C++ -*-===//
//
// Kernels allocate their outputs on every run. For large tensors the C
// library maps fresh pages from the kernel and unmaps them on free, so every
// run pays a page fault and a zero-fill per 4 KiB: at batch 16 that made
// MobileNetV2 eight times slower than its convolutions. The pool keeps freed
// buffers of at least kMinPooledBytes and hands out the most recently freed
// one that fits (at most kMaxSlack times the size asked for): a run of a
// model after the first allocates nothing large, and an output goes to
// memory that is likely still in cache. Reuse by exact size instead sent
// each op's output to the buffer of the same size from the previous run,
// long evicted: writing it cost a read from DRAM first (MaxPool at batch 1
// in GoogLeNet: 86 us in the network, 26 us on a cached buffer), and
// MobileNetV2 at batch 1 ran 7% slower.
//
// Buffers are 64-byte aligned. At most capacity() bytes are kept free (a
// buffer freed beyond it goes back to the C library), so a process that
// changes shapes does not hoard memory without bound. The global pool keeps
// more when the process has held more at once (up to half the memory
// limit): a training step frees its activations and allocates them again
// in the next step, and with 2 GiB kept EfficientNet-B0 at batch 32 spent
// 30% of its step zero-filling fresh pages. Thread-safe.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_RUNTIME_BUFFERPOOL_H
#define HETERPS_RUNTIME_BUFFERPOOL_H

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace heterps::runtime {

class BufferPool {
public:
  /// Smaller buffers go straight to the C library, whose free lists serve
  /// them well.
  static constexpr size_t kMinPooledBytes = 64 * 1024;
  /// A free buffer serves requests down to 1/kMaxSlack of its size.
  static constexpr size_t kMaxSlack = 2;

  struct Stats {
    int64_t hits = 0, misses = 0;
    size_t cachedBytes = 0;
    /// Pooled buffers handed out and not yet freed, now and at most.
    size_t inUseBytes = 0, peakInUseBytes = 0;
  };

  /// The process-wide pool that Tensor allocates from.
  static BufferPool &global();

  /// A pool keeping at most `capacity` bytes free or, when `followPeak`,
  /// as many as the most it has had in use at once, if more (at most half
  /// of memoryLimitBytes()).
  explicit BufferPool(size_t capacity = size_t(2) << 30,
                      bool followPeak = false);
  ~BufferPool();
  BufferPool(const BufferPool &) = delete;
  BufferPool &operator=(const BufferPool &) = delete;

  /// A 64-byte aligned buffer of at least `bytes` bytes (at least one),
  /// returned to the pool when the last owner drops it. The pool must
  /// outlive its buffers (the global one is never destroyed).
  std::shared_ptr<uint8_t> allocate(size_t bytes);

  size_t capacity() const { return capacity_; }
  /// Sets the most free bytes kept, peak or not; frees cached buffers
  /// beyond it.
  void setCapacity(size_t bytes);
  /// Frees every cached buffer.
  void trim();
  Stats stats() const;

private:
  void release(uint8_t *buffer, size_t bytes);
  /// Frees cached buffers until at most `keep` bytes are cached; the
  /// caller holds the mutex.
  void evict(size_t keep);

  mutable std::mutex mutex_;
  size_t capacity_;
  /// The most bytes kept following the peak (0: capacity_ only).
  size_t peakLimit_;
  Stats stats_;
  /// Free buffers and their sizes, the most recently freed last.
  std::vector<std::pair<uint8_t *, size_t>> free_;
};

} // namespace heterps::runtime

#endif // HETERPS_RUNTIME_BUFFERPOOL_H
