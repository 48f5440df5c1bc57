//===- DepthwiseWeightGrad.cpp - a depthwise convolution's weight gradient ===//

#include "DepthwiseWeightGrad.h"

#include <algorithm>
#include <vector>

using namespace heterps::runtime;
using namespace heterps::runtime::train;

namespace {

/// One channel block (B lanes) over every item: acc[k][j] for tap k =
/// kh * KW + kw, lane j.
template <int64_t B>
void blockGrad(const DepthwiseWindow &w, int64_t blocks, int64_t cb,
               const float *x, const float *dy, float *acc, float *bias) {
  const int64_t inPlane = w.inH * w.inW * B, outPlane = w.outH * w.outW * B;
  for (int64_t n = 0; n < w.items; ++n) {
    const float *xb = x + (n * blocks + cb) * inPlane;
    const float *gb = dy + (n * blocks + cb) * outPlane;
    if (bias)
      for (int64_t i = 0; i < w.outH * w.outW; ++i)
        for (int64_t j = 0; j < B; ++j)
          bias[j] += gb[i * B + j];
    for (int64_t kw = 0; kw < w.kernelW; ++kw) {
      // Outputs whose tap kw lands inside the row: ow in [lo, hi).
      int64_t off = kw * w.dilationW - w.padW;
      int64_t lo = std::max<int64_t>(0, (-off + w.strideW - 1) / w.strideW);
      int64_t hi = std::min<int64_t>(
          w.outW, off >= w.inW ? 0 : (w.inW - off + w.strideW - 1) / w.strideW);
      if (lo >= hi)
        continue;
      for (int64_t oh = 0; oh < w.outH; ++oh)
        for (int64_t kh = 0; kh < w.kernelH; ++kh) {
          int64_t ih = oh * w.strideH - w.padH + kh * w.dilationH;
          if (ih < 0 || ih >= w.inH)
            continue;
          float *a = acc + (kh * w.kernelW + kw) * B;
          const float *g = gb + oh * w.outW * B;
          const float *xr = xb + ih * w.inW * B;
          float sum[B] = {};
          for (int64_t ow = lo; ow < hi; ++ow) {
            const float *xv = xr + (ow * w.strideW + off) * B;
            for (int64_t j = 0; j < B; ++j)
              sum[j] += g[ow * B + j] * xv[j];
          }
          for (int64_t j = 0; j < B; ++j)
            a[j] += sum[j];
        }
    }
  }
}

} // namespace

void train::depthwiseWeightGrad(const DepthwiseWindow &w, int64_t block,
                                const float *x, const float *dy, float *dw,
                                float *db) {
  int64_t blocks = (w.channels + block - 1) / block;
  int64_t taps = w.kernelH * w.kernelW;
#pragma omp parallel for schedule(dynamic)
  for (int64_t cb = 0; cb < blocks; ++cb) {
    std::vector<float> acc(taps * block, 0.f), bias(block, 0.f);
    float *b = db ? bias.data() : nullptr;
    if (block == 16)
      blockGrad<16>(w, blocks, cb, x, dy, acc.data(), b);
    else if (block == 8)
      blockGrad<8>(w, blocks, cb, x, dy, acc.data(), b);
    else
      blockGrad<1>(w, blocks, cb, x, dy, acc.data(), b);
    int64_t valid = std::min(block, w.channels - cb * block);
    for (int64_t j = 0; j < valid; ++j) {
      int64_t c = cb * block + j;
      for (int64_t k = 0; k < taps; ++k)
        dw[c * taps + k] = acc[k * block + j];
      if (db)
        db[c] = bias[j];
    }
  }
}
