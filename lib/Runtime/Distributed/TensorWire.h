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

#include <map>
#include <tuple>
#include <vector>

namespace heterps::runtime::distributed {

/// Writes `t` (null allowed) into `out`.
llvm::Error toWire(const Tensor &t, TensorData &out);
/// The tensor `in` describes; an error for an unknown type, a negative
/// dimension or a byte count that does not match the shape.
llvm::Expected<Tensor> fromWire(const TensorData &in);

/// The type and shape each slot of a stream last carried, on both ends of
/// the stream: a tensor whose metadata its slot already has goes without.
class StreamLayouts {
public:
  using Slot = std::tuple<int, int, int>;
  /// Sender: drops `data`'s type and shape when `slot` last carried them.
  void strip(Slot slot, TensorData &data);
  /// Receiver: puts them back; an error for a tensor without them in a
  /// slot that never had them.
  llvm::Error restore(Slot slot, TensorData &data);

private:
  std::map<Slot, std::pair<int32_t, std::vector<int64_t>>> last;
};

} // namespace heterps::runtime::distributed

#endif // HETERPS_LIB_RUNTIME_DISTRIBUTED_TENSORWIRE_H
