//===- ExactTest.cpp - the exact planner against brute force --------------===//
//
// Random instances up to 12 layers x 3 types with compute and data times,
// partly serial layers, loose and tight floors and tight max_count limits:
// placeExact must match the exhaustive optimum (cost when feasible, the
// best throughput when not) on every one.
//
//===----------------------------------------------------------------------===//

#include "heterps/Planner/Exact.h"

#include "gtest/gtest.h"

#include <random>

using namespace heterps::planner;

namespace {

struct Instance {
  ClusterSpec spec;
  std::vector<Layer> layers;
  double limit = 0;
};

/// Types get prices 10x apart and speeds ~3x apart, so no type dominates;
/// max_count is small (1..6) so the limits bind; the floor ranges from
/// loose to beyond what any plan reaches.
Instance randomInstance(std::mt19937_64 &rng, size_t layers, size_t types) {
  std::uniform_real_distribution<double> unit(0, 1);
  Instance in;
  for (size_t t = 0; t < types; ++t) {
    DeviceType d;
    d.name = "t" + std::to_string(t);
    d.kind = "cpu";
    d.pricePerHour =
        3.6 * std::pow(10.0, static_cast<double>(t) * 0.5) * (0.5 + unit(rng));
    d.maxCount = 1 + static_cast<int64_t>(unit(rng) * 6);
    in.spec.deviceTypes.push_back(d);
  }
  in.spec.job = {32, 3200, 2, 0};
  for (size_t i = 0; i < layers; ++i) {
    Layer l;
    l.name = "l" + std::to_string(i);
    l.kind = "Test";
    double work = 0.01 + unit(rng);
    for (size_t t = 0; t < types; ++t) {
      // Faster types are dearer, with per-layer noise.
      double speed = std::pow(3.0, static_cast<double>(t)) * (0.5 + unit(rng));
      l.costs.push_back({work / speed, 0.3 * unit(rng) * work / speed,
                         0.7 + 0.3 * unit(rng), unit(rng), 16});
    }
    in.layers.push_back(l);
  }
  // Relative to the throughput of everything on the fastest type, k = 1.
  double total = 0;
  for (const Layer &l : in.layers)
    total += l.costs.back().oct * 2;
  in.limit = 32 / total * (0.2 + 3 * unit(rng));
  return in;
}

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
