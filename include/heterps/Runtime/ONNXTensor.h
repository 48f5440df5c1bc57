//===- ONNXTensor.h - ONNX TensorProto <-> runtime tensors ------*- C++ -*-===//
//
// Weights come from an ONNX model's initializers, and `heterps-run` reads and
// writes inputs and outputs as TensorProto `.pb` files (the ONNX test-data
// format). Only the element types the runtime computes with are accepted:
// FLOAT and INT64 (INT32 is widened to INT64).
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_RUNTIME_ONNXTENSOR_H
#define HETERPS_RUNTIME_ONNXTENSOR_H

#include "heterps/Runtime/Tensor.h"

#include "onnx/onnx_pb.h"

namespace heterps::runtime {

/// Converts `proto`; external data is read relative to `modelDir`.
llvm::Expected<Tensor> tensorFromProto(const onnx::TensorProto &proto,
                                       llvm::StringRef modelDir);

/// A TensorProto named `name` holding `t` (as raw data).
llvm::Expected<onnx::TensorProto> tensorToProto(const Tensor &t,
                                                llvm::StringRef name);

/// Reads a serialised TensorProto file; errors name the file.
llvm::Expected<Tensor> readTensorFile(llvm::StringRef path,
                                      std::string *name = nullptr);
/// A serialised TensorProto from its bytes; `path` names it in messages and
/// its folder is where external data may be read from.
llvm::Expected<Tensor> parseTensorFile(llvm::StringRef bytes,
                                       llvm::StringRef path,
                                       std::string *name = nullptr);

/// Writes `t` as a serialised TensorProto named `name`.
llvm::Error writeTensorFile(const Tensor &t, llvm::StringRef name,
                            llvm::StringRef path);

} // namespace heterps::runtime

#endif // HETERPS_RUNTIME_ONNXTENSOR_H
