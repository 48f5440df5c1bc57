//===- NaNPassing.h - NaN through Relu, Clip and MaxPool --------*- C++ -*-===//
//
// oneDNN computes Relu, Clip and max pooling with max/min instructions that
// return the non-NaN operand, so a NaN input becomes 0 (or the window's
// other maximum). ONNX, PyTorch and ONNX Runtime pass NaN on. With
// BackendOptions::propagateNaN these kernels put the NaNs back after
// oneDNN has run (the executor turns it on only for inputs that hold NaN or
// infinities, so ordinary runs pay nothing).
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_RUNTIME_BACKENDS_CPU_NANPASSING_H
#define HETERPS_LIB_RUNTIME_BACKENDS_CPU_NANPASSING_H

#include "PoolGeometry.h"

namespace heterps::runtime::cpu {

/// For an element-wise result `y` of `x` in the same layout: y[i] = x[i]
/// wherever x[i] is NaN.
void restoreNaNs(const Tensor &x, Tensor &y);

/// For a max pooling `y` of `x` with window `g`: NaN in every output whose
/// window covers a NaN input. `y` keeps its buffer (it may be a part of a
/// Concat's output).
llvm::Error poolNaNs(const Tensor &x, Tensor &y, const PoolGeometry &g);

} // namespace heterps::runtime::cpu

#endif // HETERPS_LIB_RUNTIME_BACKENDS_CPU_NANPASSING_H
