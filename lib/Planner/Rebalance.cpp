//===- Rebalance.cpp - optimal stage boundaries for a type sequence -------===//
//
// See Rebalance.h.
//
//===----------------------------------------------------------------------===//

#include "heterps/Planner/Rebalance.h"

#include "RunTable.h"

#include "llvm/ADT/STLExtras.h"

#include <cmath>
#include <limits>
#include <optional>
#include <set>

using namespace heterps::planner;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
/// Caps tried per type sequence at most (each one DP pass).
constexpr int kMaxCaps = 64;
/// Rounds of penalties on types whose max_count the DP's plans exceed.
constexpr int kPenaltyRounds = 6;

/// The device types of a plan's stages, in order.
std::vector<size_t> stageTypes(const Placement &plan) {
  std::vector<size_t> types;
  for (const Stage &stage : formStages(plan))
    types.push_back(stage.deviceType);
  return types;
}

/// The sequences one change away from `types`: a stage left out (its
/// neighbours merge when they are of one type), a stage of another type
/// inserted between two stages or at either end, or a stage split around a
/// stage of another type.
std::set<std::vector<size_t>> neighbours(const std::vector<size_t> &types,
                                         size_t numTypes) {
  std::set<std::vector<size_t>> out;
  size_t s = types.size();
  for (size_t j = 0; j < s; ++j) {
    std::vector<size_t> v;
    for (size_t i = 0; i < s; ++i)
      if (i != j && (v.empty() || v.back() != types[i]))
        v.push_back(types[i]);
    if (!v.empty())
      out.insert(std::move(v));
  }
  for (size_t u = 0; u < numTypes; ++u) {
    for (size_t gap = 0; gap <= s; ++gap) {
      if ((gap > 0 && types[gap - 1] == u) || (gap < s && types[gap] == u))
        continue;
      std::vector<size_t> v = types;
      v.insert(v.begin() + static_cast<ptrdiff_t>(gap), u);
      out.insert(std::move(v));
    }
    for (size_t j = 0; j < s; ++j) {
      if (types[j] == u)
        continue;
      std::vector<size_t> v = types;
      v.insert(v.begin() + static_cast<ptrdiff_t>(j) + 1, {u, types[j]});
      out.insert(std::move(v));
    }
  }
  return out;
}

/// The least-price plan with stage types `types` in order, every stage's ET
/// at most `cap` (ties: least largest ET).
class SequenceDP {
public:
  SequenceDP(const PlacementProblem &problem, const RunTable &runs)
      : runs_(runs), n_(problem.numLayers()) {
    for (const DeviceType &d : problem.spec().deviceTypes)
      basePrices_.push_back(d.pricePerSecond());
    prices_ = basePrices_;
  }

  /// Adds `penalty[t]` to the price per second of each device of type t in
  /// the DP (not in the evaluation): it steers the DP off types whose
  /// max_count the plans it finds exceed.
  void setPenalties(const std::vector<double> &penalty) {
    for (size_t t = 0; t < prices_.size(); ++t)
      prices_[t] = basePrices_[t] + penalty[t];
  }

  /// The least largest stage time of plans with stage types `types`, every
  /// stage at its type's max_count (the sums relaxed): a lower bound on E.
  double leastMaxEt(const std::vector<size_t> &types,
                    const std::vector<int64_t> &maxCount) {
    size_t s = types.size();
    if (s == 0 || s > n_)
      return kInf;
    std::vector<double> best(n_ + 1, kInf), next(n_ + 1);
    best[0] = 0;
    for (size_t j = 0; j < s; ++j) {
      size_t t = types[j];
      double most = static_cast<double>(std::max<int64_t>(maxCount[t], 1));
      std::fill(next.begin(), next.end(), kInf);
      for (size_t a = 0; a < n_; ++a) {
        if (best[a] == kInf)
          continue;
        runs_.forEachRun(a, t, [&](const Run &r, const SplitTimes &times) {
          next[r.end] =
              std::min(next[r.end], std::max(best[a], times.et(most)));
          return true;
        });
      }
      best.swap(next);
    }
    return best[n_];
  }

  /// The plan, with its largest stage time in `maxEt` and its price in the
  /// DP in `price`; nullopt when no plan fits under the cap.
  std::optional<Placement> solve(const std::vector<size_t> &types, double cap,
                                 double &maxEt, double &price) {
    size_t s = types.size();
    if (s == 0 || s > n_)
      return std::nullopt;
    cells_.assign(s * (n_ + 1), Cell());
    for (size_t j = 0; j < s; ++j) {
      size_t t = types[j];
      // Each later stage needs a layer of its own.
      size_t lastEnd = n_ - (s - 1 - j);
      size_t firstStart = j, lastStart = j == 0 ? 0 : lastEnd - 1;
      for (size_t a = firstStart; a <= lastStart; ++a) {
        Cell from = j == 0 ? Cell{0, 0, 0} : cell(j - 1, a);
        if (from.price == kInf)
          continue;
        runs_.forEachUnderCap(a, t, cap, [&](const Run &r) {
          if (r.end > lastEnd)
            return false;
          Cell next{from.price + prices_[t] * r.replicas,
                    std::max(from.maxEt, r.et), static_cast<uint32_t>(a)};
          Cell &to = cell(j, r.end);
          if (lexLess(next, to))
            to = next;
          return true;
        });
      }
    }
    const Cell &last = cell(s - 1, n_);
    if (last.price == kInf)
      return std::nullopt;
    maxEt = last.maxEt;
    price = last.price;
    Placement plan(n_);
    for (size_t j = s, b = n_; j-- > 0;) {
      size_t a = cell(j, b).start;
      std::fill(plan.begin() + a, plan.begin() + b, types[j]);
      b = a;
    }
    return plan;
  }

private:
  struct Cell {
    double price = kInf;
    double maxEt = 0;
    uint32_t start = 0; // first layer of the last stage
  };

  static bool lexLess(const Cell &a, const Cell &b) {
    if (b.price == kInf)
      return a.price < kInf;
    // Prices are sums in different orders: equal within rounding.
    double tolerance = 1e-12 * std::max(a.price, b.price);
    if (a.price < b.price - tolerance)
      return true;
    return a.price <= b.price + tolerance && a.maxEt < b.maxEt;
  }

  Cell &cell(size_t stage, size_t end) {
    return cells_[stage * (n_ + 1) + end];
  }

  const RunTable &runs_;
  size_t n_;
  std::vector<double> basePrices_, prices_;
  std::vector<Cell> cells_;
};

} // namespace

StageRebalancer::StageRebalancer(const PlacementProblem &problem)
    : problem_(problem) {}

StageRebalancer::~StageRebalancer() = default;

/// Devices per type that `eval`'s stages use beyond the type's max_count.
static std::vector<bool> overLimit(const ClusterSpec &spec,
                                   const PlacementEval &eval) {
  std::vector<int64_t> used(spec.deviceTypes.size(), 0);
  for (const Stage &stage : eval.stages)
    used[stage.deviceType] += stage.replicas;
  std::vector<bool> over(used.size());
  for (size_t t = 0; t < used.size(); ++t)
    over[t] = used[t] > spec.deviceTypes[t].maxCount;
  return over;
}

bool StageRebalancer::tryTypes(SearchTracker &search,
                               const std::vector<size_t> &types,
                               Placement &plan, PlacementEval &eval) {
  SequenceDP dp(problem_, *runs_);
  const ClusterSpec &spec = problem_.spec();
  size_t numTypes = problem_.numTypes();
  std::vector<int64_t> maxCount;
  for (const DeviceType &d : spec.deviceTypes)
    maxCount.push_back(d.maxCount);
  double perPriceTime = static_cast<double>(spec.job.epochs) *
                        static_cast<double>(spec.job.samplesPerEpoch) /
                        static_cast<double>(spec.job.batchSize);
  // A plan of the sequence under a cap c costs at least (L·M/B)·P*(c)·E_min,
  // with P*(c) the unpenalised DP's price at c and E_min the sequence's
  // least E: once that reaches the best cost, no cap at or below c can
  // win. `stopCap` is the largest such cap found; most sequences the
  // descent tries are ruled out by the first pass.
  double leastE = -1, stopCap = 0;
  std::vector<double> penalty(numTypes, 0);
  bool improved = false;
  for (int round = 0; round < kPenaltyRounds; ++round) {
    dp.setPenalties(penalty);
    std::vector<bool> over(numTypes, false);
    // Caps from none down, each just below the largest ET of the last plan.
    double cap = kInf, maxEt = 0, price = 0;
    for (int step = 0; step < kMaxCaps && cap > stopCap && !search.timeUp();
         ++step) {
      std::optional<Placement> found = dp.solve(types, cap, maxEt, price);
      if (!found)
        break;
      if (round == 0 && eval.feasible) {
        if (leastE < 0)
          leastE = dp.leastMaxEt(types, maxCount);
        if (perPriceTime * price * leastE >= eval.cost) {
          stopCap = cap;
          break;
        }
      }
      const PlacementEval &e = search.evaluate(*found);
      if (e.betterThan(eval)) {
        plan = std::move(*found);
        eval = e;
        improved = true;
      }
      // Runs meet the floor, so an infeasible plan exceeds a max_count.
      if (!e.feasible) {
        std::vector<bool> o = overLimit(spec, e);
        for (size_t t = 0; t < numTypes; ++t)
          over[t] = over[t] || o[t];
      }
      if (maxEt <= 0)
        break;
      cap = std::nextafter(maxEt, 0.0);
    }
    if (llvm::none_of(over, [](bool b) { return b; }))
      break;
    // Dearer devices of the types that ran out; doubling from a quarter of
    // their price.
    for (size_t t = 0; t < numTypes; ++t)
      if (over[t])
        penalty[t] = penalty[t] > 0
                         ? 2 * penalty[t]
                         : 0.25 * spec.deviceTypes[t].pricePerSecond();
  }
  return improved;
}

Placement StageRebalancer::improve(SearchTracker &search, Placement plan,
                                   PlacementEval &eval) {
  if (plan.empty())
    return plan;
  if (!runs_)
    runs_ = std::make_unique<RunTable>(problem_, problem_.limit());
  // Descent: the plan's own sequence, then its neighbours, from each
  // improvement on, until none improves. A sequence's best plan does not
  // depend on where the descent is, so each is tried once.
  std::set<std::vector<size_t>> tried;
  auto tryOnce = [&](const std::vector<size_t> &types) {
    return tried.insert(types).second && tryTypes(search, types, plan, eval);
  };
  tryOnce(stageTypes(plan));
  for (bool improved = true; improved && !search.timeUp();) {
    improved = false;
    for (const std::vector<size_t> &next :
         neighbours(stageTypes(plan), problem_.numTypes()))
      if ((improved = tryOnce(next)))
        break;
  }
  return plan;
}
