//===- ExternalData.h - ONNX tensors stored outside the model ---*- C++ -*-===//
//
// An initializer may keep its bytes in a file next to the model
// (external_data: location, offset, length). The importer and the runtime
// both read them through here, so that one rule applies: the location is a
// relative path that stays inside the model's folder (no "..", no absolute
// path, no symbolic link leading out), and offset and length are checked
// against the file and the tensor's size before anything is read.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_RUNTIME_EXTERNALDATA_H
#define HETERPS_RUNTIME_EXTERNALDATA_H

#include "llvm/Support/Error.h"

#include "onnx/onnx_pb.h"

#include <cstdint>
#include <string>

namespace heterps::runtime {

/// Where a tensor's external bytes are.
struct ExternalDataRef {
  /// The file, inside the model's folder.
  std::string path;
  uint64_t offset = 0;
  /// Bytes from `offset` on (the rest of the file when the tensor gives no
  /// length).
  uint64_t length = 0;
};

/// Resolves `tensor`'s external_data entries against `modelDir` and checks
/// them against the file's size; errors are one line naming the location.
llvm::Expected<ExternalDataRef>
resolveExternalData(const onnx::TensorProto &tensor, llvm::StringRef modelDir);

/// The `expectedBytes` bytes of `tensor`'s external data; an error, before
/// reading, when the stored length differs.
llvm::Expected<std::string> readExternalData(const onnx::TensorProto &tensor,
                                             llvm::StringRef modelDir,
                                             uint64_t expectedBytes);

} // namespace heterps::runtime

#endif // HETERPS_RUNTIME_EXTERNALDATA_H
