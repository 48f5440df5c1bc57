//===- LocalSearchTest.cpp - stage-level hill climbing --------------------===//
//
// The eight-layer problem of BaselinesTest.cpp: three types, partly serial
// layers, a unique optimum of four stages at 60 samples/s.
//
//===----------------------------------------------------------------------===//

#include "heterps/Planner/LocalSearch.h"

#include "gtest/gtest.h"

#include <random>

using namespace heterps::planner;

namespace {

ClusterSpec makeSpec() {
  ClusterSpec spec;
  spec.deviceTypes = {DeviceType{"gpu", "cuda", 36, 4, 1, 1, 1, 1},
                      DeviceType{"mid", "cuda", 14.4, 4, 1, 1, 1, 1},
                      DeviceType{"cpu", "cpu", 3.6, 8, 1, 1, 1, 1}};
  spec.job = {10, 1000, 1, 0};
  return spec;
}

std::vector<Layer> makeLayers() {
  const double gpu[] = {0.02, 0.05, 0.03, 0.08, 0.01, 0.06, 0.04, 0.02};
  const double mid[] = {0.05, 0.08, 0.1, 0.12, 0.03, 0.2, 0.06, 0.09};
  const double cpu[] = {0.1, 0.6, 0.2, 0.9, 0.05, 0.8, 0.3, 0.4};
  const double alpha[] = {0.9, 0.8, 0.95};
  std::vector<Layer> layers;
  for (size_t i = 0; i < 8; ++i) {
    Layer l;
    l.name = "l" + std::to_string(i);
    l.kind = "Test";
    for (size_t t = 0; t < 3; ++t)
      l.costs.push_back({t == 0 ? gpu[i] : t == 1 ? mid[i] : cpu[i], 0,
                         alpha[t], 1, 10});
    layers.push_back(std::move(l));
  }
  return layers;
}
constexpr double kLimit = 60;
const Placement kOptimum = {1, 1, 2, 1, 0, 0, 0, 0};

TEST(LocalSearch, MovesAMisplacedBoundary) {
  ClusterSpec spec = makeSpec();
  PlacementProblem problem(spec, makeLayers(), kLimit);
  SearchTracker search(problem);
  // The optimum with the gpu stage starting two layers late.
  Placement start = {1, 1, 2, 1, 1, 1, 0, 0};
  PlacementEval eval = problem.evaluate(start);
  Placement climbed = improveLocally(search, start, eval, 1000);
  EXPECT_EQ(climbed, kOptimum);
  EXPECT_EQ(eval.cost, problem.evaluate(kOptimum).cost);
}

TEST(LocalSearch, LeavesTheOptimumAlone) {
  ClusterSpec spec = makeSpec();
  PlacementProblem problem(spec, makeLayers(), kLimit);
  SearchTracker search(problem);
  PlacementEval eval = problem.evaluate(kOptimum);
  double cost = eval.cost;
  EXPECT_EQ(improveLocally(search, kOptimum, eval, 1000), kOptimum);
  EXPECT_EQ(eval.cost, cost);
  EXPECT_GT(search.spent(), 0); // it did look around
}

TEST(LocalSearch, NeverWorsensAndKeepsItsBudget) {
  ClusterSpec spec = makeSpec();
  PlacementProblem problem(spec, makeLayers(), kLimit);
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
  ClusterSpec spec = makeSpec();
  PlacementProblem problem(spec, makeLayers(), kLimit);
  SearchTracker search(problem, /*timeBudgetSeconds=*/0);
  Placement start(8, 2);
  PlacementEval eval = problem.evaluate(start);
  EXPECT_EQ(improveLocally(search, start, eval, 1000), start);
  EXPECT_EQ(search.spent(), 0);
}

} // namespace
