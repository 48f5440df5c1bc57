//===- ParallelSums.h - row sums split across threads -----------*- C++ -*-===//
//
// Reductions over the rows of an activation whose result is small (a scale
// or bias gradient, the channel means of one image) still have to split
// across threads. Each thread adds its rows into its own zeroed
// accumulator and the accumulators are added in thread order, so a result
// depends on the thread count only, not on scheduling.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_RUNTIME_BACKENDS_CPU_PARALLELSUMS_H
#define HETERPS_LIB_RUNTIME_BACKENDS_CPU_PARALLELSUMS_H

#include <cstddef>
#include <cstdint>
#include <omp.h>
#include <vector>

namespace heterps::runtime::cpu {

/// The threads a loop over `elements` floats uses: all of them, unless
/// the loop is too short to pay for waking them.
inline int threadsFor(int64_t elements) {
  return elements > 32768 ? omp_get_max_threads() : 1;
}

/// Calls body(r, acc) for every row r < rows on up to `threads` threads,
/// acc being the calling thread's `size` floats; returns their sum.
template <typename Body>
std::vector<float> sumRowsInParallel(int64_t rows, size_t size, int threads,
                                     Body body) {
  std::vector<float> partial(threads * size, 0.f);
#pragma omp parallel num_threads(threads)
  {
    float *acc = partial.data() + omp_get_thread_num() * size;
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; ++r)
      body(r, acc);
  }
  std::vector<float> sum(size, 0.f);
  for (int t = 0; t < threads; ++t)
    for (size_t k = 0; k < size; ++k)
      sum[k] += partial[t * size + k];
  return sum;
}

} // namespace heterps::runtime::cpu

#endif // HETERPS_LIB_RUNTIME_BACKENDS_CPU_PARALLELSUMS_H
