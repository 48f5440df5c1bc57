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

#include <algorithm>
#include <cmath>
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

/// The least cost over every placement and every replica count per stage.
double cheapestOverall(const Instance &in) {
  size_t n = in.layers.size(), types = in.spec.deviceTypes.size();
  double best = std::numeric_limits<double>::infinity();
  Placement current(n, 0);
  while (true) {
    best = std::min(best, cheapestByEnumeration(in, current));
    size_t digit = 0;
    while (digit < n && ++current[digit] == types)
      current[digit++] = 0;
    if (digit == n)
      return best;
  }
}

TEST(Exact, ProvisionGivesTheCheapestReplicaCounts) {
  // More replicas than the floor needs can be cheaper: the slowest stage
  // sets the job's time, and every stage is paid for all of it.
  std::mt19937_64 rng(5);
  int cheaperThanFewest = 0;
  for (int trial = 0; trial < 200; ++trial) {
    Instance in = randomInstance(rng, 2 + trial % 4, 2 + trial % 2);
    if (trial % 3 == 0)
      in.limit = 0;
    PlacementProblem problem(in.spec, in.layers, in.limit);
    Placement placement(in.layers.size());
    for (size_t &t : placement)
      t = rng() % in.spec.deviceTypes.size();
    PlacementEval eval = problem.evaluate(placement);
    double enumerated = cheapestByEnumeration(in, placement);
    std::string what = "trial " + std::to_string(trial);
    if (!eval.feasible) {
      EXPECT_TRUE(std::isinf(enumerated)) << what;
      continue;
    }
    EXPECT_NEAR(eval.cost, enumerated, 1e-9 * enumerated) << what;
    // A stage that would still meet the floor with one replica less.
    int64_t batch = in.spec.job.batchSize;
    cheaperThanFewest += std::any_of(
        eval.stages.begin(), eval.stages.end(), [&](const Stage &s) {
          return s.replicas > 1 &&
                 static_cast<double>(batch) /
                         stageTimes(in.layers, s, batch, s.replicas - 1).et() >=
                     in.limit;
        });
  }
  // The instances exercise the case the floor alone would not provision.
  EXPECT_GT(cheaperThanFewest, 10);
}

TEST(Exact, CheapestOverPlacementsAndReplicaCounts) {
  std::mt19937_64 rng(9);
  int feasible = 0;
  for (int trial = 0; trial < 60; ++trial) {
    Instance in = randomInstance(rng, 1 + trial % 5, 1 + trial % 3);
    if (trial % 4 == 0)
      in.limit = 0;
    double enumerated = cheapestOverall(in);
    PlacementProblem problem(in.spec, in.layers, in.limit);
    SearchResult exact = placeExact(problem);
    std::string what = "trial " + std::to_string(trial);
    EXPECT_EQ(exact.eval.feasible, !std::isinf(enumerated)) << what;
    if (exact.eval.feasible) {
      ++feasible;
      EXPECT_NEAR(exact.eval.cost, enumerated, 1e-9 * enumerated) << what;
    }
  }
  EXPECT_GT(feasible, 30);
}

TEST(Exact, CostNeverFallsAsTheFloorRises) {
  // A plan meeting a higher floor meets every lower one, so the optimum
  // can only grow with the floor.
  std::mt19937_64 rng(13);
  for (int trial = 0; trial < 20; ++trial) {
    Instance in = randomInstance(rng, 4 + trial % 5, 2 + trial % 2);
    double previous = 0;
    for (double floor = in.limit / 8; floor <= in.limit * 2; floor *= 1.25) {
      PlacementProblem problem(in.spec, in.layers, floor);
      SearchResult exact = placeExact(problem);
      if (!exact.eval.feasible)
        break;
      EXPECT_GE(exact.eval.cost, previous * (1 - 1e-12))
          << "trial " << trial << ", floor " << floor;
      previous = exact.eval.cost;
    }
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
