//===- NonFinite.cpp - finding NaNs and infinities ------------------------===//

#include "heterps/Runtime/NonFinite.h"

#include <algorithm>
#include <cmath>
#include <cstring>

using namespace heterps::runtime;

// NaNs and infinities are the floats whose exponent bits are all ones.
static constexpr uint32_t kExponent = 0x7f800000u;

static bool nonFinite(const float *x) {
  uint32_t bits;
  std::memcpy(&bits, x, sizeof bits);
  return (bits & kExponent) == kExponent;
}

/// Whether any of `n` floats is a NaN or an infinity. The executor scans
/// every input of every run with it: built for AVX2 too, picked at load
/// time where the CPU has it.
__attribute__((target_clones("avx2", "default"))) static bool
anyNonFinite(const float *data, int64_t n) {
  uint32_t any = 0; // a bool here keeps the loop from vectorising
  for (int64_t i = 0; i < n; ++i) {
    uint32_t bits;
    std::memcpy(&bits, data + i, sizeof bits);
    any |= (bits & kExponent) == kExponent;
  }
  return any;
}

int64_t heterps::runtime::findNonFinite(const float *data, int64_t n) {
  constexpr int64_t kBlock = 4096;
  for (int64_t begin = 0; begin < n; begin += kBlock) {
    int64_t end = std::min(n, begin + kBlock);
    if (!anyNonFinite(data + begin, end - begin))
      continue;
    for (int64_t i = begin; i < end; ++i)
      if (nonFinite(data + i))
        return i;
  }
  return -1;
}

bool heterps::runtime::isInfiniteFill(const Tensor &t) {
  if (t.isNull() || t.dtype() != DType::F32 || !t.isPlain() ||
      t.numElements() == 0)
    return false;
  const float *p = t.data<float>();
  return std::all_of(p, p + t.numElements(),
                     [](float v) { return std::isinf(v); });
}

bool heterps::runtime::hasNonFinite(const Tensor &t) {
  if (t.isNull() || t.dtype() != DType::F32)
    return false;
  return findNonFinite(t.data<float>(),
                       static_cast<int64_t>(t.bytes() / sizeof(float))) >= 0;
}
