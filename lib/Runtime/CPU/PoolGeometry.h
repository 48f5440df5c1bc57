//===- PoolGeometry.h - ONNX pooling in oneDNN terms ------------*- C++ -*-===//
//
// Shared by the inference and the training pooling kernels: the ONNX
// attributes of MaxPool, AveragePool and their Global forms, and the output
// shape and oneDNN window (strides, kernel, dilations, pads) for an input.
// `ceil_mode` is resolved into extra end padding (a last window must start
// inside the input or its begin padding, as in ONNX Runtime).
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_RUNTIME_CPU_POOLGEOMETRY_H
#define HETERPS_LIB_RUNTIME_CPU_POOLGEOMETRY_H

#include "WindowAttrs.h"
#include "heterps/Runtime/Kernel.h"

#include "oneapi/dnnl/dnnl.hpp"

namespace heterps::runtime::cpu {

struct PoolParams : WindowAttrs {
  dnnl::algorithm algorithm;
  bool global = false;
  std::vector<int64_t> kernel;
  bool ceilMode = false;
};

/// The pooling op's attributes (arity checked too).
llvm::Expected<PoolParams> parsePoolParams(const OpInfo &info);

struct PoolGeometry {
  Shape outShape;
  dnnl::memory::dims strides, kernel, dilations, padL, padR;
};

/// The window of `params` over input `x` (rank 3 to 5).
llvm::Expected<PoolGeometry> poolGeometry(const PoolParams &params,
                                          const Tensor &x);

} // namespace heterps::runtime::cpu

#endif // HETERPS_LIB_RUNTIME_CPU_POOLGEOMETRY_H
