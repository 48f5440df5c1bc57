//===- SwishPass.h - Swish (SiLU) over a buffer in place --------*- C++ -*-===//
//
// x * sigmoid(x) over a convolution's output after the convolution, in
// place of oneDNN's swish post-op: the post-op computes it inside the
// convolution's loops at 0.11-0.18 ns an element on 2 threads, a separate
// AVX-512 pass at about half that plus the trip through memory, and which
// wins depends on the convolution (ConvKernel.cpp times both). The
// EfficientNets run SiLU on nearly every convolution's output.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_RUNTIME_BACKENDS_CPU_SWISHPASS_H
#define HETERPS_LIB_RUNTIME_BACKENDS_CPU_SWISHPASS_H

#include <cstdint>

namespace heterps::runtime::cpu {

/// data[i] = data[i] * sigmoid(data[i]) for i < n, on the OpenMP threads
/// when n is large; within 2e-7 relative of the exact value for finite
/// data, 0 (signed) below -88, NaN for NaN and -inf.
void swishInPlace(float *data, int64_t n);
/// The same on one thread without AVX-512: what swishInPlace runs where the
/// CPU lacks it (tests run it everywhere).
void swishPortable(float *data, int64_t n);

} // namespace heterps::runtime::cpu

#endif // HETERPS_LIB_RUNTIME_BACKENDS_CPU_SWISHPASS_H
