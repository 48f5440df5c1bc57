//===- TensorWire.h - tensors in and out of messages ------------*- C++ -*-===//
//
// Internal to the distributed runtime. A tensor crosses a process boundary
// plain and on the host; what arrives is checked (type, shape, byte count)
// before it becomes a tensor, so a bad peer cannot make this process read
// past a buffer.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_RUNTIME_DISTRIBUTED_TENSORWIRE_H
#define HETERPS_LIB_RUNTIME_DISTRIBUTED_TENSORWIRE_H

#include "Services.pb.h"

#include "heterps/Runtime/Tensor.h"

namespace heterps::runtime::distributed {

/// Writes `t` (null allowed) into `out`.
llvm::Error toWire(const Tensor &t, TensorData &out);
/// The tensor `in` describes; an error for an unknown type, a negative
/// dimension or a byte count that does not match the shape.
llvm::Expected<Tensor> fromWire(const TensorData &in);

} // namespace heterps::runtime::distributed

#endif // HETERPS_LIB_RUNTIME_DISTRIBUTED_TENSORWIRE_H
