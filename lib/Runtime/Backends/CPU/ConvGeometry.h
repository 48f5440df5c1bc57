//===- ConvGeometry.h - a Conv's window in oneDNN terms ---------*- C++ -*-===//
//
// Shared by the inference and the training convolution kernels: the
// backend-neutral window (OpGeometry.h) as oneDNN takes it: dilations
// counted from 0, and grouped weights with a leading group dimension.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_RUNTIME_BACKENDS_CPU_CONVGEOMETRY_H
#define HETERPS_LIB_RUNTIME_BACKENDS_CPU_CONVGEOMETRY_H

#include "heterps/Runtime/OpGeometry.h"

#include "oneapi/dnnl/dnnl.hpp"

namespace heterps::runtime::cpu {

struct ConvGeometry {
  Shape outShape;
  dnnl::memory::dims strides, dilations, padL, padR, weightDims;
  /// A 2-D, ungrouped, undilated 3x3 convolution of stride 1: the shapes
  /// oneDNN's Winograd F(4x4, 3x3) algorithm may take. Winograd does 2-3x
  /// fewer multiplications there, at ~1e-6 relative difference from the
  /// direct algorithm.
  bool winogradShape = false;
  /// The same, grouped or not: what our own Winograd kernel takes
  /// (WinogradConv.h), one group at a time.
  bool winogradWindow = false;
};

/// The geometry of `attrs` for input `x` and weight `w` (ranks 3 to 5).
llvm::Expected<ConvGeometry> convGeometry(const ConvAttrs &attrs,
                                          const Tensor &x, const Tensor &w);

} // namespace heterps::runtime::cpu

#endif // HETERPS_LIB_RUNTIME_BACKENDS_CPU_CONVGEOMETRY_H
