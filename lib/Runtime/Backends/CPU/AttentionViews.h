//===- AttentionViews.h - attention operands through perms -----*- C++ -*-===//
//
// What the Attention kernels for inference (AttentionKernel.cpp) and
// training (Train/AttentionGrad.cpp) share: an operand read in place
// through a permutation of its axes instead of a transposed copy, and the
// softmax of one row of scores.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_RUNTIME_BACKENDS_CPU_ATTENTIONVIEWS_H
#define HETERPS_LIB_RUNTIME_BACKENDS_CPU_ATTENTIONVIEWS_H

#include "llvm/ADT/ArrayRef.h"

#include <array>
#include <cstdint>
#include <vector>

namespace heterps::runtime::cpu {

/// A tensor seen through a permutation of its axes: the permuted shape,
/// each permuted axis's stride in elements, and where element 0 is.
struct View {
  std::vector<int64_t> dims, strides;
  int64_t offset = 0;
};

/// The strides in elements of a plain tensor of `shape`.
inline std::vector<int64_t> plainStrides(llvm::ArrayRef<int64_t> shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int d = static_cast<int>(shape.size()) - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * shape[d + 1];
  return strides;
}

/// The plain tensor of `shape` seen through `perm` (a permutation).
inline View permuted(llvm::ArrayRef<int64_t> shape,
                     llvm::ArrayRef<int64_t> perm) {
  std::vector<int64_t> strides = plainStrides(shape);
  View v;
  for (int64_t p : perm) {
    v.dims.push_back(shape[p]);
    v.strides.push_back(strides[p]);
  }
  return v;
}

/// The stride of each axis of a result O in the plain tensor of `shape`
/// that holds transpose(O, perm): how a kernel writes O transposed (an
/// Attention's `out_perm`).
inline std::vector<int64_t> writtenStrides(llvm::ArrayRef<int64_t> shape,
                                           llvm::ArrayRef<int64_t> perm) {
  std::vector<int64_t> plain = plainStrides(shape), strides(shape.size());
  for (size_t i = 0; i < shape.size(); ++i)
    strides[perm[i]] = plain[i];
  return strides;
}

/// Where batch index `b` starts in each of N operands: b's position in
/// row-major order over the batch axes (all of `dims` but the last two),
/// times each operand's `strides` of those axes.
template <size_t N>
std::array<int64_t, N>
batchOffsets(int64_t b, llvm::ArrayRef<int64_t> dims,
             const std::array<llvm::ArrayRef<int64_t>, N> &strides) {
  std::array<int64_t, N> at{};
  for (int64_t i = static_cast<int64_t>(dims.size()) - 3; i >= 0; --i) {
    int64_t index = b % dims[i];
    b /= dims[i];
    for (size_t s = 0; s < N; ++s)
      at[s] += index * strides[s][i];
  }
  return at;
}

inline bool isPermutation(llvm::ArrayRef<int64_t> perm, size_t rank) {
  std::vector<bool> seen(rank, false);
  if (perm.size() != rank)
    return false;
  for (int64_t p : perm) {
    if (p < 0 || p >= static_cast<int64_t>(rank) || seen[p])
      return false;
    seen[p] = true;
  }
  return true;
}

/// Softmax of one row of `n` scores in place (n >= 1); vectorised for the
/// machine's widest vectors.
void softmaxRow(float *row, int64_t n);

} // namespace heterps::runtime::cpu

#endif // HETERPS_LIB_RUNTIME_BACKENDS_CPU_ATTENTIONVIEWS_H
