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

#include <cstdint>
#include <vector>

namespace heterps::planner {

/// Sorts non-negative doubles ascending (a radix sort; see RunTable.cpp).
void sortNonNegative(std::vector<double> &values);

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

  /// The runs starting at layer `start` on type `t`, by increasing end.
  const Run *begin(size_t start, size_t t) const {
    return runs_.data() + offsets_[start * types_ + t];
  }
  const Run *end(size_t start, size_t t) const {
    return runs_.data() + offsets_[start * types_ + t + 1];
  }
  size_t size() const { return runs_.size(); }

  /// The distinct stage times of all runs, ascending.
  std::vector<double> stageTimes() const;

private:
  size_t n_, types_;
  std::vector<size_t> offsets_;
  std::vector<Run> runs_;
};

} // namespace heterps::planner

#endif // HETERPS_LIB_PLANNER_RUNTABLE_H
