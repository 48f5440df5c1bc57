//===- NpyFile.h - NumPy .npy tensors ---------------------------*- C++ -*-===//
//
// Reads version 1/2 .npy files holding little-endian, C-ordered float32
// ('<f4') or int64 ('<i8') arrays: what numpy.save writes for those dtypes.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_RUNTIME_NPYFILE_H
#define HETERPS_RUNTIME_NPYFILE_H

#include "heterps/Runtime/Tensor.h"

namespace heterps::runtime {

/// Reads a NumPy .npy file (float32 or int64, C or Fortran order).
llvm::Expected<Tensor> readNpyFile(llvm::StringRef path);
/// The same from the file's bytes; `name` prefixes error messages. Sizes are
/// checked against the data before anything is allocated.
llvm::Expected<Tensor> parseNpy(llvm::StringRef bytes, llvm::StringRef name);

} // namespace heterps::runtime

#endif // HETERPS_RUNTIME_NPYFILE_H
