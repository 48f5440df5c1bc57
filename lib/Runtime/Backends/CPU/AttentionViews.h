//===- AttentionViews.h - attention's operands read through perms -*- C++
//-*-===//
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

#include <cstdint>
#include <vector>

namespace heterps::runtime::cpu {

/// A tensor seen through a permutation of its axes: the permuted shape,
/// each permuted axis's stride in elements, and where element 0 is.
struct View {
  std::vector<int64_t> dims, strides;
  int64_t offset = 0;
};

/// The plain tensor of `shape` seen through `perm` (a permutation).
inline View permuted(llvm::ArrayRef<int64_t> shape,
                     llvm::ArrayRef<int64_t> perm) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int d = static_cast<int>(shape.size()) - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * shape[d + 1];
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
  std::vector<int64_t> identity(shape.size());
  for (size_t d = 0; d < shape.size(); ++d)
    identity[d] = static_cast<int64_t>(d);
  View plain = permuted(shape, identity);
  std::vector<int64_t> strides(shape.size());
  for (size_t i = 0; i < shape.size(); ++i)
    strides[perm[i]] = plain.strides[i];
  return strides;
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
