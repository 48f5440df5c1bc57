//===- RLPlacer.cpp - LSTM policy, REINFORCE, and the RL scheduler --------===//
//
// See RLPlacer.h for the method and RLPolicy.h for the notation.
//
//===----------------------------------------------------------------------===//

#include "heterps/Planner/RLPlacer.h"
#include "heterps/Planner/RLPolicy.h"

#include <algorithm>
#include <cmath>

using namespace heterps::planner;
using namespace heterps::planner::rl;
using Eigen::Index;
using Eigen::MatrixXd;
using Eigen::VectorXd;

//===----------------------------------------------------------------------===//
// Features
//===----------------------------------------------------------------------===//

int rl::kindIndex(const std::string &kind) {
  static const char *const kinds[FeatureLayout::numKinds] = {
      "conv",    "fc",         "matmul",  "embedding", "pool",    "norm",
      "eltwise", "activation", "softmax", "reduce",    "dropout", "shape"};
  for (size_t k = 0; k < FeatureLayout::numKinds; ++k)
    if (kind == kinds[k])
      return static_cast<int>(k);
  return -1;
}

static constexpr double pi = 3.14159265358979323846;

/// log1p(1000 x / max) / log1p(1000): [0, max] onto [0, 1], keeping three
/// decades below the maximum apart.
static double logScaled(double x, double max) {
  if (max <= 0 || x <= 0)
    return 0;
  return std::log1p(1000 * x / max) / std::log1p(1000.0);
}

MatrixXd rl::layerFeatures(const std::vector<Layer> &layers, size_t numTypes) {
  FeatureLayout layout{numTypes};
  Index n = static_cast<Index>(layers.size());
  MatrixXd x = MatrixXd::Zero(static_cast<Index>(layout.size()), n);

  double maxActivation = 0, maxParams = 0, maxOct = 0, maxOdt = 0;
  for (const Layer &l : layers) {
    maxActivation = std::max(
        maxActivation, std::log1p(static_cast<double>(l.activationBytes)));
    maxParams =
        std::max(maxParams, std::log1p(static_cast<double>(l.paramBytes)));
    for (const LayerCost &c : l.costs) {
      maxOct = std::max(maxOct, c.oct);
      maxOdt = std::max(maxOdt, c.odt);
    }
  }

  for (Index i = 0; i < n; ++i) {
    const Layer &l = layers[static_cast<size_t>(i)];
    auto col = x.col(i);
    double pos =
        n > 1 ? static_cast<double>(i) / static_cast<double>(n - 1) : 0;
    col(layout.position()) = pos;
    for (size_t k = 0; k < FeatureLayout::numFrequencies; ++k) {
      double angle = pi * static_cast<double>(1 << k) * pos;
      col(layout.position() + 1 + 2 * k) = std::sin(angle);
      col(layout.position() + 2 + 2 * k) = std::cos(angle);
    }
    if (int kind = kindIndex(l.kind); kind >= 0)
      col(layout.kind() + kind) = 1;
    if (maxActivation > 0)
      col(layout.bytes()) =
          std::log1p(static_cast<double>(l.activationBytes)) / maxActivation;
    if (maxParams > 0)
      col(layout.bytes() + 1) =
          std::log1p(static_cast<double>(l.paramBytes)) / maxParams;
    for (size_t t = 0; t < numTypes && t < l.costs.size(); ++t) {
      col(layout.computeTime() + t) = logScaled(l.costs[t].oct, maxOct);
      col(layout.commTime() + t) = logScaled(l.costs[t].odt, maxOdt);
    }
  }
  return x;
}

void rl::setPreviousActions(MatrixXd &inputs, const FeatureLayout &layout,
                            const Placement &actions) {
  Index slots = static_cast<Index>(layout.numTypes);
  inputs.middleRows(layout.previousAction(), slots).setZero();
  for (Index t = 1; t < inputs.cols(); ++t)
    inputs(layout.previousAction() + actions[t - 1], t) = 1;
}

//===----------------------------------------------------------------------===//
// Parameters
//===----------------------------------------------------------------------===//

LSTMParams::LSTMParams(size_t inputSize, size_t hiddenSize, size_t numActions)
    : inputSize_(static_cast<Index>(inputSize)),
      hiddenSize_(static_cast<Index>(hiddenSize)),
      numActions_(static_cast<Index>(numActions)) {
  Index h4 = 4 * hiddenSize_;
  Index sizes[5] = {h4 * inputSize_, h4 * hiddenSize_, h4,
                    numActions_ * hiddenSize_, numActions_};
  Index offset = 0;
  for (int k = 0; k < 5; ++k) {
    offsets_[k] = offset;
    offset += sizes[k];
  }
  flat_ = VectorXd::Zero(offset);
}

std::vector<LSTMParams::Block> LSTMParams::blocks() const {
  static const char *const names[5] = {"W", "U", "b", "V", "d"};
  std::vector<Block> result;
  for (int k = 0; k < 5; ++k) {
    Index end = k < 4 ? offsets_[k + 1] : flat_.size();
    result.push_back({names[k], offsets_[k], end - offsets_[k]});
  }
  return result;
}

void LSTMParams::initRandom(std::mt19937_64 &rng) {
  double scale = 1.0 / std::sqrt(static_cast<double>(hiddenSize_));
  std::uniform_real_distribution<double> uniform(-scale, scale);
  for (Index k = 0; k < flat_.size(); ++k)
    flat_[k] = uniform(rng);
  b().setZero();
  b().segment(hiddenSize_, hiddenSize_).setOnes(); // forget gate
  d().setZero();
}

//===----------------------------------------------------------------------===//
// Forward
//===----------------------------------------------------------------------===//

// Both non-linearities go through exp, which Eigen vectorises for doubles
// (its tanh for doubles is the scalar std::tanh, several times slower). For
// large |x|, exp overflows to infinity and the results saturate to 0 or +-1.

/// sigmoid(x) = 1 / (1 + exp(-x)).
template <typename Expr> static auto sigmoid(const Expr &x) {
  return (1.0 + (-x.array()).exp()).inverse();
}

/// tanh(x) = 2 sigmoid(2x) - 1.
template <typename Expr> static auto tanhOf(const Expr &x) {
  return 2.0 * (1.0 + (-2.0 * x.array()).exp()).inverse() - 1.0;
}

void rl::projectInputs(const LSTMParams &params, ForwardCache &cache) {
  Index n = cache.inputs.cols(), h = params.hiddenSize();
  cache.gates.noalias() = params.W() * cache.inputs;
  cache.gates.colwise() += params.b();
  cache.cells.resize(h, n + 1);
  cache.hidden.resize(h, n + 1);
  cache.cells.col(0).setZero();
  cache.hidden.col(0).setZero();
  cache.cellTanh.resize(h, n);
  cache.probs.resize(params.numActions(), n);
}

void rl::lstmStep(const LSTMParams &params, ForwardCache &cache, Index t) {
  Index h = params.hiddenSize();
  auto gates = cache.gates.col(t);
  gates.noalias() += params.U() * cache.hidden.col(t);        // h_{t-1}
  gates.segment(0, 2 * h) = sigmoid(gates.segment(0, 2 * h)); // i, f
  gates.segment(2 * h, h) = tanhOf(gates.segment(2 * h, h));  // g
  gates.segment(3 * h, h) = sigmoid(gates.segment(3 * h, h)); // o
  auto i = gates.segment(0, h).array(), f = gates.segment(h, h).array(),
       g = gates.segment(2 * h, h).array(), o = gates.segment(3 * h, h).array();
  cache.cells.col(t + 1) = f * cache.cells.col(t).array() + i * g;
  cache.cellTanh.col(t) = tanhOf(cache.cells.col(t + 1));
  cache.hidden.col(t + 1) = o * cache.cellTanh.col(t).array();

  auto probs = cache.probs.col(t);
  probs.noalias() = params.V() * cache.hidden.col(t + 1);
  probs += params.d();
  probs = (probs.array() - probs.maxCoeff()).exp();
  probs /= probs.sum();
}

void rl::forward(const LSTMParams &params, const MatrixXd &inputs,
                 ForwardCache &cache) {
  cache.inputs = inputs;
  projectInputs(params, cache);
  for (Index t = 0; t < inputs.cols(); ++t)
    lstmStep(params, cache, t);
}

MatrixXd rl::stepProbabilities(const LSTMParams &params,
                               const MatrixXd &inputs) {
  ForwardCache cache;
  forward(params, inputs, cache);
  return cache.probs;
}

/// sum_t log pi_t(a_t) from a forward pass.
static double sumLogProb(const ForwardCache &cache, const Placement &actions) {
  double sum = 0;
  for (Index t = 0; t < cache.probs.cols(); ++t)
    sum += std::log(cache.probs(static_cast<Index>(actions[t]), t));
  return sum;
}

double rl::logProbability(const LSTMParams &params, const MatrixXd &inputs,
                          const Placement &actions) {
  ForwardCache cache;
  forward(params, inputs, cache);
  return sumLogProb(cache, actions);
}

/// H(p) = -sum_k p_k log p_k (0 log 0 = 0).
template <typename Column> static double entropyOf(const Column &p) {
  double h = 0;
  for (Index k = 0; k < p.size(); ++k)
    if (p[k] > 0)
      h -= p[k] * std::log(p[k]);
  return h;
}

double rl::entropy(const ForwardCache &cache) {
  double sum = 0;
  for (Index t = 0; t < cache.probs.cols(); ++t)
    sum += entropyOf(cache.probs.col(t));
  return sum;
}

//===----------------------------------------------------------------------===//
// Backward
//===----------------------------------------------------------------------===//

void rl::objectiveLogitGradient(ForwardCache &cache, const Placement &actions,
                                const VectorXd &weights, double entropyBonus) {
  Index n = cache.probs.cols();
  cache.dLogits.resize(cache.probs.rows(), n);
  for (Index t = 0; t < n; ++t) {
    auto p = cache.probs.col(t);
    auto dz = cache.dLogits.col(t);
    // d log p_a / dz = onehot(a) - p.
    dz = -weights[t] * p;
    dz(static_cast<Index>(actions[t])) += weights[t];
    if (entropyBonus != 0) {
      // dH/dz_k = -p_k (log p_k + H); p_k log p_k -> 0 as p_k -> 0.
      double h = entropyOf(p);
      for (Index k = 0; k < p.size(); ++k)
        if (p[k] > 0)
          dz[k] -= entropyBonus * p[k] * (std::log(p[k]) + h);
    }
  }
}

void rl::backward(const LSTMParams &params, ForwardCache &cache,
                  LSTMParams &grad) {
  Index n = cache.probs.cols(), h = params.hiddenSize();
  if (grad.flat().size() != params.flat().size())
    grad = LSTMParams(params.inputSize(), params.hiddenSize(),
                      params.numActions());
  // Output layer: z_t = V h_t + d.
  auto hiddenOut = cache.hidden.rightCols(n); // h_1 .. h_N
  grad.V().noalias() = cache.dLogits * hiddenOut.transpose();
  grad.d() = cache.dLogits.rowwise().sum();
  cache.dHidden.noalias() = params.V().transpose() * cache.dLogits;

  // Through time, last step first. dh and dc carry dJ/dh_t and dJ/dc_t from
  // step t + 1 back to step t.
  cache.dGates.resize(4 * h, n);
  VectorXd dh = VectorXd::Zero(h), dc = VectorXd::Zero(h);
  for (Index t = n - 1; t >= 0; --t) {
    auto gates = cache.gates.col(t);
    auto i = gates.segment(0, h).array(), f = gates.segment(h, h).array(),
         g = gates.segment(2 * h, h).array(),
         o = gates.segment(3 * h, h).array();
    auto dGates = cache.dGates.col(t);
    dh += cache.dHidden.col(t);
    auto tanhC = cache.cellTanh.col(t).array();
    // h_t = o * tanh(c_t).
    dGates.segment(3 * h, h) = dh.array() * tanhC * o * (1 - o);
    dc.array() += dh.array() * o * (1 - tanhC.square());
    // c_t = f * c_{t-1} + i * g.
    dGates.segment(0, h) = dc.array() * g * i * (1 - i);
    dGates.segment(h, h) =
        dc.array() * cache.cells.col(t).array() * f * (1 - f);
    dGates.segment(2 * h, h) = dc.array() * i * (1 - g.square());
    dc.array() *= f;
    // a_t = W x_t + U h_{t-1} + b.
    dh.noalias() = params.U().transpose() * dGates;
  }
  grad.W().noalias() = cache.dGates * cache.inputs.transpose();
  grad.U().noalias() = cache.dGates * cache.hidden.leftCols(n).transpose();
  grad.b() = cache.dGates.rowwise().sum();
}

double rl::logProbGradient(const LSTMParams &params, const MatrixXd &inputs,
                           const Placement &actions, const VectorXd &weights,
                           LSTMParams &grad) {
  ForwardCache cache;
  forward(params, inputs, cache);
  objectiveLogitGradient(cache, actions, weights, 0);
  backward(params, cache, grad);
  double sum = 0;
  for (Index t = 0; t < inputs.cols(); ++t)
    sum +=
        weights[t] * std::log(cache.probs(static_cast<Index>(actions[t]), t));
  return sum;
}

double rl::entropyGradient(const LSTMParams &params, const MatrixXd &inputs,
                           LSTMParams &grad) {
  ForwardCache cache;
  forward(params, inputs, cache);
  Placement anyActions(static_cast<size_t>(inputs.cols()), 0);
  objectiveLogitGradient(cache, anyActions, VectorXd::Zero(inputs.cols()), 1);
  backward(params, cache, grad);
  return entropy(cache);
}

//===----------------------------------------------------------------------===//
// Optimisation
//===----------------------------------------------------------------------===//

double rl::clipGlobalNorm(VectorXd &grad, double maxNorm) {
  double norm = grad.norm();
  if (norm > maxNorm)
    grad *= maxNorm / norm;
  return norm;
}

Adam::Adam(Index size, double learningRate, double beta1, double beta2,
           double epsilon)
    : learningRate_(learningRate), beta1_(beta1), beta2_(beta2),
      epsilon_(epsilon), m_(VectorXd::Zero(size)), v_(VectorXd::Zero(size)) {}

void Adam::ascend(VectorXd &params, const VectorXd &grad) {
  m_ = beta1_ * m_ + (1 - beta1_) * grad;
  v_ = beta2_ * v_ + (1 - beta2_) * grad.cwiseAbs2();
  beta1Power_ *= beta1_;
  beta2Power_ *= beta2_;
  double mScale = 1 / (1 - beta1Power_), vScale = 1 / (1 - beta2Power_);
  params.array() += learningRate_ * (m_.array() * mScale) /
                    ((v_.array() * vScale).sqrt() + epsilon_);
}

//===----------------------------------------------------------------------===//
// Policy
//===----------------------------------------------------------------------===//

Policy::Policy(const std::vector<Layer> &layers, size_t numTypes,
               int hiddenSize, double learningRate, std::mt19937_64 &rng)
    : layout_{numTypes}, features_(layerFeatures(layers, numTypes)),
      params_(layout_.size(), static_cast<size_t>(std::max(hiddenSize, 1)),
              numTypes),
      grad_(layout_.size(), static_cast<size_t>(std::max(hiddenSize, 1)),
            numTypes),
      adam_(params_.flat().size(), learningRate) {
  params_.initRandom(rng);
}

template <typename Choose> Placement Policy::rollout(Choose choose) {
  Index n = features_.cols();
  Index slot = static_cast<Index>(layout_.previousAction());
  cache_.inputs = features_;
  projectInputs(params_, cache_);
  Placement actions(static_cast<size_t>(n));
  for (Index t = 0; t < n; ++t) {
    if (t > 0) {
      // Feed the previous choice back: x_t gains its one-hot, so W x_t gains
      // the matching column of W.
      Index prev = slot + static_cast<Index>(actions[t - 1]);
      cache_.inputs(prev, t) = 1;
      cache_.gates.col(t) += params_.W().col(prev);
    }
    lstmStep(params_, cache_, t);
    actions[t] = choose(t);
  }
  cached_ = actions;
  cacheValid_ = true;
  return actions;
}

Placement Policy::sample(std::mt19937_64 &rng) {
  std::uniform_real_distribution<double> uniform(0, 1);
  return rollout([&](Index t) {
    auto p = cache_.probs.col(t);
    double u = uniform(rng), sum = 0;
    for (Index k = 0; k + 1 < p.size(); ++k) {
      sum += p[k];
      if (u < sum)
        return static_cast<size_t>(k);
    }
    return static_cast<size_t>(p.size() - 1);
  });
}

Placement Policy::mostLikely() {
  return rollout([&](Index t) {
    Index best;
    cache_.probs.col(t).maxCoeff(&best);
    return static_cast<size_t>(best);
  });
}

void Policy::forwardFor(const Placement &actions) {
  if (cacheValid_ && cached_ == actions)
    return;
  cache_.inputs = features_;
  setPreviousActions(cache_.inputs, layout_, actions);
  projectInputs(params_, cache_);
  for (Index t = 0; t < cache_.inputs.cols(); ++t)
    lstmStep(params_, cache_, t);
  cached_ = actions;
  cacheValid_ = true;
}

double Policy::logProbability(const Placement &actions) {
  forwardFor(actions);
  return sumLogProb(cache_, actions);
}

void Policy::reinforce(const Placement &actions, double advantage,
                       double entropyBonus) {
  if (actions.empty())
    return;
  forwardFor(actions);
  weights_.setConstant(static_cast<Index>(actions.size()), advantage);
  objectiveLogitGradient(cache_, actions, weights_, entropyBonus);
  backward(params_, cache_, grad_);
  clipGlobalNorm(grad_.flat(), maxGradNorm);
  adam_.ascend(params_.flat(), grad_.flat());
  cacheValid_ = false;
}

//===----------------------------------------------------------------------===//
// The scheduler
//===----------------------------------------------------------------------===//

namespace {

/// Rewards of evaluated plans; see RLPlacer.h.
class Reward {
public:
  static constexpr double infeasiblePenalty = 10;
  static constexpr double shortfallWeight = 10;
  static constexpr double worstFeasible = -9;

  /// Sets c_ref unless it is set; ignores infeasible plans.
  void noteReference(const PlacementEval &eval) {
    if (eval.feasible && !hasReference_) {
      reference_ = eval.cost;
      hasReference_ = true;
    }
  }
  double operator()(const PlacementEval &eval) {
    if (!eval.feasible)
      return -(infeasiblePenalty + shortfallWeight * eval.shortfall);
    noteReference(eval);
    // Guards against zero costs (layers that take no time).
    double ref = reference_ > 0 ? reference_ : 1.0;
    double cost = std::max(eval.cost, 1e-12 * ref);
    return std::max(-std::log(cost / ref), worstFeasible);
  }

private:
  double reference_ = 0;
  bool hasReference_ = false;
};

/// The moving-average baseline of REINFORCE.
class Baseline {
public:
  explicit Baseline(double decay) : decay_(decay) {}
  /// r - b, then b <- decay * b + (1 - decay) * r. The first reward only
  /// sets b.
  double advantage(double reward) {
    if (!started_) {
      value_ = reward;
      started_ = true;
    }
    double a = reward - value_;
    value_ = decay_ * value_ + (1 - decay_) * reward;
    return a;
  }

private:
  double decay_, value_ = 0;
  bool started_ = false;
};

/// A random plan for pre-training: a quarter of the time every layer gets a
/// uniformly random type; otherwise 1 to min(N, 4T) stages of random types
/// between random cut points.
Placement randomPlan(size_t n, size_t types, std::mt19937_64 &rng) {
  std::uniform_int_distribution<size_t> type(0, types - 1);
  Placement plan(n);
  if (std::uniform_real_distribution<double>(0, 1)(rng) < 0.25) {
    for (size_t &p : plan)
      p = type(rng);
    return plan;
  }
  size_t stages =
      std::uniform_int_distribution<size_t>(1, std::min(n, 4 * types))(rng);
  // stages - 1 distinct cut points in 1 .. n-1 (a cut at i starts a stage).
  std::vector<bool> cut(n, false);
  for (size_t made = 1; made < stages;)
    if (size_t at = std::uniform_int_distribution<size_t>(1, n - 1)(rng);
        !cut[at]) {
      cut[at] = true;
      ++made;
    }
  size_t current = type(rng);
  for (size_t i = 0; i < n; ++i) {
    if (cut[i])
      current = type(rng);
    plan[i] = current;
  }
  return plan;
}

} // namespace

SearchResult heterps::planner::placeRL(const PlacementProblem &problem,
                                       const RLOptions &options) {
  SearchTracker search(problem, options.timeBudgetSeconds);
  size_t n = problem.numLayers(), types = problem.numTypes();
  if (types == 0)
    return search.finish();
  if (n == 0) {
    search.evaluate({});
    return search.finish();
  }

  // c_ref: the cheapest feasible all-one-type plan. These plans also seed the
  // best plan, whatever the time budget.
  std::vector<PlacementEval> uniform;
  for (size_t t = 0; t < types; ++t)
    uniform.push_back(search.evaluate(Placement(n, t)));
  std::sort(uniform.begin(), uniform.end(),
            [](const PlacementEval &a, const PlacementEval &b) {
              return a.betterThan(b);
            });
  Reward reward;
  reward.noteReference(uniform.front());

  std::mt19937_64 rng(options.seed);
  Policy policy(problem.layers(), types, options.hiddenSize,
                options.learningRate, rng);
  Baseline baseline(options.baselineDecay);
  auto advantageOf = [&](const Placement &plan) {
    return baseline.advantage(reward(search.evaluate(plan)));
  };

  // Pre-training: off-policy, on random plans, only those better than the
  // baseline. Pushing down the log-probability of a plan the policy would
  // rarely sample has no limit (its gradient does not vanish as the
  // probability goes to zero), so off-policy updates with negative advantages
  // drive the logits to extremes; positive ones stop once the plan is likely.
  for (int e = 0; e < options.pretrainEpisodes && !search.timeUp(); ++e) {
    Placement plan = randomPlan(n, types, rng);
    if (double advantage = advantageOf(plan); advantage > 0)
      policy.reinforce(plan, advantage, options.entropyBonus);
  }
  // On-policy training: REINFORCE on the policy's own samples.
  for (int e = 0; e < options.episodes && !search.timeUp(); ++e) {
    Placement plan = policy.sample(rng);
    policy.reinforce(plan, advantageOf(plan), options.entropyBonus);
  }
  if (!search.timeUp())
    search.evaluate(policy.mostLikely());
  return search.finish();
}
