//===- MemorySpace.cpp - where a tensor's bytes live ----------------------===//

#include "heterps/Runtime/MemorySpace.h"
#include "heterps/Runtime/BufferPool.h"

#include "llvm/ADT/STLExtras.h"

#include <mutex>

using namespace heterps::runtime;

namespace {
/// The spaces that exist (all(); never destroyed, as spaces may outlive
/// static destruction).
struct Registry {
  std::mutex mutex;
  std::vector<MemorySpace *> spaces;
};
Registry &registry() {
  static Registry *r = new Registry();
  return *r;
}
} // namespace

MemorySpace::MemorySpace(std::string name, bool hostAccessible)
    : spaceName(std::move(name)), accessible(hostAccessible) {
  Registry &r = registry();
  std::lock_guard lock(r.mutex);
  r.spaces.push_back(this);
}

MemorySpace::~MemorySpace() {
  Registry &r = registry();
  std::lock_guard lock(r.mutex);
  llvm::erase(r.spaces, this);
}

std::vector<MemorySpace *> MemorySpace::all() {
  MemorySpace &first = host(); // created before any other is listed
  Registry &r = registry();
  std::lock_guard lock(r.mutex);
  std::vector<MemorySpace *> spaces{&first};
  for (MemorySpace *space : r.spaces)
    if (space != &first)
      spaces.push_back(space);
  return spaces;
}

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
