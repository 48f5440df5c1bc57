//===- BaselinesTest.cpp - greedy, random and genetic placement -----------===//
//
// Layer costs are given per type with b0 = B = 10 and no data time, so a
// layer's time on k devices is OCT * (1 - alpha + alpha / k); with alpha = 1
// it is OCT / k and the hand arithmetic is exact. Every job is one epoch of
// 1000 samples: a plan at T samples/s runs 1000 / T seconds.
//
//===----------------------------------------------------------------------===//

#include "EightLayerProblem.h"

#include "heterps/Planner/Baselines.h"

#include "gtest/gtest.h"

#include <cmath>

using namespace heterps::planner;
using namespace heterps::planner::testutil;

namespace {

constexpr size_t kFast = 0;
constexpr size_t kSlow = 1;

/// "fast" ($36/h = $0.01/s, at most 2) and "slow" ($3.6/h = $0.001/s, at
/// most 4), as in PlacementTest.cpp.
ClusterSpec makeTwoTypes(int64_t fastMax = 2, int64_t slowMax = 4) {
  ClusterSpec spec;
  spec.deviceTypes = {DeviceType{"fast", "cuda", 36, fastMax, 1, 1, 1, 1},
                      DeviceType{"slow", "cpu", 3.6, slowMax, 1, 1, 1, 1}};
  spec.job = {10, 1000, 1, 0};
  return spec;
}

/// "a" ($0.01/s, at most 2), "b" ($0.002/s, at most 8), "c" ($0.001/s, at
/// most 8).
ClusterSpec makeThreeTypes() {
  ClusterSpec spec;
  spec.deviceTypes = {DeviceType{"a", "cuda", 36, 2, 1, 1, 1, 1},
                      DeviceType{"b", "cuda", 7.2, 8, 1, 1, 1, 1},
                      DeviceType{"c", "cpu", 3.6, 8, 1, 1, 1, 1}};
  spec.job = {10, 1000, 1, 0};
  return spec;
}

/// A layer with compute time `oct[t]` (fraction `alpha[t]` parallel) on
/// type t, b0 = 10, no data time.
Layer layer(std::vector<double> oct, std::vector<double> alpha = {}) {
  Layer l;
  l.name = "l";
  l.kind = "Test";
  for (size_t t = 0; t < oct.size(); ++t)
    l.costs.push_back({oct[t], 0, alpha.empty() ? 1.0 : alpha[t], 1, 10});
  return l;
}

/// Same placement and same figures.
void expectSameResult(const SearchResult &a, const SearchResult &b) {
  EXPECT_EQ(a.placement, b.placement);
  EXPECT_EQ(a.eval.feasible, b.eval.feasible);
  EXPECT_EQ(a.eval.cost, b.eval.cost);
  EXPECT_EQ(a.eval.shortfall, b.eval.shortfall);
  EXPECT_EQ(a.evaluations, b.evaluations);
}

/// 4 layers on the two types with a floor of 1000 samples/s (ET <= 0.01 s):
/// at best fast halves a layer's time (0.05 s), so no plan is feasible.
std::vector<Layer> makeHopelessLayers() {
  return {layer({0.1, 0.4}), layer({0.3, 0.5}), layer({0.2, 0.2}),
          layer({0.4, 1.6})};
}
constexpr double kHopelessLimit = 1000;

//===----------------------------------------------------------------------===//
// Greedy
//===----------------------------------------------------------------------===//

TEST(Greedy, PicksPerLayerTheCheapestTypeMeetingTheFloor) {
  ClusterSpec spec = makeThreeTypes();
  // Floor 50 samples/s: ET <= 10/50 = 0.2 s. Cost rates p_t * k_t in $/s.
  PlacementProblem problem(
      spec,
      {// a: k=1, 0.01. b: 0.4/2, 0.004. c: k=1, 0.001.  -> c
       layer({0.1, 0.4, 0.2}),
       // a: 0.01. b: 0.004. c: 2.0/k <= 0.2 needs k = 10 > 8.  -> b
       layer({0.1, 0.4, 2.0}),
       // a: k=1, 0.01. b: 1.6/8, 0.016. c: 0.8/4, 0.004.  -> c
       layer({0.2, 1.6, 0.8}),
       // a: 0.4/2, 0.02. b: k=1, 0.002. c: 0.4/2, 0.002.  -> tie: b
       layer({0.4, 0.2, 0.4})},
      50);
  EXPECT_EQ(greedyPlacement(problem), (Placement{2, 1, 2, 1}));
  EXPECT_EQ(problem.evaluations(), 0);

  SearchResult r = placeGreedy(problem);
  EXPECT_EQ(r.placement, (Placement{2, 1, 2, 1}));
  EXPECT_EQ(r.evaluations, 1);
  // Four stages, each at exactly 50 samples/s with the k above: c uses
  // 1 + 4 = 5 <= 8, b uses 2 + 1 = 3 <= 8. 20 s * (5 * 0.001 + 3 * 0.002).
  ASSERT_TRUE(r.eval.feasible);
  ASSERT_EQ(r.eval.stages.size(), 4u);
  EXPECT_NEAR(r.eval.throughput, 50, 1e-9);
  EXPECT_NEAR(r.eval.cost, 20 * 0.011, 1e-12);
}

TEST(Greedy, JudgesLayersAloneAndCanMissTheFloor) {
  ClusterSpec spec = makeTwoTypes();
  // Floor 50: ET <= 0.2. Alone, each layer is cheapest on slow (l0 k=1,
  // l1 and l2 k=4 each), but together they form one slow stage of
  // 0.2 + 0.8 + 0.8 = 1.8 s: at most 4 devices give 0.45 s, 10/0.45 =
  // 200/9 samples/s, a shortfall of (50 - 200/9) / 50 = 5/9.
  PlacementProblem problem(
      spec, {layer({0.05, 0.2}), layer({0.1, 0.8}), layer({0.1, 0.8})}, 50);
  SearchResult greedy = placeGreedy(problem);
  EXPECT_EQ(greedy.placement, (Placement{kSlow, kSlow, kSlow}));
  EXPECT_FALSE(greedy.eval.feasible);
  EXPECT_NEAR(greedy.eval.shortfall, 5.0 / 9.0, 1e-12);
  // A feasible plan exists ({slow, fast, fast}, PlacementTest.cpp).
  EXPECT_TRUE(placeBruteForce(problem).eval.feasible);
}

TEST(Greedy, FallsBackToTheFastestTypeWhenNoneMeetsTheFloor) {
  ClusterSpec spec = makeTwoTypes();
  // Floor 100: ET <= 0.1.
  PlacementProblem problem(
      spec,
      {// Both meet it at k = 1 (0.05, 0.08): slow is cheaper.
       layer({0.05, 0.08}),
       // Neither does: fast 0.4/2 = 0.2 (50/s), slow 1.2/4 = 0.3 (33/s).
       layer({0.4, 1.2}),
       // Neither does: fast 1.0/2 = 0.5 (20/s), slow 0.8/4 = 0.2 (50/s).
       layer({1.0, 0.8})},
      100);
  SearchResult r = placeGreedy(problem);
  EXPECT_EQ(r.placement, (Placement{kSlow, kFast, kSlow}));
  EXPECT_FALSE(r.eval.feasible);
  EXPECT_EQ(r.evaluations, 1);
}

//===----------------------------------------------------------------------===//
// Random
//===----------------------------------------------------------------------===//

TEST(Random, IsReproducibleAndSpendsExactlyItsBudget) {
  ClusterSpec spec = makeEightLayerSpec();
  PlacementProblem problem(spec, makeEightLayers(), kEightLayerLimit);
  SearchResult first = placeRandom(problem, 300, 7);
  SearchResult again = placeRandom(problem, 300, 7);
  expectSameResult(first, again);
  EXPECT_EQ(first.evaluations, 300);
  EXPECT_EQ(problem.evaluations(), 600);

  SearchResult none = placeRandom(problem, 0, 7);
  EXPECT_TRUE(none.placement.empty());
  EXPECT_EQ(none.evaluations, 0);
}

TEST(Random, NeverBeatsTheOptimumAndMoreBudgetNeverHurts) {
  ClusterSpec spec = makeEightLayerSpec();
  PlacementProblem problem(spec, makeEightLayers(), kEightLayerLimit);
  SearchResult optimum = placeBruteForce(problem);
  // The genetic's default budget.
  SearchResult full = placeRandom(problem, GeneticOptions().budget, 1);
  EXPECT_FALSE(full.eval.betterThan(optimum.eval));
  // A run evaluates a prefix of the same sequence as a longer one.
  for (uint64_t seed : {1, 2, 3, 4, 5}) {
    SearchResult all = placeRandom(problem, 400, seed);
    SearchResult half = placeRandom(problem, 200, seed);
    EXPECT_FALSE(all.eval.betterThan(optimum.eval)) << "seed " << seed;
    EXPECT_FALSE(half.eval.betterThan(all.eval)) << "seed " << seed;
  }
}

TEST(Random, RunsReachSingleStagePlans) {
  // One device of each type; 12 layers, 0.01 s on fast, 0.15 s on slow;
  // floor 50 (ET <= 0.2). All on fast: one stage of 0.12 s, 1000 / (10 /
  // 0.12) = 12 s at $0.01/s = $0.12. Two fast stages need two fast
  // devices; slow fits one layer (two take 0.3 s), so the only other
  // feasible plans put one layer on slow at an end: 0.15 s caps them at
  // 66.7/s, 15 s * $0.011/s = $0.165. Uniform draws hit all-fast with
  // probability 2^-12, random runs with 1/8 * 1/2.
  ClusterSpec spec = makeTwoTypes(/*fastMax=*/1, /*slowMax=*/1);
  std::vector<Layer> layers(12, layer({0.01, 0.15}));
  PlacementProblem problem(spec, layers, 50);
  SearchResult r = placeRandom(problem, 200, 1);
  EXPECT_EQ(r.placement, Placement(12, kFast));
  EXPECT_NEAR(r.eval.cost, 0.12, 1e-12);
}

TEST(Random, ReturnsTheSmallestShortfallWhenNothingIsFeasible) {
  ClusterSpec spec = makeTwoTypes();
  PlacementProblem problem(spec, makeHopelessLayers(), kHopelessLimit);
  SearchResult optimum = placeBruteForce(problem);
  ASSERT_FALSE(optimum.eval.feasible);
  // 200 draws over the 16 placements.
  SearchResult r = placeRandom(problem, 200, 1);
  EXPECT_FALSE(r.eval.feasible);
  EXPECT_DOUBLE_EQ(r.eval.shortfall, optimum.eval.shortfall);
}

//===----------------------------------------------------------------------===//
// Genetic
//===----------------------------------------------------------------------===//

TEST(Genetic, IsReproducibleAndStaysWithinItsBudget) {
  ClusterSpec spec = makeEightLayerSpec();
  PlacementProblem problem(spec, makeEightLayers(), kEightLayerLimit);
  GeneticOptions options;
  options.budget = 500;
  options.seed = 3;
  SearchResult first = placeGenetic(problem, options);
  SearchResult again = placeGenetic(problem, options);
  expectSameResult(first, again);
  EXPECT_LE(first.evaluations, 500);
  EXPECT_EQ(problem.evaluations(), 2 * first.evaluations);

  // A budget smaller than the population stops while seeding it.
  options.budget = 5;
  SearchResult few = placeGenetic(problem, options);
  EXPECT_LE(few.evaluations, 5);
  EXPECT_GT(few.evaluations, 0);

  options.budget = 0;
  SearchResult none = placeGenetic(problem, options);
  EXPECT_TRUE(none.placement.empty());
  EXPECT_EQ(none.evaluations, 0);
}

TEST(Genetic, FindsTheUniqueOptimum) {
  ClusterSpec spec = makeEightLayerSpec();
  PlacementProblem problem(spec, makeEightLayers(), kEightLayerLimit);
  SearchResult optimum = placeBruteForce(problem);
  ASSERT_TRUE(optimum.eval.feasible);
  EXPECT_EQ(optimum.placement, kEightLayerOptimum);
  EXPECT_NEAR(optimum.eval.cost, 0.26, 1e-9);

  // The optimum is unique: every other placement costs more (or fails).
  Placement p(8, 0);
  int cheapest = 0;
  for (int code = 0; code < 6561; ++code) {
    for (int i = 0, c = code; i < 8; ++i, c /= 3)
      p[i] = static_cast<size_t>(c % 3);
    PlacementEval eval = problem.evaluate(p);
    cheapest += eval.feasible && eval.cost < optimum.eval.cost * (1 + 1e-9);
  }
  EXPECT_EQ(cheapest, 1);
  // ... and none of the plans the population starts from.
  EXPECT_NE(greedyPlacement(problem), optimum.placement);
  for (size_t t = 0; t < 3; ++t)
    EXPECT_TRUE(optimum.eval.betterThan(placeAllOnType(problem, t).eval));

  SearchResult ga = placeGenetic(problem, GeneticOptions());
  EXPECT_EQ(ga.placement, optimum.placement);
  EXPECT_DOUBLE_EQ(ga.eval.cost, optimum.eval.cost);
  EXPECT_LE(ga.evaluations, GeneticOptions().budget);
  for (uint64_t seed : {2, 3, 4}) {
    GeneticOptions options;
    options.seed = seed;
    EXPECT_EQ(placeGenetic(problem, options).placement, optimum.placement)
        << "seed " << seed;
  }
}

TEST(Genetic, ReturnsTheSmallestShortfallWhenNothingIsFeasible) {
  ClusterSpec spec = makeTwoTypes();
  PlacementProblem problem(spec, makeHopelessLayers(), kHopelessLimit);
  SearchResult optimum = placeBruteForce(problem);
  ASSERT_FALSE(optimum.eval.feasible);
  GeneticOptions options;
  options.budget = 500;
  SearchResult r = placeGenetic(problem, options);
  EXPECT_FALSE(r.eval.feasible);
  EXPECT_DOUBLE_EQ(r.eval.shortfall, optimum.eval.shortfall);
}

TEST(Genetic, HandlesOneLayerAndOneType) {
  GeneticOptions options;
  options.budget = 100;
  // One layer: crossover has nothing to cut. Floor 50: fast (k = 1) runs at
  // 100/s, 10 s * $0.01/s = $0.10; slow needs k = 4 for 50/s, 20 s *
  // $0.004/s = $0.08.
  ClusterSpec two = makeTwoTypes();
  PlacementProblem oneLayer(two, {layer({0.1, 0.8})}, 50);
  EXPECT_EQ(placeGenetic(oneLayer, options).placement, (Placement{kSlow}));
  // One type: no mutation can change a gene.
  ClusterSpec one = makeTwoTypes();
  one.deviceTypes.resize(1);
  PlacementProblem oneType(one, {layer({0.1}), layer({0.1})}, 50);
  SearchResult r = placeGenetic(oneType, options);
  EXPECT_EQ(r.placement, (Placement{0, 0}));
  EXPECT_LE(r.evaluations, 100);
}

} // namespace
