//===- DepthwiseWeightGrad.h - a depthwise convolution's weight gradient -===//
//
// oneDNN 2.6 has a jit backward-weights kernel for depthwise convolutions
// of some windows only (3x3 in EfficientNet-B0); for the others (5x5) it
// falls back to a gemm over plain tensors, 15-100 ms a layer at batch 32
// plus the reorders to plain and back, a fifth of the network's step.
// This is the direct sum in the channel-blocked layout the forward runs
// in, a vector of channels at a time.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_RUNTIME_BACKENDS_CPU_TRAIN_DEPTHWISEWEIGHTGRAD_H
#define HETERPS_LIB_RUNTIME_BACKENDS_CPU_TRAIN_DEPTHWISEWEIGHTGRAD_H

#include <cstdint>

namespace heterps::runtime::train {

/// A 2-D depthwise convolution: `channels` groups of one channel each.
struct DepthwiseWindow {
  int64_t items, channels, inH, inW, outH, outW, kernelH, kernelW;
  int64_t strideH, strideW, padH, padW, dilationH, dilationW; // dilation >= 1
};

/// dw[c][kh][kw] (plain [C, 1, KH, KW]) and, when `db` is not null, db[c],
/// from the source `x` and the output gradient `dy`, both in the layout
/// [N][C / block][H][W][block] (block 1: plain NCHW; padded channels
/// ignored).
void depthwiseWeightGrad(const DepthwiseWindow &window, int64_t block,
                         const float *x, const float *dy, float *dw, float *db);

} // namespace heterps::runtime::train

#endif // HETERPS_LIB_RUNTIME_BACKENDS_CPU_TRAIN_DEPTHWISEWEIGHTGRAD_H
