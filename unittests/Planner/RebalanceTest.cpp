//===- RebalanceTest.cpp - optimal boundaries for a type sequence ---------===//
//
// On random instances up to 8 layers x 3 types, StageRebalancer::improve
// must return a plan at least as cheap as the best one with the start
// plan's sequence of stage types (found here by brute force over every
// placement), no plan of its own sequence or of a sequence one change away
// may be cheaper (the descent stopped at a local optimum), and it never
// returns a worse plan than the start.
//
//===----------------------------------------------------------------------===//

#include "RandomInstance.h"

#include "heterps/Planner/Rebalance.h"

#include "gtest/gtest.h"

#include <set>
#include <string>

using namespace heterps::planner;
using namespace heterps::planner::testutil;

namespace {

std::vector<size_t> stageTypesOf(const Placement &plan) {
  std::vector<size_t> types;
  for (const Stage &stage : formStages(plan))
    types.push_back(stage.deviceType);
  return types;
}

/// A plan's sequence of stage types and the sequences one change away: a
/// stage left out (neighbours of one type merge), a stage of another type
/// inserted between stages or at an end, a stage split around another type.
std::set<std::vector<size_t>> neighbourhood(const Placement &plan,
                                            size_t numTypes) {
  std::vector<size_t> types = stageTypesOf(plan);
  size_t s = types.size();
  std::set<std::vector<size_t>> out = {types};
  for (size_t j = 0; j < s; ++j) {
    std::vector<size_t> v;
    for (size_t i = 0; i < s; ++i)
      if (i != j && (v.empty() || v.back() != types[i]))
        v.push_back(types[i]);
    out.insert(v);
  }
  for (size_t u = 0; u < numTypes; ++u)
    for (size_t at = 0; at <= s; ++at) {
      std::vector<size_t> v(types.begin(), types.begin() + at);
      v.push_back(u);
      v.insert(v.end(), types.begin() + at, types.end());
      bool alternates = true;
      for (size_t i = 1; i < v.size(); ++i)
        alternates &= v[i] != v[i - 1];
      if (alternates)
        out.insert(v);
      if (at < s && types[at] != u) {
        std::vector<size_t> split(types.begin(), types.begin() + at + 1);
        split.push_back(u);
        split.insert(split.end(), types.begin() + at, types.end());
        out.insert(split);
      }
    }
  return out;
}

/// The best evaluation of a placement with one of `sequences`, by brute
/// force.
PlacementEval
bestWithSequences(const PlacementProblem &problem,
                  const std::set<std::vector<size_t>> &sequences) {
  size_t n = problem.numLayers(), types = problem.numTypes();
  Placement plan(n, 0);
  PlacementEval best;
  while (true) {
    if (sequences.count(stageTypesOf(plan))) {
      PlacementEval e = problem.evaluate(plan);
      if (e.betterThan(best))
        best = e;
    }
    size_t i = 0;
    while (i < n && ++plan[i] == types)
      plan[i++] = 0;
    if (i == n)
      return best;
  }
}

TEST(Rebalance, DescendsToALocalOptimumOverSequences) {
  std::mt19937_64 rng(13);
  int improved = 0, checked = 0;
  for (int trial = 0; trial < 200; ++trial) {
    size_t types = 2 + trial % 2, layers = 2 + (trial / 2) % 7;
    Instance in = randomInstance(rng, layers, types);
    // Limits that never bind: the DP's optimality holds without them.
    for (DeviceType &d : in.spec.deviceTypes)
      d.maxCount = 1000;
    PlacementProblem problem(in.spec, in.layers, in.limit);
    Placement start(layers);
    for (size_t &t : start)
      t = std::uniform_int_distribution<size_t>(0, types - 1)(rng);
    PlacementEval ownBest = bestWithSequences(problem, {stageTypesOf(start)});
    if (!ownBest.feasible)
      continue;
    ++checked;
    SearchTracker search(problem);
    PlacementEval eval = search.evaluate(start);
    double startCost = eval.cost;
    Placement result = StageRebalancer(problem).improve(search, start, eval);
    std::string what = "trial " + std::to_string(trial);
    ASSERT_TRUE(eval.feasible) << what;
    EXPECT_EQ(problem.evaluate(result).cost, eval.cost) << what;
    EXPECT_LE(eval.cost, ownBest.cost * (1 + 1e-9)) << what;
    PlacementEval around =
        bestWithSequences(problem, neighbourhood(result, types));
    EXPECT_GE(around.cost, eval.cost * (1 - 1e-9)) << what;
    improved += eval.cost < startCost;
  }
  // The instances exercise the search.
  EXPECT_GT(checked, 100);
  EXPECT_GT(improved, 50);
}

TEST(Rebalance, NeverWorsensUnderTightLimits) {
  std::mt19937_64 rng(17);
  for (int trial = 0; trial < 100; ++trial) {
    size_t types = 2 + trial % 2, layers = 2 + (trial / 2) % 7;
    Instance in = randomInstance(rng, layers, types);
    PlacementProblem problem(in.spec, in.layers, in.limit);
    Placement start(layers);
    for (size_t &t : start)
      t = std::uniform_int_distribution<size_t>(0, types - 1)(rng);
    SearchTracker search(problem);
    PlacementEval startEval = search.evaluate(start), eval = startEval;
    Placement result = StageRebalancer(problem).improve(search, start, eval);
    EXPECT_FALSE(startEval.betterThan(eval)) << "trial " << trial;
    PlacementEval check = problem.evaluate(result);
    EXPECT_EQ(check.feasible, eval.feasible);
    EXPECT_EQ(check.cost, eval.cost);
  }
}

TEST(Rebalance, StopsWhenTheTimeIsUp) {
  std::mt19937_64 rng(19);
  Instance in = randomInstance(rng, 6, 2);
  PlacementProblem problem(in.spec, in.layers, in.limit);
  SearchTracker search(problem, /*timeBudgetSeconds=*/0);
  Placement start = {0, 0, 1, 1, 0, 0};
  PlacementEval eval = problem.evaluate(start);
  EXPECT_EQ(StageRebalancer(problem).improve(search, start, eval), start);
  EXPECT_EQ(search.spent(), 0);
}

} // namespace
