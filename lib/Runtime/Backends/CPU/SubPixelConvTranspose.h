//===- SubPixelConvTranspose.h - ConvTranspose by output phases -*- C++ -*-===//
//
// A 2-D ConvTranspose of stride s writes each output position o from the
// kernel taps k = (o + pad) mod s, s apart: output phase by output phase
// it is a stride-1 convolution of the whole input by those taps, flipped.
// Run so, its s_h * s_w convolutions take oneDNN's forward kernels, which
// run near the sgemm peak where its deconvolution (a backward-data
// convolution, or a GEMM and col2im) reached 55% of it on a UNet's k4 s2
// upsampling; their outputs are interleaved into the result, in blocks of
// 16 channels (nChw16c), one 16-float copy per output position.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_RUNTIME_BACKENDS_CPU_SUBPIXELCONVTRANSPOSE_H
#define HETERPS_LIB_RUNTIME_BACKENDS_CPU_SUBPIXELCONVTRANSPOSE_H

#include "DnnlUtils.h"
#include "heterps/Runtime/OpGeometry.h"

#include <memory>
#include <vector>

namespace heterps::runtime::cpu {

class SubPixelConvTranspose {
public:
  /// The phases of a ConvTranspose of input `x` by ONNX weights `w`
  /// ([C, M, kh, kw], constant) and bias `b` (or null) in `window`; null
  /// where it has no such form: not 2-D, groups, dilations, a stride of 1,
  /// a kernel smaller than its stride (phases without taps) or a phase
  /// whose window would need negative padding.
  static std::unique_ptr<SubPixelConvTranspose>
  create(const CPUContextPtr &ctx, const Window &window, int64_t group,
         const Tensor &x, const Tensor &w, const Tensor *b);

  /// The ConvTranspose of `x` (of the shape it was created for), in
  /// nChw16c.
  Tensor run(const Tensor &x);

  /// One axis's phase: the outputs first, first + stride, ... (count of
  /// them) come from a stride-1 window of `taps` taps (residue, residue +
  /// stride, ... of the kernel, flipped) over the input padded by
  /// padBegin and padEnd.
  struct AxisPhase {
    int64_t first, count, residue, taps, padBegin, padEnd;
  };
  /// The phases of one axis (input `in`, output `out`, kernel `kernel`,
  /// `stride`, ConvTranspose's begin padding `pad`); empty where one
  /// needs negative padding or has no taps.
  static std::vector<AxisPhase> axisPhases(int64_t in, int64_t out,
                                           int64_t kernel, int64_t stride,
                                           int64_t pad);

private:
  struct Phase {
    AxisPhase rows, cols;
    dnnl::convolution_forward::primitive_desc pd;
    dnnl::convolution_forward primitive;
    /// The phase's taps in the primitive's layout.
    Tensor weights;
  };
  SubPixelConvTranspose(CPUContextPtr ctx) : ctx(std::move(ctx)) {}

  CPUContextPtr ctx;
  std::vector<Phase> phases;
  memory::desc srcMd;
  Shape outShape;
  int64_t strideH = 1, strideW = 1;
  Tensor bias;
};

} // namespace heterps::runtime::cpu

#endif // HETERPS_LIB_RUNTIME_BACKENDS_CPU_SUBPIXELCONVTRANSPOSE_H
