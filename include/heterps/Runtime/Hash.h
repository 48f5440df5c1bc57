//===- Hash.h - counter-based random numbers --------------------*- C++ -*-===//
//
// splitmix64's output function: a bijective 64-bit mix whose outputs for
// consecutive inputs are independent enough for dropout masks and initial
// values. Random numbers drawn as mix64(key + counter) can be produced in
// any order and on any thread with the same result.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_RUNTIME_HASH_H
#define HETERPS_RUNTIME_HASH_H

#include <cstdint>

namespace heterps::runtime {

inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/// The golden-ratio increment of splitmix64: spreads counters apart.
constexpr uint64_t kGolden64 = 0x9E3779B97F4A7C15ull;

/// A float uniform in [0, 1) from the top 24 bits of `bits`.
inline float unitFloat(uint64_t bits) {
  return static_cast<float>(bits >> 40) * (1.f / (1u << 24));
}

} // namespace heterps::runtime

#endif // HETERPS_RUNTIME_HASH_H
