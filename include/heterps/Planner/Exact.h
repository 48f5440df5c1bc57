//===- Exact.h - the provable optimum of the placement space ----*- C++ -*-===//
//
// placeExact finds the cheapest feasible plan of Placement.h's space (one
// type per layer, stages = maximal runs, replica counts per stage, throughput
// floor, max_count limits), or, when none is feasible, the placement whose
// best achievable throughput is highest. docs/placement.md has the
// algorithm and its proof; in short:
//
// * A placement is a segmentation of the layer chain into runs whose
//   neighbours differ in type. Under a cap on the stages' batch time, a
//   run's cheapest replica count is the fewest that meet the floor and keep
//   it under the cap; that count, its price p_t·k and its time depend on
//   the run and the cap alone (RunTable::forEachUnderCap).
// * The job cost is (L·M/B) · P · E, with P = Σ p_t·k over stages and
//   E = max stage ET. For a cap on E, a dynamic programme over layer
//   boundaries finds the least P among plans whose stages all have ET under
//   the cap. max_count limits are added lazily: the DP first ignores them;
//   a type whose limit the result breaks becomes a tracked resource, whose
//   usage joins the DP labels (Pareto sets), and the DP runs again. A
//   relaxation's optimum that satisfies every limit is optimal. Before a
//   tracked pass, a few subgradient steps on the limits' Lagrangian (each
//   device priced up by a multiplier) give a lower bound on P* that often
//   rules the cap out, and penalized completion prices that prune labels
//   having used up most of a limit.
// * The optimum is the least c·P*(c) over caps c; P* never rises with c.
//   The caps, real numbers between the least E any plan reaches and the
//   largest run time, are searched best-first by ranges with lower bounds
//   on P*, each settled by probing one cap.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_PLANNER_EXACT_H
#define HETERPS_PLANNER_EXACT_H

#include "heterps/Planner/Placement.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

namespace heterps::planner {

/// What the exact search did, for the benchmark and the docs.
struct ExactStats {
  int64_t runs = 0;             // (start, end, type) runs meeting the floor
  int64_t dpPasses = 0;         // DP passes over the run table
  int64_t capSteps = 0;         // caps on E tried
  int64_t tracked = 0;          // most device types one DP tracked the limit of
  int64_t labels = 0;           // DP labels created over all passes
  int64_t relaxationPasses = 0; // DP passes with the limits priced in
  bool feasible = false;        // some placement meets the floor and the limits
};

/// The optimal placement: the cheapest feasible one, or when there is none,
/// one whose best throughput within the max_count limits is highest (to a
/// relative 1e-9). Plans are scored by PlacementProblem::evaluate; ties keep
/// the first found. `stats`, when given, receives the search's figures.
SearchResult placeExact(const PlacementProblem &problem,
                        ExactStats *stats = nullptr);

class RunTable;

/// The exact search's inner step on its own: the cheapest plan whose stages
/// all have batch times at most a cap (each stage with the fewest replicas
/// that meet the floor and the cap) and that keeps the max_count limits.
/// placeRL refines its best plans with it (RLPlacer.h).
class CheapestUnderCap {
public:
  explicit CheapestUnderCap(const PlacementProblem &problem);
  ~CheapestUnderCap();

  /// The plan, or nullopt when none fits under `cap` with a price per
  /// second of at most `maxPrice`.
  std::optional<Placement> solve(double cap, double maxPrice);

private:
  const PlacementProblem &problem_;
  std::unique_ptr<RunTable> runs_;
  /// Types whose limits the DP has had to track: kept across calls, as
  /// nearby caps break the same limits.
  std::vector<size_t> tracked_;
};

} // namespace heterps::planner

#endif // HETERPS_PLANNER_EXACT_H
