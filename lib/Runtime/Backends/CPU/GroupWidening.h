//===- GroupWidening.h - narrow groups run as whole-block ones --*- C++ -*-===//
//
// oneDNN 2.6 has fast grouped convolutions only where a group spans a
// whole channel block: with 4 channels a group (ResNeXt-50's first stage)
// its backward-weights pass is the gemm fallback at about 20 GFLOP/s, the
// forward and backward-data passes want the activations reordered into
// 4-channel blocks and back, and on AVX2 hosts even the forward is the
// gemm fallback. Merging k neighbouring groups into one of 16 (or, in the
// AVX2 kernels' blocks, 8) channels, whose weights are the k groups'
// weights on the diagonal and zeros elsewhere, gives the same outputs with
// the jit kernels and the network's blocked format, at k times the
// multiplications;
// the weight gradient is the merged one's diagonal blocks. A non-finite
// input would reach the neighbouring groups' outputs through the zeros
// (0 * inf is NaN): inference keeps the groups apart for inputs that hold
// NaN or infinities (BackendOptions::propagateNaN); a training step with
// them is lost either way.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_RUNTIME_BACKENDS_CPU_GROUPWIDENING_H
#define HETERPS_LIB_RUNTIME_BACKENDS_CPU_GROUPWIDENING_H

#include "heterps/Runtime/Tensor.h"

#include <cstdint>
#include <vector>

namespace heterps::runtime::cpu {

/// How many neighbouring groups of a 2-D convolution with `groups` groups
/// and weights `weightShape` ([M, C/groups, kh, kw]) to merge into groups
/// of `mergedChannels` channels: 1 (none) unless a group's input and
/// output channel counts both divide `mergedChannels` (and are less), and
/// `mergedChannels` / (the larger) groups divide `groups`. Depthwise
/// convolutions (one input channel a group) stay: 8 or 16 times the work.
int64_t groupWidening(int64_t groups, const Shape &weightShape,
                      int64_t mergedChannels);

/// Grouped weight dimensions (G, M/G, C/G, kh, kw) as the merged
/// convolution's (G/k, k M/G, k C/G, kh, kw).
void mergeGroupDims(std::vector<int64_t> &groupedDims, int64_t k);

/// Plain weights [M, C/groups, kh, kw] as the merged convolution's
/// [M, k * C/groups, kh, kw]: each output channel's weights at its group's
/// place within the merged group, zeros elsewhere.
Tensor widenGroupWeights(const Tensor &w, int64_t groups, int64_t k);

/// The inverse: the diagonal blocks of merged plain weights (or their
/// gradient) `wide` as [M, C/groups, kh, kw].
Tensor narrowGroupWeights(const Tensor &wide, int64_t groups, int64_t k);

} // namespace heterps::runtime::cpu

#endif // HETERPS_LIB_RUNTIME_BACKENDS_CPU_GROUPWIDENING_H
