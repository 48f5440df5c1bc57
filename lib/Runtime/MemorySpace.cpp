//===- MemorySpace.cpp - where a tensor's bytes live ----------------------===//

#include "heterps/Runtime/MemorySpace.h"
#include "heterps/Runtime/BufferPool.h"

using namespace heterps::runtime;

MemorySpace::MemorySpace(std::string name, bool hostAccessible)
    : spaceName(std::move(name)), accessible(hostAccessible) {}

MemorySpace::~MemorySpace() = default;

namespace {
class HostMemory final : public MemorySpace {
public:
  HostMemory() : MemorySpace("host", /*hostAccessible=*/true) {}
  std::shared_ptr<uint8_t> allocate(size_t bytes) override {
    return BufferPool::global().allocate(bytes);
  }
};
} // namespace

MemorySpace &MemorySpace::host() {
  static HostMemory *space = new HostMemory(); // never destroyed, as the pool
  return *space;
}

void MemorySpace::recordTransfer(MemorySpace &from, MemorySpace &to,
                                 size_t bytes) {
  from.transfersOut.fetch_add(1, std::memory_order_relaxed);
  from.bytesOut.fetch_add(static_cast<int64_t>(bytes),
                          std::memory_order_relaxed);
  to.transfersIn.fetch_add(1, std::memory_order_relaxed);
  to.bytesIn.fetch_add(static_cast<int64_t>(bytes), std::memory_order_relaxed);
}

MemorySpace::TransferStats MemorySpace::transferStats() const {
  return {transfersIn.load(), transfersOut.load(), bytesIn.load(),
          bytesOut.load()};
}
