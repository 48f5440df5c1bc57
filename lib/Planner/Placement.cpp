//===- Placement.cpp - evaluating placements ------------------------------===//

#include "heterps/Planner/Placement.h"

#include <chrono>
#include <cmath>

using namespace heterps::planner;

bool PlacementEval::betterThan(const PlacementEval &other) const {
  if (feasible != other.feasible)
    return feasible;
  if (feasible)
    return cost < other.cost;
  return shortfall < other.shortfall;
}

PlacementProblem::PlacementProblem(const ClusterSpec &spec,
                                   std::vector<Layer> layers,
                                   double throughputLimit)
    : spec_(spec), layers_(std::move(layers)), limit_(throughputLimit) {}

PlacementEval PlacementProblem::evaluate(const Placement &placement) const {
  ++evaluations_;
  PlacementEval eval;
  eval.stages = formStages(placement);
  Provisioning p = provision(spec_, layers_, eval.stages, limit_);
  PlanFigures figures = evaluatePlan(spec_, layers_, eval.stages);
  eval.feasible = p.feasible;
  eval.throughput = p.feasible ? figures.throughput : p.bestThroughput;
  if (eval.feasible) {
    eval.cost = figures.cost;
  } else {
    double best = std::isfinite(eval.throughput) ? eval.throughput : 0.0;
    eval.shortfall = limit_ > 0 ? std::min(1.0, (limit_ - best) / limit_) : 1;
  }
  return eval;
}

SearchResult heterps::planner::placeAllOnType(const PlacementProblem &problem,
                                              size_t type) {
  auto start = std::chrono::steady_clock::now();
  int64_t before = problem.evaluations();
  SearchResult r;
  r.placement.assign(problem.numLayers(), type);
  r.eval = problem.evaluate(r.placement);
  r.evaluations = problem.evaluations() - before;
  r.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return r;
}

SearchResult heterps::planner::placeBruteForce(const PlacementProblem &problem,
                                               int64_t maxPlacements) {
  auto start = std::chrono::steady_clock::now();
  int64_t before = problem.evaluations();
  SearchResult best;
  size_t n = problem.numLayers(), t = problem.numTypes();
  double total = std::pow(static_cast<double>(t), static_cast<double>(n));
  if (n == 0 || total > static_cast<double>(maxPlacements))
    return best;
  // Count through all placements in base t.
  Placement current(n, 0);
  while (true) {
    PlacementEval eval = problem.evaluate(current);
    if (best.placement.empty() || eval.betterThan(best.eval)) {
      best.placement = current;
      best.eval = std::move(eval);
    }
    size_t digit = 0;
    while (digit < n && ++current[digit] == t)
      current[digit++] = 0;
    if (digit == n)
      break;
  }
  best.evaluations = problem.evaluations() - before;
  best.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return best;
}
