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

constexpr int64_t B = kChannelBlock;

PointwiseDepthwiseShape cpu::pointwiseDepthwiseShapeOf(const Shape &x,
                                                       int64_t m,
                                                       int64_t kernel,
                                                       int64_t stride) {
  return {x[0],
          x[1],
          m,
          x[2],
          x[3],
          kernel,
          stride,
          kernel / 2,
          (x[2] - 1) / stride + 1,
          (x[3] - 1) / stride + 1};
}

Tensor cpu::packPointwiseWeights(const Tensor &plain) {
  int64_t m = plain.dim(0), c = plain.dim(1), cPadded = channelBlocksOf(c) * B;
  Tensor packed(DType::F32, {channelBlocksOf(m) * cPadded * B});
  float *to = packed.data<float>();
  const float *from = plain.data<float>();
  std::memset(to, 0, packed.bytes());
  for (int64_t o = 0; o < m; ++o)
    for (int64_t i = 0; i < c; ++i)
      to[(o / B * cPadded + i) * B + o % B] = from[o * c + i];
  return packed;
}

void cpu::packScaledPointwiseWeights(const float *plain, const float *scale,
                                     int64_t m, int64_t c, float *packed) {
  int64_t cPadded = channelBlocksOf(c) * B;
  std::memset(packed, 0, channelBlocksOf(m) * cPadded * B * sizeof(float));
  for (int64_t o = 0; o < m; ++o)
    for (int64_t i = 0; i < c; ++i)
      packed[(o / B * cPadded + i) * B + o % B] = plain[o * c + i] * scale[i];
}

Tensor cpu::packPointwiseBias(const Tensor *plain, int64_t m) {
  Tensor packed(DType::F32, {channelBlocksOf(m) * B});
  std::memset(packed.rawData(), 0, packed.bytes());
  if (plain)
    std::memcpy(packed.rawData(), plain->rawData(), m * sizeof(float));
  return packed;
}

#if defined(__x86_64__)

namespace {

/// One 1x1 convolution: x and y at their first position, their channel
/// blocks xBlock and yBlock floats apart; weights and bias packed as above;
/// `addend` (null, or laid out as y, aBlock floats between blocks) added
/// before the epilogue.
struct Pointwise {
  const float *x;
  int64_t xBlock, inBlocks;
  const float *w, *bias;
  float *y;
  int64_t yBlock, outBlocks;
  const float *addend;
  int64_t aBlock;
  ConvEpilogue epilogue;
};

/// RP neighbouring positions from `p` by RB output blocks from `mb`, the
/// RP x RB sums in registers over every input channel: per channel, RB
/// weight vectors loaded and RP inputs broadcast.
template <int RP, int RB, Kind A, bool Sum>
__attribute__((target("avx512f"))) void tile(const Pointwise &c, int64_t p,
                                             int64_t mb) {
  int64_t wBlock = c.inBlocks * B * B;
  const float *x = c.x + p * B, *w = c.w + mb * wBlock;
  __m512 acc[RP][RB];
#pragma GCC unroll 16
  for (int r = 0; r < RB; ++r) {
    __m512 b = _mm512_loadu_ps(c.bias + (mb + r) * B);
#pragma GCC unroll 16
    for (int j = 0; j < RP; ++j)
      acc[j][r] = b;
  }
  for (int64_t kb = 0; kb < c.inBlocks; ++kb) {
    const float *xb = x + kb * c.xBlock;
    const float *wb = w + kb * B * B;
#pragma GCC unroll 16
    for (int k = 0; k < B; ++k) {
      __m512 wv[RB];
#pragma GCC unroll 16
      for (int r = 0; r < RB; ++r)
        wv[r] = _mm512_loadu_ps(wb + r * wBlock + k * B);
#pragma GCC unroll 16
      for (int j = 0; j < RP; ++j) {
        __m512 xv = _mm512_set1_ps(xb[j * B + k]);
#pragma GCC unroll 16
        for (int r = 0; r < RB; ++r)
          acc[j][r] = _mm512_fmadd_ps(xv, wv[r], acc[j][r]);
      }
    }
  }
#pragma GCC unroll 16
  for (int j = 0; j < RP; ++j)
#pragma GCC unroll 16
    for (int r = 0; r < RB; ++r) {
      __m512 v = acc[j][r];
      if constexpr (Sum)
        v = _mm512_add_ps(
            v, _mm512_loadu_ps(c.addend + (p + j) * B + (mb + r) * c.aBlock));
      _mm512_storeu_ps(c.y + (p + j) * B + (mb + r) * c.yBlock,
                       applyEpilogue<A>(v, c.epilogue));
    }
}

using TileFn = void (*)(const Pointwise &, int64_t, int64_t);

/// The widest tile of at most `left` positions (14 by 2 blocks: 28 sums,
/// 2 weight vectors and a broadcast fill the 32 registers).
template <int RB, Kind A, bool Sum>
TileFn tileFor(int64_t left, int &positions) {
  for (int width : {14, 7, 4, 2})
    if (left >= width) {
      positions = width;
      switch (width) {
      case 14:
        return tile<14, RB, A, Sum>;
      case 7:
        return tile<7, RB, A, Sum>;
      case 4:
        return tile<4, RB, A, Sum>;
      default:
        return tile<2, RB, A, Sum>;
      }
    }
  positions = 1;
  return tile<1, RB, A, Sum>;
}

/// Positions [0, count) of `c` on the calling thread, every output block.
template <Kind A, bool Sum>
__attribute__((target("avx512f"))) void pointwiseRows(const Pointwise &c,
                                                      int64_t count) {
  // Two output blocks at a time over every position: their weights stay
  // in L1 while the positions stream.
  for (int64_t mb = 0; mb < c.outBlocks; mb += 2) {
    bool two = mb + 2 <= c.outBlocks;
    for (int64_t p = 0; p < count;) {
      int positions;
      TileFn run = two ? tileFor<2, A, Sum>(count - p, positions)
                       : tileFor<1, A, Sum>(count - p, positions);
      run(c, p, mb);
      p += positions;
    }
  }
}

using RowsFn = void (*)(const Pointwise &, int64_t);

template <bool Sum> RowsFn pointwiseRowsFor(Kind a) {
  switch (a) {
  case Kind::Relu:
    return pointwiseRows<Kind::Relu, Sum>;
  case Kind::Clip:
    return pointwiseRows<Kind::Clip, Sum>;
  case Kind::HardSwish:
    return pointwiseRows<Kind::HardSwish, Sum>;
  case Kind::Swish:
    return pointwiseRows<Kind::Swish, Sum>;
  case Kind::None:
    break;
  }
  return pointwiseRows<Kind::None, Sum>;
}

/// The most output rows whose wide rows (the 1x1 output rows they read,
/// and with a projection their own) fit in `budget` bytes.
int64_t rowsPerStep(const PointwiseDepthwiseShape &s, bool projected,
                    int64_t budget) {
  int64_t rowBytes = channelBlocksOf(s.m) * B * s.w * int64_t(sizeof(float));
  int64_t outRowBytes = projected ? rowBytes / s.w * s.ow : 0;
  // (step - 1) * stride + kernel input rows and step output rows.
  int64_t step = (budget - (s.kernel - s.stride) * rowBytes) /
                 (s.stride * rowBytes + outRowBytes);
  return std::max<int64_t>(1, step);
}

} // namespace

void cpu::pointwiseDepthwise(const float *x, const float *pw,
                             const float *pwBias, ConvEpilogue pwEpilogue,
                             const float *dw, const float *dwBias,
                             ConvEpilogue dwEpilogue, float *y,
                             const PointwiseDepthwiseShape &s,
                             const Projection *projection) {
  RowsFn pointwise = pointwiseRowsFor<false>(pwEpilogue.kind);
  RowsFn project = nullptr;
  if (projection)
    project = projection->addend
                  ? pointwiseRowsFor<true>(projection->epilogue.kind)
                  : pointwiseRowsFor<false>(projection->epilogue.kind);
  int64_t inBlocks = channelBlocksOf(s.c), wideBlocks = channelBlocksOf(s.m);
  int64_t outBlocks =
      projection ? channelBlocksOf(projection->channels) : wideBlocks;
  // About half of a 1 MB L2: in the prototype, steps of 4 to 8 output rows
  // ran fastest at 56x56 and 14x14, and those fit.
  int64_t step = rowsPerStep(s, projection, 512 << 10);
  int64_t capacity = (step - 1) * s.stride + s.kernel;
  int64_t bufferBlock = capacity * s.w * B;
  // With a projection, the depthwise rows go to a second buffer.
  int64_t outBufferBlock = projection ? step * s.ow * B : 0;
  int64_t plane = s.oh * s.ow * B;
  // Items: an image's output rows split so that every thread has one.
  int64_t chunks = std::min(s.oh, (omp_get_max_threads() + s.n - 1) / s.n);
  int64_t perChunk = (s.oh + chunks - 1) / chunks;
#pragma omp parallel
  {
    // The thread's wide rows, kept between runs.
    thread_local std::vector<float> buffer;
    buffer.resize(std::max<size_t>(
        buffer.size(), wideBlocks * (bufferBlock + outBufferBlock)));
    float *rows = buffer.data();
    float *outRows = rows + wideBlocks * bufferBlock;
#pragma omp for schedule(static)
    for (int64_t i = 0; i < s.n * chunks; ++i) {
      int64_t n = i / chunks, ohBegin = i % chunks * perChunk;
      int64_t ohEnd = std::min(s.oh, ohBegin + perChunk);
      float *yn = y + n * outBlocks * plane;
      Pointwise wide{x + n * inBlocks * B * s.h * s.w,
                     s.h * s.w * B,
                     inBlocks,
                     pw,
                     pwBias,
                     nullptr,
                     bufferBlock,
                     wideBlocks,
                     nullptr,
                     0,
                     pwEpilogue};
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
            for (int64_t cb = 0; cb < wideBlocks; ++cb)
              std::memmove(rows + cb * bufferBlock,
                           rows + cb * bufferBlock + (need - lo) * s.w * B,
                           (hi - need) * s.w * B * sizeof(float));
        } else {
          hi = need;
        }
        lo = need;
        if (needEnd > hi) {
          Pointwise c = wide;
          c.x += hi * s.w * B;
          c.y = rows + (hi - lo) * s.w * B;
          pointwise(c, (needEnd - hi) * s.w);
        }
        hi = needEnd;
        // The depthwise rows read the buffer as an image whose first row
        // is the image's row `lo`; with a projection they write output row
        // `oh` as the second buffer's first.
        int64_t firstOut = projection ? oh : 0;
        DepthwiseShape view{
            1,        s.m,      s.h - lo,
            s.w,      s.oh,     s.ow,
            s.kernel, s.stride, s.pad + lo - firstOut * s.stride,
            s.pad,    false};
        for (int64_t cb = 0; cb < wideBlocks; ++cb)
          depthwiseBlockRows(
              rows + cb * bufferBlock, dw, dwBias,
              projection ? outRows + cb * outBufferBlock : yn + cb * plane,
              view, dwEpilogue, cb, oh - firstOut, last - firstOut);
        if (projection) {
          Pointwise c{outRows,
                      outBufferBlock,
                      wideBlocks,
                      projection->weights,
                      projection->bias,
                      yn + oh * s.ow * B,
                      plane,
                      outBlocks,
                      projection->addend
                          ? projection->addend + n * outBlocks * plane +
                                oh * s.ow * B
                          : nullptr,
                      plane,
                      projection->epilogue};
          project(c, (last - oh) * s.ow);
        }
      }
    }
  }
}

bool cpu::pointwiseRuns() { return __builtin_cpu_supports("avx512f"); }

void cpu::pointwiseConv(const float *x, int64_t c, const float *w,
                        const float *bias, int64_t m, int64_t positions,
                        const float *addend, ConvEpilogue epilogue, float *y,
                        bool parallel) {
  int64_t outBlocks = channelBlocksOf(m), plane = positions * B;
  RowsFn run = addend ? pointwiseRowsFor<true>(epilogue.kind)
                      : pointwiseRowsFor<false>(epilogue.kind);
  // Work items: pairs of output blocks by chunks of 56 positions (four
  // tiles), so that small images still give every thread some.
  constexpr int64_t chunk = 56;
  int64_t pairs = (outBlocks + 1) / 2, chunks = (positions + chunk - 1) / chunk;
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t i = 0; i < pairs * chunks; ++i) {
    int64_t mb = i / chunks * 2, p = i % chunks * chunk;
    int64_t blocks = std::min<int64_t>(2, outBlocks - mb);
    Pointwise t{x + p * B,
                plane,
                channelBlocksOf(c),
                w + mb * channelBlocksOf(c) * B * B,
                bias + mb * B,
                y + p * B + mb * plane,
                plane,
                blocks,
                addend ? addend + p * B + mb * plane : nullptr,
                plane,
                epilogue};
    run(t, std::min(chunk, positions - p));
  }
}

#else

bool cpu::pointwiseRuns() { return false; }

void cpu::pointwiseConv(const float *, int64_t, const float *, const float *,
                        int64_t, int64_t, const float *, ConvEpilogue, float *,
                        bool) {
  llvm_unreachable("pointwiseRuns is false off x86-64");
}

void cpu::pointwiseDepthwise(const float *, const float *, const float *,
                             ConvEpilogue, const float *, const float *,
                             ConvEpilogue, float *,
                             const PointwiseDepthwiseShape &,
                             const Projection *) {
  llvm_unreachable("depthwiseDirectRuns is false off x86-64");
}

#endif
