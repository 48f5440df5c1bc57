//===- PoolGeometry.cpp - ONNX pooling attributes as oneDNN sees them -----===//

#include "PoolGeometry.h"

#include "DnnlUtils.h"

using namespace heterps::runtime;
using namespace heterps::runtime::cpu;

llvm::Expected<PoolParams> cpu::parsePoolParams(const OpInfo &info) {
  if (llvm::Error e = info.checkArity(1, 1))
    return std::move(e);
  llvm::StringRef type = info.op.type();
  const OpAttributes &a = info.attrs;
  PoolParams p;
  p.global = type.starts_with("Global");
  p.algorithm = dnnl::algorithm::pooling_max;
  if (!type.ends_with("MaxPool")) {
    auto includePad = a.getInt("count_include_pad", 0);
    if (!includePad)
      return includePad.takeError();
    p.algorithm = *includePad ? dnnl::algorithm::pooling_avg_include_padding
                              : dnnl::algorithm::pooling_avg_exclude_padding;
  }
  if (p.global)
    return p;
  auto kernel = a.getInts("kernel_shape");
  if (!kernel)
    return kernel.takeError();
  if (llvm::Error e = readWindowAttrs(a, p))
    return std::move(e);
  auto ceilMode = a.getInt("ceil_mode", 0);
  if (!ceilMode)
    return ceilMode.takeError();
  p.kernel = *kernel;
  p.ceilMode = *ceilMode != 0;
  return p;
}

llvm::Expected<PoolGeometry> cpu::poolGeometry(const PoolParams &params,
                                               const Tensor &x) {
  int64_t rank = x.rank();
  if (rank < 3 || rank > 5)
    return kernelError("input is " + x.typeString() +
                       "; pooling needs rank 3 to 5");
  size_t n = rank - 2;
  std::vector<int64_t> kernel = params.kernel, strides = params.strides,
                       dilations = params.dilations, pads = params.pads;
  if (params.global)
    kernel.assign(x.shape().begin() + 2, x.shape().end());
  if (strides.empty())
    strides.assign(n, 1);
  if (dilations.empty())
    dilations.assign(n, 1);
  if (pads.empty())
    pads.assign(2 * n, 0);
  if (kernel.size() != n || strides.size() != n || dilations.size() != n ||
      pads.size() != 2 * n)
    return kernelError("kernel_shape, strides, dilations or pads do not "
                       "match the " +
                       llvm::Twine(n) + " spatial axes of " + x.typeString());
  PoolGeometry g;
  g.outShape = {x.dim(0), x.dim(1)};
  for (size_t i = 0; i < n; ++i) {
    int64_t in = x.dim(2 + i), s = strides[i];
    int64_t extent = dilations[i] * (kernel[i] - 1) + 1;
    int64_t span = in + pads[i] + pads[n + i] - extent;
    if (span < 0 || s < 1 || dilations[i] < 1)
      return kernelError("pooling window does not fit input " + x.typeString());
    int64_t o = (params.ceilMode ? (span + s - 1) / s : span / s) + 1;
    if (params.ceilMode && (o - 1) * s >= in + pads[i])
      --o;
    g.outShape.push_back(o);
    g.padL.push_back(pads[i]);
    // oneDNN divides with floor, so a shorter end pad still gives `o`.
    g.padR.push_back(std::max<int64_t>((o - 1) * s + extent - in - pads[i], 0));
    g.dilations.push_back(dilations[i] - 1);
  }
  g.strides = toDims(strides);
  g.kernel = toDims(kernel);
  return g;
}
