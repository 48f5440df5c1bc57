//===- NarrowGroupConv.h - 3x3 convolutions in narrow groups ---*- C++ -*-===//
//
// Internal to the CPU backend: a 3x3 convolution, stride 1, padding 1,
// whose groups have 4 or 8 input channels and as many outputs (ResNeXt-50
// 32x4d's first two stages), in oneDNN's 16-channel blocks, with its
// backward-data and weight gradient for training. oneDNN 2.6 has no kernel
// for groups narrower than its block; merged into 16-channel groups
// (GroupWidening.h) they cost 4 or 2 times the multiply-adds, and ResNeXt-50's
// first stage trained at a quarter of the sgemm peak. Here one vector holds
// 4 or 2 whole groups: output lane o reads input channel
// (o's group, (o + r) mod width) from the input vector rotated by r within
// each group, one permute per rotation and input column, shared by the
// three output columns that read it, and the weights are packed per
// rotation, so every multiply-add is one of the convolution's.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_RUNTIME_BACKENDS_CPU_NARROWGROUPCONV_H
#define HETERPS_LIB_RUNTIME_BACKENDS_CPU_NARROWGROUPCONV_H

#include "heterps/Runtime/Tensor.h"

#include "ConvEpilogue.h"
#include "ConvGeometry.h"

namespace heterps::runtime::cpu {

/// NCHW sizes of the input, which the output shares, and the channels of
/// a group (4 or 8).
struct NarrowGroupShape {
  int64_t n, c, h, w, width;
};

/// Whether the kernels below run a convolution of `channels` channels in
/// groups of `width` on this CPU: width 4 or 8, whole groups (the last
/// 16-channel block may be padded with zeros past them), AVX-512.
bool narrowGroupConvRuns(int64_t channels, int64_t width);

/// Whether they run a convolution of geometry `geo` with weights
/// `weightShape` on `channels` input channels in `groups` groups: 3x3,
/// stride 1, padding 1, undilated, as many outputs as inputs, and
/// narrowGroupConvRuns.
bool narrowGroupConvTakes(const ConvGeometry &geo, const Shape &weightShape,
                          int64_t channels, int64_t groups);

/// Plain weights [C, width, 3, 3] as narrowGroupConv reads them: per
/// channel block, per tap, per rotation, 16 lanes. `backward` packs the
/// backward-data convolution's instead (each group's weights transposed,
/// the taps flipped), which narrowGroupConv runs on the output's gradient.
Tensor packNarrowGroupWeights(const Tensor &plain, int64_t width,
                              bool backward = false);

/// y = epilogue(conv(x, w) + bias), x and y in 16-channel blocks (nChw16c,
/// the padded lanes of x zero and of y written zero), `w` from
/// packNarrowGroupWeights, `bias` C floats or null; on the OpenMP threads.
void narrowGroupConv(const float *x, const float *w, const float *bias,
                     float *y, const NarrowGroupShape &shape,
                     ConvEpilogue epilogue);

/// The weight gradient dw ([C, width, 3, 3], plain) from the forward's
/// input `x` and the output's gradient `dy` (both nChw16c), and the bias
/// gradient db (C floats) when `db` is not null; on the OpenMP threads.
void narrowGroupWeightGrad(const float *x, const float *dy, float *dw,
                           float *db, const NarrowGroupShape &shape);

} // namespace heterps::runtime::cpu

#endif // HETERPS_LIB_RUNTIME_BACKENDS_CPU_NARROWGROUPCONV_H
