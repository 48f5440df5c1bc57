//===- Tapp.h - TAPP placement search on measured steps ---------*- C++ -*-===//
//
// placeTapp searches the placement space of Placement.h with the method of
// the TAPP paper: a partition network groups the layers, an allocation
// network with self-attention gives each group a device type
// (TappNetworks.h has the networks), and both are trained jointly by policy
// gradient on the step times a StepOracle reports for the sampled plans.
//
// A sampled plan is provisioned by PlacementProblem::evaluate (stages are
// the runs of one type; replicas as the problem gives them), then the
// oracle times one training batch of it. With that step time the plan is
// scored on the problem's objective (measuredEval): throughput B / step,
// cost L * M / throughput * sum_t p_t * k_t, feasible when the throughput
// meets the floor and the replicas fit max_count.
//
// Reward. As the RL scheduler's (RLPlacer.h): a feasible plan of cost c gets
// -log(c / c_ref), clamped at -9, with c_ref the cost of the cheapest
// feasible one-type plan (or, without one, of the first feasible plan
// measured); an infeasible one -(10 + 10 * shortfall + 10 * excess), where
// excess is the share of its devices beyond the max_count limits (so that
// among plans with too many stages, fewer rank higher).
//
// Training. First, unless disabled, the T one-type plans are measured (the
// result is never worse than the best of them). Then REINFORCE on batches of
// `batchSize` plans sampled from the networks: each plan's advantage is its
// reward minus a moving-average baseline of the rewards before its batch,
// in units of the moving RMS of their deviations from it. Exploration: an
// entropy bonus over both networks; a novelty penalty, noveltyPenalty *
// log(1 + times the plan was sampled before), on the reward a plan teaches
// (repeats cost nothing to measure, so a policy that keeps resampling what
// it knows must be moved on). Self-imitation: the `elites` best plans
// measured get an extra update where they beat the baseline, so that good
// rare samples are not forgotten. The gradient, of both networks jointly,
// is clipped to global norm 5 and applied with Adam (rl::Adam).
//
// Budgets. Measuring is what costs: the search remembers every plan it
// measured, so the oracle sees each distinct plan once. A plan whose stages
// need more devices of a type than its max_count cannot run: it is not
// measured (nor counted), only given the infeasible reward. It stops when
// `maxMeasuredPlans` plans are measured, after `maxEpisodes` sampled plans,
// or at the first plan sampled past `timeBudgetSeconds`, whichever comes
// first (a measurement under way is not cut short). With a time budget that
// does not end it, the same seed gives the same search.
//
// On small problems with the cost model as the oracle (TappTest.cpp checks
// it): the 8-layer, 3-type problem of EightLayerProblem.h (6561 plans) is
// solved exactly within 400 measured plans; on random 6-layer instances
// (729 plans, on some only a handful feasible) 150 measured plans give the
// optimum on most, not on all.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_PLANNER_TAPP_H
#define HETERPS_PLANNER_TAPP_H

#include "heterps/Planner/Placement.h"

#include "llvm/Support/Error.h"

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace heterps::planner {

//===----------------------------------------------------------------------===//
// Step oracles
//===----------------------------------------------------------------------===//

/// Times one training batch of a provisioned plan.
class StepOracle {
public:
  virtual ~StepOracle();
  /// Seconds of one training batch of B samples (forward, backward and
  /// update; the pipeline's period) for `stages`, each on its device type
  /// with its replicas.
  virtual llvm::Expected<double>
  stepSeconds(const std::vector<Stage> &stages) = 0;
  virtual std::string name() const = 0;
};

/// The cost model's step, B / evaluatePlan(...).throughput (0 for a plan
/// that takes no time). The layers' costs may be analytic or profiled, so
/// this runs the search offline on either.
class CostModelOracle : public StepOracle {
public:
  /// `spec` and `layers` must outlive the oracle.
  CostModelOracle(const ClusterSpec &spec, const std::vector<Layer> &layers);
  explicit CostModelOracle(const PlacementProblem &problem)
      : CostModelOracle(problem.spec(), problem.layers()) {}

  /// Fails on a stage with an unknown device type or layer.
  llvm::Expected<double> stepSeconds(const std::vector<Stage> &stages) override;
  std::string name() const override { return "cost-model"; }

private:
  const ClusterSpec &spec_;
  const std::vector<Layer> &layers_;
};

/// Remembers another oracle's answers, keyed by each stage's type, layers
/// and replicas; errors are passed on and not remembered (the next call
/// asks again). Not thread-safe.
class CachedOracle : public StepOracle {
public:
  /// `inner` must outlive the cache.
  explicit CachedOracle(StepOracle &inner) : inner_(inner) {}

  llvm::Expected<double> stepSeconds(const std::vector<Stage> &stages) override;
  std::string name() const override { return "cached " + inner_.name(); }

  /// Calls answered from the cache, and those passed to the inner oracle.
  int64_t hits() const { return hits_; }
  int64_t misses() const { return misses_; }

private:
  using Key = std::vector<std::tuple<size_t, std::vector<size_t>, int64_t>>;
  StepOracle &inner_;
  std::map<Key, double> steps_;
  int64_t hits_ = 0, misses_ = 0;
};

/// `modelled` (PlacementProblem::evaluate's result for a plan) re-scored
/// with a measured step time: throughput B / stepSeconds; cost L * M /
/// throughput * sum over its stages of p_t * k_t (as evaluatePlan); feasible
/// when the throughput meets the problem's floor and the stages' replicas
/// fit the max_count limits; otherwise cost infinity and shortfall
/// (floor - throughput) / floor, or 1 when the limits are exceeded.
PlacementEval measuredEval(const PlacementProblem &problem,
                           const PlacementEval &modelled, double stepSeconds);

//===----------------------------------------------------------------------===//
// The search
//===----------------------------------------------------------------------===//

struct TappOptions {
  /// G, the groups the partition network may use; capped by the number of
  /// layers.
  int groups = 6;
  /// Hidden units of the partition network, and the attention size.
  int hiddenSize = 16;
  /// Adam step size.
  double learningRate = 0.01;
  /// Weight of the entropy of both networks (summed over layers and groups)
  /// in the objective: keeps the search exploring.
  double entropyBonus = 0.1;
  /// Decay of the moving-average baseline: b <- decay * b + (1 - decay) * r.
  double baselineDecay = 0.9;
  /// Plans sampled per update.
  int batchSize = 8;
  /// Best plans kept for self-imitation (0: none).
  int elites = 8;
  /// Weight of the novelty penalty on resampled plans (0: none).
  double noveltyPenalty = 0.2;
  /// Weight of the partition network's locality prior (TappNetworks.h; 0:
  /// none).
  double localityPrior = 1;
  /// Whether the T one-type plans are measured first.
  bool measureOneTypePlans = true;
  /// Distinct plans the oracle may measure (the costly budget).
  int64_t maxMeasuredPlans = 200;
  /// Plans sampled, measured or remembered (bounds the search once the
  /// policy keeps sampling plans it has measured).
  int64_t maxEpisodes = 20000;
  /// Wall-clock limit in seconds, checked before each plan is sampled.
  double timeBudgetSeconds = 60;
  /// Seed of the weights and of the sampling.
  uint64_t seed = 1;
};

/// A plan the oracle measured.
struct MeasuredPlan {
  Placement placement;
  /// Its stages with the replicas it was measured with.
  std::vector<Stage> stages;
  /// Step seconds by the cost model (B / evaluatePlan's throughput) and by
  /// the oracle.
  double predictedStep = 0, measuredStep = 0;
  /// Scored with the measured step (measuredEval).
  PlacementEval eval;
};

/// A plan whose measurement failed: the search skips it, scored as missing
/// the floor entirely, and goes on.
struct FailedPlan {
  Placement placement;
  std::vector<Stage> stages;
  /// "<oracle>: measuring <stages>: <the oracle's error>".
  std::string message;
};

struct TappResult {
  /// The best measured plan (PlacementEval::betterThan on measured
  /// evaluations). Its eval is the *measured* evaluation, not the cost
  /// model's; evaluations counts the plans measured (each also evaluated
  /// once by PlacementProblem::evaluate, for its stages and replicas).
  SearchResult best;
  /// Every plan measured, in the order measured.
  std::vector<MeasuredPlan> measured;
  /// Every plan whose measurement failed (they count against
  /// maxMeasuredPlans too).
  std::vector<FailedPlan> failed;
  /// Plans sampled from the networks, measured or remembered (the
  /// one-type plans measured first are not among them).
  int64_t episodes = 0;
};

/// The TAPP search; see the file comment. Fails on invalid options, on a
/// problem without device types, and when no plan could be measured (with
/// the first failure's message). A plan the oracle fails on is skipped.
llvm::Expected<TappResult> placeTapp(const PlacementProblem &problem,
                                     StepOracle &oracle,
                                     const TappOptions &options = {});

} // namespace heterps::planner

#endif // HETERPS_PLANNER_TAPP_H
