//===- Baselines.h - greedy, random and genetic placement -------*- C++ -*-===//
//
// The baseline strategies HeterPS is compared with. All search the space of
// Placement.h (one device type per layer; stages are the maximal runs of one
// type, provisioned to the throughput floor) and return the best plan they
// evaluated, ordered by PlacementEval::betterThan. Budgets are counted in
// PlacementProblem::evaluate calls, so strategies compare at equal budgets.
// Random choices come from a seeded generator of our own (not the
// implementation-defined std distributions): a seed gives the same plan on
// every platform.
//
// Greedy (the paper's greedy baseline). Each layer is judged on its own, as
// if it were a stage by itself. For layer i and type t, k_t is the smallest
// k in 1..max_count(t) with B / ET_i(k) >= limit (ET_i from layerTimes, B the
// job's batch size); the layer costs p_t * k_t per second. The layer goes to
// the type with the lowest p_t * k_t (ties: the lower type index). When no
// type meets the floor for that layer, it goes to the type with the highest
// throughput at k = max_count (ties: the lower index). The per-layer choices
// then form stages and the plan is evaluated once. The greedy ignores that
// layers sharing a stage add up their times and that stages of one type
// share its max_count, which is why it can miss the floor or overpay.
//
// Random. `budget` placements, alternately drawn two ways (even draws
// first): uniform (each layer an independent uniform type), which almost
// never yields few stages on a long model, and random runs (a number of
// stages s uniform in 1..min(n, 8), s - 1 distinct cut points uniform among
// the n - 1 layer boundaries, a uniform type per run; adjacent runs may get
// the same type and then merge), which samples plans with few stages. A
// run with budget b evaluates the first b placements of the same sequence
// as any larger budget with the same seed.
//
// Genetic. A population of `populationSize` placements, seeded with the
// all-one-type plans, the greedy plan and random-run plans (in that order,
// cut to the population size). Each generation keeps the `elite` best
// individuals unchanged (not re-evaluated) and fills the rest with children:
// two parents, each the best of `tournament` individuals drawn uniformly
// with replacement; two-point crossover (the first parent with a uniform
// range [a, b) taken from the second); per-gene mutation (each layer, with
// probability `mutationRate`, moves to a uniform other type); and, with
// probability 1/4, a segment mutation setting a uniform range of layers to
// one uniform type, which lets stages merge. A child identical to a parent
// gets one point mutation so that the budget is not spent re-evaluating it.
// The search stops when `budget` evaluations are spent, mid-generation if
// need be.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_PLANNER_BASELINES_H
#define HETERPS_PLANNER_BASELINES_H

#include "heterps/Planner/Placement.h"

#include <cstdint>

namespace heterps::planner {

/// The greedy's per-layer choices, without evaluating the plan.
Placement greedyPlacement(const PlacementProblem &problem);

/// The greedy plan, evaluated once (not at all, and an empty placement,
/// when the spec has no device type).
SearchResult placeGreedy(const PlacementProblem &problem);

/// Random search: exactly `budget` evaluations (none, and an empty
/// placement, when budget < 1 or the spec has no device type).
SearchResult placeRandom(const PlacementProblem &problem, int64_t budget,
                         uint64_t seed);

struct GeneticOptions {
  int populationSize = 64; // at least 2 are used
  int64_t budget = 20000;  // evaluations
  double mutationRate = 0.02;
  int tournament = 3;
  int elite = 2;
  uint64_t seed = 1;
};

/// Genetic search: at most `options.budget` evaluations (none, and an empty
/// placement, when budget < 1 or the spec has no device type).
SearchResult placeGenetic(const PlacementProblem &problem,
                          const GeneticOptions &options);

} // namespace heterps::planner

#endif // HETERPS_PLANNER_BASELINES_H
