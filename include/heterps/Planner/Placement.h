//===- Placement.h - the placement search space -----------------*- C++ -*-===//
//
// Every placement strategy searches the same space: one device type per
// layer (in the fixed topological order of the layers); stages are the
// maximal runs of one type; the stages get the replica counts of the
// cheapest plan meeting the throughput limit (provision()); the max_count
// limits apply.
// PlacementProblem evaluates a placement in that space and counts the
// evaluations, so strategies are compared at equal budgets.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_PLANNER_PLACEMENT_H
#define HETERPS_PLANNER_PLACEMENT_H

#include "heterps/Planner/CostModel.h"

#include <atomic>
#include <chrono>
#include <limits>
#include <vector>

namespace heterps::planner {

/// A device type index (into ClusterSpec::deviceTypes) per layer.
using Placement = std::vector<size_t>;

/// The outcome of one placement.
struct PlacementEval {
  bool feasible = false;
  /// Dollars for the whole job; infinity when infeasible.
  double cost = std::numeric_limits<double>::infinity();
  /// Pipeline throughput with the provisioned replicas (when infeasible:
  /// the best throughput the max_count limits allow).
  double throughput = 0;
  /// When infeasible, how far the best throughput misses the limit,
  /// relative to it: (limit - throughput) / limit, in (0, 1]. 0 otherwise.
  double shortfall = 0;
  std::vector<Stage> stages;

  /// True when this plan is better than `other`: feasible beats infeasible,
  /// then lower cost, then (both infeasible) smaller shortfall.
  bool betterThan(const PlacementEval &other) const;
};

class PlacementProblem {
public:
  PlacementProblem(const ClusterSpec &spec, std::vector<Layer> layers,
                   double throughputLimit);

  size_t numLayers() const { return layers_.size(); }
  size_t numTypes() const { return spec_.deviceTypes.size(); }
  const ClusterSpec &spec() const { return spec_; }
  const std::vector<Layer> &layers() const { return layers_; }
  double limit() const { return limit_; }

  /// Forms stages, provisions them and evaluates the plan. Thread-safe.
  PlacementEval evaluate(const Placement &placement) const;
  /// Number of evaluate() calls so far.
  int64_t evaluations() const { return evaluations_.load(); }

private:
  const ClusterSpec &spec_;
  std::vector<Layer> layers_;
  double limit_;
  mutable std::atomic<int64_t> evaluations_{0};
};

/// What every strategy returns.
struct SearchResult {
  Placement placement;
  PlacementEval eval;
  double seconds = 0;      // wall-clock search time
  int64_t evaluations = 0; // PlacementProblem::evaluate calls
};

/// Bookkeeping every strategy shares: evaluates plans through the problem,
/// keeps the best one (PlacementEval::betterThan; the first plan until a
/// better one comes), and measures time and evaluations for SearchResult.
class SearchTracker {
public:
  explicit SearchTracker(
      const PlacementProblem &problem,
      double timeBudgetSeconds = std::numeric_limits<double>::infinity());

  /// Evaluates `placement` and keeps it if it is the best so far.
  const PlacementEval &evaluate(const Placement &placement);
  /// Evaluations made through this tracker (other users of the problem may
  /// evaluate concurrently).
  int64_t spent() const { return spent_; }
  double elapsed() const;
  bool timeUp() const { return elapsed() >= timeBudget_; }
  const PlacementProblem &problem() const { return problem_; }
  /// The best plan with its search time and evaluation count.
  SearchResult finish();

private:
  const PlacementProblem &problem_;
  double timeBudget_;
  std::chrono::steady_clock::time_point start_;
  int64_t before_;
  int64_t spent_ = 0;
  SearchResult best_;
  PlacementEval last_;
};

/// Every layer on device type `type`.
SearchResult placeAllOnType(const PlacementProblem &problem, size_t type);

/// Tries all numTypes()^numLayers() placements; for small instances (tests
/// and certificates). Refuses (returns an empty placement) above
/// `maxPlacements` placements.
SearchResult placeBruteForce(const PlacementProblem &problem,
                             int64_t maxPlacements = 1 << 22);

} // namespace heterps::planner

#endif // HETERPS_PLANNER_PLACEMENT_H
