//===- BenchTiming.h - what this folder's kernel benchmarks share -*- C++
//-*-===//
//
// The timing and comparison helpers of the kernel microbenchmarks built by
// kernel-bench.sh.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_BENCHMARKS_MACHINE_BENCHTIMING_H
#define HETERPS_BENCHMARKS_MACHINE_BENCHTIMING_H

#include <algorithm>
#include <chrono>
#include <cmath>
#include <vector>

/// The best of `rounds` rounds of `runs` calls of `run`, in microseconds
/// per call.
template <typename F> double bestMicroseconds(F run, int rounds, int runs) {
  double best = 1e30;
  for (int round = 0; round < rounds; ++round) {
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < runs; ++i)
      run();
    std::chrono::duration<double> d = std::chrono::steady_clock::now() - start;
    best = std::min(best, d.count() / runs);
  }
  return best * 1e6;
}

/// The largest absolute difference between two outputs of one size.
inline float maxAbsDiff(const std::vector<float> &a,
                        const std::vector<float> &b) {
  float diff = 0.f;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i)
    diff = std::max(diff, std::fabs(a[i] - b[i]));
  return diff;
}

#endif // HETERPS_BENCHMARKS_MACHINE_BENCHTIMING_H
