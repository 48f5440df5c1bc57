//===- ExpPolynomial.h - e^x by range reduction, a polynomial --*- C++ -*-===//
//
// The backend's own exponentials (softmax rows in AttentionKernel.cpp, the
// Swish pass in SwishPass.cpp, GELU in training, Train/GeluGrad.cpp) share
// Cephes' expf: x = n ln 2 + r with n the nearest integer to x log2(e) and
// ln 2 split in two so that r is exact, then e^r = 1 + r + r^2 p(r) on
// |r| <= ln(2)/2 and e^x = 2^n e^r, to about 2 ulp.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_RUNTIME_BACKENDS_CPU_EXPPOLYNOMIAL_H
#define HETERPS_LIB_RUNTIME_BACKENDS_CPU_EXPPOLYNOMIAL_H

#include <cstdint>
#include <cstring>

namespace heterps::runtime::cpu::exppoly {

constexpr float kLog2e = 1.44269504088896341f;
/// ln 2 = kLn2High + kLn2Low, kLn2High with few mantissa bits.
constexpr float kLn2High = 0.693359375f, kLn2Low = -2.12194440e-4f;
/// p(r), highest power first.
constexpr float kCoefficients[] = {1.9875691500e-4f, 1.3981999507e-3f,
                                   8.3334519073e-3f, 4.1665795894e-2f,
                                   1.6666665459e-1f, 5.0000001201e-1f};
/// The arguments where e^x stays a normal, finite float.
constexpr float kMinArgument = -87.f, kMaxArgument = 88.f;

} // namespace heterps::runtime::cpu::exppoly

namespace heterps::runtime::cpu {

/// e^x for x <= 0 to about 2 ulp, and exactly 0 below -87 (a masked -inf
/// gets probability 0, as with std::exp); n rounded by the 1.5 * 2^23
/// trick, 2^n from its bits. Plain arithmetic the compiler vectorises,
/// unlike std::exp.
inline float expNonPositive(float x) {
  using namespace exppoly;
  constexpr float kRound = 12582912.f;
  float clamped = x < kMinArgument ? kMinArgument : x;
  float t = clamped * kLog2e + kRound;
  float n = t - kRound;
  float r = clamped - n * kLn2High - n * kLn2Low;
  const float *c = kCoefficients;
  float p = ((((c[0] * r + c[1]) * r + c[2]) * r + c[3]) * r + c[4]) * r + c[5];
  float y = p * r * r + r + 1.f;
  int32_t tBits, expBits;
  std::memcpy(&tBits, &t, sizeof t);
  expBits = (tBits - 0x4B400000 + 127) << 23; // kRound's bits are 0x4B400000
  float scale;
  std::memcpy(&scale, &expBits, sizeof scale);
  return x < kMinArgument ? 0.f : y * scale;
}

} // namespace heterps::runtime::cpu

#endif // HETERPS_LIB_RUNTIME_BACKENDS_CPU_EXPPOLYNOMIAL_H
