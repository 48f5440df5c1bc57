//===- NonFinite.h - finding NaNs and infinities ----------------*- C++ -*-===//
//
// Training data and trained weights are checked for NaN and infinities, and
// the executor routes inputs that hold them to kernels that pass NaN on as
// ONNX does. The scan reads the data once; an integer test on the exponent
// bits vectorises where isfinite() would not.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_RUNTIME_NONFINITE_H
#define HETERPS_RUNTIME_NONFINITE_H

#include "heterps/Runtime/Tensor.h"

#include <cstdint>

namespace heterps::runtime {

/// The index of the first NaN or infinity among `n` floats, or -1.
int64_t findNonFinite(const float *data, int64_t n);

/// Whether f32 tensor `t` (in any layout: padding holds zeros) holds a NaN
/// or an infinity; false for other element types.
bool hasNonFinite(const Tensor &t);

/// Whether plain f32 tensor `t` holds infinities only (no NaN, nothing
/// finite): a fill value such as an attention mask's -inf, a constant of the
/// model that training neither updates nor checks.
bool isInfiniteFill(const Tensor &t);

} // namespace heterps::runtime

#endif // HETERPS_RUNTIME_NONFINITE_H
