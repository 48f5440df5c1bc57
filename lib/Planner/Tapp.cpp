//===- Tapp.cpp - step oracles and the TAPP search ------------------------===//
//
// See Tapp.h for the method and TappNetworks.h for the networks.
//
//===----------------------------------------------------------------------===//

#include "heterps/Planner/Tapp.h"
#include "heterps/Planner/TappNetworks.h"

#include "Elites.h"
#include "PlanReward.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <sstream>

using namespace heterps::planner;
using Eigen::MatrixXd;

static llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

//===----------------------------------------------------------------------===//
// Oracles
//===----------------------------------------------------------------------===//

StepOracle::~StepOracle() = default;

CostModelOracle::CostModelOracle(const ClusterSpec &spec,
                                 const std::vector<Layer> &layers)
    : spec_(spec), layers_(layers) {}

llvm::Expected<double>
CostModelOracle::stepSeconds(const std::vector<Stage> &stages) {
  for (size_t s = 0; s < stages.size(); ++s) {
    if (stages[s].deviceType >= spec_.deviceTypes.size())
      return error(llvm::formatv("stage {0}: no device type {1}", s,
                                 stages[s].deviceType));
    for (size_t layer : stages[s].layers)
      if (layer >= layers_.size() ||
          layers_[layer].costs.size() <= stages[s].deviceType)
        return error(
            llvm::formatv("stage {0}: layer {1} has no cost on device type {2}",
                          s, layer, stages[s].deviceType));
    if (stages[s].replicas < 1)
      return error(
          llvm::formatv("stage {0}: {1} replicas", s, stages[s].replicas));
  }
  double throughput = evaluatePlan(spec_, layers_, stages).throughput;
  return std::isinf(throughput)
             ? 0.0
             : static_cast<double>(spec_.job.batchSize) / throughput;
}

llvm::Expected<double>
CachedOracle::stepSeconds(const std::vector<Stage> &stages) {
  Key key;
  for (const Stage &s : stages)
    key.emplace_back(s.deviceType, s.layers, s.replicas);
  if (auto it = steps_.find(key); it != steps_.end()) {
    ++hits_;
    return it->second;
  }
  ++misses_;
  llvm::Expected<double> step = inner_.stepSeconds(stages);
  if (step)
    steps_.emplace(std::move(key), *step);
  return step;
}

/// The devices of each type that `stages` use beyond its max_count.
static std::vector<int64_t>
devicesOverLimits(const ClusterSpec &spec, const std::vector<Stage> &stages) {
  std::vector<int64_t> over(spec.deviceTypes.size(), 0);
  for (const Stage &s : stages)
    over[s.deviceType] += s.replicas;
  for (size_t t = 0; t < over.size(); ++t)
    over[t] = std::max<int64_t>(0, over[t] - spec.deviceTypes[t].maxCount);
  return over;
}

/// Whether `stages` use more devices of some type than its max_count.
static bool breaksLimits(const ClusterSpec &spec,
                         const std::vector<Stage> &stages) {
  std::vector<int64_t> over = devicesOverLimits(spec, stages);
  return std::any_of(over.begin(), over.end(), [](int64_t n) { return n > 0; });
}

PlacementEval heterps::planner::measuredEval(const PlacementProblem &problem,
                                             const PlacementEval &modelled,
                                             double stepSeconds) {
  const ClusterSpec &spec = problem.spec();
  PlacementEval eval;
  eval.stages = modelled.stages;
  eval.throughput = stepSeconds > 0
                        ? static_cast<double>(spec.job.batchSize) / stepSeconds
                        : std::numeric_limits<double>::infinity();
  double pricePerSecond = 0;
  for (const Stage &s : eval.stages)
    pricePerSecond += spec.deviceTypes[s.deviceType].pricePerSecond() *
                      static_cast<double>(s.replicas);
  bool withinLimits = !breaksLimits(spec, eval.stages);
  double limit = problem.limit();
  eval.feasible = withinLimits && eval.throughput >= limit;
  if (eval.feasible) {
    double samples = static_cast<double>(spec.job.epochs) *
                     static_cast<double>(spec.job.samplesPerEpoch);
    double totalTime =
        std::isinf(eval.throughput) ? 0.0 : samples / eval.throughput;
    eval.cost = totalTime * pricePerSecond;
  } else {
    eval.shortfall = !withinLimits || limit <= 0
                         ? 1.0
                         : std::min(1.0, (limit - eval.throughput) / limit);
  }
  return eval;
}

//===----------------------------------------------------------------------===//
// The search
//===----------------------------------------------------------------------===//

namespace {

/// The share of the devices of `stages` beyond the max_count limits: plans
/// with too many stages all have shortfall 1, and this ranks those with
/// fewer devices to give back higher.
double excessShare(const ClusterSpec &spec, const std::vector<Stage> &stages) {
  int64_t total = 0, over = 0;
  for (const Stage &s : stages)
    total += s.replicas;
  for (int64_t n : devicesOverLimits(spec, stages))
    over += n;
  return total > 0 ? static_cast<double>(over) / static_cast<double>(total)
                   : 0.0;
}

/// "gpu x2 (layers 0-3), cpu x1 (layers 4-7)", for error messages.
std::string describe(const ClusterSpec &spec,
                     const std::vector<Stage> &stages) {
  std::string text;
  for (const Stage &s : stages) {
    if (!text.empty())
      text += ", ";
    text += llvm::formatv("{0} x{1} (layers {2}-{3})",
                          spec.deviceTypes[s.deviceType].name, s.replicas,
                          s.layers.front(), s.layers.back());
  }
  return text;
}

/// The training loop of placeTapp.
class Searcher {
public:
  Searcher(const PlacementProblem &problem, StepOracle &oracle,
           const TappOptions &options);
  llvm::Expected<TappResult> run();

private:
  /// Whether a budget is spent.
  bool done() const;
  double elapsed() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                         start_)
        .count();
  }
  /// The measurement of `plan`, from the oracle if it is new; `isNew` tells
  /// which. A plan the oracle fails on gets the worst score.
  const MeasuredPlan *measure(const Placement &plan, bool &isNew);
  /// Measures the T one-type plans and makes them elites.
  void measureOneTypePlans();
  /// One REINFORCE step on the first `size` plans of the batch and on the
  /// elites that beat the baseline.
  void update(int size);

  const PlacementProblem &problem_;
  StepOracle &oracle_;
  const TappOptions &options_;
  std::chrono::steady_clock::time_point start_;
  std::mt19937_64 rng_;
  MatrixXd features_;
  tapp::Params params_, grad_, pending_;
  rl::Adam adam_;
  PlanReward reward_;
  /// The reward of a measured plan, ranking those beyond the limits.
  double reward(const PlacementEval &eval) {
    return reward_(
        eval, eval.feasible ? 0 : excessShare(problem_.spec(), eval.stages));
  }
  Elites<tapp::Sample> elites_;
  /// Moving average of the rewards and of their squared deviations from it.
  double baseline_ = 0, spread_ = 1;
  bool hasBaseline_ = false;
  TappResult result_;
  std::map<Placement, size_t> measuredIndex_;
  /// Plans whose stages need more devices than their types have, and plans
  /// the oracle failed on, scored without a measurement.
  std::map<Placement, MeasuredPlan> undeployable_, failures_;
  /// How often each plan was sampled (for the novelty penalty).
  std::map<Placement, int64_t> samplings_;
  // Per batch item, and the elites' forward pass.
  std::vector<tapp::Sample> samples_;
  std::vector<tapp::Pass> passes_;
  std::vector<double> rewards_;
  tapp::Pass elitePass_;
};

Searcher::Searcher(const PlacementProblem &problem, StepOracle &oracle,
                   const TappOptions &options)
    : problem_(problem), oracle_(oracle), options_(options),
      start_(std::chrono::steady_clock::now()), rng_(options.seed),
      features_(tapp::layerFeatures(problem)),
      params_(
          static_cast<size_t>(features_.rows()),
          static_cast<size_t>(options.hiddenSize),
          std::min(static_cast<size_t>(options.groups), problem.numLayers()),
          problem.numTypes(), options.localityPrior),
      grad_(params_), pending_(params_),
      adam_(params_.flat().size(), options.learningRate),
      elites_(static_cast<size_t>(std::max(0, options.elites))),
      samples_(static_cast<size_t>(options.batchSize)),
      passes_(static_cast<size_t>(options.batchSize)),
      rewards_(static_cast<size_t>(options.batchSize)) {
  params_.initRandom(rng_);
}

bool Searcher::done() const {
  return static_cast<int64_t>(result_.measured.size() +
                              result_.failed.size()) >=
             options_.maxMeasuredPlans ||
         result_.episodes >= options_.maxEpisodes ||
         elapsed() >= options_.timeBudgetSeconds;
}

const MeasuredPlan *Searcher::measure(const Placement &plan, bool &isNew) {
  isNew = false;
  if (auto it = measuredIndex_.find(plan); it != measuredIndex_.end())
    return &result_.measured[it->second];
  if (auto it = failures_.find(plan); it != failures_.end())
    return &it->second;
  PlacementEval modelled = problem_.evaluate(plan);
  if (breaksLimits(problem_.spec(), modelled.stages)) {
    // More devices of a type than it has: the plan cannot run, so it is
    // not measured (nor counted against the budget), only penalised.
    auto [it, inserted] = undeployable_.try_emplace(plan);
    if (inserted) {
      it->second.placement = plan;
      it->second.stages = modelled.stages;
      it->second.eval = measuredEval(problem_, modelled, 0);
    }
    isNew = inserted;
    return &it->second;
  }
  llvm::Expected<double> step = oracle_.stepSeconds(modelled.stages);
  std::string failure;
  if (!step) {
    failure = llvm::toString(step.takeError());
  } else if (!std::isfinite(*step) || *step < 0) {
    std::ostringstream seconds; // -1, inf, nan
    seconds << "a step of " << *step << " seconds";
    failure = seconds.str();
  }
  if (!failure.empty()) {
    // Skipped, scored as missing the floor entirely: one plan the runtime
    // cannot run (out of memory, say) says nothing about the others.
    MeasuredPlan &skipped = failures_[plan];
    skipped.placement = plan;
    skipped.stages = modelled.stages;
    skipped.eval.stages = modelled.stages;
    skipped.eval.shortfall = 1;
    result_.failed.push_back(
        {plan, modelled.stages,
         llvm::formatv("{0}: measuring {1}: {2}", oracle_.name(),
                       describe(problem_.spec(), modelled.stages), failure)});
    isNew = true;
    return &skipped;
  }
  MeasuredPlan m;
  m.placement = plan;
  m.stages = modelled.stages;
  double predicted =
      evaluatePlan(problem_.spec(), problem_.layers(), m.stages).throughput;
  m.predictedStep =
      std::isinf(predicted)
          ? 0.0
          : static_cast<double>(problem_.spec().job.batchSize) / predicted;
  m.measuredStep = *step;
  m.eval = measuredEval(problem_, modelled, *step);
  size_t index = result_.measured.size();
  if (index == 0 || m.eval.betterThan(result_.best.eval)) {
    result_.best.placement = plan;
    result_.best.eval = m.eval;
  }
  result_.measured.push_back(std::move(m));
  measuredIndex_.emplace(plan, index);
  isNew = true;
  return &result_.measured.back();
}

void Searcher::measureOneTypePlans() {
  // As the networks would choose them: their most likely grouping, every
  // group on the type.
  tapp::Pass pass;
  tapp::Sample grouping = tapp::mostLikely(params_, features_, pass);
  std::vector<tapp::Sample> plans;
  std::vector<PlacementEval> evals;
  for (size_t t = 0; t < problem_.numTypes() && !done(); ++t) {
    tapp::Sample s = grouping;
    std::fill(s.typeOfGroup.begin(), s.typeOfGroup.end(), t);
    bool isNew;
    evals.push_back(measure(s.placement(), isNew)->eval);
    plans.push_back(std::move(s));
  }
  // c_ref: the cheapest feasible one (as the RL scheduler's), the best
  // plan so far.
  reward_.noteReference(result_.best.eval);
  for (size_t t = 0; t < plans.size(); ++t)
    elites_.offer(plans[t], reward(evals[t]));
}

void Searcher::update(int size) {
  // Baseline: the moving average of the rewards before this batch (the
  // first batch's own mean). Advantages are in units of the moving RMS of
  // the deviations from it, so that the entropy bonus and the learning
  // rate mean the same whatever the spread of the rewards.
  if (!hasBaseline_) {
    double sum = 0, squares = 0;
    for (int b = 0; b < size; ++b)
      sum += rewards_[b];
    baseline_ = sum / size;
    for (int b = 0; b < size; ++b)
      squares += (rewards_[b] - baseline_) * (rewards_[b] - baseline_);
    spread_ = std::sqrt(squares / size);
    hasBaseline_ = true;
  }
  double scale = 1 / std::max(spread_, 1e-3);
  pending_.flat().setZero();
  for (int b = 0; b < size; ++b) {
    double advantage = (rewards_[b] - baseline_) * scale;
    tapp::gradient(params_, features_, passes_[b], samples_[b],
                   advantage / size, options_.entropyBonus / size, grad_);
    pending_.flat() += grad_.flat();
  }
  // Self-imitation: the best plans measured, where they beat the baseline
  // (their advantage capped), so that good rare samples are not forgotten.
  for (const auto &[reward, s] : elites_.plans()) {
    double advantage = (reward - baseline_) * scale;
    if (advantage <= 0)
      continue;
    tapp::forward(params_, features_, s, elitePass_);
    tapp::gradient(params_, features_, elitePass_, s,
                   std::min(advantage, 3.0) / size, 0, grad_);
    pending_.flat() += grad_.flat();
  }
  rl::clipGlobalNorm(pending_.flat(), rl::Policy::maxGradNorm);
  adam_.ascend(params_.flat(), pending_.flat());

  double decay = options_.baselineDecay;
  for (int b = 0; b < size; ++b) {
    double deviation = rewards_[b] - baseline_;
    spread_ = std::sqrt(decay * spread_ * spread_ +
                        (1 - decay) * deviation * deviation);
    baseline_ = decay * baseline_ + (1 - decay) * rewards_[b];
  }
}

llvm::Expected<TappResult> Searcher::run() {
  if (options_.measureOneTypePlans)
    measureOneTypePlans();
  while (!done()) {
    int size = 0;
    for (; size < options_.batchSize && !done(); ++size) {
      tapp::Sample &s = samples_[size];
      s = tapp::sample(params_, features_, rng_, passes_[size]);
      ++result_.episodes;
      Placement plan = s.placement();
      bool isNew;
      double r = reward(measure(plan, isNew)->eval);
      if (isNew)
        elites_.offer(s, r);
      // Repeats cost nothing to measure but teach nothing new: the
      // novelty penalty moves a policy that keeps resampling what it knows.
      int64_t &seen = samplings_[plan];
      rewards_[size] =
          r - options_.noveltyPenalty * std::log1p(static_cast<double>(seen));
      ++seen;
    }
    if (size > 0)
      update(size);
  }
  if (result_.measured.empty() && !result_.failed.empty()) {
    std::string message = result_.failed.front().message;
    if (size_t more = result_.failed.size() - 1)
      message += llvm::formatv(" (and {0} more plan{1} failed)", more,
                               more == 1 ? "" : "s");
    return error(message);
  }
  result_.best.seconds = elapsed();
  result_.best.evaluations = static_cast<int64_t>(result_.measured.size());
  return std::move(result_);
}

} // namespace

llvm::Expected<TappResult>
heterps::planner::placeTapp(const PlacementProblem &problem, StepOracle &oracle,
                            const TappOptions &options) {
  if (options.groups < 1 || options.hiddenSize < 1 || options.batchSize < 1)
    return error(llvm::formatv("tapp: groups ({0}), hidden size ({1}) and "
                               "batch size ({2}) must be at least 1",
                               options.groups, options.hiddenSize,
                               options.batchSize));
  if (options.maxMeasuredPlans < 1)
    return error("tapp: the budget of measured plans must be at least 1");
  if (problem.numLayers() == 0 || problem.numTypes() == 0)
    return error(llvm::formatv("tapp: nothing to place ({0} layers, {1} "
                               "device types)",
                               problem.numLayers(), problem.numTypes()));
  return Searcher(problem, oracle, options).run();
}
