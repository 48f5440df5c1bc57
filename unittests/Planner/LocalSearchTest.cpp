//===- LocalSearchTest.cpp - stage-level hill climbing --------------------===//
//
// The eight-layer problem (EightLayerProblem.h): three types, partly serial
// layers, a unique optimum of four stages at 60 samples/s.
//
//===----------------------------------------------------------------------===//

#include "EightLayerProblem.h"

#include "heterps/Planner/LocalSearch.h"

#include "gtest/gtest.h"

#include <random>

using namespace heterps::planner;
using namespace heterps::planner::testutil;

namespace {

TEST(LocalSearch, MovesAMisplacedBoundary) {
  ClusterSpec spec = makeEightLayerSpec();
  PlacementProblem problem(spec, makeEightLayers(), kEightLayerLimit);
  SearchTracker search(problem);
  // The optimum with the gpu stage starting two layers late.
  Placement start = {1, 1, 2, 1, 1, 1, 0, 0};
  PlacementEval eval = problem.evaluate(start);
  Placement climbed = improveLocally(search, start, eval, 1000);
  EXPECT_EQ(climbed, kEightLayerOptimum);
  EXPECT_EQ(eval.cost, problem.evaluate(kEightLayerOptimum).cost);
}

TEST(LocalSearch, LeavesTheOptimumAlone) {
  ClusterSpec spec = makeEightLayerSpec();
  PlacementProblem problem(spec, makeEightLayers(), kEightLayerLimit);
  SearchTracker search(problem);
  PlacementEval eval = problem.evaluate(kEightLayerOptimum);
  double cost = eval.cost;
  EXPECT_EQ(improveLocally(search, kEightLayerOptimum, eval, 1000),
            kEightLayerOptimum);
  EXPECT_EQ(eval.cost, cost);
  EXPECT_GT(search.spent(), 0); // it did look around
}

TEST(LocalSearch, NeverWorsensAndKeepsItsBudget) {
  ClusterSpec spec = makeEightLayerSpec();
  PlacementProblem problem(spec, makeEightLayers(), kEightLayerLimit);
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<size_t> type(0, 2);
  for (int trial = 0; trial < 50; ++trial) {
    Placement start(8);
    for (size_t &t : start)
      t = type(rng);
    SearchTracker search(problem);
    PlacementEval startEval = search.evaluate(start);
    PlacementEval eval = startEval;
    int64_t budget = trial % 5 == 0 ? 3 : 1000;
    Placement climbed = improveLocally(search, start, eval, budget);
    EXPECT_LE(search.spent(), 1 + budget);
    EXPECT_FALSE(startEval.betterThan(eval));
    // The evaluation handed back is the plan's own.
    PlacementEval check = problem.evaluate(climbed);
    EXPECT_EQ(check.feasible, eval.feasible);
    EXPECT_EQ(check.cost, eval.cost);
    // The tracker saw every plan, so its best is the climbed one or better.
    EXPECT_FALSE(eval.betterThan(search.finish().eval));
  }
}

TEST(LocalSearch, StopsWhenTheTimeIsUp) {
  ClusterSpec spec = makeEightLayerSpec();
  PlacementProblem problem(spec, makeEightLayers(), kEightLayerLimit);
  SearchTracker search(problem, /*timeBudgetSeconds=*/0);
  Placement start(8, 2);
  PlacementEval eval = problem.evaluate(start);
  EXPECT_EQ(improveLocally(search, start, eval, 1000), start);
  EXPECT_EQ(search.spent(), 0);
}

} // namespace
