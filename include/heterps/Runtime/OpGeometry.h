//===- OpGeometry.h - windows of convolution and pooling --------*- C++ -*-===//
//
// The ONNX attributes of Conv and the pooling ops, and the window they
// slide over an input: output shape, strides, kernel extent, dilations
// and pads per spatial axis, as ONNX defines them. Every backend's kernels
// start from these; each converts to its library's conventions in its own
// adapter (the CPU backend's ConvGeometry.h and PoolGeometry.h for oneDNN).
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_RUNTIME_OPGEOMETRY_H
#define HETERPS_RUNTIME_OPGEOMETRY_H

#include "heterps/Runtime/Kernel.h"

#include <vector>

namespace heterps::runtime {

/// Strides, dilations and pads as the model gives them; empty when left
/// out (their defaults depend on the input's rank).
struct WindowAttrs {
  std::vector<int64_t> strides, dilations, pads;
};
llvm::Error readWindowAttrs(const OpAttributes &attrs, WindowAttrs &out);

struct ConvAttrs : WindowAttrs {
  int64_t group = 1;
};
/// Conv's strides, dilations, pads and group.
llvm::Expected<ConvAttrs> parseConvAttrs(const OpAttributes &attrs);

struct ConvTransposeAttrs : WindowAttrs {
  std::vector<int64_t> outputPadding;
  int64_t group = 1;
};
/// ConvTranspose's strides, dilations, pads, output_padding and group.
llvm::Error readConvTransposeAttrs(const OpAttributes &attrs,
                                   ConvTransposeAttrs &out);

/// A possibly negative axis of a rank-`rank` tensor, counted from 0; an
/// error when it is out of range.
llvm::Expected<int64_t> normalizeAxis(int64_t axis, int64_t rank);

/// Gemm's alpha, beta, trans_a and trans_b (the plan's names).
struct GemmAttrs {
  float alpha = 1.f, beta = 1.f;
  bool transA = false, transB = false;
};
llvm::Expected<GemmAttrs> parseGemmAttrs(const OpAttributes &attrs);

enum class PoolKind { Max, AverageCountingPads, AverageNotCountingPads };

struct PoolAttrs : WindowAttrs {
  PoolKind kind = PoolKind::Max;
  /// GlobalMaxPool, GlobalAveragePool: the window is the whole input.
  bool global = false;
  std::vector<int64_t> kernel;
  bool ceilMode = false;
};
/// The pooling op's attributes (arity checked too).
llvm::Expected<PoolAttrs> parsePoolAttrs(const OpInfo &info);

/// A window over the spatial axes of an input. Dilations count from 1 (a
/// dense window). `padEnd` covers the last window: for pooling in ceil
/// mode it may exceed the model's end pads, and it is never negative.
struct Window {
  Shape outShape;
  std::vector<int64_t> strides, kernel, dilations, padBegin, padEnd;
};

/// The window of a Conv with `attrs` over input `x` with weight `w`
/// (ranks 3 to 5); the output has w's first dimension as its channels.
llvm::Expected<Window> convWindow(const ConvAttrs &attrs, const Tensor &x,
                                  const Tensor &w);
/// An error unless a Conv's summed fourth input has the output's shape.
llvm::Error checkSummedInput(const Tensor &addend, const Shape &outShape);

/// The window of a ConvTranspose with `attrs` over input `x` with ONNX
/// weight `w` ([C, M/group, k...]; ranks 3 to 5): the window of the
/// convolution it is the gradient of. `output_padding` is not in the pads:
/// it grows the output at the end.
llvm::Expected<Window> convTransposeWindow(const ConvTransposeAttrs &attrs,
                                           const Tensor &x, const Tensor &w);

/// The window of pooling with `attrs` over input `x` (rank 3 to 5).
/// `ceil_mode` rounds the output up, as long as a last window starts
/// inside the input or its begin padding (as ONNX Runtime does).
llvm::Expected<Window> poolWindow(const PoolAttrs &attrs, const Tensor &x);

} // namespace heterps::runtime

#endif // HETERPS_RUNTIME_OPGEOMETRY_H
