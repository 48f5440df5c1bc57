//===- LocalSearch.cpp - stage-level hill climbing on a placement ---------===//
//
// See LocalSearch.h.
//
//===----------------------------------------------------------------------===//

#include "heterps/Planner/LocalSearch.h"

#include <algorithm>

using namespace heterps::planner;

namespace {

/// A stage: layers [begin, end) on one type.
struct Run {
  size_t begin, end, type;
  size_t length() const { return end - begin; }
};

std::vector<Run> runsOf(const Placement &plan) {
  std::vector<Run> runs;
  for (size_t i = 0; i < plan.size(); ++i)
    if (runs.empty() || plan[i] != runs.back().type)
      runs.push_back({i, i + 1, plan[i]});
    else
      runs.back().end = i + 1;
  return runs;
}

/// One climb: tries moves on `plan` until one improves it.
class Climber {
public:
  Climber(SearchTracker &search, Placement &plan, PlacementEval &eval,
          int64_t maxEvaluations)
      : search_(search), plan_(plan), eval_(eval),
        maxEvaluations_(maxEvaluations),
        numTypes_(search.problem().numTypes()) {}

  bool exhausted() const {
    return spent_ >= maxEvaluations_ || search_.timeUp();
  }

  /// Tries every move once; true (and the plan changed) at the first that
  /// improves.
  bool improveOnce() {
    std::vector<Run> runs = runsOf(plan_);
    for (size_t j = 0; j + 1 < runs.size(); ++j)
      if (shiftBoundary(runs[j], runs[j + 1]))
        return true;
    for (const Run &run : runs)
      if (recolour(run))
        return true;
    return false;
  }

private:
  /// Moves the boundary between `left` and `right` by 1, 2, 4, ... layers.
  bool shiftBoundary(const Run &left, const Run &right) {
    size_t at = right.begin;
    for (size_t d = 1; d <= right.length(); d *= 2)
      if (tryRange(at, at + d, left.type))
        return true;
    for (size_t d = 1; d <= left.length(); d *= 2)
      if (tryRange(at - d, at, right.type))
        return true;
    return false;
  }

  /// Another type for the whole run, then for its halves and middle third.
  bool recolour(const Run &run) {
    size_t n = run.length();
    for (size_t t = 0; t < numTypes_; ++t) {
      if (t == run.type)
        continue;
      if (tryRange(run.begin, run.end, t))
        return true;
      if (n < 2)
        continue;
      if (tryRange(run.begin, run.begin + n / 2, t) ||
          tryRange(run.end - n / 2, run.end, t))
        return true;
      if (n >= 3 && tryRange(run.begin + n / 3, run.end - n / 3, t))
        return true;
    }
    return false;
  }

  /// Evaluates the plan with layers [begin, end) on `type`; keeps it when
  /// better.
  bool tryRange(size_t begin, size_t end, size_t type) {
    if (exhausted())
      return false;
    Placement candidate = plan_;
    std::fill(candidate.begin() + static_cast<ptrdiff_t>(begin),
              candidate.begin() + static_cast<ptrdiff_t>(end), type);
    if (candidate == plan_)
      return false;
    ++spent_;
    const PlacementEval &eval = search_.evaluate(candidate);
    if (!eval.betterThan(eval_))
      return false;
    plan_ = std::move(candidate);
    eval_ = eval;
    return true;
  }

  SearchTracker &search_;
  Placement &plan_;
  PlacementEval &eval_;
  int64_t maxEvaluations_, spent_ = 0;
  size_t numTypes_;
};

} // namespace

Placement heterps::planner::improveLocally(SearchTracker &search,
                                           Placement plan, PlacementEval &eval,
                                           int64_t maxEvaluations) {
  Climber climber(search, plan, eval, maxEvaluations);
  while (!climber.exhausted() && climber.improveOnce()) {
  }
  return plan;
}
