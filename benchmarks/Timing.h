//===- Timing.h - how the benchmark programs time a call --------*- C++ -*-===//

#ifndef HETERPS_BENCHMARKS_TIMING_H
#define HETERPS_BENCHMARKS_TIMING_H

#include <chrono>
#include <cstdint>

namespace heterps::bench {

inline double now() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// Runs `body` once to warm up (first touches, message buffers), then
/// until `minSeconds` have passed; seconds per call.
template <typename F> double timeIt(double minSeconds, F body) {
  body();
  int64_t calls = 0;
  double start = now(), end;
  do {
    body();
    ++calls;
    end = now();
  } while (end - start < minSeconds);
  return (end - start) / static_cast<double>(calls);
}

} // namespace heterps::bench

#endif // HETERPS_BENCHMARKS_TIMING_H
