//===- PointwiseConvAVX2.cpp - our own 1x1 convolution in blocks of 8 -----===//

#include "PointwiseConvAVX2.h"

#include "llvm/Support/ErrorHandling.h"

#include <algorithm>

using namespace heterps::runtime;
using namespace heterps::runtime::cpu;
using Kind = ConvEpilogue::Kind;

namespace {
/// Channels per block of the layout (one AVX2 vector); output channels per
/// panel (two vectors); pixels per group at most (12 accumulators).
constexpr int64_t kLanes = 8, kPanel = 16, kRows = 6;

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
} // namespace

#if defined(__x86_64__)

#include <immintrin.h>

#define AVX2 __attribute__((target("avx2,fma")))

namespace {

/// R pixels by one panel: x points at the first pixel's block 0 (blocks
/// `blockStride` floats apart), u at the panel's weights, y0 and y1 at the
/// two output blocks' first pixel (y1 null for a half panel), bias at the
/// panel's 16 (or null).
template <int R, Kind A, bool Accumulate>
AVX2 void group(const float *x, int64_t blockStride, int64_t cBlocks,
                const float *u, const float *bias, float *y0, float *y1,
                const ConvEpilogue &e) {
  // Every loop over r unrolled, so that the accumulators live in registers.
  __m256 lo[R], hi[R];
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r)
    lo[r] = hi[r] = _mm256_setzero_ps();
  for (int64_t cb = 0; cb < cBlocks; ++cb) {
    const float *xb = x + cb * blockStride;
    const float *ub = u + cb * kLanes * kPanel;
#pragma GCC unroll 8
    for (int j = 0; j < kLanes; ++j) {
      __m256 u0 = _mm256_loadu_ps(ub + j * kPanel),
             u1 = _mm256_loadu_ps(ub + j * kPanel + kLanes);
#pragma GCC unroll 6
      for (int r = 0; r < R; ++r) {
        __m256 a = _mm256_broadcast_ss(xb + r * kLanes + j);
        lo[r] = _mm256_fmadd_ps(a, u0, lo[r]);
        hi[r] = _mm256_fmadd_ps(a, u1, hi[r]);
      }
    }
  }
  __m256 b0 = bias ? _mm256_loadu_ps(bias) : _mm256_setzero_ps();
  __m256 b1 = bias && y1 ? _mm256_loadu_ps(bias + kLanes) : _mm256_setzero_ps();
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) {
    __m256 v = _mm256_add_ps(lo[r], b0);
    if constexpr (Accumulate)
      v = _mm256_add_ps(v, _mm256_loadu_ps(y0 + r * kLanes));
    _mm256_storeu_ps(y0 + r * kLanes, applyEpilogue<A>(v, e));
  }
  if (!y1)
    return;
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) {
    __m256 v = _mm256_add_ps(hi[r], b1);
    if constexpr (Accumulate)
      v = _mm256_add_ps(v, _mm256_loadu_ps(y1 + r * kLanes));
    _mm256_storeu_ps(y1 + r * kLanes, applyEpilogue<A>(v, e));
  }
}

using GroupFn = void (*)(const float *, int64_t, int64_t, const float *,
                         const float *, float *, float *, const ConvEpilogue &);

/// group<1..kRows> for one epilogue; [0] unused.
struct Groups {
  GroupFn byRows[kRows + 1];
};

template <Kind A, bool Accumulate> constexpr Groups groupsOf() {
  return {{nullptr, group<1, A, Accumulate>, group<2, A, Accumulate>,
           group<3, A, Accumulate>, group<4, A, Accumulate>,
           group<5, A, Accumulate>, group<6, A, Accumulate>}};
}

template <bool Accumulate> Groups groupsFor(Kind kind) {
  switch (kind) {
  case Kind::None:
    return groupsOf<Kind::None, Accumulate>();
  case Kind::Relu:
    return groupsOf<Kind::Relu, Accumulate>();
  case Kind::Clip:
    return groupsOf<Kind::Clip, Accumulate>();
  case Kind::HardSwish:
    return groupsOf<Kind::HardSwish, Accumulate>();
  case Kind::Swish:
    break;
  }
  llvm_unreachable("pointwiseConvAVX2Runs is false for Swish");
}

} // namespace

bool cpu::pointwiseConvAVX2Runs(int64_t c, int64_t k, ConvEpilogue epilogue) {
  return c % kLanes == 0 && k % kLanes == 0 && epilogue.kind != Kind::Swish &&
         __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

void cpu::pointwiseConvAVX2(const float *x, const float *w, const float *bias,
                            float *y, const PointwiseShape &s,
                            ConvEpilogue epilogue, bool accumulate) {
  Groups groups = accumulate ? groupsFor<true>(epilogue.kind)
                             : groupsFor<false>(epilogue.kind);
  // The pixels in groups as even as they go (49: five of 5 and four of 6,
  // not eight of 6 and a single one, which would run at a third the rate).
  int64_t groupCount = ceilDiv(s.pixels, kRows);
  int64_t base = s.pixels / std::max<int64_t>(groupCount, 1),
          extra = s.pixels % std::max<int64_t>(groupCount, 1);
  int64_t panels = ceilDiv(s.k, kPanel), kBlocks = s.k / kLanes;
  int64_t blockStride = s.pixels * kLanes;
  // packPointwiseWeights rounds the input channels up to 16.
  int64_t panelFloats = ceilDiv(s.c, kPanel) * kPanel * kPanel;
  // Image-, then panel-major: a thread's consecutive groups share their
  // panel's weights, which stay in its cache.
  int64_t items = s.n * panels * groupCount;
#pragma omp parallel for schedule(static)
  for (int64_t item = 0; item < items; ++item) {
    int64_t g = item % groupCount, panel = item / groupCount % panels,
            n = item / groupCount / panels;
    int64_t first = g * base + std::min(g, extra);
    int64_t rows = base + (g < extra);
    // A share of the next panel's weights on its way to the cache while
    // this group computes: on small images at batch 1 the weights come
    // from memory, and fetched all in the panel's first group they
    // stalled it (RegNet-X's 7x7 layers ran at twice their hot time).
    if (panel + 1 < panels) {
      const char *next =
          reinterpret_cast<const char *>(w + (panel + 1) * panelFloats);
      int64_t lines = panelFloats * sizeof(float) / 64;
      for (int64_t l = g * lines / groupCount,
                   end = (g + 1) * lines / groupCount;
           l < end; ++l)
        _mm_prefetch(next + l * 64, _MM_HINT_T1);
    }
    int64_t kb = panel * 2;
    float *y0 = y + (n * kBlocks + kb) * blockStride + first * kLanes;
    float *y1 = kb + 1 < kBlocks ? y0 + blockStride : nullptr;
    groups.byRows[rows](x + n * s.c * s.pixels + first * kLanes, blockStride,
                        s.c / kLanes, w + panel * panelFloats,
                        bias ? bias + kb * kLanes : nullptr, y0, y1, epilogue);
  }
}

#else

bool cpu::pointwiseConvAVX2Runs(int64_t, int64_t, ConvEpilogue) {
  return false;
}

void cpu::pointwiseConvAVX2(const float *, const float *, const float *,
                            float *, const PointwiseShape &, ConvEpilogue,
                            bool) {
  llvm_unreachable("pointwiseConvAVX2Runs is false without x86-64");
}

#endif
