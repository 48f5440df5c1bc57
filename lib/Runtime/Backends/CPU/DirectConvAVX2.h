//===- DirectConvAVX2.h - our own direct convolutions in blocks of 8 -*- C++
//-*-===//
//
// Internal to the CPU backend: two direct convolutions into oneDNN's
// 8-channel blocks (nChw8c) on AVX2 with FMA, where oneDNN 2.6's AVX2
// kernels fall behind ONNX Runtime's:
// - pointwiseConvAVX2, a 1x1 stride-1 unpadded convolution from blocks of
//   8. On small images at batch 1 (7x7 and 14x14, the last stages of
//   RegNet, ResNet, MnasNet) oneDNN's jit_1x1:avx2 ran 400 -> 400 channels
//   on 7x7 at 75-115 GFLOP/s from one run to the next.
// - stemConvAVX2, any kernel, stride and pads from a plain NCHW input of a
//   few channels: a network's first convolution, on the image. oneDNN
//   runs AlexNet's (11x11, stride 4, 3 -> 64 channels) as im2col and
//   sgemm at ~50 GFLOP/s, ONNX Runtime its direct kernel at ~105.
// Both keep a tile of 6 output pixels by 16 output channels in registers
// (12 accumulators) over all the taps, the panel's weights read from cache
// by every tile. ConvKernel.cpp offers each as an autotuning candidate:
// timing decides. (PointwiseDepthwise.h has the AVX-512 1x1 kernel in
// blocks of 16 that the squeeze-excitation kernel runs; pointwiseConvAVX2
// reads weights packed the same way.)
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_RUNTIME_BACKENDS_CPU_DIRECTCONVAVX2_H
#define HETERPS_LIB_RUNTIME_BACKENDS_CPU_DIRECTCONVAVX2_H

#include "heterps/Runtime/Tensor.h"

#include "ConvEpilogue.h"

namespace heterps::runtime::cpu {

/// Whether the kernels run on this CPU (AVX2 and FMA) for `k` output
/// channels (whole blocks of 8, at least one) and `epilogue` (any but
/// Swish).
bool directConvAVX2Runs(int64_t k, ConvEpilogue epilogue);

/// A 1x1 convolution's sizes: images, input and output channels, pixels
/// per image.
struct PointwiseShape {
  int64_t n, c, k, pixels;
};

/// y = epilogue(conv(x, w) + bias), plus y's own values before the
/// epilogue when `accumulate` (a residual sum); x and y in blocks of 8
/// channels (C a multiple of 8), `w` from packPointwiseWeights
/// (PointwiseDepthwise.h), `bias` plain (K floats) or null; on the OpenMP
/// threads. Each output's sum runs over the input channels in order,
/// whatever the threads.
void pointwiseConvAVX2(const float *x, const float *w, const float *bias,
                       float *y, const PointwiseShape &shape,
                       ConvEpilogue epilogue, bool accumulate);

/// A first convolution's sizes (NCHW in, K output channels, a KH x KW
/// kernel), its stride (both ways), leading pads and output image.
struct StemShape {
  int64_t n, c, h, w, k, kh, kw, stride, padTop, padLeft, oh, ow;
};

/// Whether stemConvAVX2 takes `c` input channels: a few, so that a
/// panel's weights (C x KH x KW x 16 floats) stay in the L1 cache.
bool stemConvAVX2Takes(int64_t c);

/// Plain weights (K, C, KH, KW) as stemConvAVX2 reads them: per panel of
/// 16 output channels, per input channel and tap, 16 lanes (those past K
/// zero).
Tensor packStemWeights(const Tensor &plain);

/// The same as pointwiseConvAVX2 for a first convolution: x plain NCHW,
/// y in blocks of 8 channels, `w` from packStemWeights.
void stemConvAVX2(const float *x, const float *w, const float *bias, float *y,
                  const StemShape &shape, ConvEpilogue epilogue,
                  bool accumulate);

} // namespace heterps::runtime::cpu

#endif // HETERPS_LIB_RUNTIME_BACKENDS_CPU_DIRECTCONVAVX2_H
