//===- Broadcast.h - loops over numpy-broadcast operands --------*- C++ -*-===//
//
// The element loops of kernels that read several operands broadcast to one
// output shape (Where, comparisons, Expand, integer arithmetic). The output
// is walked row by row (its last dimension); each operand advances by its
// own stride there, 0 when it is broadcast, so the inner loop is a plain one.
// forEachMergedRow does the same in parallel over merged axes.
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

/// Like forEachRow, in parallel, over longer rows: axes along which every
/// operand steps alike are merged first (a bias over the last axis of
/// [N, H, W, C] gives rows of C; a per-channel scale of [N, C, H, W] rows
/// of H * W), so `steps[k]` is 0 or 1. `row` is called from several
/// threads at once.
template <size_t N, typename RowFn>
void forEachMergedRow(llvm::ArrayRef<int64_t> out,
                      const std::array<Shape, N> &operandShapes, RowFn row) {
  int64_t n = numElements(out);
  if (n == 0)
    return;
  std::array<Shape, N> strides, merged;
  for (size_t k = 0; k < N; ++k)
    strides[k] = broadcastStrides(operandShapes[k], out);
  Shape dims; // merged, outermost first, without those of size 1
  for (size_t d = 0; d < out.size(); ++d) {
    if (out[d] == 1)
      continue;
    bool alike = !dims.empty();
    for (size_t k = 0; k < N && alike; ++k)
      alike = merged[k].back() == strides[k][d] * out[d];
    if (!alike) {
      dims.push_back(out[d]);
      for (size_t k = 0; k < N; ++k)
        merged[k].push_back(strides[k][d]);
      continue;
    }
    dims.back() *= out[d];
    for (size_t k = 0; k < N; ++k)
      merged[k].back() = strides[k][d];
  }
  if (dims.empty()) {
    dims = {1};
    for (size_t k = 0; k < N; ++k)
      merged[k] = {0};
  }
  int64_t length = dims.back(), rows = n / length;
  int64_t outer = static_cast<int64_t>(dims.size()) - 1;
  std::array<int64_t, N> steps;
  for (size_t k = 0; k < N; ++k)
    steps[k] = merged[k].back();
#pragma omp parallel for schedule(static) if (n > 32768)
  for (int64_t r = 0; r < rows; ++r) {
    std::array<int64_t, N> offsets{};
    for (int64_t d = outer - 1, rest = r; d >= 0; --d) {
      int64_t i = rest % dims[d];
      rest /= dims[d];
      for (size_t k = 0; k < N; ++k)
        offsets[k] += i * merged[k][d];
    }
    row(r * length, offsets, length, steps);
  }
}

} // namespace heterps::runtime::cpu

#endif // HETERPS_LIB_RUNTIME_BACKENDS_CPU_BROADCAST_H
