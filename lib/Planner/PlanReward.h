//===- PlanReward.h - the policy-gradient schedulers' reward ----*- C++ -*-===//
//
// Internal to the planner: the reward the RL scheduler (RLPlacer.h) and the
// TAPP search (Tapp.h) give an evaluated plan. A feasible plan of cost c
// gets -log(c / c_ref), clamped at -9, c_ref the cost of the first feasible
// plan noted; an infeasible one -(10 + 10 * shortfall + 10 * excess), the
// excess (a share of the plan's devices beyond the limits, which the caller
// computes if it ranks such plans) 0 by default.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_PLANNER_PLANREWARD_H
#define HETERPS_LIB_PLANNER_PLANREWARD_H

#include "heterps/Planner/Placement.h"

#include <algorithm>
#include <cmath>

namespace heterps::planner {

class PlanReward {
public:
  static constexpr double infeasiblePenalty = 10;
  static constexpr double shortfallWeight = 10;
  static constexpr double excessWeight = 10;
  static constexpr double worstFeasible = -9;

  /// Sets c_ref unless it is set; ignores infeasible plans.
  void noteReference(const PlacementEval &eval) {
    if (eval.feasible && !hasReference_) {
      reference_ = eval.cost;
      hasReference_ = true;
    }
  }
  double operator()(const PlacementEval &eval, double excess = 0) {
    if (!eval.feasible)
      return -(infeasiblePenalty + shortfallWeight * eval.shortfall +
               excessWeight * excess);
    noteReference(eval);
    // Guards against zero costs (layers that take no time).
    double ref = reference();
    double cost = std::max(eval.cost, 1e-12 * ref);
    return std::max(-std::log(cost / ref), worstFeasible);
  }
  double reference() const { return reference_ > 0 ? reference_ : 1.0; }

private:
  double reference_ = 0;
  bool hasReference_ = false;
};

} // namespace heterps::planner

#endif // HETERPS_LIB_PLANNER_PLANREWARD_H
