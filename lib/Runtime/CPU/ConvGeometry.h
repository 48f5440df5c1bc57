//===- ConvGeometry.h - ONNX Conv in oneDNN terms ---------------*- C++ -*-===//
//
// Shared by the inference and the training convolution kernels: the ONNX
// attributes of Conv, and for an input and weight the output shape, the
// oneDNN window (strides, dilations counted from 0, pads) and the weight
// dims (grouped weights get a leading group dimension).
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_RUNTIME_CPU_CONVGEOMETRY_H
#define HETERPS_LIB_RUNTIME_CPU_CONVGEOMETRY_H

#include "WindowAttrs.h"
#include "heterps/Runtime/Kernel.h"

#include "oneapi/dnnl/dnnl.hpp"

namespace heterps::runtime::cpu {

struct ConvAttrs : WindowAttrs {
  int64_t group = 1;
};

/// Conv's strides, dilations, pads and group.
llvm::Expected<ConvAttrs> parseConvAttrs(const OpAttributes &attrs);

struct ConvGeometry {
  Shape outShape;
  dnnl::memory::dims strides, dilations, padL, padR, weightDims;
  /// A 2-D, ungrouped, undilated 3x3 convolution of stride 1: the shapes
  /// oneDNN's Winograd F(4x4, 3x3) algorithm may take. Winograd does 2-3x
  /// fewer multiplications there, at ~1e-6 relative difference from the
  /// direct algorithm.
  bool winogradShape = false;
};

/// The geometry of `attrs` for input `x` and weight `w` (ranks 3 to 5).
llvm::Expected<ConvGeometry> convGeometry(const ConvAttrs &attrs,
                                          const Tensor &x, const Tensor &w);

/// An error unless a Conv's summed fourth input has the output's shape.
llvm::Error checkSummedInput(const Tensor &addend, const Shape &outShape);

} // namespace heterps::runtime::cpu

#endif // HETERPS_LIB_RUNTIME_CPU_CONVGEOMETRY_H
