//===- PoolGeometry.h - a pooling window in oneDNN terms --------*- C++ -*-===//
//
// Shared by the inference and the training pooling kernels: the
// backend-neutral window (OpGeometry.h) as oneDNN takes it (dilations
// counted from 0), and the oneDNN algorithm of each kind of pooling.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_RUNTIME_BACKENDS_CPU_POOLGEOMETRY_H
#define HETERPS_LIB_RUNTIME_BACKENDS_CPU_POOLGEOMETRY_H

#include "heterps/Runtime/OpGeometry.h"

#include "oneapi/dnnl/dnnl.hpp"

namespace heterps::runtime::cpu {

struct PoolGeometry {
  Shape outShape;
  dnnl::memory::dims strides, kernel, dilations, padL, padR;
};

/// The window of `attrs` over input `x` (rank 3 to 5).
llvm::Expected<PoolGeometry> poolGeometry(const PoolAttrs &attrs,
                                          const Tensor &x);

/// oneDNN's pooling algorithm for `kind`.
dnnl::algorithm poolAlgorithm(PoolKind kind);

} // namespace heterps::runtime::cpu

#endif // HETERPS_LIB_RUNTIME_BACKENDS_CPU_POOLGEOMETRY_H
