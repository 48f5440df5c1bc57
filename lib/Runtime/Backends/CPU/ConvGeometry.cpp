//===- ConvGeometry.cpp - a Conv's window in oneDNN terms -----------------===//

#include "ConvGeometry.h"
#include "DnnlUtils.h"

#include "llvm/ADT/STLExtras.h"

using namespace heterps::runtime;
using namespace heterps::runtime::cpu;

llvm::Expected<ConvGeometry>
cpu::convGeometry(const ConvAttrs &attrs, const Tensor &x, const Tensor &w) {
  llvm::Expected<Window> window = convWindow(attrs, x, w);
  if (!window)
    return window.takeError();
  ConvGeometry geometry;
  geometry.outShape = window->outShape;
  geometry.strides = window->strides;
  for (int64_t d : window->dilations)
    geometry.dilations.push_back(d - 1);
  geometry.padL = window->padBegin;
  geometry.padR = window->padEnd;
  int64_t g = attrs.group, m = w.dim(0);
  geometry.winogradWindow =
      window->kernel == std::vector<int64_t>{3, 3} &&
      llvm::all_of(window->strides, [](int64_t s) { return s == 1; }) &&
      llvm::all_of(window->dilations, [](int64_t d) { return d == 1; });
  geometry.winogradShape = geometry.winogradWindow && g == 1;
  geometry.weightDims = toDims(w.shape());
  if (g > 1) {
    geometry.weightDims[0] = m / g;
    geometry.weightDims.insert(geometry.weightDims.begin(), g);
  }
  return geometry;
}
