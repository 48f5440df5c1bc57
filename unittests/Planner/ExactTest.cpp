//===- ExactTest.cpp - the exact planner against brute force --------------===//
//
// Random instances up to 12 layers x 3 types with compute and data times,
// partly serial layers, loose and tight floors and tight max_count limits:
// placeExact must match the exhaustive optimum (cost when feasible, the
// best throughput when not) on every one.
//
//===----------------------------------------------------------------------===//

#include "RandomInstance.h"

#include "heterps/Planner/Exact.h"

#include "gtest/gtest.h"

#include <random>

using namespace heterps::planner;
using namespace heterps::planner::testutil;

namespace {

void expectOptimal(const Instance &in, const std::string &what) {
  PlacementProblem problem(in.spec, in.layers, in.limit);
  SearchResult brute = placeBruteForce(problem);
  ASSERT_FALSE(brute.placement.empty()) << what;
  ExactStats stats;
  SearchResult exact = placeExact(problem, &stats);
  ASSERT_EQ(exact.placement.size(), in.layers.size()) << what;
  EXPECT_EQ(exact.eval.feasible, brute.eval.feasible) << what;
  EXPECT_EQ(stats.feasible, brute.eval.feasible) << what;
  if (brute.eval.feasible)
    EXPECT_NEAR(exact.eval.cost, brute.eval.cost, 1e-9 * brute.eval.cost)
        << what;
  else
    EXPECT_NEAR(exact.eval.throughput, brute.eval.throughput,
                1e-8 * brute.eval.throughput)
        << what;
}

TEST(Exact, MatchesBruteForceOnSmallInstances) {
  std::mt19937_64 rng(7);
  int feasible = 0, infeasible = 0;
  for (int trial = 0; trial < 300; ++trial) {
    size_t types = 1 + trial % 3;
    size_t layers = 1 + (trial / 3) % 8;
    Instance in = randomInstance(rng, layers, types);
    expectOptimal(in, "trial " + std::to_string(trial) + " (" +
                          std::to_string(layers) + " x " +
                          std::to_string(types) + ")");
    PlacementProblem problem(in.spec, in.layers, in.limit);
    (placeBruteForce(problem).eval.feasible ? feasible : infeasible)++;
  }
  // The instances cover both outcomes.
  EXPECT_GT(feasible, 50);
  EXPECT_GT(infeasible, 20);
}

TEST(Exact, MatchesBruteForceAtTwelveByThree) {
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 4; ++trial)
    expectOptimal(randomInstance(rng, 12, 3),
                  "12 x 3, trial " + std::to_string(trial));
}

TEST(Exact, NoFloorStillMinimisesPriceTimesBatchTime) {
  // Without a floor every stage has one device; the cost P * E still
  // depends on the split.
  std::mt19937_64 rng(3);
  for (int trial = 0; trial < 30; ++trial) {
    Instance in = randomInstance(rng, 2 + trial % 7, 2 + trial % 2);
    in.limit = 0;
    expectOptimal(in, "no floor, trial " + std::to_string(trial));
  }
}

TEST(Exact, EmptyProblems) {
  ClusterSpec spec;
  spec.job = {1, 1, 1, 1};
  PlacementProblem noTypes(spec, {}, 1);
  EXPECT_TRUE(placeExact(noTypes).placement.empty());
}

TEST(Exact, NoDevicesAtAll) {
  std::mt19937_64 rng(5);
  Instance in = randomInstance(rng, 3, 2);
  for (DeviceType &d : in.spec.deviceTypes)
    d.maxCount = 0;
  PlacementProblem problem(in.spec, in.layers, in.limit);
  SearchResult exact = placeExact(problem);
  ASSERT_EQ(exact.placement.size(), 3u);
  EXPECT_FALSE(exact.eval.feasible);
}

} // namespace
