//===- WinogradConv.cpp - our own Winograd F(4x4, 3x3) convolution --------===//

#include "WinogradConv.h"

#include "llvm/Support/ErrorHandling.h"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <vector>

using namespace heterps::runtime;
using namespace heterps::runtime::cpu;
using Kind = ConvEpilogue::Kind;

namespace {
/// The input tile's side, the output tile's, and the tile's positions.
constexpr int64_t kIn = 6, kOut = 4, kPositions = kIn * kIn;
/// Channels per block of the layout (one AVX2 vector); output channels per
/// column of the products (two vectors); tiles per row group of them.
constexpr int64_t kLanes = 8, kPanel = 16, kRows = 6;

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
} // namespace

#if defined(__x86_64__)

#include <immintrin.h>

#define AVX2_INLINE __attribute__((target("avx2,fma"), always_inline)) inline
#define AVX2 __attribute__((target("avx2,fma")))

namespace {

/// Where the 8 channels of vector block `vb` of item n start in one
/// group's `channels` channels and `positions` pixels laid out in blocks of
/// s.block channels (a block of 16 holds two vector blocks side by side),
/// from the group's first block: an item holds s.groups groups.
inline int64_t laneBlockOffset(const WinogradShape &s, int64_t n, int64_t vb,
                               int64_t channels, int64_t positions) {
  int64_t c0 = vb * kLanes;
  return (n * (channels * s.groups / s.block) + c0 / s.block) * positions *
             s.block +
         c0 % s.block;
}

/// Sizes derived from a WinogradShape, and the block of tiles one thread
/// works on at a time.
struct Tiling {
  int64_t tilesW, perImage, tiles, cBlocks, kBlocks, panels;
  /// Tiles per block, the last block maybe fewer.
  int64_t perBlock;
  /// Tiles per chunk, when all threads take a chunk at a time (`chunked`).
  int64_t perChunk;
  bool chunked;

  /// The item and the top left output of tile `tile`.
  void origin(int64_t tile, int64_t &n, int64_t &oh0, int64_t &ow0) const {
    n = tile / perImage;
    int64_t r = tile % perImage;
    oh0 = r / tilesW * kOut;
    ow0 = r % tilesW * kOut;
  }
};

/// Six values of a tile's column or row times B^T (the input transform).
AVX2_INLINE void inputRow(const __m256 (&d)[kIn], __m256 (&t)[kIn]) {
  __m256 two = _mm256_set1_ps(2.f), four = _mm256_set1_ps(4.f),
         five = _mm256_set1_ps(5.f);
  t[0] = _mm256_fmadd_ps(four, d[0], _mm256_fnmadd_ps(five, d[2], d[4]));
  t[1] = _mm256_fnmadd_ps(four, _mm256_add_ps(d[1], d[2]),
                          _mm256_add_ps(d[3], d[4]));
  t[2] = _mm256_fmadd_ps(four, _mm256_sub_ps(d[1], d[2]),
                         _mm256_sub_ps(d[4], d[3]));
  t[3] = _mm256_fmadd_ps(two, _mm256_sub_ps(d[3], d[1]),
                         _mm256_sub_ps(d[4], d[2]));
  t[4] = _mm256_fmadd_ps(two, _mm256_sub_ps(d[1], d[3]),
                         _mm256_sub_ps(d[4], d[2]));
  t[5] = _mm256_fmadd_ps(four, d[1], _mm256_fnmadd_ps(five, d[3], d[5]));
}

/// Six values of a product's column or row times A^T (the output
/// transform), four out.
AVX2_INLINE void outputRow(const __m256 (&m)[kIn], __m256 (&o)[kOut]) {
  __m256 s12 = _mm256_add_ps(m[1], m[2]), d12 = _mm256_sub_ps(m[1], m[2]);
  __m256 s34 = _mm256_add_ps(m[3], m[4]), d34 = _mm256_sub_ps(m[3], m[4]);
  o[0] = _mm256_add_ps(_mm256_add_ps(m[0], s12), s34);
  o[1] = _mm256_fmadd_ps(_mm256_set1_ps(2.f), d34, d12);
  o[2] = _mm256_fmadd_ps(_mm256_set1_ps(4.f), s34, s12);
  o[3] = _mm256_add_ps(_mm256_fmadd_ps(_mm256_set1_ps(8.f), d34, d12), m[5]);
}

/// B^T d B of every 8-channel block of the 6x6 input tile whose top left
/// is (ih0, iw0) in item n, positions outside the image read as zeros;
/// position p of block cb goes to v[p * positionStride + cb * 8].
AVX2_INLINE void transformInput(const float *x, const WinogradShape &s,
                                const Tiling &t, int64_t n, int64_t ih0,
                                int64_t iw0, float *v, int64_t positionStride) {
  bool inside = ih0 >= 0 && iw0 >= 0 && ih0 + kIn <= s.h && iw0 + kIn <= s.w;
  for (int64_t cb = 0; cb < t.cBlocks; ++cb) {
    const float *plane = x + laneBlockOffset(s, n, cb, s.c, s.h * s.w);
    __m256 d[kIn][kIn];
    for (int64_t r = 0; r < kIn; ++r)
      for (int64_t c = 0; c < kIn; ++c) {
        int64_t ih = ih0 + r, iw = iw0 + c;
        d[c][r] = inside || (ih >= 0 && ih < s.h && iw >= 0 && iw < s.w)
                      ? _mm256_loadu_ps(plane + (ih * s.w + iw) * s.block)
                      : _mm256_setzero_ps();
      }
    // d holds columns: each becomes a column of B^T d, then each row of
    // that (a column of its transpose) a row of B^T d B.
    __m256 bd[kIn][kIn];
    for (int64_t c = 0; c < kIn; ++c) {
      __m256 col[kIn];
      inputRow(d[c], col);
      for (int64_t r = 0; r < kIn; ++r)
        bd[r][c] = col[r];
    }
    for (int64_t r = 0; r < kIn; ++r) {
      __m256 row[kIn];
      inputRow(bd[r], row);
      for (int64_t c = 0; c < kIn; ++c)
        _mm256_storeu_ps(v + (r * kIn + c) * positionStride + cb * kLanes,
                         row[c]);
    }
  }
}

/// R tiles' products at one position for one panel of 16 output channels:
/// m[r][0..16) = sum over i of v[r * c + i] * u[i][0..16).
template <int R>
AVX2 void product(const float *v, int64_t c, const float *u, float *m) {
  // Every loop over r unrolled, so that the accumulators live in registers.
  __m256 lo[R], hi[R];
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r)
    lo[r] = hi[r] = _mm256_setzero_ps();
  for (int64_t i = 0; i < c; ++i) {
    __m256 u0 = _mm256_loadu_ps(u + i * kPanel),
           u1 = _mm256_loadu_ps(u + i * kPanel + kLanes);
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      __m256 a = _mm256_broadcast_ss(v + r * c + i);
      lo[r] = _mm256_fmadd_ps(a, u0, lo[r]);
      hi[r] = _mm256_fmadd_ps(a, u1, hi[r]);
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) {
    _mm256_storeu_ps(m + r * kPanel, lo[r]);
    _mm256_storeu_ps(m + r * kPanel + kLanes, hi[r]);
  }
}

using ProductFn = void (*)(const float *, int64_t, const float *, float *);
constexpr ProductFn kProducts[kRows + 1] = {nullptr,    product<1>, product<2>,
                                            product<3>, product<4>, product<5>,
                                            product<6>};

/// A^T m A for one 8-channel block kb of one tile (m[p * positionStride]
/// for position p), plus the bias (and the destination's values when
/// Accumulate), the epilogue, and the store of the outputs inside the
/// image.
template <Kind A, bool Accumulate>
AVX2_INLINE void
transformOutput(const float *m, int64_t positionStride, __m256 bias, float *y,
                const WinogradShape &s, const Tiling &t, int64_t n, int64_t kb,
                int64_t oh0, int64_t ow0, const ConvEpilogue &e) {
  __m256 cols[kIn][kIn];
  for (int64_t r = 0; r < kIn; ++r)
    for (int64_t c = 0; c < kIn; ++c)
      cols[c][r] = _mm256_loadu_ps(m + (r * kIn + c) * positionStride);
  __m256 am[kIn][kIn]; // rows of (A^T m) transposed: am[r] is its row r
  for (int64_t c = 0; c < kIn; ++c) {
    __m256 col[kOut];
    outputRow(cols[c], col);
    for (int64_t r = 0; r < kOut; ++r)
      am[r][c] = col[r];
  }
  float *plane = y + laneBlockOffset(s, n, kb, s.k, s.oh * s.ow);
  for (int64_t r = 0; r < kOut && oh0 + r < s.oh; ++r) {
    __m256 row[kOut];
    outputRow(am[r], row);
    for (int64_t c = 0; c < kOut && ow0 + c < s.ow; ++c) {
      float *at = plane + ((oh0 + r) * s.ow + ow0 + c) * s.block;
      __m256 sum = _mm256_add_ps(row[c], bias);
      if constexpr (Accumulate)
        sum = _mm256_add_ps(sum, _mm256_loadu_ps(at));
      _mm256_storeu_ps(at, applyEpilogue<A>(sum, e));
    }
  }
}

/// Tiles [first, first + count) whole: their input transforms into v, then
/// per panel of 16 output channels the 36 products into m and the output
/// transforms. v holds t.perBlock tiles' transforms per position, m one
/// panel's products.
template <Kind A, bool Accumulate>
AVX2 void runBlock(const float *x, const float *w, const float *bias, float *y,
                   const WinogradShape &s, const Tiling &t,
                   const ConvEpilogue &e, int64_t first, int64_t count,
                   float *v, float *m) {
  int64_t vStride = t.perBlock * s.c, mStride = t.perBlock * kPanel;
  for (int64_t i = 0; i < count; ++i) {
    int64_t n, oh0, ow0;
    t.origin(first + i, n, oh0, ow0);
    transformInput(x, s, t, n, oh0 - s.padTop, ow0 - s.padLeft, v + i * s.c,
                   vStride);
  }
  for (int64_t panel = 0; panel < t.panels; ++panel) {
    for (int64_t p = 0; p < kPositions; ++p) {
      const float *u = w + (p * t.panels + panel) * s.c * kPanel;
      for (int64_t r = 0; r < count; r += kRows) {
        int64_t rows = std::min(kRows, count - r);
        kProducts[rows](v + p * vStride + r * s.c, s.c, u,
                        m + p * mStride + r * kPanel);
      }
    }
    for (int64_t half = 0; half < 2; ++half) {
      int64_t kb = panel * 2 + half;
      if (kb >= t.kBlocks)
        break;
      __m256 b =
          bias ? _mm256_loadu_ps(bias + kb * kLanes) : _mm256_setzero_ps();
      for (int64_t i = 0; i < count; ++i) {
        int64_t n, oh0, ow0;
        t.origin(first + i, n, oh0, ow0);
        transformOutput<A, Accumulate>(m + i * kPanel + half * kLanes, mStride,
                                       b, y, s, t, n, kb, oh0, ow0, e);
      }
    }
  }
}

/// Tiles [first, first + count) at once, in three steps on all threads:
/// the input transforms into v, the products into m with each thread
/// reading its own share of the weights, once, and the output transforms.
/// v holds the tiles' transforms per position, m every panel's products
/// per position.
template <Kind A, bool Accumulate>
AVX2 void runChunk(const float *x, const float *w, const float *bias, float *y,
                   const WinogradShape &s, const Tiling &t,
                   const ConvEpilogue &e, int64_t first, int64_t count,
                   float *v, float *m) {
  int64_t vStride = count * s.c, mStride = t.panels * count * kPanel;
#pragma omp parallel
  {
#pragma omp for schedule(static)
    for (int64_t i = 0; i < count; ++i) {
      int64_t n, oh0, ow0;
      t.origin(first + i, n, oh0, ow0);
      transformInput(x, s, t, n, oh0 - s.padTop, ow0 - s.padLeft, v + i * s.c,
                     vStride);
    }
    // Per position and panel, in the weights' order.
#pragma omp for schedule(static)
    for (int64_t j = 0; j < kPositions * t.panels; ++j) {
      const float *u = w + j * s.c * kPanel;
      int64_t p = j / t.panels;
      for (int64_t r = 0; r < count; r += kRows)
        kProducts[std::min(kRows, count - r)](v + p * vStride + r * s.c, s.c, u,
                                              m + (j * count + r) * kPanel);
    }
#pragma omp for schedule(static)
    for (int64_t j = 0; j < count * t.kBlocks; ++j) {
      int64_t i = j / t.kBlocks, kb = j % t.kBlocks, n, oh0, ow0;
      t.origin(first + i, n, oh0, ow0);
      __m256 b =
          bias ? _mm256_loadu_ps(bias + kb * kLanes) : _mm256_setzero_ps();
      transformOutput<A, Accumulate>(m + (kb / 2 * count + i) * kPanel +
                                         kb % 2 * kLanes,
                                     mStride, b, y, s, t, n, kb, oh0, ow0, e);
    }
  }
}

/// The block and the chunk steps for one epilogue.
struct Steps {
  void (*block)(const float *, const float *, const float *, float *,
                const WinogradShape &, const Tiling &, const ConvEpilogue &,
                int64_t, int64_t, float *, float *);
  void (*chunk)(const float *, const float *, const float *, float *,
                const WinogradShape &, const Tiling &, const ConvEpilogue &,
                int64_t, int64_t, float *, float *);
};

template <bool Accumulate> Steps stepsFor(Kind kind) {
  switch (kind) {
  case Kind::None:
    return {runBlock<Kind::None, Accumulate>, runChunk<Kind::None, Accumulate>};
  case Kind::Relu:
    return {runBlock<Kind::Relu, Accumulate>, runChunk<Kind::Relu, Accumulate>};
  case Kind::Clip:
    return {runBlock<Kind::Clip, Accumulate>, runChunk<Kind::Clip, Accumulate>};
  case Kind::HardSwish:
    return {runBlock<Kind::HardSwish, Accumulate>,
            runChunk<Kind::HardSwish, Accumulate>};
  case Kind::Swish:
    break;
  }
  llvm_unreachable("winogradConvRuns is false for Swish");
}

/// Three weights times G (the weight transform), vectors of 8 output
/// channels.
AVX2_INLINE void weightRow(const __m256 (&a)[3], __m256 (&t)[kIn]) {
  __m256 sum02 = _mm256_add_ps(a[0], a[2]);
  __m256 q = _mm256_fmadd_ps(a[0], _mm256_set1_ps(1.f / 24),
                             _mm256_mul_ps(a[2], _mm256_set1_ps(1.f / 6)));
  __m256 r = _mm256_mul_ps(a[1], _mm256_set1_ps(1.f / 12));
  t[0] = _mm256_mul_ps(a[0], _mm256_set1_ps(1.f / 4));
  t[1] = _mm256_mul_ps(_mm256_add_ps(sum02, a[1]), _mm256_set1_ps(-1.f / 6));
  t[2] = _mm256_mul_ps(_mm256_sub_ps(sum02, a[1]), _mm256_set1_ps(-1.f / 6));
  t[3] = _mm256_add_ps(q, r);
  t[4] = _mm256_sub_ps(q, r);
  t[5] = a[2];
}

/// G f G^T of 8 filters, in the lanes: filter l of input channel i has
/// its tap t at filters[l * outStride + t] (+ 8 - t when `flip`); g[p] is
/// position p.
AVX2_INLINE void transformFilters(const float *filters, __m256i lanes,
                                  bool flip, __m256 (&g)[kPositions]) {
  // Columns of f, then rows of G f (columns of its transpose).
  __m256 gf[kIn][3];
  for (int64_t col = 0; col < 3; ++col) {
    __m256 f[3], t[kIn];
    for (int64_t row = 0; row < 3; ++row) {
      int64_t tap = row * 3 + col;
      f[row] = _mm256_i32gather_ps(filters + (flip ? 8 - tap : tap), lanes,
                                   sizeof(float));
    }
    weightRow(f, t);
    for (int64_t row = 0; row < kIn; ++row)
      gf[row][col] = t[row];
  }
  for (int64_t row = 0; row < kIn; ++row) {
    __m256 t[kIn];
    weightRow(gf[row], t);
    for (int64_t col = 0; col < kIn; ++col)
      g[row * kIn + col] = t[col];
  }
}

/// G f G^T of `ins` x `outs` 3x3 filters (outs a multiple of 8) into `to`
/// as winogradConv reads them, a panel of 16 output channels (one cache
/// line) at a time; lanes past `outs` stay as they are (zero). Filter (in,
/// out) has its tap t at plain[in * inStride + out * outStride + t], or
/// + 8 - t when `flip` (the filter turned by 180 degrees): read straight
/// from the plain weights, 8 output channels a gather. Transforms larger
/// than the last-level cache bypass it (streaming stores): they would
/// only evict what the convolution reads next.
AVX2 void packTaps(const float *plain, int64_t ins, int64_t outs,
                   int64_t inStride, int64_t outStride, bool flip, float *to) {
  int64_t panels = ceilDiv(outs, kPanel);
  bool stream =
      kPositions * panels * ins * kPanel * sizeof(float) > 16 * 1024 * 1024 &&
      reinterpret_cast<uintptr_t>(to) % 32 == 0;
  __m256i lanes = _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
                                     _mm256_set1_epi32(int(outStride)));
#pragma omp parallel for schedule(static) collapse(2)
  for (int64_t i = 0; i < ins; ++i)
    for (int64_t panel = 0; panel < panels; ++panel) {
      const float *filters = plain + i * inStride + panel * kPanel * outStride;
      bool whole = (panel + 1) * kPanel <= outs;
      __m256 lo[kPositions], hi[kPositions];
      transformFilters(filters, lanes, flip, lo);
      if (whole)
        transformFilters(filters + kLanes * outStride, lanes, flip, hi);
      for (int64_t p = 0; p < kPositions; ++p) {
        float *at = to + ((p * panels + panel) * ins + i) * kPanel;
        if (stream && whole) {
          _mm256_stream_ps(at, lo[p]);
          _mm256_stream_ps(at + kLanes, hi[p]);
        } else {
          _mm256_storeu_ps(at, lo[p]);
          if (whole)
            _mm256_storeu_ps(at + kLanes, hi[p]);
        }
      }
    }
  _mm_sfence();
}

/// `plain` (K, C, 3, 3) transformed for the convolution itself or, when
/// `backwardData`, for its backward-data: C outputs from K inputs, each
/// filter turned by 180 degrees.
Tensor packWeights(const Tensor &plain, bool backwardData, int64_t groups) {
  int64_t k = plain.dim(0) / groups, c = plain.dim(1);
  int64_t ins = backwardData ? k : c, outs = backwardData ? c : k;
  int64_t perGroup = kPositions * ceilDiv(outs, kPanel) * ins * kPanel;
  Tensor packed(DType::F32, {groups * perGroup});
  // Every lane is written but those of a half-empty last panel.
  if (outs % kPanel)
    std::memset(packed.rawData(), 0, packed.bytes());
  for (int64_t g = 0; g < groups; ++g) {
    const float *filters = plain.data<float>() + g * k * c * 9;
    float *to = packed.data<float>() + g * perGroup;
    if (backwardData)
      packTaps(filters, k, c, c * 9, 9, true, to);
    else
      packTaps(filters, c, k, 9, c * 9, false, to);
  }
  return packed;
}

} // namespace

Tensor cpu::packWinogradWeights(const Tensor &plain, int64_t groups) {
  return packWeights(plain, false, groups);
}

Tensor cpu::packWinogradBackwardWeights(const Tensor &plain, int64_t groups) {
  return packWeights(plain, true, groups);
}

bool cpu::winogradConvRuns(int64_t c, int64_t k, ConvEpilogue epilogue,
                           int64_t block) {
  return (block == kLanes || block == 2 * kLanes) && c % block == 0 &&
         k % block == 0 && epilogue.kind != Kind::Swish &&
         __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

namespace {

/// The tiling of `s` on `threads` threads.
Tiling tilingOf(const WinogradShape &s, int64_t threads) {
  Tiling t;
  t.tilesW = ceilDiv(s.ow, kOut);
  t.perImage = ceilDiv(s.oh, kOut) * t.tilesW;
  t.tiles = s.n * t.perImage;
  t.cBlocks = s.c / kLanes;
  t.kBlocks = s.k / kLanes;
  t.panels = ceilDiv(s.k, kPanel);
  t.perBlock = t.perChunk = 1;
  t.chunked = false;
  if (t.tiles == 0)
    return t;
  // Tiles per block: their transformed input (36 x C floats a tile) in
  // about 256 KiB of cache, each panel of weights read from cache once for
  // all of them; as many blocks as threads at least, in whole rounds.
  int64_t fit = std::clamp<int64_t>(256 * 1024 / (kPositions * s.c * 4), kRows,
                                    8 * kRows);
  int64_t blocks = ceilDiv(ceilDiv(t.tiles, fit), threads) * threads;
  t.perBlock = ceilDiv(t.tiles, blocks);
  // Blocks read all the weights once each, with the transforms in cache.
  // Chunks of tiles that all threads share read them once a chunk, with
  // the chunk's transforms (up to 8 MiB) written out and read back. Few
  // tiles and many channels (ResNet's 14x14 images with 256) take chunks:
  // whichever moves fewer floats.
  int64_t perTile = kPositions * (s.c + t.panels * kPanel);
  t.perChunk = std::min(
      t.tiles, std::max<int64_t>(kRows, 8 * 1024 * 1024 / (perTile * 4)));
  int64_t weights = kPositions * s.c * t.panels * kPanel;
  t.chunked = weights * ceilDiv(t.tiles, t.perChunk) + 2 * perTile * t.tiles <
              weights * ceilDiv(t.tiles, t.perBlock);
  return t;
}

} // namespace

bool cpu::winogradChunked(const WinogradShape &s) {
  return tilingOf(s, omp_get_max_threads()).chunked;
}

void cpu::winogradConv(const float *x, const float *w, const float *bias,
                       float *y, const WinogradShape &s, ConvEpilogue epilogue,
                       bool accumulate) {
  Tiling t = tilingOf(s, omp_get_max_threads());
  if (t.tiles == 0) // an empty batch
    return;
  Steps steps = accumulate ? stepsFor<true>(epilogue.kind)
                           : stepsFor<false>(epilogue.kind);
  // Group g's channels, weights and biases start this far from the first
  // group's (its blocks are whole).
  int64_t xGroup = s.c * s.h * s.w, yGroup = s.k * s.oh * s.ow,
          wGroup = kPositions * t.panels * s.c * kPanel;
  if (t.chunked) {
    static thread_local std::vector<float> transforms;
    size_t vFloats = kPositions * t.perChunk * s.c;
    size_t floats = vFloats + kPositions * t.perChunk * t.panels * kPanel;
    if (transforms.size() < floats)
      transforms.resize(floats);
    for (int64_t g = 0; g < s.groups; ++g)
      for (int64_t first = 0; first < t.tiles; first += t.perChunk)
        steps.chunk(x + g * xGroup, w + g * wGroup,
                    bias ? bias + g * s.k : bias, y + g * yGroup, s, t,
                    epilogue, first, std::min(t.perChunk, t.tiles - first),
                    transforms.data(), transforms.data() + vFloats);
    return;
  }
  // Every group's blocks of tiles in one loop: one parallel region.
  int64_t blocks = ceilDiv(t.tiles, t.perBlock);
  size_t scratchFloats = kPositions * t.perBlock * (s.c + kPanel);
#pragma omp parallel
  {
    // Per thread, kept for its next convolution.
    static thread_local std::vector<float> scratch;
    if (scratch.size() < scratchFloats)
      scratch.resize(scratchFloats);
    float *v = scratch.data(), *m = v + kPositions * t.perBlock * s.c;
#pragma omp for schedule(static)
    for (int64_t gb = 0; gb < s.groups * blocks; ++gb) {
      int64_t g = gb / blocks, first = gb % blocks * t.perBlock;
      steps.block(x + g * xGroup, w + g * wGroup, bias ? bias + g * s.k : bias,
                  y + g * yGroup, s, t, epilogue, first,
                  std::min(t.perBlock, t.tiles - first), v, m);
    }
  }
}

namespace {

/// Four values of an output gradient's column or row times A (the output
/// transform, transposed), six out.
AVX2_INLINE void gradientRow(const __m256 (&d)[kOut], __m256 (&t)[kIn]) {
  __m256 s02 = _mm256_add_ps(d[0], d[2]), s13 = _mm256_add_ps(d[1], d[3]);
  __m256 even = _mm256_fmadd_ps(_mm256_set1_ps(4.f), d[2], d[0]);
  __m256 odd = _mm256_mul_ps(_mm256_set1_ps(2.f),
                             _mm256_fmadd_ps(_mm256_set1_ps(4.f), d[3], d[1]));
  t[0] = d[0];
  t[1] = _mm256_add_ps(s02, s13);
  t[2] = _mm256_sub_ps(s02, s13);
  t[3] = _mm256_add_ps(even, odd);
  t[4] = _mm256_sub_ps(even, odd);
  t[5] = d[3];
}

/// A dy A^T of every 8-channel block of the 4x4 output-gradient tile whose
/// top left is (oh0, ow0) in item n, positions outside the output read as
/// zeros; position p of block kb goes to dm[p * positionStride + kb * 8].
AVX2_INLINE void transformGradient(const float *dy, const WinogradShape &s,
                                   const Tiling &t, int64_t n, int64_t oh0,
                                   int64_t ow0, float *dm,
                                   int64_t positionStride) {
  for (int64_t kb = 0; kb < t.kBlocks; ++kb) {
    const float *plane = dy + laneBlockOffset(s, n, kb, s.k, s.oh * s.ow);
    __m256 d[kOut][kOut]; // columns
    for (int64_t r = 0; r < kOut; ++r)
      for (int64_t c = 0; c < kOut; ++c)
        d[c][r] = oh0 + r < s.oh && ow0 + c < s.ow
                      ? _mm256_loadu_ps(plane +
                                        ((oh0 + r) * s.ow + ow0 + c) * s.block)
                      : _mm256_setzero_ps();
    __m256 ad[kIn][kOut]; // rows of A d
    for (int64_t c = 0; c < kOut; ++c) {
      __m256 col[kIn];
      gradientRow(d[c], col);
      for (int64_t r = 0; r < kIn; ++r)
        ad[r][c] = col[r];
    }
    for (int64_t r = 0; r < kIn; ++r) {
      __m256 row[kIn];
      gradientRow(ad[r], row);
      for (int64_t c = 0; c < kIn; ++c)
        _mm256_storeu_ps(dm + (r * kIn + c) * positionStride + kb * kLanes,
                         row[c]);
    }
  }
}

/// One position's products for R input channels and a panel of 16 output
/// channels, summed over `count` tiles into du: du[r * kp + 0..16) +=
/// sum over j of v[j * c + r] * dm[j * kp + 0..16).
template <int R>
AVX2 void gradientProduct(const float *v, int64_t c, const float *dm,
                          int64_t kp, int64_t count, float *du) {
  __m256 lo[R], hi[R];
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) {
    lo[r] = _mm256_loadu_ps(du + r * kp);
    hi[r] = _mm256_loadu_ps(du + r * kp + kLanes);
  }
  for (int64_t j = 0; j < count; ++j) {
    __m256 d0 = _mm256_loadu_ps(dm + j * kp),
           d1 = _mm256_loadu_ps(dm + j * kp + kLanes);
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      __m256 a = _mm256_broadcast_ss(v + j * c + r);
      lo[r] = _mm256_fmadd_ps(a, d0, lo[r]);
      hi[r] = _mm256_fmadd_ps(a, d1, hi[r]);
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) {
    _mm256_storeu_ps(du + r * kp, lo[r]);
    _mm256_storeu_ps(du + r * kp + kLanes, hi[r]);
  }
}

using GradientProductFn = void (*)(const float *, int64_t, const float *,
                                   int64_t, int64_t, float *);
constexpr GradientProductFn kGradientProducts[kRows + 1] = {nullptr,
                                                            gradientProduct<1>,
                                                            gradientProduct<2>,
                                                            gradientProduct<3>,
                                                            gradientProduct<4>,
                                                            gradientProduct<5>,
                                                            gradientProduct<6>};

/// Six values of a transformed weight gradient's column or row times G
/// (the weight transform, transposed), three out.
AVX2_INLINE void weightGradientRow(const __m256 (&u)[kIn], __m256 (&g)[3]) {
  __m256 s12 = _mm256_add_ps(u[1], u[2]), d21 = _mm256_sub_ps(u[2], u[1]);
  __m256 s34 = _mm256_add_ps(u[3], u[4]), d34 = _mm256_sub_ps(u[3], u[4]);
  __m256 sixth = _mm256_set1_ps(1.f / 6);
  g[0] = _mm256_fmadd_ps(u[0], _mm256_set1_ps(1.f / 4),
                         _mm256_fmsub_ps(s34, _mm256_set1_ps(1.f / 24),
                                         _mm256_mul_ps(s12, sixth)));
  g[1] =
      _mm256_fmadd_ps(d21, sixth, _mm256_mul_ps(d34, _mm256_set1_ps(1.f / 12)));
  g[2] = _mm256_fmadd_ps(_mm256_sub_ps(s34, s12), sixth, u[5]);
}

/// Tiles [first, first + count): their transformed inputs into v and
/// transformed output gradients into dm (per position, kp floats a tile),
/// then per position and panel the products added to du; on the threads
/// of the enclosing parallel region.
AVX2 void addGradientBlock(const float *x, const float *dy,
                           const WinogradShape &s, const Tiling &t,
                           int64_t first, int64_t count, float *v, float *dm,
                           float *du) {
  int64_t kp = t.panels * kPanel;
#pragma omp for schedule(static)
  for (int64_t i = 0; i < count; ++i) {
    int64_t n, oh0, ow0;
    t.origin(first + i, n, oh0, ow0);
    transformInput(x, s, t, n, oh0 - s.padTop, ow0 - s.padLeft, v + i * s.c,
                   count * s.c);
    transformGradient(dy, s, t, n, oh0, ow0, dm + i * kp, count * kp);
  }
#pragma omp for schedule(static)
  for (int64_t j = 0; j < kPositions * t.panels; ++j) {
    int64_t p = j / t.panels, panel = j % t.panels;
    const float *vp = v + p * count * s.c;
    const float *dmp = dm + p * count * kp + panel * kPanel;
    float *dup = du + p * s.c * kp + panel * kPanel;
    for (int64_t i = 0; i < s.c; i += kRows)
      kGradientProducts[std::min(kRows, s.c - i)](vp + i, s.c, dmp, kp, count,
                                                  dup + i * kp);
  }
}

/// G^T du G of input channel i and output channels [o, o + 8) into dw
/// (K, C, 3, 3).
AVX2 void storeWeightGradient(const float *du, int64_t c, int64_t k, int64_t kp,
                              int64_t i, int64_t o, float *dw) {
  __m256 gu[3][kIn]; // rows of G^T du
  for (int64_t col = 0; col < kIn; ++col) {
    __m256 u[kIn], g[3];
    for (int64_t r = 0; r < kIn; ++r)
      u[r] = _mm256_loadu_ps(du + ((r * kIn + col) * c + i) * kp + o);
    weightGradientRow(u, g);
    for (int64_t a = 0; a < 3; ++a)
      gu[a][col] = g[a];
  }
  for (int64_t a = 0; a < 3; ++a) {
    __m256 g[3];
    weightGradientRow(gu[a], g);
    for (int64_t b = 0; b < 3; ++b) {
      alignas(32) float lanes[kLanes];
      _mm256_store_ps(lanes, g[b]);
      for (int64_t l = 0; l < kLanes && o + l < k; ++l)
        dw[((o + l) * c + i) * 9 + a * 3 + b] = lanes[l];
    }
  }
}

/// db[k] = the sum of dy's channel k, 8 channels a vector.
AVX2 void biasGradient(const float *dy, const WinogradShape &s, const Tiling &t,
                       float *db) {
#pragma omp for schedule(static)
  for (int64_t kb = 0; kb < t.kBlocks; ++kb) {
    __m256 sum = _mm256_setzero_ps();
    for (int64_t n = 0; n < s.n; ++n) {
      const float *plane = dy + laneBlockOffset(s, n, kb, s.k, s.oh * s.ow);
      for (int64_t q = 0; q < s.oh * s.ow; ++q)
        sum = _mm256_add_ps(sum, _mm256_loadu_ps(plane + q * s.block));
    }
    _mm256_storeu_ps(db + kb * kLanes, sum);
  }
}

} // namespace

void cpu::winogradWeightGradient(const float *x, const float *dy, float *dw,
                                 float *db, const WinogradShape &s) {
  Tiling t = tilingOf(s, 1);
  int64_t kp = t.panels * kPanel;
  // Tiles per block: their transforms in about 8 MiB; the transformed
  // weights' gradient (36 C kp floats) read and written once a block.
  int64_t perBlock = std::min(
      t.tiles,
      std::max<int64_t>(64, 8 * 1024 * 1024 / (kPositions * (s.c + kp) * 4)));
  size_t duFloats = kPositions * s.c * kp,
         vFloats = kPositions * perBlock * s.c,
         dmFloats = kPositions * perBlock * kp;
  // Kept for the next step's call. The output gradients' lanes past K,
  // which the transforms never write, stay zero.
  static thread_local std::vector<float> scratch;
  if (scratch.size() < duFloats + vFloats + dmFloats)
    scratch.resize(duFloats + vFloats + dmFloats);
  float *du = scratch.data(), *v = du + duFloats, *dm = v + vFloats;
  if (kp != s.k)
    std::fill_n(dm, dmFloats, 0.f);
  // One group at a time (as winogradConv offsets them), its sums from zero.
  int64_t xGroup = s.c * s.h * s.w, yGroup = s.k * s.oh * s.ow;
  for (int64_t g = 0; g < s.groups; ++g) {
    const float *gx = x + g * xGroup, *gdy = dy + g * yGroup;
    float *gdw = dw + g * s.k * s.c * 9, *gdb = db ? db + g * s.k : nullptr;
    std::fill_n(du, duFloats, 0.f);
#pragma omp parallel
    {
      for (int64_t first = 0; first < t.tiles; first += perBlock)
        addGradientBlock(gx, gdy, s, t, first,
                         std::min(perBlock, t.tiles - first), v, dm, du);
#pragma omp for schedule(static) collapse(2)
      for (int64_t i = 0; i < s.c; ++i)
        for (int64_t o = 0; o < s.k; o += kLanes)
          storeWeightGradient(du, s.c, s.k, kp, i, o, gdw);
      if (gdb)
        biasGradient(gdy, s, t, gdb);
    }
  }
}

#else

bool cpu::winogradConvRuns(int64_t, int64_t, ConvEpilogue, int64_t) {
  return false;
}

bool cpu::winogradChunked(const WinogradShape &) { return false; }

Tensor cpu::packWinogradWeights(const Tensor &, int64_t) {
  llvm_unreachable("winogradConvRuns is false off x86-64");
}

Tensor cpu::packWinogradBackwardWeights(const Tensor &, int64_t) {
  llvm_unreachable("winogradConvRuns is false off x86-64");
}

void cpu::winogradConv(const float *, const float *, const float *, float *,
                       const WinogradShape &, ConvEpilogue, bool) {
  llvm_unreachable("winogradConvRuns is false off x86-64");
}

void cpu::winogradWeightGradient(const float *, const float *, float *, float *,
                                 const WinogradShape &) {
  llvm_unreachable("winogradConvRuns is false off x86-64");
}

#endif
