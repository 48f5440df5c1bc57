//===- NarrowGroupConv.cpp - 3x3 convolutions with 4- or 8-channel groups -===//

#include "NarrowGroupConv.h"

#include "llvm/Support/ErrorHandling.h"

#include <omp.h>

#include <algorithm>
#include <array>
#include <utility>
#include <vector>

using namespace heterps::runtime;
using namespace heterps::runtime::cpu;
using Kind = ConvEpilogue::Kind;

/// Channels per block: one AVX-512 vector.
constexpr int64_t B = 16;
constexpr int64_t kTaps = 9;

/// The lane of a block whose channel lane `lane` reads at rotation `r`:
/// the same group, `r` channels further round it.
static constexpr int64_t rotatedLane(int64_t lane, int64_t r, int64_t width) {
  return lane - lane % width + (lane % width + r) % width;
}

/// The 16-channel blocks of `c` channels, the last one padded.
static int64_t blocksOf(int64_t c) { return (c + B - 1) / B; }

bool cpu::narrowGroupConvTakes(const ConvGeometry &geo,
                               const Shape &weightShape, int64_t channels,
                               int64_t groups) {
  using dims = dnnl::memory::dims;
  if (weightShape.size() != 4)
    return false;
  int64_t width = weightShape[1];
  return weightShape[0] == channels && weightShape[2] == 3 &&
         weightShape[3] == 3 && groups * width == channels &&
         geo.strides == dims{1, 1} && geo.dilations == dims{0, 0} &&
         geo.padL == dims{1, 1} && geo.padR == dims{1, 1} &&
         narrowGroupConvRuns(channels, width);
}

Tensor cpu::packNarrowGroupWeights(const Tensor &plain, int64_t width,
                                   bool backward) {
  int64_t c = plain.dim(0);
  Tensor packed(DType::F32, {blocksOf(c) * B * kTaps * width});
  const float *w = plain.data<float>();
  float *to = packed.data<float>();
  for (int64_t cb = 0; cb < blocksOf(c); ++cb)
    for (int64_t t = 0; t < kTaps; ++t)
      for (int64_t r = 0; r < width; ++r)
        for (int64_t l = 0; l < B; ++l) {
          int64_t o = cb * B + l, local = l % width;
          // The padded lanes (whole groups past c) weigh nothing.
          if (o >= c) {
            to[((cb * kTaps + t) * width + r) * B + l] = 0.f;
            continue;
          }
          // Forward: output o's weight for the channel it reads at r.
          // Backward: input o's weight in the output channel it reads at
          // r, the tap mirrored.
          int64_t from =
              backward ? ((cb * B + rotatedLane(l, r, width)) * width + local) *
                                 kTaps +
                             kTaps - 1 - t
                       : (o * width + (local + r) % width) * kTaps + t;
          to[((cb * kTaps + t) * width + r) * B + l] = w[from];
        }
  return packed;
}

#if defined(__x86_64__)

namespace {

/// The permute indices of rotations 0..W-1.
template <int64_t W> struct RotationTable {
  alignas(64) int32_t lanes[W][B];
  constexpr RotationTable() : lanes() {
    for (int64_t r = 0; r < W; ++r)
      for (int64_t l = 0; l < B; ++l)
        lanes[r][l] = static_cast<int32_t>(rotatedLane(l, r, W));
  }
};
template <int64_t W> constexpr RotationTable<W> kRotations{};

template <int64_t W>
__attribute__((target("avx512f"), always_inline)) inline __m512i
rotation(int64_t r) {
  return _mm512_load_si512(kRotations<W>.lanes[r]);
}

/// Outputs [ow0, ow0 + N) of row `oh` of one channel block: `x` and `y`
/// at the block's plane, `w` at its packed weights, `bias` at its 16
/// values or null. Each input column is
/// loaded and rotated once for the (up to) three outputs that read it.
template <int64_t W, int64_t N, Kind A>
__attribute__((target("avx512f"))) void
strip(const float *x, const float *w, const float *bias, float *y,
      const NarrowGroupShape &s, const ConvEpilogue &e, int64_t oh,
      int64_t ow0) {
  __m512i idx[W];
  for (int64_t r = 1; r < W; ++r)
    idx[r] = rotation<W>(r);
  __m512 acc[N];
  for (int64_t j = 0; j < N; ++j)
    acc[j] = bias ? _mm512_loadu_ps(bias) : _mm512_setzero_ps();
#pragma GCC unroll 3
  for (int64_t kh = 0; kh < 3; ++kh) {
    int64_t ih = oh + kh - 1;
    if (ih < 0 || ih >= s.h)
      continue;
    const float *row = x + ih * s.w * B;
#pragma GCC unroll 16
    for (int64_t i = 0; i < N + 2; ++i) {
      int64_t col = ow0 - 1 + i;
      if (col < 0 || col >= s.w)
        continue;
      __m512 v[W];
      v[0] = _mm512_loadu_ps(row + col * B);
      for (int64_t r = 1; r < W; ++r)
        v[r] = _mm512_permutexvar_ps(idx[r], v[0]);
#pragma GCC unroll 3
      for (int64_t kw = 0; kw < 3; ++kw) {
        int64_t j = i - kw;
        if (j < 0 || j >= N)
          continue;
        const float *tap = w + (kh * 3 + kw) * W * B;
#pragma GCC unroll 8
        for (int64_t r = 0; r < W; ++r)
          acc[j] = _mm512_fmadd_ps(v[r], _mm512_loadu_ps(tap + r * B), acc[j]);
      }
    }
  }
  for (int64_t j = 0; j < N; ++j)
    _mm512_storeu_ps(y + (oh * s.w + ow0 + j) * B, applyEpilogue<A>(acc[j], e));
}

using StripFn = void (*)(const float *, const float *, const float *, float *,
                         const NarrowGroupShape &, const ConvEpilogue &,
                         int64_t, int64_t);

/// Outputs a strip holds at most: its sums, the rotations of a column and
/// the permute indices stay in the 32 vector registers.
template <int64_t W> constexpr int64_t kMaxStrip = W == 4 ? 12 : 8;

template <int64_t W, Kind A, size_t... Ns>
constexpr std::array<StripFn, sizeof...(Ns)>
stripTable(std::index_sequence<Ns...>) {
  return {strip<W, static_cast<int64_t>(Ns) + 1, A>...};
}

/// Row `oh` of channel block `cb` of image `n`, in strips of equal length.
template <int64_t W, Kind A>
__attribute__((target("avx512f"))) void
row(const float *x, const float *w, const float *bias, float *y,
    const NarrowGroupShape &s, const ConvEpilogue &e, int64_t n, int64_t cb,
    int64_t oh) {
  static constexpr auto strips =
      stripTable<W, A>(std::make_index_sequence<kMaxStrip<W>>());
  int64_t plane = (n * blocksOf(s.c) + cb) * s.h * s.w * B;
  const float *wb = w + cb * kTaps * W * B;
  // The bias in 16 lanes, the padded ones 0 (their outputs stay 0).
  alignas(64) float lanes[B] = {};
  if (bias)
    std::copy(bias + cb * B, bias + std::min(s.c, cb * B + B), lanes);
  int64_t count = (s.w + kMaxStrip<W> - 1) / kMaxStrip<W>;
  int64_t ow = 0;
  for (int64_t i = 0; i < count; ++i) {
    int64_t len = s.w / count + (i < s.w % count);
    strips[len - 1](x + plane, wb, bias ? lanes : nullptr, y + plane, s, e, oh,
                    ow);
    ow += len;
  }
}

using RowFn = void (*)(const float *, const float *, const float *, float *,
                       const NarrowGroupShape &, const ConvEpilogue &, int64_t,
                       int64_t, int64_t);

template <int64_t W> RowFn rowFor(Kind a) {
  switch (a) {
  case Kind::Relu:
    return row<W, Kind::Relu>;
  case Kind::Clip:
    return row<W, Kind::Clip>;
  case Kind::HardSwish:
    return row<W, Kind::HardSwish>;
  case Kind::Swish:
    return row<W, Kind::Swish>;
  case Kind::None:
    break;
  }
  return row<W, Kind::None>;
}

/// One input column's share of the weight gradient at rotations
/// [4 Q, 4 Q + 4): the column, rotated, times the gradient of each of
/// the three outputs that read it. `Edge` checks those outputs against
/// the row.
template <int64_t W, int64_t Q, bool Edge>
__attribute__((target("avx512f"), always_inline)) inline void
column(const float *xRow, const float *dyRow, int64_t col, int64_t cols,
       const __m512i *idx, __m512 (&sums)[3][4]) {
  __m512 v = _mm512_loadu_ps(xRow + col * B), rotated[4];
  for (int64_t i = 0; i < 4; ++i)
    rotated[i] =
        Q == 0 && i == 0 ? v : _mm512_permutexvar_ps(idx[Q * 4 + i], v);
  for (int64_t kw = 0; kw < 3; ++kw) {
    int64_t ow = col - kw + 1;
    if (Edge && (ow < 0 || ow >= cols))
      continue;
    __m512 d = _mm512_loadu_ps(dyRow + ow * B);
    for (int64_t i = 0; i < 4; ++i)
      sums[kw][i] = _mm512_fmadd_ps(d, rotated[i], sums[kw][i]);
  }
}

/// Adds one output row's terms for kernel row `kh` at rotations
/// [4 Q, 4 Q + 4) to `acc` (per tap, per rotation, 16 lanes).
template <int64_t W, int64_t Q>
__attribute__((target("avx512f"))) void
rowTerms(const float *xRow, const float *dyRow, int64_t cols, int64_t kh,
         float *acc) {
  __m512i idx[W];
  for (int64_t r = 1; r < W; ++r)
    idx[r] = rotation<W>(r);
  __m512 sums[3][4];
  auto slot = [&](int64_t kw, int64_t i) {
    return acc + ((kh * 3 + kw) * W + Q * 4 + i) * B;
  };
  for (int64_t kw = 0; kw < 3; ++kw)
    for (int64_t i = 0; i < 4; ++i)
      sums[kw][i] = _mm512_loadu_ps(slot(kw, i));
  column<W, Q, true>(xRow, dyRow, 0, cols, idx, sums);
  for (int64_t col = 1; col + 1 < cols; ++col)
    column<W, Q, false>(xRow, dyRow, col, cols, idx, sums);
  if (cols > 1)
    column<W, Q, true>(xRow, dyRow, cols - 1, cols, idx, sums);
  for (int64_t kw = 0; kw < 3; ++kw)
    for (int64_t i = 0; i < 4; ++i)
      _mm512_storeu_ps(slot(kw, i), sums[kw][i]);
}

/// The weight gradient's sums for channel block `cb` over images
/// [n0, n1), added to `acc`.
template <int64_t W>
void blockTerms(const float *x, const float *dy, float *acc,
                const NarrowGroupShape &s, int64_t cb, int64_t n0, int64_t n1) {
  int64_t rowFloats = s.w * B;
  for (int64_t n = n0; n < n1; ++n) {
    int64_t plane = (n * blocksOf(s.c) + cb) * s.h * rowFloats;
    for (int64_t oh = 0; oh < s.h; ++oh)
      for (int64_t kh = 0; kh < 3; ++kh) {
        int64_t ih = oh + kh - 1;
        if (ih < 0 || ih >= s.h)
          continue;
        const float *xRow = x + plane + ih * rowFloats;
        const float *dyRow = dy + plane + oh * rowFloats;
        rowTerms<W, 0>(xRow, dyRow, s.w, kh, acc);
        if constexpr (W == 8)
          rowTerms<W, 1>(xRow, dyRow, s.w, kh, acc);
      }
  }
}

} // namespace

bool cpu::narrowGroupConvRuns(int64_t channels, int64_t width) {
  return (width == 4 || width == 8) && channels > 0 && channels % width == 0 &&
         __builtin_cpu_supports("avx512f");
}

void cpu::narrowGroupConv(const float *x, const float *w, const float *bias,
                          float *y, const NarrowGroupShape &s,
                          ConvEpilogue epilogue) {
  RowFn run =
      s.width == 4 ? rowFor<4>(epilogue.kind) : rowFor<8>(epilogue.kind);
  int64_t blocks = blocksOf(s.c);
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < s.n * blocks * s.h; ++i)
    run(x, w, bias, y, s, epilogue, i / (blocks * s.h), i / s.h % blocks,
        i % s.h);
}

void cpu::narrowGroupWeightGrad(const float *x, const float *dy, float *dw,
                                float *db, const NarrowGroupShape &s) {
  int64_t blocks = blocksOf(s.c), width = s.width;
  int64_t perBlock = kTaps * width * B;
  // Blocks as work items, each split over the images when there are too
  // few to share out; each item sums into its own slots.
  int64_t threads = omp_get_max_threads();
  int64_t chunks = std::min(s.n, (2 * threads + blocks - 1) / blocks);
  std::vector<float> acc(blocks * chunks * perBlock, 0.f);
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < blocks * chunks; ++i) {
    int64_t cb = i / chunks, chunk = i % chunks;
    int64_t n0 = s.n * chunk / chunks, n1 = s.n * (chunk + 1) / chunks;
    float *sums = acc.data() + i * perBlock;
    if (width == 4)
      blockTerms<4>(x, dy, sums, s, cb, n0, n1);
    else
      blockTerms<8>(x, dy, sums, s, cb, n0, n1);
  }
  // Lane l of rotation r at tap t is w[o][(o + r) mod width][t].
  for (int64_t cb = 0; cb < blocks; ++cb)
    for (int64_t t = 0; t < kTaps; ++t)
      for (int64_t r = 0; r < width; ++r)
        for (int64_t l = 0; l < B; ++l) {
          float sum = 0;
          for (int64_t chunk = 0; chunk < chunks; ++chunk)
            sum +=
                acc[(cb * chunks + chunk) * perBlock + (t * width + r) * B + l];
          if (int64_t o = cb * B + l; o < s.c)
            dw[(o * width + (l % width + r) % width) * kTaps + t] = sum;
        }
  if (!db)
    return;
  int64_t plane = s.h * s.w * B;
#pragma omp parallel for schedule(static)
  for (int64_t cb = 0; cb < blocks; ++cb) {
    float sums[B] = {};
    for (int64_t n = 0; n < s.n; ++n) {
      const float *p = dy + (n * blocks + cb) * plane;
      for (int64_t k = 0; k < plane; ++k)
        sums[k % B] += p[k];
    }
    std::copy(sums, sums + std::min(B, s.c - cb * B), db + cb * B);
  }
}

#else

bool cpu::narrowGroupConvRuns(int64_t, int64_t) { return false; }

void cpu::narrowGroupConv(const float *, const float *, const float *, float *,
                          const NarrowGroupShape &, ConvEpilogue) {
  llvm_unreachable("narrowGroupConvRuns is false off x86-64");
}

void cpu::narrowGroupWeightGrad(const float *, const float *, float *, float *,
                                const NarrowGroupShape &) {
  llvm_unreachable("narrowGroupConvRuns is false off x86-64");
}

#endif
