//===- SubPixelConvTranspose.cpp - ConvTranspose as strided phases --------===//
//
// Along one axis, ConvTranspose gives y[o] = sum over i, k with
// o + pad = i * s + k of x[i] * w[k]. The outputs with (o + pad) mod s = r
// take the taps k = r + j * s only: with o + pad = m * s + r,
// y[o] = sum_j x[m - j] * w[r + j * s], a stride-1 correlation of x with
// those taps reversed, starting taps - 1 - m0 before the input for the
// phase's first output (m = m0). Both axes give the 2-D phases.
//
//===----------------------------------------------------------------------===//

#include "SubPixelConvTranspose.h"

#include <cstring>

using namespace heterps::runtime;
using namespace heterps::runtime::cpu;

std::vector<SubPixelConvTranspose::AxisPhase>
SubPixelConvTranspose::axisPhases(int64_t in, int64_t out, int64_t kernel,
                                  int64_t stride, int64_t pad) {
  std::vector<AxisPhase> phases;
  if (stride < 2 || kernel < stride || pad < 0)
    return {};
  for (int64_t r = 0; r < stride; ++r) {
    AxisPhase p;
    p.residue = r;
    p.taps = (kernel - r + stride - 1) / stride;
    p.first = ((r - pad) % stride + stride) % stride;
    if (p.first >= out)
      continue; // no output in this phase
    p.count = (out - p.first + stride - 1) / stride;
    int64_t m0 = (p.first + pad - r) / stride;
    p.padBegin = p.taps - 1 - m0;
    // count = in + padBegin + padEnd - taps + 1
    p.padEnd = p.count - 1 + p.taps - in - p.padBegin;
    if (p.padBegin < 0 || p.padEnd < 0)
      return {};
    phases.push_back(p);
  }
  return phases;
}

std::unique_ptr<SubPixelConvTranspose>
SubPixelConvTranspose::create(const CPUContextPtr &ctx, const Window &window,
                              int64_t group, const Tensor &x, const Tensor &w,
                              const Tensor *b) {
  if (x.rank() != 4 || group != 1 ||
      llvm::any_of(window.dilations, [](int64_t d) { return d != 1; }))
    return nullptr;
  std::vector<AxisPhase> rows =
      axisPhases(x.dim(2), window.outShape[2], window.kernel[0],
                 window.strides[0], window.padBegin[0]);
  std::vector<AxisPhase> cols =
      axisPhases(x.dim(3), window.outShape[3], window.kernel[1],
                 window.strides[1], window.padBegin[1]);
  if (rows.empty() || cols.empty())
    return nullptr;
  std::unique_ptr<SubPixelConvTranspose> sp(new SubPixelConvTranspose(ctx));
  sp->outShape = window.outShape;
  sp->strideH = window.strides[0];
  sp->strideW = window.strides[1];
  int64_t n = x.dim(0), c = w.dim(0), m = w.dim(1), kh = window.kernel[0],
          kw = window.kernel[1];
  sp->srcMd =
      memory::desc(toDims(x.shape()), memory::data_type::f32, Tag::nChw16c);
  memory::desc biasMd = b ? plainDesc({m}) : memory::desc();
  if (b)
    sp->bias = *b;
  const float *wd = w.data<float>();
  for (const AxisPhase &r : rows)
    for (const AxisPhase &q : cols) {
      // The phase's taps as a Conv's [M, C, taps_h, taps_w], reversed.
      Tensor taps(DType::F32, {m, c, r.taps, q.taps});
      float *t = taps.data<float>();
      for (int64_t mo = 0; mo < m; ++mo)
        for (int64_t ci = 0; ci < c; ++ci)
          for (int64_t a = 0; a < r.taps; ++a)
            for (int64_t bb = 0; bb < q.taps; ++bb) {
              int64_t ky = r.residue + (r.taps - 1 - a) * sp->strideH;
              int64_t kx = q.residue + (q.taps - 1 - bb) * sp->strideW;
              *t++ = ky < kh && kx < kw
                         ? wd[((ci * m + mo) * kh + ky) * kw + kx]
                         : 0.f;
            }
      memory::desc dst(toDims({n, m, r.count, q.count}), memory::data_type::f32,
                       Tag::nChw16c);
      memory::desc anyWeights(toDims(taps.shape()), memory::data_type::f32,
                              Tag::any);
      dnnl::convolution_forward::desc d(
          dnnl::prop_kind::forward_inference,
          dnnl::algorithm::convolution_direct, sp->srcMd, anyWeights, biasMd,
          dst, {1, 1}, {r.padBegin, q.padBegin}, {r.padEnd, q.padEnd});
      dnnl::convolution_forward::primitive_desc pd(d, ctx->engine);
      Phase phase{r, q, pd, dnnl::convolution_forward(pd),
                  reorderTo(taps, pd.weights_desc(), ctx)};
      sp->phases.push_back(std::move(phase));
    }
  return sp;
}

Tensor SubPixelConvTranspose::run(const Tensor &x) {
  Tensor src = reorderTo(x, srcMd, ctx);
  memory::desc yMd(toDims(outShape), memory::data_type::f32, Tag::nChw16c);
  Tensor y = allocate(yMd, outShape, ctx);
  int64_t n = outShape[0], blocks = (outShape[1] + 15) / 16, oh = outShape[2],
          ow = outShape[3];
  float *yd = y.data<float>();
  for (Phase &p : phases) {
    Shape zShape{n, outShape[1], p.rows.count, p.cols.count};
    Tensor z = allocate(p.pd.dst_desc(), zShape, ctx);
    std::unordered_map<int, memory> args = {
        {DNNL_ARG_SRC, memoryOf(src, *ctx)},
        {DNNL_ARG_WEIGHTS, memoryOf(p.weights, *ctx)},
        {DNNL_ARG_DST, memoryOf(z, *ctx)}};
    if (!bias.isNull())
      args.emplace(DNNL_ARG_BIAS, memoryOf(bias, *ctx));
    p.primitive.execute(ctx->stream, args);
    ctx->stream.wait();
    // Each position's 16 channels are one cache line in both layouts.
    const float *zd = z.data<float>();
    int64_t rowsIn = p.rows.count, colsIn = p.cols.count;
#pragma omp parallel for collapse(2) schedule(static)
    for (int64_t nb = 0; nb < n * blocks; ++nb)
      for (int64_t a = 0; a < rowsIn; ++a) {
        const float *from = zd + (nb * rowsIn + a) * colsIn * 16;
        float *to = yd + (nb * oh + p.rows.first + a * strideH) * ow * 16 +
                    p.cols.first * 16;
        for (int64_t bb = 0; bb < colsIn; ++bb)
          std::memcpy(to + bb * strideW * 16, from + bb * 16,
                      16 * sizeof(float));
      }
  }
  return y;
}
