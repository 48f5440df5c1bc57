//===- PointwiseDepthwise.cpp - 1x1 conv and depthwise conv as one --------===//

#include "PointwiseDepthwise.h"
#include "DepthwiseDirect.h"

#include "llvm/Support/ErrorHandling.h"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <vector>

using namespace heterps::runtime;
using namespace heterps::runtime::cpu;
using Kind = ConvEpilogue::Kind;

namespace {

constexpr int64_t B = 16;

int64_t blocksOf(int64_t channels) { return (channels + B - 1) / B; }

} // namespace

Tensor cpu::packPointwiseWeights(const Tensor &plain) {
  int64_t m = plain.dim(0), c = plain.dim(1), cPadded = blocksOf(c) * B;
  Tensor packed(DType::F32, {blocksOf(m) * cPadded * B});
  float *to = packed.data<float>();
  const float *from = plain.data<float>();
  std::memset(to, 0, packed.bytes());
  for (int64_t o = 0; o < m; ++o)
    for (int64_t i = 0; i < c; ++i)
      to[(o / B * cPadded + i) * B + o % B] = from[o * c + i];
  return packed;
}

Tensor cpu::packPointwiseBias(const Tensor *plain, int64_t m) {
  Tensor packed(DType::F32, {blocksOf(m) * B});
  std::memset(packed.rawData(), 0, packed.bytes());
  if (plain)
    std::memcpy(packed.rawData(), plain->rawData(), m * sizeof(float));
  return packed;
}

#if defined(__x86_64__)

namespace {

/// RP neighbouring positions by RB output blocks of the 1x1 convolution,
/// the RP x RB sums in registers over every input channel: per channel,
/// RB weight vectors loaded and RP inputs broadcast. `x` and `y` are at the
/// first position; xBlock and yBlock are the floats between channel blocks.
template <int RP, int RB, Kind A>
__attribute__((target("avx512f"))) void
tile(const float *x, int64_t xBlock, int64_t inBlocks, const float *w,
     int64_t wBlock, const float *bias, float *y, int64_t yBlock,
     const ConvEpilogue &e) {
  __m512 acc[RP][RB];
#pragma GCC unroll 16
  for (int r = 0; r < RB; ++r) {
    __m512 b = _mm512_loadu_ps(bias + r * B);
#pragma GCC unroll 16
    for (int p = 0; p < RP; ++p)
      acc[p][r] = b;
  }
  for (int64_t kb = 0; kb < inBlocks; ++kb) {
    const float *xb = x + kb * xBlock;
    const float *wb = w + kb * B * B;
#pragma GCC unroll 16
    for (int c = 0; c < B; ++c) {
      __m512 wv[RB];
#pragma GCC unroll 16
      for (int r = 0; r < RB; ++r)
        wv[r] = _mm512_loadu_ps(wb + r * wBlock + c * B);
#pragma GCC unroll 16
      for (int p = 0; p < RP; ++p) {
        __m512 xv = _mm512_set1_ps(xb[p * B + c]);
#pragma GCC unroll 16
        for (int r = 0; r < RB; ++r)
          acc[p][r] = _mm512_fmadd_ps(xv, wv[r], acc[p][r]);
      }
    }
  }
#pragma GCC unroll 16
  for (int p = 0; p < RP; ++p)
#pragma GCC unroll 16
    for (int r = 0; r < RB; ++r)
      _mm512_storeu_ps(y + p * B + r * yBlock, applyEpilogue<A>(acc[p][r], e));
}

using TileFn = void (*)(const float *, int64_t, int64_t, const float *, int64_t,
                        const float *, float *, int64_t, const ConvEpilogue &);

/// The widest tile of at most `left` positions (14 by 2 blocks: 28 sums,
/// 2 weight vectors and a broadcast fill the 32 registers).
template <int RB, Kind A> TileFn tileFor(int64_t left, int &positions) {
  if (left >= 14) {
    positions = 14;
    return tile<14, RB, A>;
  }
  if (left >= 7) {
    positions = 7;
    return tile<7, RB, A>;
  }
  if (left >= 4) {
    positions = 4;
    return tile<4, RB, A>;
  }
  if (left >= 2) {
    positions = 2;
    return tile<2, RB, A>;
  }
  {
    positions = 1;
    return tile<1, RB, A>;
  }
}

/// Positions [0, count) of the 1x1 convolution on the calling thread, all
/// output blocks: x and y at the first position, xBlock and yBlock floats
/// between channel blocks.
template <Kind A>
__attribute__((target("avx512f"))) void
pointwiseRows(const float *x, int64_t xBlock, const float *w, const float *bias,
              float *y, int64_t yBlock, const PointwiseDepthwiseShape &s,
              int64_t count, const ConvEpilogue &e) {
  int64_t inBlocks = blocksOf(s.c), outBlocks = blocksOf(s.m);
  int64_t wBlock = inBlocks * B * B;
  // Two output blocks at a time over every position: their weights stay
  // in L1 while the positions stream.
  for (int64_t mb = 0; mb < outBlocks; mb += 2) {
    bool two = mb + 2 <= outBlocks;
    for (int64_t p = 0; p < count;) {
      int positions;
      TileFn run = two ? tileFor<2, A>(count - p, positions)
                       : tileFor<1, A>(count - p, positions);
      run(x + p * B, xBlock, inBlocks, w + mb * wBlock, wBlock, bias + mb * B,
          y + p * B + mb * yBlock, yBlock, e);
      p += positions;
    }
  }
}

using RowsFn = void (*)(const float *, int64_t, const float *, const float *,
                        float *, int64_t, const PointwiseDepthwiseShape &,
                        int64_t, const ConvEpilogue &);

RowsFn pointwiseRowsFor(Kind a) {
  switch (a) {
  case Kind::Relu:
    return pointwiseRows<Kind::Relu>;
  case Kind::Clip:
    return pointwiseRows<Kind::Clip>;
  case Kind::HardSwish:
    return pointwiseRows<Kind::HardSwish>;
  case Kind::Swish:
    return pointwiseRows<Kind::Swish>;
  case Kind::None:
    break;
  }
  return pointwiseRows<Kind::None>;
}

/// The most output rows whose wide input rows fit in `budget` bytes.
int64_t rowsPerStep(const PointwiseDepthwiseShape &s, int64_t budget) {
  int64_t rowBytes = blocksOf(s.m) * B * s.w * int64_t(sizeof(float));
  int64_t inputRows = std::max<int64_t>(s.kernel, budget / rowBytes);
  return std::max<int64_t>(1, (inputRows - s.kernel) / s.stride + 1);
}

} // namespace

void cpu::pointwiseDepthwise(const float *x, const float *pw,
                             const float *pwBias, ConvEpilogue pwEpilogue,
                             const float *dw, const float *dwBias,
                             ConvEpilogue dwEpilogue, float *y,
                             const PointwiseDepthwiseShape &s) {
  RowsFn pointwise = pointwiseRowsFor(pwEpilogue.kind);
  int64_t inBlocks = blocksOf(s.c), outBlocks = blocksOf(s.m);
  // About half of a 1 MB L2: in the prototype, steps of 4 to 8 output rows
  // ran fastest at 56x56 and 14x14, and those fit.
  int64_t step = rowsPerStep(s, 512 << 10);
  int64_t capacity = (step - 1) * s.stride + s.kernel;
  int64_t bufferBlock = capacity * s.w * B;
  // Items: an image's output rows split so that every thread has one.
  int64_t chunks = std::min(s.oh, (omp_get_max_threads() + s.n - 1) / s.n);
  int64_t perChunk = (s.oh + chunks - 1) / chunks;
#pragma omp parallel
  {
    // The thread's wide rows, kept between runs.
    thread_local std::vector<float> buffer;
    buffer.resize(std::max<size_t>(buffer.size(), outBlocks * bufferBlock));
    float *rows = buffer.data();
#pragma omp for schedule(static)
    for (int64_t i = 0; i < s.n * chunks; ++i) {
      int64_t n = i / chunks, ohBegin = i % chunks * perChunk;
      int64_t ohEnd = std::min(s.oh, ohBegin + perChunk);
      const float *xn = x + n * inBlocks * B * s.h * s.w;
      float *yn = y + n * outBlocks * B * s.oh * s.ow;
      // The buffer holds the wide rows [lo, hi) of the image.
      int64_t lo = 0, hi = 0;
      for (int64_t oh = ohBegin; oh < ohEnd; oh += step) {
        int64_t last = std::min(ohEnd, oh + step);
        int64_t need = std::max<int64_t>(0, oh * s.stride - s.pad);
        int64_t needEnd =
            std::min(s.h, (last - 1) * s.stride - s.pad + s.kernel);
        if (need >= lo && need < hi) {
          // Keep the rows these output rows share with the ones before.
          if (need > lo)
            for (int64_t cb = 0; cb < outBlocks; ++cb)
              std::memmove(rows + cb * bufferBlock,
                           rows + cb * bufferBlock + (need - lo) * s.w * B,
                           (hi - need) * s.w * B * sizeof(float));
        } else {
          hi = need;
        }
        lo = need;
        if (needEnd > hi)
          pointwise(xn + hi * s.w * B, s.h * s.w * B, pw, pwBias,
                    rows + (hi - lo) * s.w * B, bufferBlock, s,
                    (needEnd - hi) * s.w, pwEpilogue);
        hi = needEnd;
        // The depthwise rows read the buffer as an image whose first row
        // is the image's row `lo`.
        DepthwiseShape view{1,        s.m,      s.h - lo,   s.w,   s.oh, s.ow,
                            s.kernel, s.stride, s.pad + lo, s.pad, false};
        for (int64_t cb = 0; cb < outBlocks; ++cb)
          depthwiseBlockRows(rows + cb * bufferBlock, dw, dwBias,
                             yn + cb * s.oh * s.ow * B, view, dwEpilogue, cb,
                             oh, last);
      }
    }
  }
}

#else

void cpu::pointwiseDepthwise(const float *, const float *, const float *,
                             ConvEpilogue, const float *, const float *,
                             ConvEpilogue, float *,
                             const PointwiseDepthwiseShape &) {
  llvm_unreachable("depthwiseDirectRuns is false off x86-64");
}

#endif
