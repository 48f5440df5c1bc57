//===- ConvTransposeGeometry.h - ConvTranspose in oneDNN terms --*- C++ -*-===//
//
// Shared by the ConvTranspose kernel and its backward. ONNX weights are
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

struct ConvTransposeAttrs {
  WindowAttrs window;
  std::vector<int64_t> outputPadding;
  int64_t group = 1;
};

inline llvm::Error readConvTransposeAttrs(const OpAttributes &a,
                                          ConvTransposeAttrs &out) {
  if (llvm::Error e = readWindowAttrs(a, out.window))
    return e;
  auto outputPadding = a.getInts("output_padding", std::vector<int64_t>());
  if (!outputPadding)
    return outputPadding.takeError();
  auto group = a.getInt("group", 1);
  if (!group)
    return group.takeError();
  out.outputPadding = std::move(*outputPadding);
  out.group = *group;
  return llvm::Error::success();
}

struct ConvTransposeGeometry {
  memory::dims strides, dilates, padL, padR;
  Shape outShape;
  /// The ONNX weight buffer as oneDNN's logical weights.
  memory::desc weights;
};

inline llvm::Expected<ConvTransposeGeometry>
convTransposeGeometry(const ConvTransposeAttrs &attrs, const Tensor &x,
                      const Tensor &w) {
  int64_t spatial = x.rank() - 2, group = attrs.group;
  if (spatial < 1 || spatial > 3 || w.rank() != x.rank() ||
      w.dim(0) != x.dim(1) || group < 1 || x.dim(1) % group != 0)
    return kernelError("ConvTranspose of input " + x.typeString() +
                       " with weights " + w.typeString() + " and group " +
                       llvm::Twine(group) + " is not supported");
  auto attr = [&](const std::vector<int64_t> &v, size_t i, int64_t def) {
    return v.empty() ? def : v[i];
  };
  const WindowAttrs &window = attrs.window;
  ConvTransposeGeometry g;
  g.outShape = {x.dim(0), w.dim(1) * group};
  for (int64_t i = 0; i < spatial; ++i) {
    int64_t stride = attr(window.strides, i, 1),
            dilation = attr(window.dilations, i, 1),
            begin = attr(window.pads, i, 0),
            end = attr(window.pads, i + spatial, 0),
            extra = attr(attrs.outputPadding, i, 0), k = w.dim(2 + i);
    g.strides.push_back(stride);
    g.dilates.push_back(dilation - 1);
    g.padL.push_back(begin);
    g.padR.push_back(end - extra);
    g.outShape.push_back(stride * (x.dim(2 + i) - 1) + extra +
                         (k - 1) * dilation + 1 - begin - end);
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
