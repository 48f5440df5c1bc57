//===- RunTable.cpp - every stage a placement can have --------------------===//
//
// See RunTable.h.
//
//===----------------------------------------------------------------------===//

#include "RunTable.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

using namespace heterps::planner;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

/// The closed form of the fewest k with serial + parallel / k <= budget
/// (infinite when none). Callers check it against their test itself, as
/// the two can round differently by one.
double replicasWithin(double serial, double parallel, double budget) {
  if (parallel == 0)
    return serial <= budget ? 1 : kInf;
  return serial >= budget ? kInf : std::ceil(parallel / (budget - serial));
}

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
  double budget = batch / limit;
  double guess = std::max({1.0, replicasWithin(ctSerial, ctParallel, budget),
                           replicasWithin(dtSerial, dtParallel, budget)});
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
      offsets_(n_ * types_ + 1, 0), layerTimes_(n_ * types_) {
  const ClusterSpec &spec = problem.spec();
  double batch = static_cast<double>(spec.job.batchSize);
  for (const DeviceType &d : spec.deviceTypes)
    maxCount_.push_back(d.maxCount);
  for (size_t i = 0; i < n_; ++i)
    for (size_t t = 0; t < types_; ++t)
      layerTimes_[i * types_ + t].add(problem.layers()[i].costs[t], batch);
  // Room for every run: untouched pages cost nothing, and the table never
  // moves while it grows.
  runs_.reserve(std::min<size_t>(n_ * (n_ + 1) / 2 * types_, 1 << 26));
  for (size_t start = 0; start < n_; ++start)
    for (size_t t = 0; t < types_; ++t) {
      RunCoefficients c;
      for (size_t end = start + 1; end <= n_; ++end) {
        c += layerTimes_[(end - 1) * types_ + t];
        std::optional<int64_t> k =
            c.smallestReplicas(batch, limit, maxCount_[t]);
        // Times only grow as the run grows: no longer run fits either.
        if (!k)
          break;
        runs_.push_back(
            {static_cast<uint32_t>(end), static_cast<int32_t>(*k), c.et(*k)});
      }
      offsets_[start * types_ + t + 1] = runs_.size();
    }
}

double RunTable::largestTime() const {
  double largest = 0;
  for (const Run &r : runs_)
    largest = std::max(largest, r.et);
  return largest;
}

CapRuns::CapRuns(const RunTable &table, double cap)
    : types_(table.numTypes()), cap_(cap),
      nextCap_(std::numeric_limits<double>::infinity()),
      offsets_(table.numLayers() * types_ + 1, 0) {
  // No more runs than the table's; untouched pages cost nothing.
  runs_.reserve(table.size());
  for (size_t start = 0; start < table.numLayers(); ++start)
    for (size_t t = 0; t < types_; ++t) {
      table.forEachUnderCap(
          start, t, cap,
          [&](const Run &r) {
            runs_.push_back(r);
            return true;
          },
          &nextCap_);
      offsets_[start * types_ + t + 1] = runs_.size();
    }
}
