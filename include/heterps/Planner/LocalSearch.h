//===- LocalSearch.h - stage-level hill climbing on a placement -*- C++ -*-===//
//
// improveLocally() takes a placement and climbs towards a local optimum of
// the placement space (Placement.h) under moves that give a range of layers
// another device type, chosen to act on stages (the runs of one type):
//   - shift the boundary between two adjacent stages by 1, 2, 4, ... layers
//     either way (a shift that swallows a whole stage merges its neighbours);
//   - recolour a stage, or its first or last 1, 2, 4, ... layers or half, or
//     its middle third (splitting it);
//   - recolour a window of one or two layers anywhere (a short stage inside
//     a long one).
// The moves of the current plan are tried in a random order (seeded), and
// the first that gives a better plan (PlacementEval::betterThan) is taken;
// the climb then starts again from the new plan. It stops at a local
// optimum, when `maxEvaluations` are spent or when the tracker's time is up.
// A random order matters when the budget is smaller than the neighbourhood:
// repeated short climbs then try different moves instead of the same first
// few. Every plan tried is evaluated through the tracker, so it counts
// towards the strategy's evaluations and its best plan.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_PLANNER_LOCALSEARCH_H
#define HETERPS_PLANNER_LOCALSEARCH_H

#include "heterps/Planner/Placement.h"

#include <random>

namespace heterps::planner {

/// Climbs from `plan` (whose evaluation is `eval`) and returns the local
/// optimum reached, with its evaluation in `eval`.
Placement improveLocally(SearchTracker &search, Placement plan,
                         PlacementEval &eval, int64_t maxEvaluations,
                         std::mt19937_64 &rng);

} // namespace heterps::planner

#endif // HETERPS_PLANNER_LOCALSEARCH_H
