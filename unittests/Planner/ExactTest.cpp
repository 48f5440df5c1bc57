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
#include <optional>
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
  double best = std::numeric_limits<double>::infinity();
  forEachPlacement(in, [&](const Placement &p) {
    best = std::min(best, cheapestByEnumeration(in, p));
  });
  return best;
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

/// Calls `visit(price, time)` for every replica vector of `placement`
/// within the limits that meets the floor: its price per second and its
/// largest stage time.
template <typename Visit>
void forEachProvisioning(const Instance &in, const Placement &placement,
                         Visit visit) {
  int64_t batch = in.spec.job.batchSize;
  forEachReplicaVector(in, placement, [&](const std::vector<Stage> &stages) {
    double price = 0, time = 0;
    for (const Stage &s : stages) {
      price += in.spec.deviceTypes[s.deviceType].pricePerSecond() *
               static_cast<double>(s.replicas);
      time = std::max(time, stageTimes(in.layers, s, batch, s.replicas).et());
    }
    if (static_cast<double>(batch) / time >= in.limit)
      visit(price, time);
  });
}

/// The least price per second of `placement`'s provisionings whose stages
/// all fit under `cap`; infinity when none does.
double leastPriceUnder(const Instance &in, const Placement &placement,
                       double cap) {
  double least = std::numeric_limits<double>::infinity();
  forEachProvisioning(in, placement, [&](double price, double time) {
    if (time <= cap)
      least = std::min(least, price);
  });
  return least;
}

TEST(Exact, CheapestUnderCapAgainstEnumeration) {
  // The exact search's inner step, which rl's refinement calls on its own:
  // the least price of any plan whose stages all fit under the cap.
  std::mt19937_64 rng(21);
  int found = 0;
  for (int trial = 0; trial < 40; ++trial) {
    Instance in = randomInstance(rng, 1 + trial % 4, 2 + trial % 2);
    std::vector<Placement> placements;
    std::vector<double> times; // of every provisioning
    forEachPlacement(in, [&](const Placement &p) {
      placements.push_back(p);
      forEachProvisioning(in, p,
                          [&](double, double time) { times.push_back(time); });
    });
    PlacementProblem problem(in.spec, in.layers, in.limit);
    CheapestUnderCap solver(problem);
    // Caps at the plans' times (where the least price changes; a hair
    // above, as the solver sums a run's times in another order) and below.
    std::vector<double> caps;
    for (size_t i = 0; i < times.size(); i += 1 + times.size() / 6) {
      caps.push_back(times[i] * (1 + 1e-9));
      caps.push_back(times[i] * 0.97);
    }
    for (double cap : caps) {
      double least = std::numeric_limits<double>::infinity();
      for (const Placement &p : placements)
        least = std::min(least, leastPriceUnder(in, p, cap));
      std::string what =
          "trial " + std::to_string(trial) + ", cap " + std::to_string(cap);
      std::optional<Placement> plan = solver.solve(cap, least * 2 + 1);
      ASSERT_EQ(plan.has_value(), !std::isinf(least)) << what;
      if (!plan)
        continue;
      ++found;
      EXPECT_NEAR(leastPriceUnder(in, *plan, cap), least, 1e-9 * least) << what;
      // Nothing is returned above the price asked for.
      EXPECT_FALSE(solver.solve(cap, least * (1 - 1e-6)).has_value()) << what;
    }
  }
  EXPECT_GT(found, 100);
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
