//===- RunTable.h - every stage a placement can have ------------*- C++ -*-===//
//
// Internal to the planner: the runs (start, end, type) of layers that can
// form a stage meeting the throughput floor, with their replica counts and
// batch times. The exact search (Exact.cpp) and the boundary refinement
// (Rebalance.cpp) run their dynamic programmes over it.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_PLANNER_RUNTABLE_H
#define HETERPS_LIB_PLANNER_RUNTABLE_H

#include "heterps/Planner/Placement.h"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace heterps::planner {

/// A run of layers [start, end) on one type, with the smallest replica count
/// meeting the floor and its batch time at that count.
struct Run {
  uint32_t end;
  int32_t replicas;
  double et;
};

/// Every run that can meet the floor `limit` within its type's max_count,
/// grouped by (start, type). A run's times are a + b/k per part (Amdahl): the
/// serial and parallel coefficients are summed layer by layer as the run
/// grows.
class RunTable {
public:
  RunTable(const PlacementProblem &problem, double limit);

  /// The runs starting at layer `start` on type `t`, by increasing end (the
  /// ends are start + 1, start + 2, ...).
  const Run *begin(size_t start, size_t t) const {
    return runs_.data() + offsets_[start * types_ + t];
  }
  const Run *end(size_t start, size_t t) const {
    return runs_.data() + offsets_[start * types_ + t + 1];
  }
  size_t size() const { return runs_.size(); }

  /// Calls `visit(run, times)` for the runs from (start, t) in order, with
  /// the run's serial and parallel times (summed as the table summed them);
  /// stops when `visit` returns false.
  template <typename Visit>
  void forEachRun(size_t start, size_t t, Visit visit) const {
    SplitTimes times;
    for (const Run *r = begin(start, t); r != end(start, t); ++r) {
      times += layerTimes_[(r->end - 1) * types_ + t];
      if (!visit(*r, times))
        return;
    }
  }

  /// Calls `visit(run)` for the runs from (start, t) in order, each with the
  /// fewest replicas (within max_count) that meet the floor and keep its
  /// batch time at most `cap`. More replicas than the floor needs can make
  /// a plan cheaper: the slowest stage sets everyone's time. Stops at the
  /// first run no replica count brings under the cap (a longer one needs
  /// more), or when `visit` returns false. With `nextCap`, lowers it to the
  /// smallest batch time above `cap` these runs have at some count: below
  /// it, a cap allows the runs and counts that `cap` allows.
  template <typename Visit>
  void forEachUnderCap(size_t start, size_t t, double cap, Visit visit,
                       double *nextCap = nullptr) const {
    // A longer run needs no fewer replicas than a shorter one: count up
    // from the last run's.
    int32_t k = 1;
    const int32_t most = static_cast<int32_t>(maxCount_[t]);
    forEachRun(start, t, [&](const Run &r, const SplitTimes &times) {
      if (r.et <= cap) {
        k = r.replicas;
        return visit(r);
      }
      if (r.replicas >= most) { // over the cap with all its devices
        if (nextCap)
          *nextCap = std::min(*nextCap, r.et);
        return false;
      }
      k = std::max(k, r.replicas + 1);
      double et = times.et(k);
      while (et > cap && k < most)
        et = times.et(++k);
      if (et > cap) {
        if (nextCap)
          *nextCap = std::min(*nextCap, et);
        return false;
      }
      if (nextCap && k > r.replicas + 1)
        *nextCap = std::min(*nextCap, times.et(k - 1));
      else if (nextCap)
        *nextCap = std::min(*nextCap, r.et);
      return visit(Run{r.end, k, et});
    });
  }

  /// The largest batch time of any run at its floor's replica count.
  double largestTime() const;

  size_t numLayers() const { return n_; }
  size_t numTypes() const { return types_; }

private:
  size_t n_, types_;
  std::vector<size_t> offsets_;
  std::vector<Run> runs_;
  std::vector<SplitTimes> layerTimes_; // [layer * types + t], at batch B
  std::vector<int64_t> maxCount_;      // per type
};

/// The runs of a table under one cap, as RunTable::forEachUnderCap gives
/// them, gathered once for the several DP passes made at that cap.
class CapRuns {
public:
  CapRuns(const RunTable &table, double cap);

  /// The runs starting at layer `start` on type `t`, by increasing end.
  const Run *begin(size_t start, size_t t) const {
    return runs_.data() + offsets_[start * types_ + t];
  }
  const Run *end(size_t start, size_t t) const {
    return runs_.data() + offsets_[start * types_ + t + 1];
  }
  double cap() const { return cap_; }
  /// The smallest batch time above the cap some run has at some count:
  /// below it, a cap allows the same runs and counts.
  double nextCap() const { return nextCap_; }

private:
  size_t types_;
  double cap_, nextCap_;
  std::vector<size_t> offsets_;
  std::vector<Run> runs_;
};

} // namespace heterps::planner

#endif // HETERPS_LIB_PLANNER_RUNTABLE_H
