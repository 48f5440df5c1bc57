//===- ConvTransposeGeometry.h - ConvTranspose in oneDNN terms --*- C++ -*-===//
//
// Shared by the ConvTranspose kernel and its backward: the backend-neutral
// window (OpGeometry.h) as oneDNN takes it. ONNX weights are
// [C, M/group, k...] (input channels first); oneDNN's logical deconvolution
// weights are [M, C, k...] (grouped: [group, M/group, C/group, k...]), so
// the ONNX buffer is described by a format tag that swaps the first two
// logical axes. `output_padding` grows the output at the end: the end
// padding shrinks by as much (oneDNN accepts negative end padding).
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_RUNTIME_BACKENDS_CPU_CONVTRANSPOSEGEOMETRY_H
#define HETERPS_LIB_RUNTIME_BACKENDS_CPU_CONVTRANSPOSEGEOMETRY_H

#include "DnnlUtils.h"
#include "heterps/Runtime/OpGeometry.h"

namespace heterps::runtime::cpu {

struct ConvTransposeGeometry {
  memory::dims strides, dilates, padL, padR;
  Shape outShape;
  /// The ONNX weight buffer as oneDNN's logical weights.
  memory::desc weights;
};

inline llvm::Expected<ConvTransposeGeometry>
convTransposeGeometry(const ConvTransposeAttrs &attrs, const Tensor &x,
                      const Tensor &w) {
  llvm::Expected<Window> window = convTransposeWindow(attrs, x, w);
  if (!window)
    return window.takeError();
  int64_t spatial = x.rank() - 2, group = attrs.group;
  ConvTransposeGeometry g;
  g.outShape = window->outShape;
  g.strides = window->strides;
  for (int64_t i = 0; i < spatial; ++i) {
    int64_t extra = attrs.outputPadding.empty() ? 0 : attrs.outputPadding[i];
    g.dilates.push_back(window->dilations[i] - 1);
    g.padL.push_back(window->padBegin[i]);
    g.padR.push_back(window->padEnd[i] - extra);
  }
  memory::dims dims;
  if (group > 1)
    dims.push_back(group);
  dims.push_back(w.dim(1));
  dims.push_back(w.dim(0) / group);
  for (int64_t i = 0; i < spatial; ++i)
    dims.push_back(w.dim(2 + i));
  using tag = memory::format_tag;
  tag swapped = tag::undef;
  switch (dims.size()) {
  case 3:
    swapped = tag::bac;
    break;
  case 4:
    swapped = group > 1 ? tag::acbd : tag::bacd;
    break;
  case 5:
    swapped = group > 1 ? tag::acbde : tag::bacde;
    break;
  case 6:
    swapped = tag::acbdef;
    break;
  }
  g.weights = memory::desc(dims, memory::data_type::f32, swapped);
  return g;
}

} // namespace heterps::runtime::cpu

#endif // HETERPS_LIB_RUNTIME_BACKENDS_CPU_CONVTRANSPOSEGEOMETRY_H
