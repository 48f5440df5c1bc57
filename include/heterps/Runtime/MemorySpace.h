//===- MemorySpace.h - where a tensor's bytes live --------------*- C++ -*-===//
//
// Every tensor lives in one memory space: the host's, or a device's. A
// backend that has memory of its own (a GPU, the emulated device) makes a
// space for it; the core never reads a device space's bytes and moves them
// only through the owning backend's transfers (Backend::copy). Host code
// that touches a tensor of a space the host cannot address stops the
// process with a message naming the tensor and the space: a missing
// transfer is a bug to see at once, not wrong numbers.
//
// Each space counts the transfers into and out of it, for tests and
// reports. Spaces live as long as the process.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_RUNTIME_MEMORYSPACE_H
#define HETERPS_RUNTIME_MEMORYSPACE_H

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace heterps::runtime {

class MemorySpace {
public:
  /// Transfers into and out of a space, and their bytes.
  struct TransferStats {
    int64_t in = 0, out = 0, bytesIn = 0, bytesOut = 0;
  };

  MemorySpace(std::string name, bool hostAccessible);
  virtual ~MemorySpace();
  MemorySpace(const MemorySpace &) = delete;
  MemorySpace &operator=(const MemorySpace &) = delete;

  /// The host's memory (BufferPool::global()).
  static MemorySpace &host();
  /// Every space that exists, the host's first, then in order of creation.
  static std::vector<MemorySpace *> all();

  /// "host", "emulated:v100", "cuda:0".
  const std::string &name() const { return spaceName; }
  bool isHost() const { return this == &host(); }
  /// Whether host code may read and write the buffers directly.
  bool hostAccessible() const { return accessible; }

  /// A 64-byte aligned buffer of at least `bytes` bytes (at least one),
  /// freed back to this space when its last owner drops it.
  virtual std::shared_ptr<uint8_t> allocate(size_t bytes) = 0;

  /// Counts one transfer of `bytes` from `from` to `to`.
  static void recordTransfer(MemorySpace &from, MemorySpace &to, size_t bytes);
  TransferStats transferStats() const;

private:
  std::string spaceName;
  bool accessible;
  std::atomic<int64_t> transfersIn{0}, transfersOut{0}, bytesIn{0}, bytesOut{0};
};

} // namespace heterps::runtime

#endif // HETERPS_RUNTIME_MEMORYSPACE_H
