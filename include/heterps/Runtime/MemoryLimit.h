//===- MemoryLimit.h - sizes checked before they are allocated --*- C++ -*-===//
//
// Shapes and counts read from files (a .npy header, an IDX header, an ONNX
// initializer, a checkpoint) are checked here before any buffer of that size
// is allocated, so that a hostile or broken file gives one error line
// instead of an overflowed product, a failed allocation (abort) or the
// kernel's OOM killer.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_RUNTIME_MEMORYLIMIT_H
#define HETERPS_RUNTIME_MEMORYLIMIT_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/Error.h"

#include <cstdint>

namespace heterps::runtime {

/// The most bytes this process can hope to allocate: the smaller of the
/// machine's physical memory and the address-space and data limits
/// (ulimit -v, -d).
uint64_t memoryLimitBytes();

/// An error naming `what` when `bytes` exceeds memoryLimitBytes().
llvm::Error checkFitsInMemory(uint64_t bytes, const llvm::Twine &what);

/// The element count of `shape` times `elementBytes`, or an error when a
/// dimension is negative or the product overflows 63 bits.
llvm::Expected<uint64_t> checkedByteSize(llvm::ArrayRef<int64_t> shape,
                                         uint64_t elementBytes);

/// Runs `body`; a failed allocation in it (std::bad_alloc) becomes an
/// error instead of ending the process: a kernel whose output does not fit.
llvm::Error catchOutOfMemory(llvm::function_ref<llvm::Error()> body);

/// "1.5 GiB", "512 MiB", "12 KiB", "100 bytes".
std::string formatBytes(uint64_t bytes);

} // namespace heterps::runtime

#endif // HETERPS_RUNTIME_MEMORYLIMIT_H
