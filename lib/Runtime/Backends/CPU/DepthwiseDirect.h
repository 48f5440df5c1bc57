//===- DepthwiseDirect.h - our own depthwise convolution --------*- C++ -*-===//
//
// Internal to the CPU backend: a depthwise convolution (one filter per
// channel) in oneDNN's 16-channel blocks or channels-last, one AVX-512
// vector per position and 16 channels, the window's taps in registers as
// fused multiply-adds, the bias and the activation applied before the one
// store. Standalone depthwise convolutions are 12-20% of the MobileNets'
// and EfficientNets' time at batch 1; oneDNN 2.6's jit_dw and brdgmm_dw
// ran their shapes up to 1.8x slower than this (benchmarks/machine/
// depthwise.sh), though faster on 7x7 images. ConvKernel.cpp offers it as
// an autotuning candidate: timing decides.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_RUNTIME_BACKENDS_CPU_DEPTHWISEDIRECT_H
#define HETERPS_LIB_RUNTIME_BACKENDS_CPU_DEPTHWISEDIRECT_H

#include "heterps/Runtime/Tensor.h"

#include <dnnl.hpp>

#include <optional>

namespace heterps::runtime::cpu {

/// What follows the sum in registers. Each maps 0 to 0, so the padded
/// lanes of the last channel block stay 0, and each keeps NaN.
struct DepthwiseEpilogue {
  enum Kind { None, Relu, Clip, HardSwish, Swish } kind = None;
  /// Clip's bounds.
  float lo = 0, hi = 0;
};

/// The epilogue for a convolution's post-ops, if they are nothing or one
/// activation it has (ReLU, a clip whose range holds 0, HardSwish, Swish
/// as SwishVector.h computes it).
std::optional<DepthwiseEpilogue> depthwiseEpilogueOf(const dnnl::post_ops &ops);

/// The geometry of one depthwise convolution, NCHW sizes, and the layout
/// of its input and output: channels-last or 16-channel blocks.
struct DepthwiseShape {
  int64_t n, c, h, w, oh, ow;
  int64_t kernel, stride, padTop, padLeft;
  bool channelsLast;
};

/// Whether depthwiseDirect runs a square kernel of `kernel` taps with
/// `stride` on this CPU (3, 5 or 7 taps; stride 1 or 2; AVX-512).
bool depthwiseDirectRuns(int64_t kernel, int64_t stride);

/// Plain weights (C, 1, k, k) as depthwiseDirect reads them: per channel
/// block, per tap, 16 lanes, the lanes past C zero.
Tensor packDepthwiseWeights(const Tensor &plain);

/// y = epilogue(conv(x, w) + bias), x and y channels-last or in 16-channel
/// blocks (nChw16c, the last block padded with zeros), `w` from
/// packDepthwiseWeights, `bias` plain (C floats) or null; on the OpenMP
/// threads.
void depthwiseDirect(const float *x, const float *w, const float *bias,
                     float *y, const DepthwiseShape &shape,
                     DepthwiseEpilogue epilogue);

} // namespace heterps::runtime::cpu

#endif // HETERPS_LIB_RUNTIME_BACKENDS_CPU_DEPTHWISEDIRECT_H
