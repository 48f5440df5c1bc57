//===- PointwiseConvAVX2.h - our own 1x1 convolution in blocks of 8 -*- C++
//-*-===//
//
// Internal to the CPU backend: a 1x1 stride-1 unpadded convolution (a
// matrix product per image) in oneDNN's 8-channel blocks (nChw8c), on AVX2
// with FMA. On small images at batch 1 (7x7 and 14x14, the last stages of
// RegNet, ResNet, MnasNet) oneDNN 2.6's jit_1x1:avx2 ran 400 -> 400
// channels on 7x7 at some 75 GFLOP/s, ONNX Runtime's NCHWc kernel the
// same layer at ~110. Here each thread takes panels of 16 output channels
// and, per panel, every group of up to 6 pixels: 12 accumulators in
// registers over all input channels, the panel's weights read from cache
// by every group. ConvKernel.cpp offers it as an autotuning candidate:
// timing decides. (PointwiseDepthwise.h has the AVX-512 kernel in blocks
// of 16 that the squeeze-excitation kernel runs; this one reads weights
// packed the same way.)
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_RUNTIME_BACKENDS_CPU_POINTWISECONVAVX2_H
#define HETERPS_LIB_RUNTIME_BACKENDS_CPU_POINTWISECONVAVX2_H

#include "heterps/Runtime/Tensor.h"

#include "ConvEpilogue.h"

namespace heterps::runtime::cpu {

/// One convolution's sizes: images, input and output channels, pixels per
/// image.
struct PointwiseShape {
  int64_t n, c, k, pixels;
};

/// Whether pointwiseConvAVX2 runs on this CPU (AVX2 and FMA) for `c` input and
/// `k` output channels (whole blocks of 8) and `epilogue` (any but Swish).
bool pointwiseConvAVX2Runs(int64_t c, int64_t k, ConvEpilogue epilogue);

/// y = epilogue(conv(x, w) + bias), plus y's own values before the
/// epilogue when `accumulate` (a residual sum); x and y in blocks of 8
/// channels, `w` from packPointwiseWeights (PointwiseDepthwise.h), `bias` plain
/// (K floats) or null; on the OpenMP threads. Each output's sum runs over the
/// input channels in order, whatever the threads.
void pointwiseConvAVX2(const float *x, const float *w, const float *bias,
                       float *y, const PointwiseShape &shape,
                       ConvEpilogue epilogue, bool accumulate);

} // namespace heterps::runtime::cpu

#endif // HETERPS_LIB_RUNTIME_BACKENDS_CPU_POINTWISECONVAVX2_H
