//===- ConvGeometry.cpp - ONNX Conv attributes as oneDNN sees them --------===//

#include "ConvGeometry.h"
#include "DnnlUtils.h"

#include "llvm/ADT/STLExtras.h"

using namespace heterps::runtime;
using namespace heterps::runtime::cpu;
using dnnl::memory;

llvm::Expected<ConvAttrs> cpu::parseConvAttrs(const OpAttributes &a) {
  ConvAttrs attrs;
  if (llvm::Error e = readWindowAttrs(a, attrs))
    return std::move(e);
  auto group = a.getInt("group", 1);
  if (!group)
    return group.takeError();
  attrs.group = *group;
  return attrs;
}

/// `values`, or `n` times `dflt` when the attribute was not given.
static llvm::Expected<memory::dims> perAxis(const std::vector<int64_t> &values,
                                            size_t n, int64_t dflt,
                                            llvm::StringRef name) {
  if (values.empty())
    return memory::dims(n, dflt);
  if (values.size() != n)
    return kernelError("'" + name + "' has " + llvm::Twine(values.size()) +
                       " entries, expected " + llvm::Twine(n));
  return memory::dims(values.begin(), values.end());
}

llvm::Expected<ConvGeometry>
cpu::convGeometry(const ConvAttrs &attrs, const Tensor &x, const Tensor &w) {
  int64_t rank = x.rank();
  if (rank < 3 || rank > 5)
    return kernelError("input is " + x.typeString() +
                       "; Conv needs rank 3 to 5");
  if (w.rank() != rank)
    return kernelError("weight is " + w.typeString() + ", input is " +
                       x.typeString() + ": ranks differ");
  size_t n = rank - 2;
  int64_t g = attrs.group, c = x.dim(1), m = w.dim(0);
  if (g < 1 || m % g != 0 || c != w.dim(1) * g)
    return kernelError("input " + x.typeString() + " and weight " +
                       w.typeString() + " do not match with group " +
                       llvm::Twine(g));
  auto strides = perAxis(attrs.strides, n, 1, "strides");
  if (!strides)
    return strides.takeError();
  auto dilations = perAxis(attrs.dilations, n, 1, "dilations");
  if (!dilations)
    return dilations.takeError();
  auto pads = perAxis(attrs.pads, 2 * n, 0, "pads");
  if (!pads)
    return pads.takeError();
  ConvGeometry geometry;
  geometry.outShape = {x.dim(0), m};
  geometry.strides = *strides;
  for (size_t i = 0; i < n; ++i) {
    int64_t extent = (*dilations)[i] * (w.dim(2 + i) - 1) + 1;
    int64_t span = x.dim(2 + i) + (*pads)[i] + (*pads)[n + i] - extent;
    if (span < 0 || (*strides)[i] < 1 || (*dilations)[i] < 1)
      return kernelError("kernel " + shapeToString(w.shape()) +
                         " does not fit input " + x.typeString());
    geometry.outShape.push_back(span / (*strides)[i] + 1);
    geometry.dilations.push_back((*dilations)[i] - 1);
    geometry.padL.push_back((*pads)[i]);
    geometry.padR.push_back((*pads)[n + i]);
  }
  geometry.winogradShape =
      n == 2 && g == 1 && w.dim(2) == 3 && w.dim(3) == 3 &&
      llvm::all_of(*strides, [](int64_t s) { return s == 1; }) &&
      llvm::all_of(*dilations, [](int64_t d) { return d == 1; });
  geometry.weightDims = toDims(w.shape());
  if (g > 1) {
    geometry.weightDims[0] = m / g;
    geometry.weightDims.insert(geometry.weightDims.begin(), g);
  }
  return geometry;
}

llvm::Error cpu::checkSummedInput(const Tensor &addend, const Shape &outShape) {
  if (addend.shape() == outShape)
    return llvm::Error::success();
  return kernelError("summed input is " + addend.typeString() +
                     ", expected shape " + shapeToString(outShape));
}
