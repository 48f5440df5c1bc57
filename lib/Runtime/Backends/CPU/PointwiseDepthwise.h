//===- PointwiseDepthwise.h - 1x1 conv and depthwise conv as one -*- C++
//-*-===//
//
// Internal to the CPU backend: the inverted-residual pair of the MobileNets,
// MnasNet and the EfficientNets (a 1x1 convolution widening the channels,
// then a depthwise one) as one kernel that never writes the wide tensor to
// memory. Each thread computes a few rows of the 1x1 convolution into a
// buffer that stays in its L2 cache and runs the depthwise rows that read
// them (DepthwiseDirect.h) before computing more, keeping the rows the
// next depthwise rows share. At 112x112 and 56x56 the wide tensor (1.8 to
// 4.8 MB at batch 1) does not fit in L2, and the pair apart ran 1.1-1.6x
// slower than this (benchmarks/machine/pointwise-depthwise.sh).
// DepthwiseFusedConvKernel.cpp offers it as an autotuning candidate.
//
// Layout: input and output in oneDNN's 16-channel blocks (nChw16c, the last
// block padded with zeros); AVX-512.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_RUNTIME_BACKENDS_CPU_POINTWISEDEPTHWISE_H
#define HETERPS_LIB_RUNTIME_BACKENDS_CPU_POINTWISEDEPTHWISE_H

#include "ConvEpilogue.h"

#include "heterps/Runtime/Tensor.h"

namespace heterps::runtime::cpu {

/// The pair's sizes: the 1x1 convolution's input (n, c, h, w) and output
/// channels m; the depthwise convolution's square kernel, stride and pads
/// (`pad` on every side) and output image (oh, ow).
struct PointwiseDepthwiseShape {
  int64_t n, c, m, h, w;
  int64_t kernel, stride, pad;
  int64_t oh, ow;
};

/// The shape for input `x` (NCHW), `m` wide channels and a `kernel` x
/// `kernel` depthwise window at `stride`, padded by kernel / 2.
PointwiseDepthwiseShape pointwiseDepthwiseShapeOf(const Shape &x, int64_t m,
                                                  int64_t kernel,
                                                  int64_t stride);

/// Plain 1x1 weights (M, C, 1, 1) as pointwiseDepthwise reads them: per
/// 16-output-channel block, per input channel (C rounded up to 16), 16
/// lanes; zeros past M and C.
Tensor packPointwiseWeights(const Tensor &plain);

/// packPointwiseWeights of plain (M, C) weights whose input channel k is
/// scaled by scale[k], into `packed` (as many floats as that returns).
void packScaledPointwiseWeights(const float *plain, const float *scale,
                                int64_t m, int64_t c, float *packed);

/// Whether pointwiseConv and pointwiseDepthwise's 1x1 tiles run here
/// (AVX-512).
bool pointwiseRuns();

/// One item's 1x1 convolution, x, y and `addend` (null for none) in
/// 16-channel blocks of `positions` pixels: y = epilogue(conv1x1(x, w) +
/// bias + addend), `c` input and `m` output channels, `w` and `bias`
/// packed as above; on the OpenMP threads, or on the calling one when
/// `parallel` is false.
void pointwiseConv(const float *x, int64_t c, const float *w, const float *bias,
                   int64_t m, int64_t positions, const float *addend,
                   ConvEpilogue epilogue, float *y, bool parallel = true);

/// Plain bias (M floats, or null for none) rounded up to 16 with zeros.
Tensor packPointwiseBias(const Tensor *plain, int64_t m);

/// A third convolution, 1x1, after the depthwise one (the block's
/// projection back to its narrow width): weights and bias packed as above,
/// `addend` (the residual, in y's layout) or null added before the
/// epilogue.
struct Projection {
  int64_t channels;
  const float *weights, *bias, *addend;
  ConvEpilogue epilogue;
};

/// y = dwEpilogue(dwconv(pwEpilogue(conv1x1(x, pw) + pwBias), dw) + dwBias),
/// or with a projection its 1x1 convolution of that, plus the addend, then
/// its epilogue; x and y in 16-channel blocks; `pw` and `pwBias` packed as
/// above, `dw` by packDepthwiseWeights, `dwBias` plain (M floats) or null;
/// on the OpenMP threads. Runs where depthwiseDirectRuns(kernel, stride)
/// holds.
void pointwiseDepthwise(const float *x, const float *pw, const float *pwBias,
                        ConvEpilogue pwEpilogue, const float *dw,
                        const float *dwBias, ConvEpilogue dwEpilogue, float *y,
                        const PointwiseDepthwiseShape &shape,
                        const Projection *projection = nullptr);

} // namespace heterps::runtime::cpu

#endif // HETERPS_LIB_RUNTIME_BACKENDS_CPU_POINTWISEDEPTHWISE_H
