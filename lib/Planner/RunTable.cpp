//===- RunTable.cpp - every stage a placement can have --------------------===//
//
// See RunTable.h.
//
//===----------------------------------------------------------------------===//

#include "RunTable.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
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

namespace {

/// The times of a run of layers on one type (a run's are the sums of its
/// layers'), with the provisioning questions the searches ask of them.
struct RunCoefficients : SplitTimes {
  /// The provisioning test: B / ET >= limit (a stage of ET 0 never limits).
  bool meets(int64_t k, double batch, double limit) const;
  /// The smallest k in 1..cap meeting the floor `limit`, or nullopt.
  std::optional<int64_t> smallestReplicas(double batch, double limit,
                                          int64_t cap) const;
};

} // namespace

bool RunCoefficients::meets(int64_t k, double batch, double limit) const {
  double t = et(static_cast<double>(k));
  return t == 0 || batch / t >= limit;
}

std::optional<int64_t> RunCoefficients::smallestReplicas(double batch,
                                                         double limit,
                                                         int64_t cap) const {
  if (cap < 1)
    return std::nullopt;
  if (limit <= 0)
    return 1;
  // The closed form k >= parallel / (B/limit - serial), then the test.
  constexpr double inf = std::numeric_limits<double>::infinity();
  double budget = batch / limit;
  auto needed = [&](double serial, double parallel) -> double {
    if (parallel == 0)
      return serial <= budget ? 1 : inf;
    return serial >= budget ? inf : std::ceil(parallel / (budget - serial));
  };
  double guess = std::max(
      {1.0, needed(ctSerial, ctParallel), needed(dtSerial, dtParallel)});
  if (guess > static_cast<double>(cap) + 1)
    return std::nullopt;
  int64_t k = static_cast<int64_t>(guess);
  // The closed form and the test round differently near the boundary.
  while (k > 1 && meets(k - 1, batch, limit))
    --k;
  while (k <= cap && !meets(k, batch, limit))
    ++k;
  if (k > cap)
    return std::nullopt;
  return k;
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
