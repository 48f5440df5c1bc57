//===- SwishPass.cpp - Swish (SiLU) over a buffer in place ----------------===//
//
// swish(x) = x / (1 + e^-x). On AVX-512, 16 lanes at a time (SwishVector.h:
// 2^n by vscalefps, one instruction where the portable form needs integer
// arithmetic on the exponent bits); elsewhere the same formula with
// std::exp.
//
//===----------------------------------------------------------------------===//

#include "SwishPass.h"
#include "ParallelSums.h"
#include "SwishVector.h"

#include <algorithm>
#include <cmath>

using namespace heterps::runtime;
using namespace heterps::runtime::cpu;

namespace {

#if defined(__x86_64__)
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
    x[i] = v < kSwishZeroBelow ? v * 0.f : v / (1.f + std::exp(-v));
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
