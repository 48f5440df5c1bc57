//===- RandomInstance.h - random placement problems for tests ---*- C++ -*-===//
//
// Small random placement problems with compute and data times, partly
// serial layers, loose to impossible floors and tight max_count limits: the
// planners' tests compare against brute force on them.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_UNITTESTS_PLANNER_RANDOMINSTANCE_H
#define HETERPS_UNITTESTS_PLANNER_RANDOMINSTANCE_H

#include "heterps/Planner/Placement.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>

namespace heterps::planner::testutil {

struct Instance {
  ClusterSpec spec;
  std::vector<Layer> layers;
  double limit = 0;
};

/// Types get prices 10x apart and speeds ~3x apart, so no type dominates;
/// max_count is small (1..6) so the limits bind; the floor ranges from
/// loose to beyond what any plan reaches.
inline Instance randomInstance(std::mt19937_64 &rng, size_t layers,
                               size_t types) {
  std::uniform_real_distribution<double> unit(0, 1);
  Instance in;
  for (size_t t = 0; t < types; ++t) {
    DeviceType d;
    d.name = "t" + std::to_string(t);
    d.kind = "cpu";
    d.pricePerHour =
        3.6 * std::pow(10.0, static_cast<double>(t) * 0.5) * (0.5 + unit(rng));
    d.maxCount = 1 + static_cast<int64_t>(unit(rng) * 6);
    in.spec.deviceTypes.push_back(d);
  }
  in.spec.job = {32, 3200, 2, 0};
  for (size_t i = 0; i < layers; ++i) {
    Layer l;
    l.name = "l" + std::to_string(i);
    l.kind = "Test";
    double work = 0.01 + unit(rng);
    for (size_t t = 0; t < types; ++t) {
      // Faster types are dearer, with per-layer noise.
      double speed = std::pow(3.0, static_cast<double>(t)) * (0.5 + unit(rng));
      l.costs.push_back({work / speed, 0.3 * unit(rng) * work / speed,
                         0.7 + 0.3 * unit(rng), unit(rng), 16});
    }
    in.layers.push_back(l);
  }
  // Relative to the throughput of everything on the fastest type, k = 1.
  double total = 0;
  for (const Layer &l : in.layers)
    total += l.costs.back().oct * 2;
  in.limit = 32 / total * (0.2 + 3 * unit(rng));
  return in;
}

/// Calls `visit(stages)` for every replica count per stage of `placement`
/// (1..max_count) whose sums per type keep the max_count limits.
template <typename Visit>
void forEachReplicaVector(const Instance &in, const Placement &placement,
                          Visit visit) {
  std::vector<Stage> stages = formStages(placement);
  for (Stage &s : stages)
    s.replicas = 1;
  while (true) {
    std::vector<int64_t> used(in.spec.deviceTypes.size(), 0);
    for (const Stage &s : stages)
      used[s.deviceType] += s.replicas;
    bool withinLimits = true;
    for (size_t t = 0; t < used.size(); ++t)
      withinLimits &= used[t] <= in.spec.deviceTypes[t].maxCount;
    if (withinLimits)
      visit(static_cast<const std::vector<Stage> &>(stages));
    // Next replica vector, counting in mixed radix.
    size_t i = 0;
    for (; i < stages.size(); ++i) {
      if (stages[i].replicas <
          in.spec.deviceTypes[stages[i].deviceType].maxCount) {
        ++stages[i].replicas;
        break;
      }
      stages[i].replicas = 1;
    }
    if (i == stages.size())
      return;
  }
}

/// Calls `visit(placement)` for each of the T^n placements of `in`.
template <typename Visit>
void forEachPlacement(const Instance &in, Visit visit) {
  size_t n = in.layers.size(), types = in.spec.deviceTypes.size();
  for (Placement current(n, 0);;) {
    visit(static_cast<const Placement &>(current));
    size_t digit = 0;
    while (digit < n && ++current[digit] == types)
      current[digit++] = 0;
    if (digit == n)
      return;
  }
}

/// The cheapest job cost of `placement` over every replica count per stage
/// (1..max_count) that meets the floor within the max_count sums, by
/// enumeration; infinity when none does. Independent of provision().
inline double cheapestByEnumeration(const Instance &in,
                                    const Placement &placement) {
  double best = std::numeric_limits<double>::infinity();
  forEachReplicaVector(in, placement, [&](const std::vector<Stage> &stages) {
    PlanFigures f = evaluatePlan(in.spec, in.layers, stages);
    if (f.throughput >= in.limit)
      best = std::min(best, f.cost);
  });
  return best;
}

} // namespace heterps::planner::testutil

#endif // HETERPS_UNITTESTS_PLANNER_RANDOMINSTANCE_H
