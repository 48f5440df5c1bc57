//===- DepthwiseDirect.cpp - our own depthwise convolution ----------------===//

#include "DepthwiseDirect.h"

#include "llvm/Support/ErrorHandling.h"

#include <algorithm>
#include <cstring>

using namespace heterps::runtime;
using namespace heterps::runtime::cpu;
using Kind = ConvEpilogue::Kind;

constexpr int64_t B = kChannelBlock;

Tensor cpu::packDepthwiseWeights(const Tensor &plain) {
  int64_t c = plain.dim(0), taps = plain.numElements() / c;
  int64_t blocks = channelBlocksOf(c);
  Tensor packed(DType::F32, {blocks * taps * B});
  float *to = packed.data<float>();
  const float *from = plain.data<float>();
  std::memset(to, 0, packed.bytes());
  for (int64_t ch = 0; ch < c; ++ch)
    for (int64_t t = 0; t < taps; ++t)
      to[(ch / B * taps + t) * B + ch % B] = from[ch * taps + t];
  return packed;
}

#if defined(__x86_64__)

namespace {

/// Where one row's positions read and write, and what they add.
struct RowView {
  const float *x; // the input's first row, at the block's first channel
  float *y;       // the output row, the same
  int64_t step;   // floats from one position to the next
  int64_t rowStep;
  __m512 bias;
  __mmask16 lanes; // the channels to load and store
  int64_t khLo, khHi, ih0;
};

/// The 16 channels at `p`: all of them, or only `lanes` when `Masked`.
template <bool Masked>
__attribute__((target("avx512f"), always_inline)) inline __m512
load(const RowView &r, const float *p) {
  return Masked ? _mm512_maskz_loadu_ps(r.lanes, p) : _mm512_loadu_ps(p);
}

template <bool Masked>
__attribute__((target("avx512f"), always_inline)) inline void
store(const RowView &r, float *p, __m512 v) {
  if (Masked)
    _mm512_mask_storeu_ps(p, r.lanes, v);
  else
    _mm512_storeu_ps(p, v);
}

/// N neighbouring output positions of a row from `ow` on, each input
/// column loaded once for the taps of all N that read it. `Edge` checks
/// each column against the image, `Masked` loads and stores only `lanes`
/// (channels-last's last, partial block).
template <int64_t K, int64_t S, int64_t N, Kind A, bool Edge, bool Masked>
__attribute__((target("avx512f"), always_inline)) inline void
positionsFrom(const RowView &r, const __m512 *taps, const DepthwiseShape &s,
              const ConvEpilogue &e, int64_t ow) {
  int64_t iw0 = ow * S - s.padLeft;
  __m512 acc[N];
  for (int64_t j = 0; j < N; ++j)
    acc[j] = r.bias;
    // Constant bounds: the loops unroll and the taps stay in registers.
#pragma GCC unroll 7
  for (int64_t kh = 0; kh < K; ++kh) {
    if (kh < r.khLo || kh >= r.khHi)
      continue;
    const float *xr = r.x + (r.ih0 + kh) * r.rowStep + iw0 * r.step;
#pragma GCC unroll 10
    for (int64_t i = 0; i < (N - 1) * S + K; ++i) {
      if (Edge && (iw0 + i < 0 || iw0 + i >= s.w))
        continue;
      __m512 v = load<Masked>(r, xr + i * r.step);
#pragma GCC unroll 4
      for (int64_t j = 0; j < N; ++j)
        if (int64_t kw = i - j * S; kw >= 0 && kw < K)
          acc[j] = _mm512_fmadd_ps(v, taps[kh * K + kw], acc[j]);
    }
  }
  for (int64_t j = 0; j < N; ++j)
    store<Masked>(r, r.y + (ow + j) * r.step, applyEpilogue<A>(acc[j], e));
}

template <int64_t K, int64_t S, Kind A, bool Masked>
__attribute__((target("avx512f"))) void
positions(const RowView &r, const __m512 *taps, const DepthwiseShape &s,
          const ConvEpilogue &e) {
  // Columns whose taps all fall inside the image run without checks.
  int64_t owLo = std::min(s.ow, (s.padLeft + S - 1) / S);
  int64_t lastInside = s.w - K + s.padLeft;
  int64_t owHi = lastInside < 0
                     ? owLo
                     : std::max(owLo, std::min(s.ow, lastInside / S + 1));
  // Four at a time at stride 1, where neighbours share most columns.
  int64_t ow = 0;
  for (; ow < owLo; ++ow)
    positionsFrom<K, S, 1, A, true, Masked>(r, taps, s, e, ow);
  if constexpr (S == 1)
    for (; ow + 4 <= owHi; ow += 4)
      positionsFrom<K, S, 4, A, false, Masked>(r, taps, s, e, ow);
  for (; ow < owHi; ++ow)
    positionsFrom<K, S, 1, A, false, Masked>(r, taps, s, e, ow);
  for (; ow < s.ow; ++ow)
    positionsFrom<K, S, 1, A, true, Masked>(r, taps, s, e, ow);
}

/// Output rows [ohBegin, ohEnd) of channels [16 cb, 16 cb + 16), `x` and
/// `y` at their first row (depthwiseBlockRows), the block's taps loaded
/// once.
template <int64_t K, int64_t S, Kind A>
__attribute__((target("avx512f"))) void
rows(const float *x, const float *w, const float *bias, float *y,
     const DepthwiseShape &s, const ConvEpilogue &e, int64_t cb,
     int64_t ohBegin, int64_t ohEnd) {
  int64_t valid = std::min(B, s.c - cb * B);
  __mmask16 channels = static_cast<__mmask16>((1u << valid) - 1);
  __m512 taps[K * K];
  for (int64_t t = 0; t < K * K; ++t)
    taps[t] = _mm512_loadu_ps(w + (cb * K * K + t) * B);
  RowView r;
  r.step = s.channelsLast ? s.c : B;
  r.rowStep = s.w * r.step;
  r.x = x;
  r.bias = bias ? _mm512_maskz_loadu_ps(channels, bias + cb * B)
                : _mm512_setzero_ps();
  r.lanes = channels;
  for (int64_t oh = ohBegin; oh < ohEnd; ++oh) {
    r.y = y + oh * s.ow * r.step;
    r.ih0 = oh * S - s.padTop;
    r.khLo = std::max<int64_t>(0, -r.ih0);
    r.khHi = std::min<int64_t>(K, s.h - r.ih0);
    // Blocks hold their padded lanes (zeros); channels-last memory ends at
    // the last channel.
    if (s.channelsLast && valid < B)
      positions<K, S, A, true>(r, taps, s, e);
    else
      positions<K, S, A, false>(r, taps, s, e);
  }
}

using RowFn = void (*)(const float *, const float *, const float *, float *,
                       const DepthwiseShape &, const ConvEpilogue &, int64_t,
                       int64_t, int64_t);

template <int64_t K, int64_t S> RowFn rowFor(Kind a) {
  switch (a) {
  case Kind::Relu:
    return rows<K, S, Kind::Relu>;
  case Kind::Clip:
    return rows<K, S, Kind::Clip>;
  case Kind::HardSwish:
    return rows<K, S, Kind::HardSwish>;
  case Kind::Swish:
    return rows<K, S, Kind::Swish>;
  case Kind::None:
    break;
  }
  return rows<K, S, Kind::None>;
}

template <int64_t K> RowFn rowFor(int64_t stride, Kind a) {
  return stride == 1 ? rowFor<K, 1>(a) : rowFor<K, 2>(a);
}

RowFn rowFor(int64_t kernel, int64_t stride, Kind a) {
  switch (kernel) {
  case 3:
    return rowFor<3>(stride, a);
  case 5:
    return rowFor<5>(stride, a);
  default:
    return rowFor<7>(stride, a);
  }
}

} // namespace

bool cpu::depthwiseDirectRuns(int64_t kernel, int64_t stride) {
  return (kernel == 3 || kernel == 5 || kernel == 7) &&
         (stride == 1 || stride == 2) && __builtin_cpu_supports("avx512f");
}

void cpu::depthwiseDirect(const float *x, const float *w, const float *bias,
                          float *y, const DepthwiseShape &s,
                          ConvEpilogue epilogue) {
  RowFn run = rowFor(s.kernel, s.stride, epilogue.kind);
  // Work items of whole blocks where there are enough of them, each
  // block's taps loaded once; else a block's rows split in chunks, 8 items
  // at least. Channels-last items are chunks of rows over every block, so
  // that the blocks of a position come from the same cache lines.
  int64_t blocks = channelBlocksOf(s.c);
  int64_t items = s.channelsLast ? s.n : s.n * blocks;
  int64_t chunks = std::min(s.oh, (8 + items - 1) / items);
  int64_t perChunk = (s.oh + chunks - 1) / chunks;
  int64_t itemChannels = s.channelsLast ? s.c : blocks * B;
  // One block's first row: channels-last, its first channel.
  auto at = [&](int64_t cb, int64_t rows, int64_t cols) {
    return s.channelsLast ? cb * B : cb * rows * cols * B;
  };
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < items * chunks; ++i) {
    int64_t item = i / chunks, begin = i % chunks * perChunk;
    int64_t end = std::min(s.oh, begin + perChunk);
    int64_t n = s.channelsLast ? item : item / blocks;
    int64_t cbBegin = s.channelsLast ? 0 : item % blocks;
    int64_t cbEnd = s.channelsLast ? blocks : cbBegin + 1;
    for (int64_t cb = cbBegin; cb < cbEnd; ++cb)
      run(x + n * itemChannels * s.h * s.w + at(cb, s.h, s.w), w, bias,
          y + n * itemChannels * s.oh * s.ow + at(cb, s.oh, s.ow), s, epilogue,
          cb, begin, end);
  }
}

void cpu::depthwiseBlockRows(const float *x, const float *w, const float *bias,
                             float *y, const DepthwiseShape &s,
                             ConvEpilogue epilogue, int64_t cb, int64_t ohBegin,
                             int64_t ohEnd) {
  rowFor(s.kernel, s.stride, epilogue.kind)(x, w, bias, y, s, epilogue, cb,
                                            ohBegin, ohEnd);
}

#else

bool cpu::depthwiseDirectRuns(int64_t, int64_t) { return false; }

void cpu::depthwiseDirect(const float *, const float *, const float *, float *,
                          const DepthwiseShape &, ConvEpilogue) {
  llvm_unreachable("depthwiseDirectRuns is false off x86-64");
}

void cpu::depthwiseBlockRows(const float *, const float *, const float *,
                             float *, const DepthwiseShape &, ConvEpilogue,
                             int64_t, int64_t, int64_t) {
  llvm_unreachable("depthwiseDirectRuns is false off x86-64");
}

#endif
