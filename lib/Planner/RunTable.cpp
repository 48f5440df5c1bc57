//===- RunTable.cpp - every stage a placement can have --------------------===//
//
// See RunTable.h.
//
//===----------------------------------------------------------------------===//

#include "RunTable.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <utility>

using namespace heterps::planner;

/// Sorts non-negative doubles ascending. Their IEEE-754 bit patterns, read as
/// unsigned integers, order the same way, so an LSD radix sort on 16-bit
/// digits applies: four linear passes instead of std::sort's n log n
/// comparisons, which dominated the exact search on 1000-layer models
/// (millions of run times).
void heterps::planner::sortNonNegative(std::vector<double> &values) {
  constexpr int kBits = 16, kBuckets = 1 << kBits;
  std::vector<uint64_t> keys(values.size()), scratch(values.size());
  for (size_t i = 0; i < values.size(); ++i)
    std::memcpy(&keys[i], &values[i], sizeof(double));
  std::vector<size_t> count(kBuckets);
  for (int shift = 0; shift < 64; shift += kBits) {
    std::fill(count.begin(), count.end(), 0);
    for (uint64_t k : keys)
      ++count[(k >> shift) & (kBuckets - 1)];
    size_t sum = 0;
    for (size_t &c : count)
      sum += std::exchange(c, sum);
    for (uint64_t k : keys)
      scratch[count[(k >> shift) & (kBuckets - 1)]++] = k;
    keys.swap(scratch);
  }
  for (size_t i = 0; i < values.size(); ++i)
    std::memcpy(&values[i], &keys[i], sizeof(double));
}

RunTable::RunTable(const PlacementProblem &problem, double limit)
    : n_(problem.numLayers()), types_(problem.numTypes()),
      offsets_(n_ * types_ + 1, 0) {
  const ClusterSpec &spec = problem.spec();
  double batch = static_cast<double>(spec.job.batchSize);
  // Room for every run: untouched pages cost nothing, and the table never
  // moves while it grows.
  runs_.reserve(std::min<size_t>(n_ * (n_ + 1) / 2 * types_, 1 << 26));
  for (size_t start = 0; start < n_; ++start)
    for (size_t t = 0; t < types_; ++t) {
      RunCoefficients c;
      int64_t cap = spec.deviceTypes[t].maxCount;
      for (size_t end = start + 1; end <= n_; ++end) {
        c.add(problem.layers()[end - 1].costs[t], batch);
        std::optional<int64_t> k = c.smallestReplicas(batch, limit, cap);
        // Times only grow as the run grows: no longer run fits either.
        if (!k)
          break;
        runs_.push_back(
            {static_cast<uint32_t>(end), static_cast<int32_t>(*k), c.et(*k)});
      }
      offsets_[start * types_ + t + 1] = runs_.size();
    }
}

std::vector<double> RunTable::stageTimes() const {
  std::vector<double> times;
  times.reserve(runs_.size());
  for (const Run &r : runs_)
    times.push_back(r.et);
  sortNonNegative(times);
  times.erase(std::unique(times.begin(), times.end()), times.end());
  return times;
}
