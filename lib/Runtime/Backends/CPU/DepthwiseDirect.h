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

#include "ConvEpilogue.h"

namespace heterps::runtime::cpu {

/// oneDNN's channel block of 16, which our kernels compute a vector at a
/// time, and the blocks `channels` take (the last one padded).
constexpr int64_t kChannelBlock = 16;
inline int64_t channelBlocksOf(int64_t channels) {
  return (channels + kChannelBlock - 1) / kChannelBlock;
}

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
                     ConvEpilogue epilogue);

/// Output rows [ohBegin, ohEnd) of channel block `cb` of one item, on the
/// calling thread: `x` and `y` point at the block's first input and output
/// row (in 16-channel blocks, the block's plane; channels-last, its first
/// channel). Rows at or past s.h read as zeros, as the image's padding.
void depthwiseBlockRows(const float *x, const float *w, const float *bias,
                        float *y, const DepthwiseShape &s,
                        ConvEpilogue epilogue, int64_t cb, int64_t ohBegin,
                        int64_t ohEnd);

} // namespace heterps::runtime::cpu

#endif // HETERPS_LIB_RUNTIME_BACKENDS_CPU_DEPTHWISEDIRECT_H
