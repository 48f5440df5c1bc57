//===- LocalSearch.h - stage-level hill climbing on a placement -*- C++ -*-===//
//
// improveLocally() takes a placement and climbs to a local optimum of the
// placement space (Placement.h) under moves that act on stages, the runs of
// one device type, rather than on single layers:
//   - shift the boundary between two adjacent stages by 1, 2, 4, ... layers
//     either way (a shift that swallows a whole stage merges its neighbours);
//   - recolour a stage: give all its layers another device type;
//   - split: recolour the first or the last half, or the middle third, of a
//     stage with another type, opening a new stage.
// A move is kept when its plan is better (PlacementEval::betterThan), and
// the climb restarts from the changed plan; it stops when no move improves,
// when `maxEvaluations` are spent or when the tracker's time is up. Every
// plan tried is evaluated through the tracker, so it counts towards the
// strategy's evaluations and its best plan.
//
// Single-layer moves rarely help: moving one layer off a stage opens a new
// stage that needs its own devices, so a one-layer change nearly always costs
// more even when a larger change of the same stage would pay off.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_PLANNER_LOCALSEARCH_H
#define HETERPS_PLANNER_LOCALSEARCH_H

#include "heterps/Planner/Placement.h"

namespace heterps::planner {

/// Climbs from `plan` (whose evaluation is `eval`) and returns the local
/// optimum reached, with its evaluation in `eval`.
Placement improveLocally(SearchTracker &search, Placement plan,
                         PlacementEval &eval, int64_t maxEvaluations);

} // namespace heterps::planner

#endif // HETERPS_PLANNER_LOCALSEARCH_H
