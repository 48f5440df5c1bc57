//===- BufferPool.h - reuse of large tensor buffers -------------*- C++ -*-===//
//
// Kernels allocate their outputs on every run. For large tensors the C
// library maps fresh pages from the kernel and unmaps them on free, so every
// run pays a page fault and a zero-fill per 4 KiB: at batch 16 that made
// MobileNetV2 eight times slower than its convolutions. The pool keeps freed
// buffers of at least kMinPooledBytes, by size, and hands them out again for
// the same size; a run of a model after the first allocates nothing large.
//
// Buffers are 64-byte aligned. At most capacity() bytes are kept free (a
// buffer freed beyond it goes back to the C library), so a process that
// changes shapes does not hoard memory without bound. Thread-safe.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_RUNTIME_BUFFERPOOL_H
#define HETERPS_RUNTIME_BUFFERPOOL_H

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace heterps::runtime {

class BufferPool {
public:
  /// Smaller buffers go straight to the C library, whose free lists serve
  /// them well.
  static constexpr size_t kMinPooledBytes = 64 * 1024;

  struct Stats {
    int64_t hits = 0, misses = 0;
    size_t cachedBytes = 0;
  };

  /// The process-wide pool that Tensor allocates from.
  static BufferPool &global();

  explicit BufferPool(size_t capacity = size_t(2) << 30);
  ~BufferPool();
  BufferPool(const BufferPool &) = delete;
  BufferPool &operator=(const BufferPool &) = delete;

  /// A 64-byte aligned buffer of at least `bytes` bytes (at least one),
  /// returned to the pool when the last owner drops it. The pool must
  /// outlive its buffers (the global one is never destroyed).
  std::shared_ptr<uint8_t> allocate(size_t bytes);

  size_t capacity() const { return capacity_; }
  /// Sets the most free bytes kept; frees cached buffers beyond it.
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
  Stats stats_;
  std::unordered_map<size_t, std::vector<uint8_t *>> free_; // by size
};

} // namespace heterps::runtime

#endif // HETERPS_RUNTIME_BUFFERPOOL_H
