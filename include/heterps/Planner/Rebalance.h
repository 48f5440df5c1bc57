//===- Rebalance.h - stage boundaries per type sequence ---------*- C++ -*-===//
//
// StageRebalancer::improve() searches a plan's sequence of stage types (cpu,
// t4, cpu, ... for instance) rather than its layers: for a sequence, it
// finds the cheapest stage boundaries exactly, moving every boundary at
// once. It starts with the plan's own sequence, then descends over
// neighbouring sequences - a stage left out (its neighbours merge when of
// one type), a stage of another type inserted between two stages or at
// either end, a stage split around a stage of another type - moving to the
// first that improves, until none does. It complements LocalSearch.h, whose
// moves change one or two stages at a time: a plan with one stage too many
// or too few is a local optimum there (every other boundary has to move
// with the change), but not here.
//
// Method: with the type sequence fixed, a stage is a run [a, b) on a known
// type, whose replica count k (the smallest meeting the floor), price p_t·k
// and batch time ET are in the RunTable. The job cost is (L·M/B)·P·E with P
// the summed price and E the largest ET. For a cap on E, a dynamic
// programme over (stage, end layer) gives the least P (ties: least E) among
// plans whose stages all have ET under the cap; the cap then drops just
// below the E found, as in Exact.h, until no plan fits. Without binding
// max_count limits this is the optimum of the sequence. The DP does not
// count devices per type; when its plans exceed a max_count, that type's
// devices get a price penalty in the DP (a quarter of their price, doubled
// each round) and the caps are tried again. Every plan found is scored by
// the tracker. The cost is O(s·R) per cap for s stages and R runs per
// (start, type).
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_PLANNER_REBALANCE_H
#define HETERPS_PLANNER_REBALANCE_H

#include "heterps/Planner/Placement.h"

#include <memory>

namespace heterps::planner {

class RunTable;

/// Refines plans over their sequences of stage types; see the file comment.
class StageRebalancer {
public:
  explicit StageRebalancer(const PlacementProblem &problem);
  ~StageRebalancer();

  /// Returns the best plan found from `plan` (itself when nothing is
  /// better), with its evaluation in `eval`. Stops early when the tracker's
  /// time is up.
  Placement improve(SearchTracker &search, Placement plan, PlacementEval &eval);

private:
  /// Searches the plans with stage types `types` in order; true when one
  /// beats `eval` (then it is in `plan` and `eval`).
  bool tryTypes(SearchTracker &search, const std::vector<size_t> &types,
                Placement &plan, PlacementEval &eval);

  const PlacementProblem &problem_;
  /// The runs meeting the floor, built on first use.
  std::unique_ptr<RunTable> runs_;
};

} // namespace heterps::planner

#endif // HETERPS_PLANNER_REBALANCE_H
