//===- DirectConvAVX2.cpp - our own direct convolutions in blocks of 8 ----===//

#include "DirectConvAVX2.h"

#include "llvm/Support/ErrorHandling.h"

#include <algorithm>
#include <cstring>
#include <vector>

using namespace heterps::runtime;
using namespace heterps::runtime::cpu;
using Kind = ConvEpilogue::Kind;

namespace {
/// Channels per block of the layout (one AVX2 vector); output channels per
/// panel (two vectors); pixels per tile at most (12 accumulators).
constexpr int64_t kLanes = 8, kPanel = 16, kRows = 6;
/// The most input channels stemConvAVX2 takes.
constexpr int64_t kStemChannels = 4;

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// `pixels` in tiles of at most kRows as even as they go (49: five of 5
/// and four of 6, not eight of 6 and a single one, which would run at a
/// third the rate).
struct RowTiles {
  int64_t count, base, extra;
  explicit RowTiles(int64_t pixels)
      : count(ceilDiv(pixels, kRows)), base(count ? pixels / count : 0),
        extra(count ? pixels % count : 0) {}
  int64_t first(int64_t t) const { return t * base + std::min(t, extra); }
  int64_t rows(int64_t t) const { return base + (t < extra); }
};
} // namespace

bool cpu::stemConvAVX2Takes(int64_t c) { return c >= 1 && c <= kStemChannels; }

Tensor cpu::packStemWeights(const Tensor &plain) {
  int64_t k = plain.dim(0), taps = plain.numElements() / k;
  Tensor packed(DType::F32, {ceilDiv(k, kPanel) * taps * kPanel});
  const float *from = plain.data<float>();
  float *to = packed.data<float>();
  std::memset(to, 0, packed.bytes());
  for (int64_t o = 0; o < k; ++o)
    for (int64_t t = 0; t < taps; ++t)
      to[(o / kPanel * taps + t) * kPanel + o % kPanel] = from[o * taps + t];
  return packed;
}

#if defined(__x86_64__)

#include <immintrin.h>

#define AVX2 __attribute__((target("avx2,fma")))
#define AVX2_INLINE __attribute__((target("avx2,fma"), always_inline)) inline

namespace {

/// Where a tile of R pixels by one panel reads and writes: u points at the
/// panel's weights, y0 and y1 at the two output blocks' first pixel (y1
/// null for a half panel), bias at the panel's 16 (or null).
struct Tile {
  const float *x, *u, *bias;
  float *y0, *y1;
};

/// The tile's sums plus the bias (and the destination's values when
/// Accumulate), the epilogue applied, stored.
template <int R, Kind A, bool Accumulate>
AVX2_INLINE void store(const __m256 (&lo)[R], const __m256 (&hi)[R],
                       const Tile &t, const ConvEpilogue &e) {
  for (int half = 0; half < 2; ++half) {
    float *y = half ? t.y1 : t.y0;
    if (!y)
      return;
    __m256 b =
        t.bias ? _mm256_loadu_ps(t.bias + half * kLanes) : _mm256_setzero_ps();
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      __m256 v = _mm256_add_ps(half ? hi[r] : lo[r], b);
      if constexpr (Accumulate)
        v = _mm256_add_ps(v, _mm256_loadu_ps(y + r * kLanes));
      _mm256_storeu_ps(y + r * kLanes, applyEpilogue<A>(v, e));
    }
  }
}

/// The 1x1 convolution's tile: t.x points at the first pixel's block 0,
/// blocks `blockStride` floats apart.
struct PointwiseTiles {
  struct Args {
    int64_t blockStride, cBlocks;
  };
  template <int R, Kind A, bool Accumulate>
  static AVX2 void run(const Tile &t, const Args &a, const ConvEpilogue &e) {
    // Every loop over r unrolled, so that the accumulators live in
    // registers.
    __m256 lo[R], hi[R];
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r)
      lo[r] = hi[r] = _mm256_setzero_ps();
    for (int64_t cb = 0; cb < a.cBlocks; ++cb) {
      const float *xb = t.x + cb * a.blockStride;
      const float *ub = t.u + cb * kLanes * kPanel;
#pragma GCC unroll 8
      for (int j = 0; j < kLanes; ++j) {
        __m256 u0 = _mm256_loadu_ps(ub + j * kPanel),
               u1 = _mm256_loadu_ps(ub + j * kPanel + kLanes);
#pragma GCC unroll 6
        for (int r = 0; r < R; ++r) {
          __m256 v = _mm256_broadcast_ss(xb + r * kLanes + j);
          lo[r] = _mm256_fmadd_ps(v, u0, lo[r]);
          hi[r] = _mm256_fmadd_ps(v, u1, hi[r]);
        }
      }
    }
    store<R, A, Accumulate>(lo, hi, t, e);
  }
};

/// The first convolution's tile: t.x points at the zero-padded input's
/// channel 0 at the first pixel's top left tap; `stride` floats between
/// the pixels' windows.
struct StemTiles {
  struct Args {
    int64_t channelStride, rowStride, stride, c, kh, kw;
  };
  template <int R, Kind A, bool Accumulate>
  static AVX2 void run(const Tile &t, const Args &a, const ConvEpilogue &e) {
    __m256 lo[R], hi[R];
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r)
      lo[r] = hi[r] = _mm256_setzero_ps();
    const float *u = t.u;
    for (int64_t c = 0; c < a.c; ++c)
      for (int64_t i = 0; i < a.kh; ++i) {
        const float *row = t.x + c * a.channelStride + i * a.rowStride;
        for (int64_t j = 0; j < a.kw; ++j, u += kPanel) {
          __m256 u0 = _mm256_loadu_ps(u), u1 = _mm256_loadu_ps(u + kLanes);
#pragma GCC unroll 6
          for (int r = 0; r < R; ++r) {
            __m256 v = _mm256_broadcast_ss(row + j + r * a.stride);
            lo[r] = _mm256_fmadd_ps(v, u0, lo[r]);
            hi[r] = _mm256_fmadd_ps(v, u1, hi[r]);
          }
        }
      }
    store<R, A, Accumulate>(lo, hi, t, e);
  }
};

/// T::run<1..kRows> for one epilogue; [0] unused.
template <typename T> struct TileFns {
  using Fn = void (*)(const Tile &, const typename T::Args &,
                      const ConvEpilogue &);
  Fn byRows[kRows + 1];
};

template <typename T, Kind A, bool Accumulate>
constexpr TileFns<T> tileFnsOf() {
  return {{nullptr, T::template run<1, A, Accumulate>,
           T::template run<2, A, Accumulate>, T::template run<3, A, Accumulate>,
           T::template run<4, A, Accumulate>, T::template run<5, A, Accumulate>,
           T::template run<6, A, Accumulate>}};
}

template <typename T, bool Accumulate> TileFns<T> tileFnsFor(Kind kind) {
  switch (kind) {
  case Kind::None:
    return tileFnsOf<T, Kind::None, Accumulate>();
  case Kind::Relu:
    return tileFnsOf<T, Kind::Relu, Accumulate>();
  case Kind::Clip:
    return tileFnsOf<T, Kind::Clip, Accumulate>();
  case Kind::HardSwish:
    return tileFnsOf<T, Kind::HardSwish, Accumulate>();
  case Kind::Swish:
    break;
  }
  llvm_unreachable("directConvAVX2Runs is false for Swish");
}

template <typename T> TileFns<T> tileFnsFor(Kind kind, bool accumulate) {
  return accumulate ? tileFnsFor<T, true>(kind) : tileFnsFor<T, false>(kind);
}

} // namespace

bool cpu::directConvAVX2Runs(int64_t k, ConvEpilogue epilogue) {
  return k > 0 && k % kLanes == 0 && epilogue.kind != Kind::Swish &&
         __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

void cpu::pointwiseConvAVX2(const float *x, const float *w, const float *bias,
                            float *y, const PointwiseShape &s,
                            ConvEpilogue epilogue, bool accumulate) {
  auto tiles = tileFnsFor<PointwiseTiles>(epilogue.kind, accumulate);
  RowTiles rows(s.pixels);
  int64_t panels = ceilDiv(s.k, kPanel), kBlocks = s.k / kLanes;
  PointwiseTiles::Args args{s.pixels * kLanes, s.c / kLanes};
  // packPointwiseWeights rounds the input channels up to 16.
  int64_t panelFloats = ceilDiv(s.c, kPanel) * kPanel * kPanel;
  // Image-, then panel-major: a thread's consecutive tiles share their
  // panel's weights, which stay in its cache.
  int64_t items = s.n * panels * rows.count;
#pragma omp parallel for schedule(static)
  for (int64_t item = 0; item < items; ++item) {
    int64_t g = item % rows.count, panel = item / rows.count % panels,
            n = item / rows.count / panels;
    // A share of the next panel's weights on its way to the cache while
    // this tile computes: on small images at batch 1 the weights come
    // from memory, and fetched all in the panel's first tile they
    // stalled it.
    if (panel + 1 < panels) {
      const char *next =
          reinterpret_cast<const char *>(w + (panel + 1) * panelFloats);
      int64_t lines = panelFloats * sizeof(float) / 64;
      for (int64_t l = g * lines / rows.count,
                   end = (g + 1) * lines / rows.count;
           l < end; ++l)
        _mm_prefetch(next + l * 64, _MM_HINT_T1);
    }
    int64_t kb = panel * 2, first = rows.first(g);
    float *y0 = y + (n * kBlocks + kb) * args.blockStride + first * kLanes;
    Tile t{x + n * s.c * s.pixels + first * kLanes, w + panel * panelFloats,
           bias ? bias + kb * kLanes : nullptr, y0,
           kb + 1 < kBlocks ? y0 + args.blockStride : nullptr};
    tiles.byRows[rows.rows(g)](t, args, epilogue);
  }
}

void cpu::stemConvAVX2(const float *x, const float *w, const float *bias,
                       float *y, const StemShape &s, ConvEpilogue epilogue,
                       bool accumulate) {
  if (s.n == 0 || s.oh <= 0 || s.ow <= 0)
    return;
  auto tiles = tileFnsFor<StemTiles>(epilogue.kind, accumulate);
  // The input rows and columns the windows cover, zero outside the image:
  // the tiles then read without bounds checks.
  int64_t hp = (s.oh - 1) * s.stride + s.kh, wp = (s.ow - 1) * s.stride + s.kw;
  static thread_local std::vector<float> padded;
  if (padded.size() < static_cast<size_t>(s.c * hp * wp))
    padded.resize(s.c * hp * wp);
  float *p = padded.data();
  RowTiles cols(s.ow);
  int64_t panels = ceilDiv(s.k, kPanel), kBlocks = s.k / kLanes;
  int64_t panelFloats = s.c * s.kh * s.kw * kPanel, plane = s.oh * s.ow;
  StemTiles::Args args{hp * wp, wp, s.stride, s.c, s.kh, s.kw};
#pragma omp parallel
  for (int64_t n = 0; n < s.n; ++n) {
    const float *image = x + n * s.c * s.h * s.w;
#pragma omp for schedule(static)
    for (int64_t r = 0; r < s.c * hp; ++r) {
      int64_t c = r / hp, ih = r % hp - s.padTop;
      float *to = p + r * wp;
      std::fill(to, to + wp, 0.f);
      if (ih < 0 || ih >= s.h)
        continue;
      int64_t lo = std::max<int64_t>(0, s.padLeft),
              hi = std::min(wp, s.w + s.padLeft);
      if (hi > lo)
        std::copy_n(image + (c * s.h + ih) * s.w + lo - s.padLeft, hi - lo,
                    to + lo);
    }
    // Row-, then panel-major: consecutive items read the same input rows.
#pragma omp for schedule(static)
    for (int64_t item = 0; item < s.oh * panels; ++item) {
      int64_t oh = item / panels, panel = item % panels, kb = panel * 2;
      for (int64_t g = 0; g < cols.count; ++g) {
        int64_t first = cols.first(g);
        float *y0 =
            y + ((n * kBlocks + kb) * plane + oh * s.ow + first) * kLanes;
        Tile t{p + oh * s.stride * wp + first * s.stride,
               w + panel * panelFloats, bias ? bias + kb * kLanes : nullptr, y0,
               kb + 1 < kBlocks ? y0 + plane * kLanes : nullptr};
        tiles.byRows[cols.rows(g)](t, args, epilogue);
      }
    }
  }
}

#else

bool cpu::directConvAVX2Runs(int64_t, ConvEpilogue) { return false; }

void cpu::pointwiseConvAVX2(const float *, const float *, const float *,
                            float *, const PointwiseShape &, ConvEpilogue,
                            bool) {
  llvm_unreachable("directConvAVX2Runs is false without x86-64");
}

void cpu::stemConvAVX2(const float *, const float *, const float *, float *,
                       const StemShape &, ConvEpilogue, bool) {
  llvm_unreachable("directConvAVX2Runs is false without x86-64");
}

#endif
