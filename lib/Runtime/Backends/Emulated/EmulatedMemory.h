//===- EmulatedMemory.h - the emulated device's memory ----------*- C++ -*-===//
//
// Host RAM underneath, but a space of its own: host code may not address
// it (MemorySpace::hostAccessible is false), and it has its own buffer
// pool. One per emulated device type, for the life of the process.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_RUNTIME_BACKENDS_EMULATED_EMULATEDMEMORY_H
#define HETERPS_LIB_RUNTIME_BACKENDS_EMULATED_EMULATEDMEMORY_H

#include "heterps/Runtime/BufferPool.h"
#include "heterps/Runtime/MemorySpace.h"

#include "llvm/ADT/StringRef.h"

namespace heterps::runtime::emulated {

class EmulatedMemory final : public MemorySpace {
public:
  /// The memory of device type `deviceType` ("emulated:<type>").
  static EmulatedMemory &forDevice(llvm::StringRef deviceType);

  std::shared_ptr<uint8_t> allocate(size_t bytes) override {
    return pool.allocate(bytes);
  }

private:
  explicit EmulatedMemory(std::string name)
      : MemorySpace(std::move(name), /*hostAccessible=*/false),
        pool(size_t(1) << 30) {}

  BufferPool pool;
};

} // namespace heterps::runtime::emulated

#endif // HETERPS_LIB_RUNTIME_BACKENDS_EMULATED_EMULATEDMEMORY_H
