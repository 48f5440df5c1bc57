//===- SmallHeadAttention.cpp - attention products of small heads --------===//

#include "SmallHeadAttention.h"
#include "SwishVector.h"

#include "llvm/Support/ErrorHandling.h"

using namespace heterps::runtime;
using namespace heterps::runtime::cpu;

#if defined(__x86_64__)

#include <immintrin.h>

#include <cmath>
#include <type_traits>

namespace {

/// The lanes of the last 16-float vector of `n` values that hold one.
__mmask16 tailLanes(int64_t n) {
  int64_t rest = n % 16;
  return rest ? static_cast<__mmask16>((1u << rest) - 1) : 0xFFFF;
}

/// Kt (D x S, rows of rowLength floats, zeros past S) from K, whose
/// element (d, s) is k[d * kD + s * kS]. K's rows of D consecutive floats
/// (kD = 1, the usual) go through 16 x 16 transposes in registers;
/// element-by-element copies cost as much as the product of a head this
/// small.
__attribute__((target("avx512f"))) void packKt(const float *k, int64_t kD,
                                               int64_t kS, int64_t S, int64_t D,
                                               int64_t rowLength,
                                               float *packed) {
  if (kD != 1) {
    for (int64_t d = 0; d < D; ++d) {
      float *row = packed + d * rowLength;
      for (int64_t s = 0; s < S; ++s)
        row[s] = k[d * kD + s * kS];
      for (int64_t s = S; s < rowLength; ++s)
        row[s] = 0.f;
    }
    return;
  }
  for (int64_t s0 = 0; s0 < rowLength; s0 += 16)
    for (int64_t d0 = 0; d0 < D; d0 += 16) {
      __mmask16 lanes = D - d0 >= 16 ? 0xFFFF : tailLanes(D - d0);
      __m512 r[16], a[16], b[16];
      for (int i = 0; i < 16; ++i)
        r[i] = s0 + i < S ? _mm512_maskz_loadu_ps(lanes, k + (s0 + i) * kS + d0)
                          : _mm512_setzero_ps();
      for (int i = 0; i < 8; ++i) {
        a[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        a[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
      }
      // b[4i + j], 128-bit lane L: column 4L + j of rows 4i to 4i + 3.
      for (int i = 0; i < 4; ++i)
        for (int h = 0; h < 2; ++h) {
          __m512d x = _mm512_castps_pd(a[4 * i + h]),
                  y = _mm512_castps_pd(a[4 * i + h + 2]);
          b[4 * i + 2 * h] = _mm512_castpd_ps(_mm512_unpacklo_pd(x, y));
          b[4 * i + 2 * h + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(x, y));
        }
      for (int j = 0; j < 4; ++j) {
        __m512 c0 = _mm512_shuffle_f32x4(b[j], b[4 + j], 0x88),
               c1 = _mm512_shuffle_f32x4(b[j], b[4 + j], 0xDD),
               c2 = _mm512_shuffle_f32x4(b[8 + j], b[12 + j], 0x88),
               c3 = _mm512_shuffle_f32x4(b[8 + j], b[12 + j], 0xDD);
        __m512 column[4] = {_mm512_shuffle_f32x4(c0, c2, 0x88),
                            _mm512_shuffle_f32x4(c1, c3, 0x88),
                            _mm512_shuffle_f32x4(c0, c2, 0xDD),
                            _mm512_shuffle_f32x4(c1, c3, 0xDD)};
        for (int l = 0; l < 4; ++l)
          if (d0 + 4 * l + j < D)
            _mm512_storeu_ps(packed + (d0 + 4 * l + j) * rowLength + s0,
                             column[l]);
      }
    }
}

/// R rows of scores from `t`, V vectors each: each Kt vector loaded once
/// for all R.
template <int V, int R>
__attribute__((target("avx512f"), always_inline)) inline void
scoreRows(const float *q, int64_t qRow, const float *packed, int64_t rowLength,
          int64_t D, __m512 scale, int64_t t, float *scores) {
  __m512 acc[R][V];
  for (int i = 0; i < R; ++i)
    for (int v = 0; v < V; ++v)
      acc[i][v] = _mm512_setzero_ps();
  const float *q0 = q + t * qRow;
  for (int64_t d = 0; d < D; ++d) {
    __m512 k[V];
    for (int v = 0; v < V; ++v)
      k[v] = _mm512_loadu_ps(packed + d * rowLength + 16 * v);
    for (int i = 0; i < R; ++i) {
      __m512 x = _mm512_set1_ps(q0[i * qRow + d]);
      for (int v = 0; v < V; ++v)
        acc[i][v] = _mm512_fmadd_ps(x, k[v], acc[i][v]);
    }
  }
  for (int i = 0; i < R; ++i)
    for (int v = 0; v < V; ++v)
      _mm512_storeu_ps(scores + (t + i) * rowLength + 16 * v,
                       _mm512_mul_ps(scale, acc[i][v]));
}

template <int V>
__attribute__((target("avx512f"))) void
scores(const float *q, int64_t qRow, const float *packed, int64_t rowLength,
       int64_t T, int64_t D, float scale, float *out) {
  __m512 s = _mm512_set1_ps(scale);
  // R rows a step keep R * V accumulators, V Kt vectors and a broadcast
  // within the 32 registers.
  constexpr int R = V <= 2 ? 6 : 4;
  int64_t t = 0;
  for (; t + R <= T; t += R)
    scoreRows<V, R>(q, qRow, packed, rowLength, D, s, t, out);
  for (; t < T; ++t)
    scoreRows<V, 1>(q, qRow, packed, rowLength, D, s, t, out);
}

/// R rows of the output from `t`: each V vector loaded once for all R.
template <int V, int R>
__attribute__((target("avx512f"), always_inline)) inline void
outputRows(const float *p, int64_t rowLength, const float *v, int64_t vRow,
           int64_t S, __mmask16 tail, int64_t t, float *o, int64_t oRow) {
  __m512 acc[R][V];
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < V; ++j)
      acc[i][j] = _mm512_setzero_ps();
  const float *p0 = p + t * rowLength;
  for (int64_t s = 0; s < S; ++s) {
    __m512 w[V];
    for (int j = 0; j < V; ++j)
      w[j] = j + 1 < V ? _mm512_loadu_ps(v + s * vRow + 16 * j)
                       : _mm512_maskz_loadu_ps(tail, v + s * vRow + 16 * j);
    for (int i = 0; i < R; ++i) {
      __m512 x = _mm512_set1_ps(p0[i * rowLength + s]);
      for (int j = 0; j < V; ++j)
        acc[i][j] = _mm512_fmadd_ps(x, w[j], acc[i][j]);
    }
  }
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < V; ++j)
      _mm512_mask_storeu_ps(o + (t + i) * oRow + 16 * j,
                            j + 1 < V ? 0xFFFF : tail, acc[i][j]);
}

template <int V>
__attribute__((target("avx512f"))) void
output(const float *p, int64_t rowLength, const float *v, int64_t vRow,
       int64_t T, int64_t S, int64_t Dv, float *o, int64_t oRow) {
  __mmask16 tail = tailLanes(Dv);
  constexpr int R = V <= 2 ? 6 : 4;
  int64_t t = 0;
  for (; t + R <= T; t += R)
    outputRows<V, R>(p, rowLength, v, vRow, S, tail, t, o, oRow);
  for (; t < T; ++t)
    outputRows<V, 1>(p, rowLength, v, vRow, S, tail, t, o, oRow);
}

} // namespace

__attribute__((target("avx512f"))) void cpu::smallHeadSoftmax(float *row,
                                                              int64_t S) {
  using namespace exppoly;
  int64_t n = (S + 15) / 16;
  __mmask16 tail = tailLanes(S);
  auto lanes = [&](int64_t v) -> __mmask16 {
    return v + 1 < n ? 0xFFFF : tail;
  };
  __m512 top = _mm512_set1_ps(-INFINITY);
  for (int64_t v = 0; v < n; ++v)
    top = _mm512_mask_max_ps(top, lanes(v), top, _mm512_loadu_ps(row + 16 * v));
  __m512 max = _mm512_set1_ps(_mm512_reduce_max_ps(top)),
         low = _mm512_set1_ps(kMinArgument), sum = _mm512_setzero_ps();
  for (int64_t v = 0; v < n; ++v) {
    // e^(x - max), exactly 0 below kMinArgument (a masked -inf); a NaN
    // (a row masked whole) stays NaN.
    __m512 a = _mm512_sub_ps(_mm512_loadu_ps(row + 16 * v), max);
    __m512 e = exp16(_mm512_max_ps(low, a));
    __mmask16 keep = _mm512_mask_cmp_ps_mask(lanes(v), a, low, _CMP_NLT_UQ);
    e = _mm512_maskz_mov_ps(keep, e);
    _mm512_storeu_ps(row + 16 * v, e);
    sum = _mm512_add_ps(sum, e);
  }
  __m512 inverse = _mm512_set1_ps(1.f / _mm512_reduce_add_ps(sum));
  for (int64_t v = 0; v < n; ++v)
    _mm512_storeu_ps(row + 16 * v,
                     _mm512_mul_ps(_mm512_loadu_ps(row + 16 * v), inverse));
}

bool cpu::smallHeadsRun(int64_t S, int64_t Dv) {
  return S > 0 && S <= kSmallHeadMax && Dv > 0 && Dv <= kSmallHeadMax &&
         __builtin_cpu_supports("avx512f");
}

/// fn(std::integral_constant<int, V>()) for `vectors` = V in 1..4: the
/// kernels keep that many vectors a row in registers.
template <typename Fn> static void withVectors(int64_t vectors, Fn fn) {
  switch (vectors) {
  case 1:
    return fn(std::integral_constant<int, 1>());
  case 2:
    return fn(std::integral_constant<int, 2>());
  case 3:
    return fn(std::integral_constant<int, 3>());
  case 4:
    return fn(std::integral_constant<int, 4>());
  }
  llvm_unreachable("a small head of more than 64 keys or value columns");
}

void cpu::smallHeadScores(const float *q, int64_t qRow, const float *k,
                          int64_t kD, int64_t kS, int64_t T, int64_t S,
                          int64_t D, float scale, float *packed, float *out) {
  int64_t rowLength = smallHeadRowLength(S);
  packKt(k, kD, kS, S, D, rowLength, packed);
  withVectors(rowLength / 16, [&](auto V) {
    scores<V()>(q, qRow, packed, rowLength, T, D, scale, out);
  });
}

void cpu::smallHeadOutput(const float *p, const float *v, int64_t vRow,
                          int64_t T, int64_t S, int64_t Dv, float *o,
                          int64_t oRow) {
  int64_t rowLength = smallHeadRowLength(S);
  withVectors((Dv + 15) / 16, [&](auto V) {
    output<V()>(p, rowLength, v, vRow, T, S, Dv, o, oRow);
  });
}

#else // not x86-64: the kernel's sgemm path only

bool cpu::smallHeadsRun(int64_t, int64_t) { return false; }
void cpu::smallHeadScores(const float *, int64_t, const float *, int64_t,
                          int64_t, int64_t, int64_t, int64_t, float, float *,
                          float *) {
  llvm_unreachable("smallHeadScores needs x86-64");
}
void cpu::smallHeadOutput(const float *, const float *, int64_t, int64_t,
                          int64_t, int64_t, float *, int64_t) {
  llvm_unreachable("smallHeadOutput needs x86-64");
}
void cpu::smallHeadSoftmax(float *, int64_t) {
  llvm_unreachable("smallHeadSoftmax needs x86-64");
}

#endif
