//===- OpGeometry.cpp - windows of convolution and pooling ----------------===//

#include "heterps/Runtime/OpGeometry.h"

#include <algorithm>

using namespace heterps::runtime;

static llvm::Error geometryError(const llvm::Twine &what) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), what);
}

llvm::Error heterps::runtime::readWindowAttrs(const OpAttributes &a,
                                              WindowAttrs &out) {
  for (auto [name, field] :
       {std::pair("strides", &out.strides),
        std::pair("dilations", &out.dilations), std::pair("pads", &out.pads)}) {
    auto values = a.getInts(name, std::vector<int64_t>());
    if (!values)
      return values.takeError();
    *field = std::move(*values);
  }
  return llvm::Error::success();
}

llvm::Expected<ConvAttrs>
heterps::runtime::parseConvAttrs(const OpAttributes &a) {
  ConvAttrs attrs;
  if (llvm::Error e = readWindowAttrs(a, attrs))
    return std::move(e);
  auto group = a.getInt("group", 1);
  if (!group)
    return group.takeError();
  attrs.group = *group;
  return attrs;
}

llvm::Error heterps::runtime::readConvTransposeAttrs(const OpAttributes &a,
                                                     ConvTransposeAttrs &out) {
  if (llvm::Error e = readWindowAttrs(a, out))
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

llvm::Expected<PoolAttrs> heterps::runtime::parsePoolAttrs(const OpInfo &info) {
  if (llvm::Error e = info.checkArity(1, 1))
    return std::move(e);
  llvm::StringRef type = info.op.type();
  const OpAttributes &a = info.attrs;
  PoolAttrs p;
  p.global = type.starts_with("Global");
  if (!type.ends_with("MaxPool")) {
    auto includePad = a.getInt("count_include_pad", 0);
    if (!includePad)
      return includePad.takeError();
    p.kind = *includePad ? PoolKind::AverageCountingPads
                         : PoolKind::AverageNotCountingPads;
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

/// `values`, or `n` times `dflt` when the attribute was not given.
static llvm::Expected<std::vector<int64_t>>
perAxis(const std::vector<int64_t> &values, size_t n, int64_t dflt,
        llvm::StringRef name) {
  if (values.empty())
    return std::vector<int64_t>(n, dflt);
  if (values.size() != n)
    return geometryError("'" + name + "' has " + llvm::Twine(values.size()) +
                         " entries, expected " + llvm::Twine(n));
  return values;
}

llvm::Expected<Window> heterps::runtime::convWindow(const ConvAttrs &attrs,
                                                    const Tensor &x,
                                                    const Tensor &w) {
  int64_t rank = x.rank();
  if (rank < 3 || rank > 5)
    return geometryError("input is " + x.typeString() +
                         "; Conv needs rank 3 to 5");
  if (w.rank() != rank)
    return geometryError("weight is " + w.typeString() + ", input is " +
                         x.typeString() + ": ranks differ");
  size_t n = rank - 2;
  int64_t g = attrs.group, c = x.dim(1), m = w.dim(0);
  if (g < 1 || m % g != 0 || c != w.dim(1) * g)
    return geometryError("input " + x.typeString() + " and weight " +
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
  Window window;
  window.outShape = {x.dim(0), m};
  window.strides = *strides;
  window.dilations = *dilations;
  for (size_t i = 0; i < n; ++i) {
    int64_t extent = (*dilations)[i] * (w.dim(2 + i) - 1) + 1;
    int64_t span = x.dim(2 + i) + (*pads)[i] + (*pads)[n + i] - extent;
    if (span < 0 || (*strides)[i] < 1 || (*dilations)[i] < 1)
      return geometryError("kernel " + shapeToString(w.shape()) +
                           " does not fit input " + x.typeString());
    window.outShape.push_back(span / (*strides)[i] + 1);
    window.kernel.push_back(w.dim(2 + i));
    window.padBegin.push_back((*pads)[i]);
    window.padEnd.push_back((*pads)[n + i]);
  }
  return window;
}

llvm::Expected<Window>
heterps::runtime::convTransposeWindow(const ConvTransposeAttrs &attrs,
                                      const Tensor &x, const Tensor &w) {
  int64_t spatial = x.rank() - 2, group = attrs.group;
  if (spatial < 1 || spatial > 3 || w.rank() != x.rank() ||
      w.dim(0) != x.dim(1) || group < 1 || x.dim(1) % group != 0)
    return geometryError("ConvTranspose of input " + x.typeString() +
                         " with weights " + w.typeString() + " and group " +
                         llvm::Twine(group) + " is not supported");
  auto attr = [&](const std::vector<int64_t> &v, size_t i, int64_t def) {
    return v.empty() ? def : v[i];
  };
  Window window;
  window.outShape = {x.dim(0), w.dim(1) * group};
  for (int64_t i = 0; i < spatial; ++i) {
    int64_t stride = attr(attrs.strides, i, 1),
            dilation = attr(attrs.dilations, i, 1),
            begin = attr(attrs.pads, i, 0),
            end = attr(attrs.pads, i + spatial, 0),
            extra = attr(attrs.outputPadding, i, 0), k = w.dim(2 + i);
    window.strides.push_back(stride);
    window.kernel.push_back(k);
    window.dilations.push_back(dilation);
    window.padBegin.push_back(begin);
    window.padEnd.push_back(end);
    window.outShape.push_back(stride * (x.dim(2 + i) - 1) + extra +
                              (k - 1) * dilation + 1 - begin - end);
  }
  return window;
}

llvm::Error heterps::runtime::checkSummedInput(const Tensor &addend,
                                               const Shape &outShape) {
  if (addend.shape() == outShape)
    return llvm::Error::success();
  return geometryError("summed input is " + addend.typeString() +
                       ", expected shape " + shapeToString(outShape));
}

llvm::Expected<Window> heterps::runtime::poolWindow(const PoolAttrs &attrs,
                                                    const Tensor &x) {
  int64_t rank = x.rank();
  if (rank < 3 || rank > 5)
    return geometryError("input is " + x.typeString() +
                         "; pooling needs rank 3 to 5");
  size_t n = rank - 2;
  std::vector<int64_t> kernel = attrs.kernel, strides = attrs.strides,
                       dilations = attrs.dilations, pads = attrs.pads;
  if (attrs.global)
    kernel.assign(x.shape().begin() + 2, x.shape().end());
  if (strides.empty())
    strides.assign(n, 1);
  if (dilations.empty())
    dilations.assign(n, 1);
  if (pads.empty())
    pads.assign(2 * n, 0);
  if (kernel.size() != n || strides.size() != n || dilations.size() != n ||
      pads.size() != 2 * n)
    return geometryError("kernel_shape, strides, dilations or pads do not "
                         "match the " +
                         llvm::Twine(n) + " spatial axes of " + x.typeString());
  Window window;
  window.outShape = {x.dim(0), x.dim(1)};
  for (size_t i = 0; i < n; ++i) {
    int64_t in = x.dim(2 + i), s = strides[i];
    int64_t extent = dilations[i] * (kernel[i] - 1) + 1;
    int64_t span = in + pads[i] + pads[n + i] - extent;
    if (span < 0 || s < 1 || dilations[i] < 1)
      return geometryError("pooling window does not fit input " +
                           x.typeString());
    int64_t o = (attrs.ceilMode ? (span + s - 1) / s : span / s) + 1;
    if (attrs.ceilMode && (o - 1) * s >= in + pads[i])
      --o;
    window.outShape.push_back(o);
    window.padBegin.push_back(pads[i]);
    // The end pad the last window needs (a shorter one than the model's
    // still gives `o` windows).
    window.padEnd.push_back(
        std::max<int64_t>((o - 1) * s + extent - in - pads[i], 0));
  }
  window.strides = std::move(strides);
  window.kernel = std::move(kernel);
  window.dilations = std::move(dilations);
  return window;
}

llvm::Expected<GemmAttrs>
heterps::runtime::parseGemmAttrs(const OpAttributes &attrs) {
  auto alpha = attrs.getFloat("alpha", 1.f);
  if (!alpha)
    return alpha.takeError();
  auto beta = attrs.getFloat("beta", 1.f);
  if (!beta)
    return beta.takeError();
  auto transA = attrs.getInt("trans_a", 0);
  if (!transA)
    return transA.takeError();
  auto transB = attrs.getInt("trans_b", 0);
  if (!transB)
    return transB.takeError();
  return GemmAttrs{*alpha, *beta, *transA != 0, *transB != 0};
}

llvm::Expected<int64_t> heterps::runtime::normalizeAxis(int64_t axis,
                                                        int64_t rank) {
  if (axis < -rank || axis >= rank)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "axis " + llvm::Twine(axis) +
                                       " is out of range for rank " +
                                       llvm::Twine(rank));
  return axis < 0 ? axis + rank : axis;
}
