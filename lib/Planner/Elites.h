//===- Elites.h - the best plans a search has seen --------------*- C++ -*-===//
//
// Internal to the planner: the RL scheduler (RLPlacer.h) and the TAPP search
// (Tapp.h) keep the best distinct plans they have evaluated, with their
// rewards, for self-imitation updates.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_PLANNER_ELITES_H
#define HETERPS_LIB_PLANNER_ELITES_H

#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

namespace heterps::planner {

/// At most `capacity` plans (a Placement, or whatever the search samples;
/// comparable with ==), best reward first; a plan offered again with the
/// same reward is kept once.
template <typename Plan> class Elites {
public:
  explicit Elites(size_t capacity) : capacity_(capacity) {}

  void offer(const Plan &plan, double reward) {
    if (capacity_ == 0 ||
        (plans_.size() == capacity_ && reward <= plans_.back().first))
      return;
    for (const auto &e : plans_)
      if (e.first == reward && e.second == plan)
        return;
    auto at = std::find_if(plans_.begin(), plans_.end(),
                           [&](const auto &e) { return e.first < reward; });
    plans_.insert(at, {reward, plan});
    if (plans_.size() > capacity_)
      plans_.pop_back();
  }

  const std::vector<std::pair<double, Plan>> &plans() const { return plans_; }

private:
  size_t capacity_;
  std::vector<std::pair<double, Plan>> plans_;
};

} // namespace heterps::planner

#endif // HETERPS_LIB_PLANNER_ELITES_H
