//===- ResizeGeometry.h - Resize as passes, one per dimension ---*- C++ -*-===//
//
// Internal to the CPU backend: ONNX Resize (ResizeKernel.cpp) and its
// backward (Train/ResizeGrad.cpp) share how a run resamples its input.
// Each output index of a dimension maps to an input coordinate (by the
// coordinate transformation mode) and reads a few input indices with
// weights: one for nearest, two for linear, four for cubic, clamped to the
// input's edge as ONNX's reference pads it. Interpolating in every
// dimension at once is the product of these 1-D weights, so a run is one
// pass per dimension, innermost first (the reference's order), leaving
// out dimensions that map each index to itself; the backward applies the
// passes' transposes in the reverse order.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_RUNTIME_BACKENDS_CPU_RESIZEGEOMETRY_H
#define HETERPS_LIB_RUNTIME_BACKENDS_CPU_RESIZEGEOMETRY_H

#include "heterps/Runtime/Kernel.h"
#include "heterps/Runtime/Tensor.h"

#include <vector>

namespace heterps::runtime::cpu {

enum class ResizeMode { Nearest, Linear, Cubic };
enum class ResizeTransform {
  HalfPixel,
  HalfPixelSymmetric,
  PytorchHalfPixel,
  AlignCorners,
  Asymmetric,
  CropAndResize,
  TFHalfPixelForNN
};
enum class ResizeRounding { PreferFloor, PreferCeil, Floor, Ceil };

/// The op's attributes (hps.resize's; scales, sizes and roi empty for
/// hps.dynamic_resize, whose inputs give them).
struct ResizeParams {
  ResizeMode mode;
  ResizeTransform transform;
  ResizeRounding rounding;
  float cubicA, extrapolation;
  bool excludeOutside;
  std::vector<float> scales, roi;
  std::vector<int64_t> sizes;
};

/// The attributes of a Resize op of a plan, checked.
llvm::Expected<ResizeParams> resizeParamsOf(const OpInfo &info);

/// One dimension's resampling: output index o reads input indices
/// index[o * taps + t] with weight[o * taps + t], or is the extrapolation
/// value where `outside[o]`; the tensor is [outer, in, inner] before and
/// [outer, out, inner] after.
struct ResizePass {
  int64_t taps = 1;
  std::vector<int64_t> index;
  std::vector<float> weight;
  std::vector<bool> outside;
  int64_t outer = 1, in = 0, out = 0, inner = 1;
  /// The tensor's shape after the pass.
  Shape after;
};

/// The passes of one run on `inputs` (x, then the scales or sizes and the
/// roi when given at run time), innermost dimension first; `outShape` is
/// set to the output's shape, which must fit in memory.
llvm::Expected<std::vector<ResizePass>>
resizePasses(const ResizeParams &params, llvm::ArrayRef<const Tensor *> inputs,
             Shape &outShape);

/// y = x resampled by `pass`; on the OpenMP threads.
void resample(const float *x, float *y, const ResizePass &pass,
              float extrapolation);

/// dx = the transpose of `pass` applied to dy (dy's share of each input
/// element); on the OpenMP threads.
void resampleBackward(const float *dy, float *dx, const ResizePass &pass);

} // namespace heterps::runtime::cpu

#endif // HETERPS_LIB_RUNTIME_BACKENDS_CPU_RESIZEGEOMETRY_H
