//===- SwishVector.h - Swish of 16 floats in AVX-512 ------------*- C++ -*-===//
//
// Internal to the CPU backend: x * sigmoid(x) for one vector, e^-x from
// ExpPolynomial.h and 2^n by vscalefps (exp16, which softmax rows use
// too). Shared by the Swish pass (SwishPass.cpp) and kernels that apply it
// before their store (DepthwiseDirect.cpp). Below -88, e^-x would
// overflow: the result is x * 0 there (-0, and NaN for -inf as in x *
// sigmoid(x)).
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_RUNTIME_BACKENDS_CPU_SWISHVECTOR_H
#define HETERPS_LIB_RUNTIME_BACKENDS_CPU_SWISHVECTOR_H

#include "ExpPolynomial.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace heterps::runtime::cpu {

/// Below this, swish(x) is x * 0 (e^-x would overflow).
constexpr float kSwishZeroBelow = -88.f;

#if defined(__x86_64__)
/// e^a for a in [kMinArgument, kMaxArgument]; NaN stays NaN.
__attribute__((target("avx512f"))) inline __m512 exp16(__m512 a) {
  using namespace exppoly;
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
  return _mm512_scalef_ps(er, k);
}

__attribute__((target("avx512f"))) inline __m512 swish16(__m512 x) {
  using namespace exppoly;
  // e^a for a = -x, clamped to where e^a is finite (NaN stays NaN).
  __m512 a = _mm512_sub_ps(_mm512_setzero_ps(), x);
  a = _mm512_min_ps(a, _mm512_set1_ps(kMaxArgument));
  a = _mm512_max_ps(a, _mm512_set1_ps(kMinArgument));
  __m512 e = exp16(a);
  __m512 y = _mm512_div_ps(x, _mm512_add_ps(_mm512_set1_ps(1.f), e));
  __mmask16 tiny =
      _mm512_cmp_ps_mask(x, _mm512_set1_ps(kSwishZeroBelow), _CMP_LT_OQ);
  return _mm512_mask_mul_ps(y, tiny, x, _mm512_setzero_ps());
}

#endif

} // namespace heterps::runtime::cpu

#endif // HETERPS_LIB_RUNTIME_BACKENDS_CPU_SWISHVECTOR_H
