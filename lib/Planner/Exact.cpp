//===- Exact.cpp - the provable optimum of the placement space ------------===//
//
// See Exact.h for the outline and docs/placement.md for the proof.
//
//===----------------------------------------------------------------------===//

#include "heterps/Planner/Exact.h"

#include "RunTable.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <queue>
#include <utility>

using namespace heterps::planner;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
/// A probe of cap c answers for the caps in [kProbeSpan·c, c].
constexpr double kProbeSpan = 0.7;
/// A range of caps [lo, hi] with hi <= lo·(1 + kNarrow) is settled by one
/// probe at hi: the optimum is exact to this relative precision.
constexpr double kNarrow = 1e-10;
/// Subgradient steps on the Lagrangian of the tracked limits per probe, and
/// how far above the bound it must beat each step aims (Polyak's step with
/// an overestimate, so that L can pass the bound rather than creep up to
/// it).
constexpr int kRelaxationSteps = 3;
constexpr double kRelaxationAim = 1.05;

/// A plan the DP found: its placement, price per second P, largest stage
/// time E, and devices per type.
struct DPPlan {
  Placement placement;
  double price = 0;
  double maxEt = 0;
  std::vector<int64_t> devices;
};

/// Lower bounds on the P still to come (max_count sums relaxed), for the
/// DP's pruning.
struct RestBound {
  /// [b * types + t]: least P of covering layers [b, n) with runs under the
  /// cap whose first run's type is not t (0 at b = n).
  std::vector<double> afterType;
  /// Least P of a whole plan under the cap.
  double whole = kInf;
  /// A plan with that P (the least E of those), unless infinite. With
  /// the real prices and no limit tracked, the DP's answer.
  DPPlan plan;
  /// The smallest cap above this one that allows other runs or counts: P*
  /// is constant from this cap up to it.
  double nextCap = kInf;
};

std::vector<double> devicePrices(const PlacementProblem &problem) {
  std::vector<double> prices;
  for (const DeviceType &d : problem.spec().deviceTypes)
    prices.push_back(d.pricePerSecond());
  return prices;
}

/// The Lagrangian relaxation of the tracked max_count limits at one cap:
/// for multipliers lambda >= 0, a device of type t costs price_t +
/// lambda_t, and L(lambda) = (least penalized P) - sum lambda_t max_count_t
/// is a lower bound on P*(cap). Its penalized rest prices bound a partial
/// plan's completion more tightly than the plain ones when the plan has
/// used much of a limit (see PriceDP::solve).
struct LimitRelaxation {
  std::vector<double> lambda; // per type; 0 for the untracked
  std::vector<double> afterType;
  double bound = 0; // L(lambda)
};

/// The least-P plan whose stages all have ET <= cap, with the max_count
/// limits of the `tracked` types enforced. Labels at a layer boundary are
/// partial plans: (P, usage of the tracked types, E). One label dominates
/// another when its P and usages are no larger (E breaks ties), so only
/// Pareto-optimal labels are kept per (boundary, last type); with nothing
/// tracked that is a single label, and the DP is the plain shortest path.
class PriceDP {
public:
  PriceDP(const PlacementProblem &problem, const CapRuns &runs,
          const std::vector<size_t> &tracked)
      : problem_(problem), runs_(runs), n_(problem.numLayers()),
        types_(problem.numTypes()), dims_(tracked.size()), tracked_(tracked),
        dimOfType_(types_, -1) {
    for (size_t d = 0; d < tracked.size(); ++d) {
      dimOfType_[tracked[d]] = static_cast<int>(d);
      limits_.push_back(problem.spec().deviceTypes[tracked[d]].maxCount);
    }
    prices_ = devicePrices(problem);
  }

  /// `rest[b * types + t]`: a lower bound on the P of covering layers
  /// [b, n) after a run of type t (see leastRestPrice). Labels that cannot
  /// finish at or below `ub` are dropped, so when P* > ub the result is
  /// empty or above ub.
  /// With `relaxation`, also drops labels its penalized rest prices rule
  /// out.
  std::optional<DPPlan> solve(const std::vector<double> &rest, double ub,
                              const LimitRelaxation *relaxation = nullptr) {
    labels_.clear();
    usage_.clear();
    fronts_.assign((n_ + 1) * types_, {});
    free_.clear();
    // The empty plan: no type yet, so every type may follow it.
    candidateUsage_.assign(dims_, 0);
    newLabel(Label{0, 0, -1, 0, static_cast<uint32_t>(types_), 0});
    std::vector<int32_t> sources;
    for (size_t start = 0; start < n_; ++start)
      for (size_t t = 0; t < types_; ++t) {
        collectSources(start, t, sources);
        if (sources.empty())
          continue;
        int dim = dimOfType_[t];
        int64_t limit = problem_.spec().deviceTypes[t].maxCount;
        for (const Run *r = runs_.begin(start, t); r != runs_.end(start, t);
             ++r) {
          for (int32_t s : sources) {
            if (dim >= 0 && usageOf(s)[dim] + r->replicas > limit)
              continue;
            Label next{labels_[s].price + prices_[t] * r->replicas,
                       std::max(labels_[s].maxEt, r->et),
                       s,
                       static_cast<uint32_t>(start),
                       static_cast<uint32_t>(t),
                       r->replicas};
            // Sources are by increasing price: the rest fail too.
            if (next.price + rest[r->end * types_ + t] > ub)
              break;
            if (relaxation && next.price + penalizedRest(*relaxation, r->end, t,
                                                         s, dim, r->replicas) >
                                  ub)
              continue;
            insert(r->end * types_ + t, next, s, dim, r->replicas);
          }
        }
      }
    int32_t best = -1;
    for (size_t t = 0; t < types_; ++t)
      for (int32_t l : fronts_[n_ * types_ + t])
        if (best < 0 || lexLess(labels_[l], labels_[best]))
          best = l;
    if (best < 0)
      return std::nullopt;
    return reconstruct(best);
  }

  int64_t labelsCreated() const { return labelsCreated_; }

private:
  struct Label {
    double price;
    double maxEt;
    int32_t parent;
    uint32_t start;   // first layer of the label's last run
    uint32_t type;    // type of that run; types_ for the empty plan
    int32_t replicas; // of that run
  };

  static bool lexLess(const Label &a, const Label &b) {
    return a.price < b.price || (a.price == b.price && a.maxEt < b.maxEt);
  }

  /// A lower bound on the P still to come after `parent` extended by a run
  /// of `replicas` devices of type t (tracked dimension `dim`) ending at
  /// `end`: the completion's penalized P less what its devices' penalties
  /// can be at most, lambda times the room left under each limit.
  double penalizedRest(const LimitRelaxation &relaxation, uint32_t end,
                       size_t t, int32_t parent, int dim,
                       int32_t replicas) const {
    double rest = relaxation.afterType[end * types_ + t];
    const int32_t *usage = usageOf(parent);
    for (size_t d = 0; d < dims_; ++d) {
      int64_t used = usage[d] + (static_cast<int>(d) == dim ? replicas : 0);
      rest -= relaxation.lambda[tracked_[d]] *
              static_cast<double>(limits_[d] - used);
    }
    return rest;
  }

  const int32_t *usageOf(int32_t label) const {
    return usage_.data() + static_cast<size_t>(label) * dims_;
  }

  /// True when `a` (with usages `ua`) makes `b` unnecessary.
  bool dominates(const Label &a, const int32_t *ua, const Label &b,
                 const int32_t *ub) const {
    if (a.price > b.price)
      return false;
    bool sameUsage = true;
    for (size_t d = 0; d < dims_; ++d) {
      if (ua[d] > ub[d])
        return false;
      sameUsage &= ua[d] == ub[d];
    }
    return a.price < b.price || !sameUsage || a.maxEt <= b.maxEt;
  }

  /// Stores `label` with usages candidateUsage_, in a freed slot if any.
  int32_t newLabel(const Label &label) {
    ++labelsCreated_;
    if (!free_.empty()) {
      int32_t slot = free_.back();
      free_.pop_back();
      labels_[slot] = label;
      std::copy(candidateUsage_.begin(), candidateUsage_.end(),
                usage_.begin() + static_cast<size_t>(slot) * dims_);
      return slot;
    }
    labels_.push_back(label);
    usage_.insert(usage_.end(), candidateUsage_.begin(), candidateUsage_.end());
    return static_cast<int32_t>(labels_.size() - 1);
  }

  /// Adds `label` (its usage: the parent's plus `replicas` in `dim`) to a
  /// front unless a label there dominates it; drops those it dominates.
  void insert(size_t state, const Label &label, int32_t parent, int dim,
              int32_t replicas) {
    candidateUsage_.assign(usageOf(parent), usageOf(parent) + dims_);
    if (dim >= 0)
      candidateUsage_[dim] += replicas;
    std::vector<int32_t> &front = fronts_[state];
    for (int32_t l : front)
      if (dominates(labels_[l], usageOf(l), label, candidateUsage_.data()))
        return;
    // Labels past the current start have no children yet: a dominated one
    // can give its slot away.
    llvm::erase_if(front, [&](int32_t l) {
      bool dominated =
          dominates(label, candidateUsage_.data(), labels_[l], usageOf(l));
      if (dominated)
        free_.push_back(l);
      return dominated;
    });
    front.push_back(newLabel(label));
  }

  /// The Pareto front of the plans that end at `start` on a type other than
  /// `t` (stages are maximal runs, so neighbours differ), by increasing P.
  void collectSources(size_t start, size_t t, std::vector<int32_t> &out) {
    out.clear();
    if (start == 0) {
      out.push_back(0);
      return;
    }
    for (size_t prev = 0; prev < types_; ++prev) {
      if (prev == t)
        continue;
      for (int32_t l : fronts_[start * types_ + prev]) {
        bool dominated = false;
        for (int32_t o : out)
          dominated |=
              dominates(labels_[o], usageOf(o), labels_[l], usageOf(l));
        if (dominated)
          continue;
        llvm::erase_if(out, [&](int32_t o) {
          return dominates(labels_[l], usageOf(l), labels_[o], usageOf(o));
        });
        out.push_back(l);
      }
    }
    std::sort(out.begin(), out.end(), [&](int32_t a, int32_t b) {
      return labels_[a].price < labels_[b].price;
    });
  }

  DPPlan reconstruct(int32_t label) const {
    DPPlan plan;
    plan.price = labels_[label].price;
    plan.maxEt = labels_[label].maxEt;
    plan.placement.assign(n_, 0);
    plan.devices.assign(types_, 0);
    size_t end = n_;
    for (int32_t l = label; labels_[l].parent >= 0; l = labels_[l].parent) {
      const Label &run = labels_[l];
      std::fill(plan.placement.begin() + run.start,
                plan.placement.begin() + end, run.type);
      plan.devices[run.type] += run.replicas;
      end = run.start;
    }
    return plan;
  }

  const PlacementProblem &problem_;
  const CapRuns &runs_;
  size_t n_, types_, dims_;
  std::vector<size_t> tracked_; // type of each tracked dimension
  std::vector<int64_t> limits_; // max_count of each tracked dimension
  std::vector<int> dimOfType_;
  std::vector<double> prices_;
  std::vector<Label> labels_;
  std::vector<int32_t> usage_;
  std::vector<std::vector<int32_t>> fronts_;
  std::vector<int32_t> candidateUsage_;
  std::vector<int32_t> free_;
  int64_t labelsCreated_ = 0;
};

/// The smallest largest-stage-time of any plan, every run with its type's
/// max_count devices (the sums relaxed): a lower bound on E.
double smallestMaxEt(const PlacementProblem &problem, const RunTable &runs) {
  size_t n = problem.numLayers(), types = problem.numTypes();
  // best[b * types + t]: least E of plans covering layers [0, b) ending on t.
  std::vector<double> best((n + 1) * types, kInf);
  for (size_t start = 0; start < n; ++start)
    for (size_t t = 0; t < types; ++t) {
      double from = start == 0 ? 0 : kInf;
      for (size_t prev = 0; start > 0 && prev < types; ++prev)
        if (prev != t)
          from = std::min(from, best[start * types + prev]);
      if (from == kInf)
        continue;
      double most = static_cast<double>(
          std::max<int64_t>(problem.spec().deviceTypes[t].maxCount, 1));
      runs.forEachRun(start, t, [&](const Run &r, const SplitTimes &times) {
        double &to = best[r.end * types + t];
        to = std::min(to, std::max(from, times.et(most)));
        return true;
      });
    }
  return *std::min_element(best.begin() + n * types, best.end());
}

/// The runs of `runs` as leastRestPrice visits them.
auto visitor(const CapRuns &runs) {
  return [&runs](size_t start, size_t t, auto visit) {
    for (const Run *r = runs.begin(start, t); r != runs.end(start, t); ++r)
      visit(*r);
  };
}

/// The runs of `table` under `cap`, lowering `nextCap` as they go (see
/// RunTable::forEachUnderCap).
auto visitor(const RunTable &table, double cap, double &nextCap) {
  return [&table, cap, &nextCap](size_t start, size_t t, auto visit) {
    table.forEachUnderCap(
        start, t, cap,
        [&](const Run &r) {
          visit(r);
          return true;
        },
        &nextCap);
  };
}

/// A backward DP over the runs `forEachRun(start, t, visit)` visits, each
/// device of type t costing `prices[t]`; ties in P go to the smaller largest
/// stage time.
template <typename ForEachRun>
RestBound leastRestPrice(const PlacementProblem &problem, ForEachRun forEachRun,
                         const std::vector<double> &prices) {
  size_t n = problem.numLayers(), types = problem.numTypes();
  struct Best {
    double price = kInf, maxEt = kInf;
    bool operator<(const Best &o) const {
      return price < o.price || (price == o.price && maxEt < o.maxEt);
    }
  };
  // from[b * types + t]: the least (P, E) of covering [b, n) starting with
  // type t, by the run `fromRun`; rest[b * types + t]: the least over the
  // other types, by `restType`.
  std::vector<Best> from((n + 1) * types), rest((n + 1) * types);
  std::vector<Run> fromRun((n + 1) * types);
  std::vector<uint32_t> restType((n + 1) * types, 0);
  for (size_t t = 0; t < types; ++t)
    rest[n * types + t] = {0, 0};
  RestBound bound;
  for (size_t b = n; b-- > 0;) {
    for (size_t t = 0; t < types; ++t) {
      Best &best = from[b * types + t];
      forEachRun(b, t, [&](const Run &r) {
        const Best &after = rest[r.end * types + t];
        Best via{prices[t] * r.replicas + after.price,
                 std::max(r.et, after.maxEt)};
        if (via < best) {
          best = via;
          fromRun[b * types + t] = r;
        }
      });
    }
    for (size_t t = 0; t < types; ++t)
      for (size_t next = 0; next < types; ++next)
        if (next != t && from[b * types + next] < rest[b * types + t]) {
          rest[b * types + t] = from[b * types + next];
          restType[b * types + t] = static_cast<uint32_t>(next);
        }
  }
  bound.afterType.resize((n + 1) * types);
  for (size_t i = 0; i < rest.size(); ++i)
    bound.afterType[i] = rest[i].price;
  size_t first = 0;
  for (size_t t = 1; t < types; ++t)
    if (from[t] < from[first])
      first = t;
  bound.whole = from[first].price;
  if (bound.whole == kInf)
    return bound;
  DPPlan &plan = bound.plan;
  plan.price = from[first].price;
  plan.maxEt = from[first].maxEt;
  plan.placement.assign(n, 0);
  plan.devices.assign(types, 0);
  for (size_t b = 0, t = first; b < n;) {
    const Run &r = fromRun[b * types + t];
    std::fill(plan.placement.begin() + b, plan.placement.begin() + r.end, t);
    plan.devices[t] += r.replicas;
    b = r.end;
    t = restType[b * types + t];
  }
  return bound;
}

/// Subgradient ascent on L from lambda = 0 (whose DP is `plain`), aiming at
/// `target` (Polyak's step), for at most `steps` DP passes; stops early
/// once L exceeds the target. The best multipliers found.
LimitRelaxation relaxLimits(const PlacementProblem &problem,
                            const CapRuns &runs,
                            const std::vector<size_t> &tracked,
                            const RestBound &plain, double target, int steps,
                            ExactStats &stats) {
  size_t types = problem.numTypes();
  const std::vector<DeviceType> &devices = problem.spec().deviceTypes;
  std::vector<double> prices = devicePrices(problem);
  LimitRelaxation best{std::vector<double>(types, 0), plain.afterType,
                       plain.whole};
  std::vector<double> lambda(types, 0);
  const RestBound *at = &plain;
  RestBound penalized;
  for (int step = 0; step < steps && best.bound <= target; ++step) {
    // L's subgradient: devices over the limits in the penalized optimum.
    double norm = 0;
    std::vector<double> over(types, 0);
    for (size_t t : tracked) {
      over[t] = static_cast<double>(at->plan.devices[t] - devices[t].maxCount);
      if (over[t] < 0 && lambda[t] == 0)
        over[t] = 0; // lambda would stay at 0
      norm += over[t] * over[t];
    }
    if (norm == 0)
      break; // the optimum keeps every limit: L cannot rise
    double length = (target * kRelaxationAim - best.bound) / norm;
    std::vector<double> penalizedPrices = prices;
    for (size_t t : tracked) {
      lambda[t] = std::max(0.0, lambda[t] + length * over[t]);
      penalizedPrices[t] += lambda[t];
    }
    penalized = leastRestPrice(problem, visitor(runs), penalizedPrices);
    ++stats.relaxationPasses;
    at = &penalized;
    if (penalized.whole == kInf)
      return {lambda, penalized.afterType, kInf};
    double bound = penalized.whole;
    for (size_t t : tracked)
      bound -= lambda[t] * static_cast<double>(devices[t].maxCount);
    if (bound > best.bound)
      best = {lambda, penalized.afterType, bound};
  }
  return best;
}

/// The least-P plan whose stages all have ET <= cap and whose P is at most
/// `ub` (nullopt when there is none), adding types to `tracked` until the
/// plan keeps every max_count limit.
std::optional<DPPlan> leastPricePlan(const PlacementProblem &problem,
                                     const RunTable &runs, double cap,
                                     double ub, std::vector<size_t> &tracked,
                                     ExactStats &stats) {
  CapRuns under(runs, cap);
  RestBound rest =
      leastRestPrice(problem, visitor(under), devicePrices(problem));
  if (rest.whole > ub)
    return std::nullopt;
  while (true) {
    std::optional<LimitRelaxation> relaxation;
    if (!tracked.empty() && ub < kInf) {
      relaxation = relaxLimits(problem, under, tracked, rest, ub,
                               kRelaxationSteps, stats);
      if (relaxation->bound > ub)
        return std::nullopt;
    }
    PriceDP dp(problem, under, tracked);
    std::optional<DPPlan> plan =
        dp.solve(rest.afterType, ub, relaxation ? &*relaxation : nullptr);
    ++stats.dpPasses;
    stats.labels += dp.labelsCreated();
    if (!plan)
      return std::nullopt;
    bool added = false;
    for (size_t t = 0; t < problem.numTypes(); ++t)
      if (plan->devices[t] > problem.spec().deviceTypes[t].maxCount &&
          std::find(tracked.begin(), tracked.end(), t) == tracked.end()) {
        tracked.push_back(t);
        added = true;
      }
    if (!added)
      return plan;
  }
}

/// The least-P plan under no cap (any plan keeping the floor and the
/// limits will do for the callers).
std::optional<DPPlan> feasiblePlan(const PlacementProblem &problem,
                                   const RunTable &runs,
                                   std::vector<size_t> &tracked,
                                   ExactStats &stats) {
  return leastPricePlan(problem, runs, kInf, kInf, tracked, stats);
}

/// What the search knows of one cap: the relaxed DP's answer, and once a
/// limit is tracked there, the runs under it for the passes that follow.
struct Probe {
  RestBound rest;
  std::optional<CapRuns> runs;
};

/// No plan meets the floor: the highest floor some plan meets, by bisection
/// (feasibility only grows as the floor drops), and that plan.
void placeMostThroughput(const PlacementProblem &problem, SearchTracker &search,
                         ExactStats &stats) {
  std::vector<size_t> tracked;
  bool anyDevice = false;
  for (const DeviceType &d : problem.spec().deviceTypes)
    anyDevice |= d.maxCount > 0;
  if (!anyDevice) {
    search.evaluate(Placement(problem.numLayers(), 0));
    return;
  }
  // With a floor of 0 every run needs one device, and a one-type plan fits.
  double low = 0, high = problem.limit();
  std::optional<DPPlan> lowPlan =
      feasiblePlan(problem, RunTable(problem, 0), tracked, stats);
  while (high - low > 1e-10 * high) {
    double mid = 0.5 * (low + high);
    RunTable runs(problem, mid);
    if (std::optional<DPPlan> plan =
            feasiblePlan(problem, runs, tracked, stats)) {
      low = mid;
      lowPlan = std::move(plan);
    } else {
      high = mid;
    }
  }
  search.evaluate(lowPlan->placement);
  stats.tracked = static_cast<int64_t>(tracked.size());
}

} // namespace

SearchResult heterps::planner::placeExact(const PlacementProblem &problem,
                                          ExactStats *statsOut) {
  SearchTracker search(problem);
  ExactStats stats;
  auto done = [&] {
    if (statsOut)
      *statsOut = stats;
    return search.finish();
  };
  if (problem.numLayers() == 0 || problem.numTypes() == 0)
    return done();
  RunTable runs(problem, problem.limit());
  stats.runs = static_cast<int64_t>(runs.size());

  // The caps worth trying lie between E_min (below it no plan fits) and the
  // largest run time at the floor's replica counts (above it every cap
  // allows the same plans).
  double smallestE = smallestMaxEt(problem, runs);
  double largestE = std::max(runs.largestTime(), smallestE);

  const Job &job = problem.spec().job;
  double perPriceTime = static_cast<double>(job.epochs) *
                        static_cast<double>(job.samplesPerEpoch) /
                        static_cast<double>(job.batchSize);
  double bestCost = kInf;
  const std::vector<double> prices = devicePrices(problem);

  // The cost is (L·M/B)·P·E and P*(c), the least P of plans whose stages
  // all have ET <= c (each run with the fewest replicas that keep it under
  // c), never rises with c; so the optimum is min over caps c of c·P*(c).
  // The caps are searched best-first by ranges [lo, hi] with a lower bound
  // on P* over the range (P* at or above hi), so no cap inside costs less
  // than (L·M/B)·lo·lowerPrice. A range is settled by probing one cap m in
  // it with the DP: a plan with E = e proves P* constant on [e, m], leaving
  // [lo, e) and (m, hi]. The DP drops partial plans that cannot finish with
  // a P low enough to beat the best cost (or below P* just under lo, which
  // is an upper bound); a fresh probe halves its range in value (geometric
  // mean), and answers for the caps [s, m] near it: finding none rules them
  // out and bounds P* below s. A range narrower than kNarrow (relative) is
  // settled by one probe at hi: its plan costs within kNarrow of every cap
  // in it. A DP pass that breaks a max_count limit only raises the range's
  // lower bound: the probe goes back into the queue tracking that limit,
  // and waits its turn, so the costly passes run only where the bounds
  // cannot rule them out. After a probe that found nothing cheap enough, or
  // only a plan breaking a limit, the range above it is probed at its top
  // next: bisecting it would creep up on hi one costly probe at a time,
  // while P*(hi) bounds the whole range and usually rules it out at once.
  // The untracked probe's answer is the backward DP's (leastRestPrice); a
  // tracked one first tries the Lagrangian bound (relaxLimits).
  struct Range {
    double bound;
    double lo, hi;
    double lowerPrice; // <= P* over [lo, hi]
    double priceBelow; // P* just below lo, when solved; else infinity
    double probe;      // cap of a probe under way, else -1
    std::vector<size_t> tracked;
    std::shared_ptr<Probe> at; // of the probe's cap, once known
    bool operator<(const Range &o) const { return bound > o.bound; }
  };
  std::priority_queue<Range> open;
  std::map<double, double> leastPrices; // P* with the limits relaxed, by cap
  auto push = [&](double lo, double hi, double lowerPrice, double priceBelow,
                  double probe = -1, std::vector<size_t> tracked = {},
                  std::shared_ptr<Probe> at = {}) {
    if (!(lo <= hi) || std::isinf(lo) || lowerPrice >= priceBelow)
      return;
    open.push({perPriceTime * lo * lowerPrice, lo, hi, lowerPrice, priceBelow,
               probe, std::move(tracked), std::move(at)});
  };
  auto below = [](double x) { return std::nextafter(x, 0.0); };
  auto above = [](double x) { return std::nextafter(x, kInf); };
  if (smallestE < kInf) // else no chain of runs covers the model
    push(smallestE, largestE, 0, kInf, largestE);
  while (!open.empty()) {
    Range r = open.top();
    open.pop();
    if (r.bound >= bestCost * (1 - 1e-12))
      break; // best-first: every other range's bound is higher still
    bool narrow = r.hi <= r.lo * (1 + kNarrow);
    double m = r.probe;
    if (m < 0)
      m = r.lo == 0 ? 0 : narrow ? r.hi : std::sqrt(r.lo * r.hi);
    // The probe settles [s, m]: a plan there can only win with P below
    // best / ((L·M/B)·s).
    double s = narrow ? r.lo : std::max(r.lo, m * kProbeSpan);
    double ub =
        std::min(r.priceBelow, s > 0 ? bestCost / (perPriceTime * s) : kInf);
    ub *= 1 + 1e-12;
    if (!r.at)
      ++stats.capSteps;
    std::optional<DPPlan> plan;
    // A bound computed for a higher cap is weaker but still valid: if it
    // rules this cap out, the exact one need not be computed.
    auto higher = leastPrices.lower_bound(m);
    if (!r.at && higher != leastPrices.end() && higher->second > ub) {
      ++stats.dpPasses;
    } else {
      if (!r.at) {
        auto probe = std::make_shared<Probe>();
        if (stats.tracked > 0) {
          // Once a limit has bound, most probes come back to track one:
          // gather the runs under the cap for all their passes now.
          probe->runs.emplace(runs, m);
          probe->rest = leastRestPrice(problem, visitor(*probe->runs), prices);
          probe->rest.nextCap = probe->runs->nextCap();
        } else {
          double nextCap = kInf;
          probe->rest =
              leastRestPrice(problem, visitor(runs, m, nextCap), prices);
          probe->rest.nextCap = nextCap;
        }
        leastPrices[m] = probe->rest.whole;
        r.at = std::move(probe);
      }
      ++stats.dpPasses;
      if (r.tracked.empty()) {
        // The backward DP has the answer already.
        if (r.at->rest.whole <= ub)
          plan = r.at->rest.plan;
      } else {
        // Pricing the tracked limits in can prove P*(m) > ub without the
        // label DP, and otherwise prunes its labels harder.
        if (!r.at->runs)
          r.at->runs.emplace(runs, m);
        std::optional<LimitRelaxation> relaxation;
        if (ub < kInf)
          relaxation = relaxLimits(problem, *r.at->runs, r.tracked, r.at->rest,
                                   ub, kRelaxationSteps, stats);
        if (!relaxation || relaxation->bound <= ub) {
          PriceDP dp(problem, *r.at->runs, r.tracked);
          plan = dp.solve(r.at->rest.afterType, ub,
                          relaxation ? &*relaxation : nullptr);
          stats.labels += dp.labelsCreated();
        }
      }
    }
    stats.tracked =
        std::max(stats.tracked, static_cast<int64_t>(r.tracked.size()));
    // Caps from m up to the next one that changes the DP's choices have
    // the answer of m.
    double aboveM = r.at ? r.at->rest.nextCap : above(m);
    if (!plan) {
      // P*(m) > ub: no cap in [s, m] can win, and P* > ub below.
      if (s > r.lo)
        push(r.lo, below(s), std::max(r.lowerPrice, ub), r.priceBelow);
      // Plans cheap enough are scarce here: probe the rest from its top,
      // which settles it at once when they are absent there too.
      push(aboveM, r.hi, r.lowerPrice, kInf, r.hi);
      continue;
    }
    std::vector<size_t> broken = r.tracked;
    for (size_t t = 0; t < problem.numTypes(); ++t)
      if (plan->devices[t] > problem.spec().deviceTypes[t].maxCount)
        broken.push_back(t);
    if (broken.size() > r.tracked.size()) {
      // A relaxation's optimum: a lower bound on P*(m), hence on [lo, m].
      double lower = std::max(r.lowerPrice, plan->price);
      push(aboveM, r.hi, r.lowerPrice, kInf, r.hi);
      if (s > r.lo)
        push(r.lo, below(s), lower, r.priceBelow);
      push(s, m, lower, r.priceBelow, m, std::move(broken), r.at);
      continue;
    }
    stats.feasible = true;
    const PlacementEval &eval = search.evaluate(plan->placement);
    if (eval.feasible)
      bestCost = std::min(bestCost, eval.cost);
    if (double e = std::min(plan->maxEt, m); !narrow && e > r.lo)
      push(r.lo, below(e), plan->price, r.priceBelow);
    push(aboveM, r.hi, r.lowerPrice, plan->price);
  }
  if (!stats.feasible)
    placeMostThroughput(problem, search, stats);
  return done();
}

CheapestUnderCap::CheapestUnderCap(const PlacementProblem &problem)
    : problem_(problem),
      runs_(std::make_unique<RunTable>(problem, problem.limit())) {}

CheapestUnderCap::~CheapestUnderCap() = default;

std::optional<Placement> CheapestUnderCap::solve(double cap, double maxPrice) {
  ExactStats stats;
  std::optional<DPPlan> plan =
      leastPricePlan(problem_, *runs_, cap, maxPrice, tracked_, stats);
  if (!plan)
    return std::nullopt;
  return std::move(plan->placement);
}
