//===- PoolGeometry.cpp - a pooling window in oneDNN terms ----------------===//

#include "PoolGeometry.h"

using namespace heterps::runtime;
using namespace heterps::runtime::cpu;

llvm::Expected<PoolGeometry> cpu::poolGeometry(const PoolAttrs &attrs,
                                               const Tensor &x) {
  llvm::Expected<Window> window = poolWindow(attrs, x);
  if (!window)
    return window.takeError();
  PoolGeometry g;
  g.outShape = window->outShape;
  g.strides = window->strides;
  g.kernel = window->kernel;
  for (int64_t d : window->dilations)
    g.dilations.push_back(d - 1);
  g.padL = window->padBegin;
  g.padR = window->padEnd;
  return g;
}

dnnl::algorithm cpu::poolAlgorithm(PoolKind kind) {
  switch (kind) {
  case PoolKind::Max:
    return dnnl::algorithm::pooling_max;
  case PoolKind::AverageCountingPads:
    return dnnl::algorithm::pooling_avg_include_padding;
  case PoolKind::AverageNotCountingPads:
    return dnnl::algorithm::pooling_avg_exclude_padding;
  }
  return dnnl::algorithm::pooling_max;
}
