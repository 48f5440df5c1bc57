//===- WinogradConv.h - our own Winograd F(4x4, 3x3) convolution -*- C++
//-*-===//
//
// Internal to the CPU backend: a 3x3 stride-1 convolution by Winograd's
// F(4x4, 3x3) (Lavin and Gray, 2016) in oneDNN's 8-channel blocks
// (nChw8c), on AVX2 with FMA. oneDNN 2.6 has Winograd only with AVX-512;
// on AVX2 hosts its direct convolutions ran the 3x3 layers of ResNet and
// VGG at 80-130 GFLOP/s while ONNX Runtime's im2col + sgemm ran near the
// sgemm peak. Each 6x6 input tile, transformed, turns the convolution into
// 36 products of a (tiles x C) by a (C x K) matrix, 4x fewer
// multiplications than the direct algorithm. Transforms and products run
// one block of tiles at a time, so that the transformed tiles stay in
// cache between them. The transformed weights are 4x the plain ones: on
// small images with many channels (7x7 with 512) reading them costs more
// than the multiplications saved. ConvKernel.cpp offers it as an
// autotuning candidate: timing decides.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_RUNTIME_BACKENDS_CPU_WINOGRADCONV_H
#define HETERPS_LIB_RUNTIME_BACKENDS_CPU_WINOGRADCONV_H

#include "heterps/Runtime/Tensor.h"

#include "ConvEpilogue.h"

namespace heterps::runtime::cpu {

/// One convolution's sizes (NCHW; K output channels) and its leading pads;
/// the kernel is 3x3, the stride and dilation 1. `block`: the channels per
/// block of the input's and output's layout, 8 (nChw8c) or 16 (nChw16c:
/// the layout of its neighbours on AVX-512 hosts, so no reorders around
/// it and, at batch 1, a Concat's inputs computed in place; each
/// 16-channel block is two vectors). `groups`: c and k are per group, x
/// has c * groups channels and y k * groups, and each group, a whole
/// number of blocks, is a convolution of its own (RegNet's and ResNeXt's
/// 3x3 layers of 16- to 64-channel groups: 0.4-0.8 of oneDNN's direct
/// time on images of 14x14 and more).
struct WinogradShape {
  int64_t n, c, h, w, k, oh, ow, padTop, padLeft;
  int64_t block = 8;
  int64_t groups = 1;
};

/// Whether winogradConv runs on this CPU (AVX2 and FMA) for `c` input and
/// `k` output channels (whole blocks of `block`) and `epilogue` (any but
/// Swish).
bool winogradConvRuns(int64_t c, int64_t k, ConvEpilogue epilogue,
                      int64_t block = 8);

/// Whether winogradConv on the OpenMP threads takes chunks of tiles on all
/// threads at once (few tiles, many channels: the weights read once a
/// chunk) rather than a block of tiles a thread (each block reading all
/// the weights, its transforms in cache).
bool winogradChunked(const WinogradShape &shape);

/// Plain weights (K, C, 3, 3) transformed (G g G^T) as winogradConv reads
/// them: per tile position, per 16 output channels, per input channel, 16
/// lanes (those past K zero); on the OpenMP threads. With `groups`, the K
/// filters are that many groups' (ONNX's grouped weights) and each group's
/// are transformed in turn.
Tensor packWinogradWeights(const Tensor &plain, int64_t groups = 1);

/// The same for the convolution's backward-data, itself a 3x3 stride-1
/// convolution of the output gradient (K channels in, C out, per group)
/// with each filter turned by 180 degrees and pads 2 - pad.
Tensor packWinogradBackwardWeights(const Tensor &plain, int64_t groups = 1);

/// y = epilogue(conv(x, w) + bias), plus y's own values before the
/// epilogue when `accumulate` (a residual sum); x and y in blocks of
/// shape.block channels, `w` from packWinogradWeights, `bias` plain (K floats)
/// or null; on the OpenMP threads.
void winogradConv(const float *x, const float *w, const float *bias, float *y,
                  const WinogradShape &shape, ConvEpilogue epilogue,
                  bool accumulate);

/// The weight gradient of winogradConv's convolution of `shape` (no
/// epilogue): dw (K * groups, C, 3, 3) plain from its input x and output
/// gradient dy, both in blocks of shape.block channels, and the bias
/// gradient db (K * groups floats) unless null; on the OpenMP threads,
/// one group at a time. Per tile, the output gradient
/// transformed (A dy A^T) times the transformed input, summed over tiles
/// a block at a time, is the transformed weights' gradient; G^T of it G
/// the weights'. The sums' order depends on the shape only, not on the
/// threads.
void winogradWeightGradient(const float *x, const float *dy, float *dw,
                            float *db, const WinogradShape &shape);

} // namespace heterps::runtime::cpu

#endif // HETERPS_LIB_RUNTIME_BACKENDS_CPU_WINOGRADCONV_H
