//===- NonFinite.cpp - finding NaNs and infinities ------------------------===//

#include "heterps/Runtime/NonFinite.h"

#include <algorithm>
#include <cstring>

using namespace heterps::runtime;

int64_t heterps::runtime::findNonFinite(const float *data, int64_t n) {
  // NaNs and infinities are the floats whose exponent bits are all ones.
  constexpr uint32_t kExponent = 0x7f800000u;
  constexpr int64_t kBlock = 4096;
  for (int64_t begin = 0; begin < n; begin += kBlock) {
    int64_t end = std::min(n, begin + kBlock);
    uint32_t any = 0;
    for (int64_t i = begin; i < end; ++i) {
      uint32_t bits;
      std::memcpy(&bits, data + i, sizeof bits);
      any |= (bits & kExponent) == kExponent;
    }
    if (!any)
      continue;
    for (int64_t i = begin; i < end; ++i) {
      uint32_t bits;
      std::memcpy(&bits, data + i, sizeof bits);
      if ((bits & kExponent) == kExponent)
        return i;
    }
  }
  return -1;
}

bool heterps::runtime::hasNonFinite(const Tensor &t) {
  if (t.isNull() || t.dtype() != DType::F32)
    return false;
  return findNonFinite(t.data<float>(),
                       static_cast<int64_t>(t.bytes() / sizeof(float))) >= 0;
}
