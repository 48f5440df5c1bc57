//===- MemoryLimit.cpp - sizes checked before they are allocated ----------===//

#include "heterps/Runtime/MemoryLimit.h"

#include "heterps/Runtime/Tensor.h"

#include "llvm/Support/FormatVariadic.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <limits>
#include <new>

using namespace heterps::runtime;

uint64_t heterps::runtime::memoryLimitBytes() {
  uint64_t limit = std::numeric_limits<uint64_t>::max();
  long pages = sysconf(_SC_PHYS_PAGES), pageSize = sysconf(_SC_PAGESIZE);
  if (pages > 0 && pageSize > 0)
    limit = uint64_t(pages) * uint64_t(pageSize);
  for (int resource : {RLIMIT_AS, RLIMIT_DATA}) {
    rlimit r;
    if (getrlimit(resource, &r) == 0 && r.rlim_cur != RLIM_INFINITY)
      limit = std::min<uint64_t>(limit, r.rlim_cur);
  }
  return limit;
}

std::string heterps::runtime::formatBytes(uint64_t bytes) {
  const char *units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024)
    return std::to_string(bytes) + " bytes";
  double value = double(bytes);
  int unit = -1;
  while (value >= 1024 && unit < 5) {
    value /= 1024;
    ++unit;
  }
  return llvm::formatv("{0:F1} {1}", value, units[unit]).str();
}

llvm::Error heterps::runtime::checkFitsInMemory(uint64_t bytes,
                                                const llvm::Twine &what) {
  uint64_t limit = memoryLimitBytes();
  if (bytes <= limit)
    return llvm::Error::success();
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 what + " needs " + formatBytes(bytes) +
                                     ", more than the " + formatBytes(limit) +
                                     " of memory this process may use");
}

llvm::Error
heterps::runtime::catchOutOfMemory(llvm::function_ref<llvm::Error()> body) {
  try {
    return body();
  } catch (const std::bad_alloc &) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "out of memory (this process may use " +
                                       formatBytes(memoryLimitBytes()) + ")");
  }
}

llvm::Expected<uint64_t>
heterps::runtime::checkedByteSize(llvm::ArrayRef<int64_t> shape,
                                  uint64_t elementBytes) {
  constexpr uint64_t kMax = uint64_t(std::numeric_limits<int64_t>::max());
  uint64_t bytes = elementBytes;
  bool overflow = false;
  for (int64_t d : shape) {
    if (d < 0)
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "shape " + shapeToString(shape) +
                                         " has a negative dimension");
    // Keep checking the other dimensions: a 0 makes the size 0.
    if (d != 0 && bytes > kMax / uint64_t(d))
      overflow = true;
    else
      bytes *= uint64_t(d);
  }
  if (bytes == 0)
    return 0;
  if (overflow)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "shape " + shapeToString(shape) +
                                       " has more elements than fit in 64 "
                                       "bits");
  return bytes;
}
