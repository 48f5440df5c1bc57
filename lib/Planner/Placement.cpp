//===- Placement.cpp - evaluating placements ------------------------------===//

#include "heterps/Planner/Placement.h"

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

SearchTracker::SearchTracker(const PlacementProblem &problem,
                             double timeBudgetSeconds)
    : problem_(problem), timeBudget_(timeBudgetSeconds),
      start_(std::chrono::steady_clock::now()), before_(problem.evaluations()) {
}

const PlacementEval &SearchTracker::evaluate(const Placement &placement) {
  last_ = problem_.evaluate(placement);
  if (++spent_ == 1 || last_.betterThan(best_.eval)) {
    best_.placement = placement;
    best_.eval = last_;
  }
  return last_;
}

double SearchTracker::elapsed() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                       start_)
      .count();
}

SearchResult SearchTracker::finish() {
  best_.seconds = elapsed();
  best_.evaluations = problem_.evaluations() - before_;
  return std::move(best_);
}

SearchResult heterps::planner::placeAllOnType(const PlacementProblem &problem,
                                              size_t type) {
  SearchTracker search(problem);
  search.evaluate(Placement(problem.numLayers(), type));
  return search.finish();
}

SearchResult heterps::planner::placeBruteForce(const PlacementProblem &problem,
                                               int64_t maxPlacements) {
  SearchTracker search(problem);
  size_t n = problem.numLayers(), t = problem.numTypes();
  double total = std::pow(static_cast<double>(t), static_cast<double>(n));
  if (n == 0 || total > static_cast<double>(maxPlacements))
    return search.finish();
  // Count through all placements in base t.
  Placement current(n, 0);
  while (true) {
    search.evaluate(current);
    size_t digit = 0;
    while (digit < n && ++current[digit] == t)
      current[digit++] = 0;
    if (digit == n)
      break;
  }
  return search.finish();
}
