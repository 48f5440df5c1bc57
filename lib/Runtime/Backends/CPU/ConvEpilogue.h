//===- ConvEpilogue.h - a convolution's activation in registers -*- C++ -*-===//
//
// Internal to the CPU backend: what our own convolution kernels
// (DepthwiseDirect.h, PointwiseDepthwise.h) apply to a sum in registers
// before its one store, and how a oneDNN post-op list maps onto it.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_RUNTIME_BACKENDS_CPU_CONVEPILOGUE_H
#define HETERPS_LIB_RUNTIME_BACKENDS_CPU_CONVEPILOGUE_H

#include "SwishVector.h"

#include <dnnl.hpp>

#include <optional>

namespace heterps::runtime::cpu {

/// What follows the sum in registers. Each maps 0 to 0, so the padded
/// lanes of the last channel block stay 0, and each keeps NaN.
struct ConvEpilogue {
  enum Kind { None, Relu, Clip, HardSwish, Swish } kind = None;
  /// Clip's bounds.
  float lo = 0, hi = 0;
};

/// The epilogue for a convolution's post-ops, if they are nothing or one
/// activation it has (ReLU, a clip whose range holds 0, HardSwish, Swish
/// as SwishVector.h computes it); after a sum of scale 1 when `leadingSum`
/// (the kernel adds its destination's values before the activation).
std::optional<ConvEpilogue> convEpilogueOf(const dnnl::post_ops &ops,
                                           bool leadingSum = false);

#if defined(__x86_64__)
/// `acc` with the epilogue of kind A applied.
template <ConvEpilogue::Kind A>
__attribute__((target("avx512f"), always_inline)) inline __m512
applyEpilogue(__m512 acc, const ConvEpilogue &e) {
  using Kind = ConvEpilogue::Kind;
  // max and min return their second operand when either is NaN: the sum
  // goes second, so NaN stays NaN as ONNX has it.
  __m512 zero = _mm512_setzero_ps();
  if constexpr (A == Kind::Relu)
    return _mm512_max_ps(zero, acc);
  if constexpr (A == Kind::Clip)
    return _mm512_min_ps(_mm512_set1_ps(e.hi),
                         _mm512_max_ps(_mm512_set1_ps(e.lo), acc));
  if constexpr (A == Kind::Swish)
    return swish16(acc);
  if constexpr (A == Kind::HardSwish) {
    __m512 t = _mm512_add_ps(acc, _mm512_set1_ps(3.f));
    t = _mm512_min_ps(_mm512_set1_ps(6.f), _mm512_max_ps(zero, t));
    return _mm512_mul_ps(_mm512_mul_ps(acc, t), _mm512_set1_ps(1.f / 6.f));
  }
  return acc;
}

/// The same for 8 floats in AVX2, for every kind but Swish.
template <ConvEpilogue::Kind A>
__attribute__((target("avx2,fma"), always_inline)) inline __m256
applyEpilogue(__m256 acc, const ConvEpilogue &e) {
  using Kind = ConvEpilogue::Kind;
  static_assert(A != Kind::Swish, "no AVX2 Swish");
  __m256 zero = _mm256_setzero_ps();
  if constexpr (A == Kind::Relu)
    return _mm256_max_ps(zero, acc);
  if constexpr (A == Kind::Clip)
    return _mm256_min_ps(_mm256_set1_ps(e.hi),
                         _mm256_max_ps(_mm256_set1_ps(e.lo), acc));
  if constexpr (A == Kind::HardSwish) {
    __m256 t = _mm256_add_ps(acc, _mm256_set1_ps(3.f));
    t = _mm256_min_ps(_mm256_set1_ps(6.f), _mm256_max_ps(zero, t));
    return _mm256_mul_ps(_mm256_mul_ps(acc, t), _mm256_set1_ps(1.f / 6.f));
  }
  return acc;
}
#endif

} // namespace heterps::runtime::cpu

#endif // HETERPS_LIB_RUNTIME_BACKENDS_CPU_CONVEPILOGUE_H
