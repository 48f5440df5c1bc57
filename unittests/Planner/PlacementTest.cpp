//===- PlacementTest.cpp - evaluating placements, exhaustive search -------===//

#include "heterps/Planner/Placement.h"

#include "gtest/gtest.h"

using namespace heterps::planner;

namespace {

/// Two types: "fast" ($0.01/s, at most 2) and "slow" ($0.001/s, at most 4);
/// job: B = 10, one epoch of 1000 samples.
ClusterSpec makeSpec() {
  ClusterSpec spec;
  DeviceType fast{"fast", "cuda", 36, 2, 1, 1, 1, 1};
  DeviceType slow{"slow", "cpu", 3.6, 4, 1, 1, 1, 1};
  spec.deviceTypes = {fast, slow};
  spec.job = {10, 1000, 1, 0};
  return spec;
}

/// A layer whose compute time is `fast` on fast and `slow` on slow devices
/// (b0 = B = 10, fully parallel, no data time).
Layer layer(double fast, double slow) {
  Layer l;
  l.name = "l";
  l.kind = "conv";
  l.costs = {{fast, 0, 1, 1, 10}, {slow, 0, 1, 1, 10}};
  return l;
}

TEST(Placement, EvaluateFormsStagesAndProvisions) {
  ClusterSpec spec = makeSpec();
  // Limit 50 samples/s, i.e. ET <= 0.2 s per batch of 10.
  PlacementProblem problem(spec, {layer(0.1, 0.4), layer(0.1, 0.4)}, 50);
  // Both on slow: one stage, CT = 0.8/k <= 0.2 needs k = 4 (the maximum);
  // throughput 10/0.2 = 50; time 1000/50 = 20 s; cost 20 * 0.001 * 4.
  PlacementEval slow = problem.evaluate({1, 1});
  EXPECT_TRUE(slow.feasible);
  EXPECT_DOUBLE_EQ(slow.throughput, 50);
  EXPECT_DOUBLE_EQ(slow.cost, 20 * 0.001 * 4);
  ASSERT_EQ(slow.stages.size(), 1u);
  EXPECT_EQ(slow.stages[0].replicas, 4);
  // fast then slow: two stages; fast needs k = 1 (0.1 <= 0.2, 100/s), slow
  // k = 2 (0.4/2 = 0.2, 50/s): cost 20 * (0.01 + 0.002) = 0.24. But the dear
  // fast stage waits for the slow one: with slow at k = 4 (0.1, 100/s) the
  // job takes 10 s and costs 10 * (0.01 + 0.004) = 0.14, the cheapest.
  PlacementEval mixed = problem.evaluate({0, 1});
  EXPECT_TRUE(mixed.feasible);
  ASSERT_EQ(mixed.stages.size(), 2u);
  EXPECT_EQ(mixed.stages[0].replicas, 1);
  EXPECT_EQ(mixed.stages[1].replicas, 4);
  EXPECT_DOUBLE_EQ(mixed.throughput, 100);
  EXPECT_DOUBLE_EQ(mixed.cost, 10 * (0.01 + 0.004));
  EXPECT_EQ(problem.evaluations(), 2);
}

TEST(Placement, InfeasiblePlansCarryTheirShortfall) {
  ClusterSpec spec = makeSpec();
  // Limit 100: ET <= 0.1. On slow, 1.2/k with k <= 4 gives at best 0.3:
  // throughput 33.3, shortfall (100 - 33.3) / 100 = 2/3.
  PlacementProblem problem(spec, {layer(0.1, 1.2)}, 100);
  PlacementEval slow = problem.evaluate({1});
  EXPECT_FALSE(slow.feasible);
  EXPECT_NEAR(slow.throughput, 10 / 0.3, 1e-9);
  EXPECT_NEAR(slow.shortfall, 2.0 / 3.0, 1e-12);
  PlacementEval fast = problem.evaluate({0});
  EXPECT_TRUE(fast.feasible);
  EXPECT_TRUE(fast.betterThan(slow));
  EXPECT_FALSE(slow.betterThan(fast));
}

TEST(Placement, BetterThanOrdersByFeasibilityCostShortfall) {
  PlacementEval feasibleCheap, feasibleDear, infeasibleNear, infeasibleFar;
  feasibleCheap.feasible = feasibleDear.feasible = true;
  feasibleCheap.cost = 1;
  feasibleDear.cost = 2;
  infeasibleNear.shortfall = 0.1;
  infeasibleFar.shortfall = 0.5;
  EXPECT_TRUE(feasibleCheap.betterThan(feasibleDear));
  EXPECT_TRUE(feasibleDear.betterThan(infeasibleNear));
  EXPECT_TRUE(infeasibleNear.betterThan(infeasibleFar));
  EXPECT_FALSE(feasibleCheap.betterThan(feasibleCheap));
}

TEST(Placement, BruteForceFindsTheCheapestPlan) {
  ClusterSpec spec = makeSpec();
  // Limit 50. l0 is cheap on slow (0.2: k = 1), l1 and l2 are expensive on
  // slow (0.8: k = 4 each, but together 1.6 would need k = 8 > 4).
  // Best: l0 on slow (k = 1, $0.001/s), l1 + l2 on fast (0.1 + 0.1 = 0.2,
  // k = 1, $0.01/s): 20 s * $0.011/s = $0.22.
  PlacementProblem problem(
      spec, {layer(0.05, 0.2), layer(0.1, 0.8), layer(0.1, 0.8)}, 50);
  SearchResult best = placeBruteForce(problem);
  EXPECT_EQ(best.placement, (Placement{1, 0, 0}));
  EXPECT_TRUE(best.eval.feasible);
  EXPECT_DOUBLE_EQ(best.eval.cost, 20 * 0.011);
  EXPECT_EQ(best.evaluations, 8); // 2^3 placements
}

TEST(Placement, BruteForceRefusesLargeSpaces) {
  ClusterSpec spec = makeSpec();
  std::vector<Layer> layers(30, layer(0.1, 0.2));
  PlacementProblem problem(spec, layers, 0);
  SearchResult r = placeBruteForce(problem, /*maxPlacements=*/1 << 20);
  EXPECT_TRUE(r.placement.empty());
  EXPECT_EQ(r.evaluations, 0);
}

TEST(Placement, AllOnTypeIsOneStage) {
  ClusterSpec spec = makeSpec();
  PlacementProblem problem(spec, {layer(0.1, 0.2), layer(0.1, 0.2)}, 0);
  SearchResult r = placeAllOnType(problem, 0);
  EXPECT_EQ(r.placement, (Placement{0, 0}));
  ASSERT_EQ(r.eval.stages.size(), 1u);
  EXPECT_EQ(r.evaluations, 1);
}

} // namespace
