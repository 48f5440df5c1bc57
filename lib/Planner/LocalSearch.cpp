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

/// A move: layers [begin, end) to `type`.
struct Move {
  size_t begin, end, type;
};

/// Every move of the neighbourhood of `plan` (LocalSearch.h).
std::vector<Move> movesOf(const Placement &plan, size_t numTypes) {
  std::vector<Move> moves;
  std::vector<Run> runs = runsOf(plan);
  for (size_t j = 0; j + 1 < runs.size(); ++j) {
    const Run &left = runs[j], &right = runs[j + 1];
    for (size_t d = 1; d <= right.length(); d *= 2)
      moves.push_back({right.begin, right.begin + d, left.type});
    for (size_t d = 1; d <= left.length(); d *= 2)
      moves.push_back({right.begin - d, right.begin, right.type});
  }
  for (const Run &run : runs) {
    size_t n = run.length();
    for (size_t t = 0; t < numTypes; ++t) {
      if (t == run.type)
        continue;
      moves.push_back({run.begin, run.end, t});
      for (size_t d = 1; d < n; d *= 2) {
        moves.push_back({run.begin, run.begin + d, t});
        moves.push_back({run.end - d, run.end, t});
      }
      if (n >= 2) {
        moves.push_back({run.begin, run.begin + n / 2, t});
        moves.push_back({run.end - n / 2, run.end, t});
      }
      if (n >= 3)
        moves.push_back({run.begin + n / 3, run.end - n / 3, t});
    }
  }
  // Windows of one or two layers anywhere (a short stage in the middle of a
  // long one).
  for (size_t i = 0; i < plan.size(); ++i)
    for (size_t t = 0; t < numTypes; ++t) {
      if (t == plan[i])
        continue;
      moves.push_back({i, i + 1, t});
      if (i + 2 <= plan.size())
        moves.push_back({i, i + 2, t});
    }
  return moves;
}

} // namespace

Placement heterps::planner::improveLocally(SearchTracker &search,
                                           Placement plan, PlacementEval &eval,
                                           int64_t maxEvaluations,
                                           std::mt19937_64 &rng) {
  size_t numTypes = search.problem().numTypes();
  int64_t spent = 0;
  Placement candidate;
  bool improved = true;
  while (improved) {
    improved = false;
    std::vector<Move> moves = movesOf(plan, numTypes);
    // Fisher-Yates with the generator's raw output: the same order on every
    // platform (std::shuffle's algorithm is the library's choice).
    for (size_t i = moves.size(); i > 1; --i)
      std::swap(moves[i - 1], moves[rng() % i]);
    for (const Move &m : moves) {
      if (spent >= maxEvaluations || search.timeUp())
        return plan;
      candidate = plan;
      std::fill(candidate.begin() + static_cast<ptrdiff_t>(m.begin),
                candidate.begin() + static_cast<ptrdiff_t>(m.end), m.type);
      if (candidate == plan)
        continue;
      ++spent;
      const PlacementEval &next = search.evaluate(candidate);
      if (next.betterThan(eval)) {
        eval = next;
        plan.swap(candidate);
        improved = true;
        break;
      }
    }
  }
  return plan;
}
