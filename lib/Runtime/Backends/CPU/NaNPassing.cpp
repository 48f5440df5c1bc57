//===- NaNPassing.cpp - NaN through Relu, Clip and MaxPool ----------------===//

#include "NaNPassing.h"

#include "heterps/Runtime/NonFinite.h"

#include <cmath>
#include <cstring>
#include <tuple>

using namespace heterps::runtime;
using namespace heterps::runtime::cpu;

void cpu::restoreNaNs(const Tensor &x, Tensor &y) {
  const float *in = x.data<float>();
  float *out = y.data<float>();
  int64_t n = static_cast<int64_t>(x.bytes() / sizeof(float));
  for (int64_t i = 0; i < n; ++i)
    if (std::isnan(in[i]))
      out[i] = in[i];
}

/// The output positions along one axis whose window (stride, kernel,
/// ONNX dilation, begin pad) may cover input position `p`: [first, last].
static std::pair<int64_t, int64_t> coveringOutputs(int64_t p, int64_t stride,
                                                   int64_t kernel,
                                                   int64_t dilation,
                                                   int64_t pad, int64_t out) {
  // Output o covers p when o * stride <= p + pad <= o * stride + extent.
  int64_t at = p + pad, low = at - dilation * (kernel - 1);
  int64_t first = low <= 0 ? 0 : (low + stride - 1) / stride;
  return {first, std::min<int64_t>(out - 1, at / stride)};
}

llvm::Error cpu::poolNaNs(const Tensor &x, Tensor &y, const PoolGeometry &g) {
  if (!hasNonFinite(x))
    return llvm::Error::success();
  llvm::Expected<Tensor> xPlain = x.toPlain();
  if (!xPlain)
    return xPlain.takeError();
  // `y` itself when plain (written in place), else a plain copy.
  llvm::Expected<Tensor> out = y.toPlain();
  if (!out)
    return out.takeError();
  size_t axes = g.kernel.size();
  const Shape &in = x.shape(), &os = out->shape();
  int64_t inner = 1, outInner = 1;
  for (size_t a = 0; a < axes; ++a) {
    inner *= in[2 + a];
    outInner *= os[2 + a];
  }
  const float *px = xPlain->data<float>();
  float *py = out->data<float>();
  std::vector<int64_t> pos(axes), first(axes), last(axes), o(axes);
  for (int64_t plane = 0, planes = in[0] * in[1]; plane < planes; ++plane)
    for (int64_t i = 0; i < inner; ++i) {
      float v = px[plane * inner + i];
      if (!std::isnan(v))
        continue;
      bool none = false;
      for (size_t a = axes, rest = i; a-- > 0; rest /= in[2 + a]) {
        pos[a] = rest % in[2 + a];
        std::tie(first[a], last[a]) =
            coveringOutputs(pos[a], g.strides[a], g.kernel[a],
                            g.dilations[a] + 1, g.padL[a], os[2 + a]);
        none |= first[a] > last[a];
      }
      if (none)
        continue;
      // Every output in the box; a dilated window skips some positions.
      o = first;
      for (bool more = true; more;) {
        bool hits = true;
        int64_t flat = 0;
        for (size_t a = 0; a < axes; ++a) {
          hits &= (pos[a] + g.padL[a] - o[a] * g.strides[a]) %
                      (g.dilations[a] + 1) ==
                  0;
          flat = flat * os[2 + a] + o[a];
        }
        if (hits)
          py[plane * outInner + flat] = v;
        more = false;
        for (size_t a = axes; a-- > 0;) {
          if (++o[a] <= last[a]) {
            more = true;
            break;
          }
          o[a] = first[a];
        }
      }
    }
  if (y.isPlain())
    return llvm::Error::success();
  llvm::Expected<Tensor> back = y.layout()->fromPlain(*out);
  if (!back)
    return back.takeError();
  std::memcpy(y.rawData(), back->rawData(), y.bytes());
  return llvm::Error::success();
}
