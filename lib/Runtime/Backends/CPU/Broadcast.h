//===- Broadcast.h - loops over numpy-broadcast operands --------*- C++ -*-===//
//
// The element loops of kernels that read several operands broadcast to one
// output shape (Where, comparisons, Expand, integer arithmetic). The output
// is walked row by row (its last dimension); each operand advances by its
// own stride there, 0 when it is broadcast, so the inner loop is a plain one.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_RUNTIME_BACKENDS_CPU_BROADCAST_H
#define HETERPS_LIB_RUNTIME_BACKENDS_CPU_BROADCAST_H

#include "heterps/Runtime/Tensor.h"

#include "llvm/ADT/ArrayRef.h"

#include <array>

namespace heterps::runtime::cpu {

/// Numpy broadcast of any number of shapes, or an error naming them.
llvm::Expected<Shape> broadcastAll(llvm::ArrayRef<Shape> shapes);

/// Element strides of `shape` read as `out` (0 along broadcast dimensions),
/// one per dimension of `out`. `shape` must broadcast to `out`.
Shape broadcastStrides(llvm::ArrayRef<int64_t> shape,
                       llvm::ArrayRef<int64_t> out);

/// Calls `row(outOffset, offsets, length, steps)` for every row of `out`:
/// element `outOffset + j` of the output reads element `offsets[k] + j *
/// steps[k]` of operand k, for j < length.
template <size_t N, typename RowFn>
void forEachRow(llvm::ArrayRef<int64_t> out,
                const std::array<Shape, N> &operandShapes, RowFn row) {
  int64_t rank = out.size();
  if (numElements(out) == 0)
    return;
  std::array<Shape, N> strides;
  std::array<int64_t, N> steps{}, offsets{};
  for (size_t k = 0; k < N; ++k) {
    strides[k] = broadcastStrides(operandShapes[k], out);
    steps[k] = rank ? strides[k][rank - 1] : 0;
  }
  int64_t length = rank ? out[rank - 1] : 1;
  int64_t rows = numElements(out) / length;
  Shape index(rank > 0 ? rank - 1 : 0, 0);
  for (int64_t r = 0; r < rows; ++r) {
    row(r * length, offsets, length, steps);
    // Odometer over the leading dimensions, keeping the offsets in step.
    for (int64_t d = rank - 2; d >= 0; --d) {
      for (size_t k = 0; k < N; ++k)
        offsets[k] += strides[k][d];
      if (++index[d] < out[d])
        break;
      for (size_t k = 0; k < N; ++k)
        offsets[k] -= strides[k][d] * out[d];
      index[d] = 0;
    }
  }
}

} // namespace heterps::runtime::cpu

#endif // HETERPS_LIB_RUNTIME_BACKENDS_CPU_BROADCAST_H
