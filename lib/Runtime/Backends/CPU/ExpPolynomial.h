//===- ExpPolynomial.h - e^x by range reduction, a polynomial --*- C++ -*-===//
//
// The backend's own exponentials (softmax rows in AttentionKernel.cpp, the
// Swish pass in SwishPass.cpp) share Cephes' expf: x = n ln 2 + r with n
// the nearest integer to x log2(e) and ln 2 split in two so that r is
// exact, then e^r = 1 + r + r^2 p(r) on |r| <= ln(2)/2 and e^x = 2^n e^r,
// to about 2 ulp.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_RUNTIME_BACKENDS_CPU_EXPPOLYNOMIAL_H
#define HETERPS_LIB_RUNTIME_BACKENDS_CPU_EXPPOLYNOMIAL_H

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

#endif // HETERPS_LIB_RUNTIME_BACKENDS_CPU_EXPPOLYNOMIAL_H
