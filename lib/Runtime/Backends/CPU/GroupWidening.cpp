//===- GroupWidening.cpp - narrow groups run as whole-block ones ----------===//

#include "GroupWidening.h"

#include <algorithm>
#include <cstring>

using namespace heterps::runtime;
using namespace heterps::runtime::cpu;

int64_t cpu::groupWidening(int64_t groups, const Shape &weightShape,
                           int64_t mergedChannels) {
  if (groups <= 1 || weightShape.size() != 4)
    return 1;
  int64_t in = weightShape[1], out = weightShape[0] / groups;
  if (in <= 1 || in >= mergedChannels || out >= mergedChannels ||
      mergedChannels % in || mergedChannels % out)
    return 1;
  int64_t k = mergedChannels / std::max(in, out);
  return groups % k == 0 ? k : 1;
}

void cpu::mergeGroupDims(std::vector<int64_t> &groupedDims, int64_t k) {
  groupedDims[0] /= k;
  groupedDims[1] *= k;
  groupedDims[2] *= k;
}

/// Where output channel o's row of `row` weights sits in merged
/// [M, k * row / (kh kw), kh, kw] weights: in o's merged row, at its
/// group's place ((o / perGroup) % k) within the merged group.
static int64_t mergedOffset(int64_t o, int64_t perGroup, int64_t k,
                            int64_t row) {
  return (o * k + (o / perGroup) % k) * row;
}

Tensor cpu::widenGroupWeights(const Tensor &w, int64_t groups, int64_t k) {
  const Shape &s = w.shape();
  Tensor wide(DType::F32, {s[0], k * s[1], s[2], s[3]});
  std::fill_n(wide.data<float>(), wide.numElements(), 0.f);
  int64_t row = s[1] * s[2] * s[3];
  for (int64_t o = 0; o < s[0]; ++o)
    std::memcpy(wide.data<float>() + mergedOffset(o, s[0] / groups, k, row),
                w.data<float>() + o * row, row * sizeof(float));
  return wide;
}

Tensor cpu::narrowGroupWeights(const Tensor &wide, int64_t groups, int64_t k) {
  const Shape &s = wide.shape();
  Tensor narrow(DType::F32, {s[0], s[1] / k, s[2], s[3]});
  int64_t row = s[1] / k * s[2] * s[3];
  for (int64_t o = 0; o < s[0]; ++o)
    std::memcpy(narrow.data<float>() + o * row,
                wide.data<float>() + mergedOffset(o, s[0] / groups, k, row),
                row * sizeof(float));
  return narrow;
}
