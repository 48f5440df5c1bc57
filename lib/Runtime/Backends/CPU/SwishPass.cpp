//===- SwishPass.cpp - Swish (SiLU) over a buffer in place ----------------===//
//
// swish(x) = x / (1 + e^-x). On AVX-512, 16 lanes at a time with e^-x from
// ExpPolynomial.h and 2^n by vscalefps (one instruction where the portable
// form needs integer arithmetic on the exponent bits); elsewhere the same
// formula with std::exp. Below -88, e^-x would overflow: the result is
// x * 0 there (-0, and NaN for -inf as in x * sigmoid(x)).
//
//===----------------------------------------------------------------------===//

#include "SwishPass.h"
#include "ExpPolynomial.h"
#include "ParallelSums.h"

#include <algorithm>
#include <cmath>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

using namespace heterps::runtime;
using namespace heterps::runtime::cpu;

namespace {

constexpr float kZeroBelow = -88.f;

#if defined(__x86_64__)
__attribute__((target("avx512f"))) inline __m512 swish16(__m512 x) {
  using namespace exppoly;
  // e^a for a = -x, clamped to where e^a is finite (NaN stays NaN).
  __m512 a = _mm512_sub_ps(_mm512_setzero_ps(), x);
  a = _mm512_min_ps(a, _mm512_set1_ps(kMaxArgument));
  a = _mm512_max_ps(a, _mm512_set1_ps(kMinArgument));
  __m512 k =
      _mm512_roundscale_ps(_mm512_mul_ps(a, _mm512_set1_ps(kLog2e)),
                           _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(k, _mm512_set1_ps(kLn2High), a);
  r = _mm512_fnmadd_ps(k, _mm512_set1_ps(kLn2Low), r);
  const float *c = kCoefficients;
  __m512 p = _mm512_set1_ps(c[0]);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(c[1]));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(c[2]));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(c[3]));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(c[4]));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(c[5]));
  __m512 er = _mm512_fmadd_ps(_mm512_mul_ps(p, r), r,
                              _mm512_add_ps(r, _mm512_set1_ps(1.f)));
  __m512 e = _mm512_scalef_ps(er, k);
  __m512 y = _mm512_div_ps(x, _mm512_add_ps(_mm512_set1_ps(1.f), e));
  __mmask16 tiny =
      _mm512_cmp_ps_mask(x, _mm512_set1_ps(kZeroBelow), _CMP_LT_OQ);
  return _mm512_mask_mul_ps(y, tiny, x, _mm512_setzero_ps());
}

__attribute__((target("avx512f"))) void swishAVX512(float *x, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(x + i, swish16(_mm512_loadu_ps(x + i)));
  if (i < n) {
    __mmask16 rest = static_cast<__mmask16>((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(x + i, rest,
                          swish16(_mm512_maskz_loadu_ps(rest, x + i)));
  }
}

// __builtin_cpu_init: this runs among the library's static initialisers.
const bool hasAVX512 =
    (__builtin_cpu_init(), __builtin_cpu_supports("avx512f"));
#endif

void swishChunk(float *x, int64_t n) {
#if defined(__x86_64__)
  if (hasAVX512)
    return swishAVX512(x, n);
#endif
  swishPortable(x, n);
}

} // namespace

void cpu::swishPortable(float *x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    float v = x[i];
    x[i] = v < kZeroBelow ? v * 0.f : v / (1.f + std::exp(-v));
  }
}

void cpu::swishInPlace(float *data, int64_t n) {
  // Chunks of 16 KB: whole vectors, and a thread's share stays contiguous.
  constexpr int64_t kChunk = 4096;
  int64_t chunks = (n + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static) num_threads(threadsFor(n))
  for (int64_t c = 0; c < chunks; ++c)
    swishChunk(data + c * kChunk, std::min(kChunk, n - c * kChunk));
}
