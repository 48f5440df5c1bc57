//===- RLPlacer.cpp - LSTM policy, REINFORCE, and the RL scheduler --------===//
//
// See RLPlacer.h for the method and RLPolicy.h for the notation.
//
//===----------------------------------------------------------------------===//

#include "heterps/Planner/RLPlacer.h"
#include "heterps/Planner/Exact.h"
#include "heterps/Planner/LocalSearch.h"
#include "heterps/Planner/RLPolicy.h"
#include "heterps/Planner/Rebalance.h"

#include "Elites.h"
#include "PlanReward.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <thread>

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

/// B / floor: the longest a stage may take; infinite without a floor.
static double stageTimeLimit(const PlacementProblem &problem) {
  double limit = problem.limit();
  return limit > 0 ? static_cast<double>(problem.spec().job.batchSize) / limit
                   : std::numeric_limits<double>::infinity();
}

MatrixXd rl::layerFeatures(const PlacementProblem &problem) {
  size_t types = problem.numTypes();
  FeatureLayout layout{types};
  MatrixXd x = layerFeatures(problem.layers(), types);
  // Price of the devices each layer alone needs on each type (p_t * k with k
  // continuous), or without a floor the price of its time on one device:
  // the per-layer view of what a type costs, as the greedy baseline sees it.
  double tau = stageTimeLimit(problem);
  int64_t batch = problem.spec().job.batchSize;
  MatrixXd price = MatrixXd::Zero(static_cast<Index>(types), x.cols());
  for (Index i = 0; i < x.cols(); ++i) {
    const Layer &l = problem.layers()[static_cast<size_t>(i)];
    for (size_t t = 0; t < types && t < l.costs.size(); ++t) {
      SplitTimes p;
      p.add(l.costs[t], static_cast<double>(batch));
      double cs = p.ctSerial, cp = p.ctParallel, ds = p.dtSerial,
             dp = p.dtParallel;
      double need = std::isinf(tau) ? std::max(cs + cp, ds + dp)
                    : (cs >= tau || ds >= tau)
                        ? std::numeric_limits<double>::infinity()
                        : std::max(cp / (tau - cs), dp / (tau - ds));
      price(static_cast<Index>(t), i) =
          problem.spec().deviceTypes[t].pricePerSecond() * need;
    }
  }
  double max = 0;
  for (Index k = 0; k < price.size(); ++k)
    if (std::isfinite(price.data()[k]))
      max = std::max(max, price.data()[k]);
  for (Index i = 0; i < x.cols(); ++i)
    for (Index t = 0; t < price.rows(); ++t)
      x(static_cast<Index>(layout.layerPrice()) + t, i) =
          std::isfinite(price(t, i)) ? logScaled(price(t, i), max) : 1.0;
  return x;
}

//===----------------------------------------------------------------------===//
// Plan state
//===----------------------------------------------------------------------===//

/// Features that can be unbounded (devices of an impossible stage) are cut
/// here, beyond every value a feasible plan produces (at most 1).
static constexpr double featureCap = 1.5;

/// The replicas provision() gives a stage needing `k` (continuous).
static double wholeDevices(double k, double maxCount) {
  return std::isinf(k) ? maxCount : std::max(1.0, std::ceil(k - 1e-9));
}

PlanState::PlanState(const PlacementProblem &problem)
    : numTypes_(problem.numTypes()), numLayers_(problem.numLayers()),
      tau_(stageTimeLimit(problem)), parts_(numLayers_ * numTypes_),
      committed_(numTypes_, 0) {
  int64_t batch = problem.spec().job.batchSize;
  for (size_t i = 0; i < numLayers_; ++i)
    for (size_t t = 0; t < numTypes_; ++t) {
      Parts &p = parts_[i * numTypes_ + t];
      if (t < problem.layers()[i].costs.size())
        p.add(problem.layers()[i].costs[t], static_cast<double>(batch));
    }
  for (const DeviceType &d : problem.spec().deviceTypes) {
    maxCount_.push_back(static_cast<double>(std::max<int64_t>(1, d.maxCount)));
    pricePerSecond_.push_back(d.pricePerSecond());
    maxPrice_ = std::max(maxPrice_, d.pricePerSecond());
  }
  if (maxPrice_ <= 0)
    maxPrice_ = 1;
  const Job &job = problem.spec().job;
  batchesPerJob_ = static_cast<double>(job.epochs) *
                   static_cast<double>(job.samplesPerEpoch) /
                   static_cast<double>(std::max<int64_t>(1, job.batchSize));
}

double PlanState::partialCost() const {
  if (!open_)
    return 0;
  double price = 0;
  for (size_t t = 0; t < numTypes_; ++t)
    price += pricePerSecond_[t] * committed_[t];
  double k = wholeDevices(devicesFor(run_), maxCount_[runType_]);
  price += pricePerSecond_[runType_] * k;
  return batchesPerJob_ * std::max(slowest_, run_.et(k)) * price;
}

void PlanState::reset() {
  open_ = false;
  runType_ = runLength_ = 0;
  run_ = Parts();
  slowest_ = 0;
  std::fill(committed_.begin(), committed_.end(), 0.0);
}

double PlanState::devicesFor(const Parts &p) const {
  if (std::isinf(tau_))
    return 0;
  if (p.ctSerial >= tau_ || p.dtSerial >= tau_)
    return std::numeric_limits<double>::infinity();
  return std::max(p.ctParallel / (tau_ - p.ctSerial),
                  p.dtParallel / (tau_ - p.dtSerial));
}

void PlanState::write(size_t layer, double *out) const {
  size_t T = numTypes_;
  for (size_t t = 0; t < T; ++t) {
    bool joins = open_ && t == runType_;
    Parts stage = part(layer, t);
    double before = 0;
    if (joins) {
      stage += run_;
      before = wholeDevices(devicesFor(run_), maxCount_[t]);
    }
    double k = devicesFor(stage), whole = wholeDevices(k, maxCount_[t]);
    double added = whole - before;
    out[t] = std::min(added, 3.0) / 3;
    out[T + t] =
        std::min((committed_[t] + before + added) / maxCount_[t], featureCap);
    out[2 * T + t] = std::isinf(k) ? 1 : whole - std::max(k, 0.0);
    out[3 * T + t] =
        std::isinf(tau_) ? 0 : std::min(stage.et(whole) / tau_, featureCap);
    out[4 * T + t] =
        std::min(pricePerSecond_[t] * added / maxPrice_, featureCap);
    out[5 * T + t] = std::min(whole / maxCount_[t], featureCap);
    // Thermometer code of the stage's devices: thresholds a linear read-out
    // can pick.
    static const double levels[4] = {2, 3, 4, 6};
    for (int l = 0; l < 4; ++l)
      out[(6 + l) * T + t] = whole >= levels[l] ? 1 : 0;
  }
  double load =
      std::isinf(tau_) ? 0 : std::max(run_.ctSerial, run_.dtSerial) / tau_;
  out[10 * T] = std::min(load, featureCap);
  out[10 * T + 1] = std::log1p(static_cast<double>(runLength_)) /
                    std::log1p(static_cast<double>(numLayers_));
  out[10 * T + 2] =
      std::isinf(tau_) ? 0 : std::min(slowest_ / tau_, featureCap);
}

void PlanState::place(size_t layer, size_t type) {
  if (open_ && type == runType_) {
    run_ += part(layer, type);
    ++runLength_;
    return;
  }
  if (open_)
    close();
  open_ = true;
  runType_ = type;
  run_ = part(layer, type);
  runLength_ = 1;
}

void PlanState::close() {
  double k = wholeDevices(devicesFor(run_), maxCount_[runType_]);
  committed_[runType_] += k;
  slowest_ = std::max(slowest_, run_.et(k));
}

void PlanState::allowedTypes(size_t layer, double *allowed) const {
  bool any = false;
  for (size_t t = 0; t < numTypes_; ++t) {
    Parts stage = part(layer, t);
    if (open_ && t == runType_)
      stage += run_;
    double k = devicesFor(stage);
    allowed[t] = !std::isinf(k) &&
                 committed_[t] + wholeDevices(k, maxCount_[t]) <= maxCount_[t];
    any |= allowed[t] != 0;
  }
  if (!any)
    std::fill(allowed, allowed + numTypes_, 1.0);
}

void PlanState::fill(MatrixXd &inputs, MatrixXd &allowed,
                     const FeatureLayout &layout, const Placement &actions) {
  setPreviousActions(inputs, layout, actions);
  allowed.resize(static_cast<Index>(numTypes_), inputs.cols());
  reset();
  for (Index t = 0; t < inputs.cols(); ++t) {
    size_t layer = static_cast<size_t>(t);
    write(layer, inputs.col(t).data() + static_cast<Index>(layout.planState()));
    allowedTypes(layer, allowed.col(t).data());
    place(layer, actions[layer]);
  }
}

//===----------------------------------------------------------------------===//
// Parameters
//===----------------------------------------------------------------------===//

LSTMParams::LSTMParams(size_t inputSize, size_t hiddenSize, size_t numActions)
    : inputSize_(static_cast<Index>(inputSize)),
      hiddenSize_(static_cast<Index>(hiddenSize)),
      numActions_(static_cast<Index>(numActions)) {
  Index h4 = 4 * hiddenSize_;
  Index sizes[numBlocks] = {
      h4 * inputSize_,           h4 * hiddenSize_, h4,
      numActions_ * hiddenSize_, numActions_,      numActions_ * inputSize_};
  Index offset = 0;
  for (int k = 0; k < numBlocks; ++k) {
    offsets_[k] = offset;
    offset += sizes[k];
  }
  flat_ = VectorXd::Zero(offset);
}

std::vector<LSTMParams::Block> LSTMParams::blocks() const {
  static const char *const names[numBlocks] = {"W", "U", "b", "V", "d", "G"};
  std::vector<Block> result;
  for (int k = 0; k < numBlocks; ++k) {
    Index end = k + 1 < numBlocks ? offsets_[k + 1] : flat_.size();
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
  G().setZero();
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

/// Sizes the state and probability matrices of `cache` for its inputs.
static void sizeCache(const LSTMParams &params, ForwardCache &cache) {
  Index n = cache.inputs.cols(), h = params.hiddenSize();
  cache.cells.resize(h, n + 1);
  cache.hidden.resize(h, n + 1);
  cache.cells.col(0).setZero();
  cache.hidden.col(0).setZero();
  cache.cellTanh.resize(h, n);
  cache.probs.resize(params.numActions(), n);
}

void rl::projectInputs(const LSTMParams &params, ForwardCache &cache) {
  cache.gates.noalias() = params.W() * cache.inputs;
  cache.gates.colwise() += params.b();
  sizeCache(params, cache);
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
  probs.noalias() += params.G() * cache.inputs.col(t);
  probs += params.d();
  if (cache.logitNoise.cols() > t)
    probs += cache.logitNoise.col(t);
  if (cache.allowed.cols() > t) // masked types: logit -inf, probability 0
    for (Index k = 0; k < probs.size(); ++k)
      if (cache.allowed(k, t) == 0)
        probs[k] = -std::numeric_limits<double>::infinity();
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
  grad.G().noalias() = cache.dLogits * cache.inputs.transpose();
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

Policy::Policy(const PlacementProblem &problem, int hiddenSize,
               double learningRate, std::mt19937_64 &rng)
    : layout_{problem.numTypes()}, features_(layerFeatures(problem)),
      params_(layout_.size(), static_cast<size_t>(std::max(hiddenSize, 1)),
              problem.numTypes()),
      grad_(params_), pending_(params_),
      adam_(params_.flat().size(), learningRate), workspace_(problem) {
  params_.initRandom(rng);
  pending_.flat().setZero();
  projectStaticInputs();
}

void Policy::projectStaticInputs() {
  Index dynamic = static_cast<Index>(layout_.previousAction());
  projected_.noalias() =
      params_.W().leftCols(dynamic) * features_.topRows(dynamic);
  projected_.colwise() += params_.b();
}

template <typename Choose>
Placement Policy::rollout(ForwardCache &cache, Workspace &workspace,
                          const Exploration &exploration, Choose choose) const {
  Index n = features_.cols(), types = params_.numActions();
  // The plan-dependent inputs (previous action, plan state) are known only
  // step by step: W x_t gets their part when they are.
  Index dynamic = static_cast<Index>(layout_.previousAction());
  Index dynamicSize = static_cast<Index>(layout_.size()) - dynamic;
  Index stateSlot = static_cast<Index>(layout_.planState());
  bool noisy = exploration.noise > 0;
  bool withholds = !exploration.withheld.empty();
  cache.inputs = features_;
  cache.gates = projected_;
  sizeCache(params_, cache);
  cache.allowed.resize(types, n);
  cache.logitNoise.resize(noisy ? types : 0, noisy ? n : 0);
  PlanState &state = workspace.state;
  state.reset();
  Placement actions(static_cast<size_t>(n));
  for (Index t = 0; t < n; ++t) {
    auto x = cache.inputs.col(t);
    if (t > 0)
      x(dynamic + static_cast<Index>(actions[t - 1])) = 1;
    state.write(static_cast<size_t>(t), x.data() + stateSlot);
    auto allowed = cache.allowed.col(t);
    state.allowedTypes(static_cast<size_t>(t), allowed.data());
    if (withholds && allowed.sum() > 0) {
      double left = 0;
      for (Index k = 0; k < types; ++k)
        left += exploration.withheld[static_cast<size_t>(k)] ? 0 : allowed[k];
      if (left > 0) // else the withheld types are all that is left
        for (Index k = 0; k < types; ++k)
          if (exploration.withheld[static_cast<size_t>(k)])
            allowed[k] = 0;
    }
    if (noisy)
      cache.logitNoise.col(t).noalias() =
          workspace.noise.leftCols(dynamicSize) *
              x.segment(dynamic, dynamicSize) +
          workspace.noise.col(dynamicSize);
    cache.gates.col(t).noalias() +=
        params_.W().middleCols(dynamic, dynamicSize) *
        x.segment(dynamic, dynamicSize);
    lstmStep(params_, cache, t);
    actions[t] = choose(t);
    state.place(static_cast<size_t>(t), actions[t]);
  }
  return actions;
}

Placement Policy::sample(std::mt19937_64 &rng, ForwardCache &cache,
                         Workspace &workspace,
                         const Exploration &exploration) const {
  if (exploration.noise > 0) {
    Index dynamicSize =
        static_cast<Index>(layout_.size() - layout_.previousAction());
    std::normal_distribution<double> normal(0, exploration.noise);
    workspace.noise.resize(params_.numActions(), dynamicSize + 1);
    for (Index k = 0; k < workspace.noise.size(); ++k)
      workspace.noise.data()[k] = normal(rng);
  }
  return rollout(cache, workspace, exploration,
                 [&](Index t) { return drawIndex(cache.probs.col(t), rng); });
}

Placement Policy::mostLikely(ForwardCache &cache, Workspace &workspace) const {
  return rollout(cache, workspace, Exploration(), [&](Index t) {
    Index best;
    cache.probs.col(t).maxCoeff(&best);
    return static_cast<size_t>(best);
  });
}

void Policy::forwardFor(const Placement &actions, ForwardCache &cache,
                        Workspace &workspace) const {
  cache.logitNoise.resize(0, 0);
  cache.inputs = features_;
  workspace.state.fill(cache.inputs, cache.allowed, layout_, actions);
  Index dynamic = static_cast<Index>(layout_.previousAction());
  Index dynamicSize = static_cast<Index>(layout_.size()) - dynamic;
  cache.gates = projected_;
  cache.gates.noalias() += params_.W().middleCols(dynamic, dynamicSize) *
                           cache.inputs.middleRows(dynamic, dynamicSize);
  sizeCache(params_, cache);
  for (Index t = 0; t < cache.inputs.cols(); ++t)
    lstmStep(params_, cache, t);
}

void Policy::gradient(const Placement &actions, ForwardCache &cache,
                      const VectorXd &advantages, double entropyBonus,
                      Workspace &workspace, LSTMParams &grad) const {
  VectorXd &weights = workspace.weights;
  weights = advantages;
  for (Index t = 0; t < weights.size(); ++t)
    if (cache.probs(static_cast<Index>(actions[t]), t) == 0)
      weights[t] = 0;
  objectiveLogitGradient(cache, actions, weights, entropyBonus);
  backward(params_, cache, grad);
}

void Policy::accumulate(const LSTMParams &grad) {
  pending_.flat() += grad.flat();
}

void Policy::step() {
  clipGlobalNorm(pending_.flat(), maxGradNorm);
  adam_.ascend(params_.flat(), pending_.flat());
  pending_.flat().setZero();
  projectStaticInputs();
}

Placement Policy::sample(std::mt19937_64 &rng) {
  return sample(rng, cache_, workspace_);
}

Placement Policy::mostLikely() { return mostLikely(cache_, workspace_); }

double Policy::logProbability(const Placement &actions) {
  forwardFor(actions, cache_, workspace_);
  return sumLogProb(cache_, actions);
}

void Policy::accumulate(const Placement &actions, const VectorXd &advantages,
                        double entropyBonus) {
  if (actions.empty())
    return;
  forwardFor(actions, cache_, workspace_);
  gradient(actions, cache_, advantages, entropyBonus, workspace_, grad_);
  accumulate(grad_);
}

void Policy::accumulate(const Placement &actions, double advantage,
                        double entropyBonus) {
  accumulate(actions,
             VectorXd::Constant(static_cast<Index>(actions.size()), advantage),
             entropyBonus);
}

void Policy::reinforce(const Placement &actions, double advantage,
                       double entropyBonus) {
  if (actions.empty())
    return;
  accumulate(actions, advantage, entropyBonus);
  step();
}

//===----------------------------------------------------------------------===//
// The scheduler
//===----------------------------------------------------------------------===//

namespace {

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
  double value() const { return value_; }

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

/// Runs fn(i, w) for every i in [0, count) on `threads` threads; thread w
/// takes the i with i % threads == w. Results must not depend on which
/// thread ran what: each i writes only its own outputs.
template <typename F> void parallelFor(int count, int threads, F fn) {
  int used = std::max(1, std::min(threads, count));
  std::vector<std::thread> pool;
  for (int w = 1; w < used; ++w)
    pool.emplace_back([&fn, w, used, count] {
      for (int i = w; i < count; i += used)
        fn(i, w);
    });
  for (int i = 0; i < count; i += used)
    fn(i, 0);
  for (std::thread &t : pool)
    t.join();
}

/// The training loop of placeRL; see RLPlacer.h.
class Trainer {
public:
  Trainer(const PlacementProblem &problem, const RLOptions &options,
          SearchTracker &search);
  void run();

private:
  void evaluateOneTypePlans();
  void pretrain();
  /// Samples, evaluates and learns from one batch of `size` plans.
  void trainBatch(int size);
  /// The types a batch withholds (none most of the time).
  std::vector<bool> drawWithheld();
  /// out[t] = reward + log(C_{t-1} / c_ref): the reward with the cost of the
  /// plan before step t taken out (C_{-1} = c_ref).
  void rewardsToGo(const Placement &plan, double reward, VectorXd &out);

  const PlacementProblem &problem_;
  const RLOptions &options_;
  SearchTracker &search_;
  size_t numLayers_, numTypes_;
  int threads_;
  std::mt19937_64 rng_;
  PlanReward reward_;
  Policy policy_;
  Elites<Placement> elites_;
  PlanState tracker_;
  StageRebalancer rebalancer_;
  /// Built on first use (its run table is the costly part).
  std::unique_ptr<CheapestUnderCap> capSolver_;
  /// Moves `plan` along the caps on its largest stage time (see
  /// RLOptions::capRefinement); results go to the tracker.
  void refineCaps(Placement &plan, PlacementEval &eval);
  /// The best polished plan so far: a better one is rebalanced.
  PlacementEval bestPolished_;
  // Per batch item (samples, then elites) and per thread.
  std::vector<Placement> plans_;
  std::vector<double> rewards_;
  std::vector<VectorXd> returns_, advantages_;
  std::vector<ForwardCache> caches_;
  std::vector<LSTMParams> grads_;
  std::vector<Workspace> workspaces_;
};

Trainer::Trainer(const PlacementProblem &problem, const RLOptions &options,
                 SearchTracker &search)
    : problem_(problem), options_(options), search_(search),
      numLayers_(problem.numLayers()), numTypes_(problem.numTypes()),
      threads_(std::max(1, options.threads)), rng_(options.seed),
      policy_(problem, options.hiddenSize, options.learningRate, rng_),
      elites_(static_cast<size_t>(std::max(0, options.elites))),
      tracker_(problem), rebalancer_(problem) {
  size_t items = static_cast<size_t>(std::max(1, options.batchSize)) +
                 static_cast<size_t>(std::max(0, options.elites));
  plans_.resize(items);
  rewards_.resize(items);
  returns_.resize(items);
  advantages_.resize(items);
  caches_.resize(items);
  grads_.resize(items, policy_.params());
  workspaces_.resize(static_cast<size_t>(threads_), Workspace(problem));
}

void Trainer::run() {
  evaluateOneTypePlans();
  pretrain();
  for (int e = 0; e < options_.episodes && !search_.timeUp();) {
    int size = std::min(std::max(1, options_.batchSize), options_.episodes - e);
    trainBatch(size);
    e += size;
  }
  if (!search_.timeUp())
    search_.evaluate(policy_.mostLikely());
}

void Trainer::evaluateOneTypePlans() {
  // c_ref: the cheapest feasible all-one-type plan. These plans also seed
  // the best plan, whatever the time budget.
  std::vector<PlacementEval> uniform;
  for (size_t t = 0; t < numTypes_; ++t)
    uniform.push_back(search_.evaluate(Placement(numLayers_, t)));
  std::sort(uniform.begin(), uniform.end(),
            [](const PlacementEval &a, const PlacementEval &b) {
              return a.betterThan(b);
            });
  reward_.noteReference(uniform.front());
}

void Trainer::pretrain() {
  // Off-policy, on random plans, only those better than the baseline.
  // Pushing down the log-probability of a plan the policy would rarely
  // sample has no limit (its gradient does not vanish as the probability
  // goes to zero), so off-policy updates with negative advantages drive the
  // logits to extremes; positive ones stop once the plan is likely.
  Baseline baseline(options_.baselineDecay);
  for (int e = 0; e < options_.pretrainEpisodes && !search_.timeUp(); ++e) {
    Placement plan = randomPlan(numLayers_, numTypes_, rng_);
    double r = reward_(search_.evaluate(plan));
    elites_.offer(plan, r);
    if (double advantage = baseline.advantage(r); advantage > 0)
      policy_.reinforce(plan, advantage, options_.entropyBonus);
  }
}

std::vector<bool> Trainer::drawWithheld() {
  // Only with three types or more: withholding one of two leaves one-type
  // plans, which are evaluated already.
  std::uniform_real_distribution<double> uniform(0, 1);
  if (numTypes_ < 3 || uniform(rng_) >= options_.withholdProbability)
    return {};
  // Each type with probability 1/2, keeping at least two.
  std::vector<bool> withheld(numTypes_);
  size_t kept = 0;
  for (size_t t = 0; t < numTypes_; ++t)
    kept += !(withheld[t] = uniform(rng_) < 0.5);
  if (kept < 2)
    return {};
  return withheld;
}

void Trainer::rewardsToGo(const Placement &plan, double reward, VectorXd &out) {
  out.resize(static_cast<Index>(numLayers_));
  tracker_.reset();
  double before = 0; // log(C_{t-1} / c_ref)
  for (size_t t = 0; t < numLayers_; ++t) {
    out[static_cast<Index>(t)] = reward + before;
    tracker_.place(t, plan[t]);
    double cost = tracker_.partialCost();
    if (cost > 0 && std::isfinite(cost))
      before = std::log(cost / reward_.reference());
  }
}

void Trainer::refineCaps(Placement &plan, PlacementEval &eval) {
  if (!eval.feasible)
    return;
  if (!capSolver_)
    capSolver_ = std::make_unique<CheapestUnderCap>(problem_);
  const ClusterSpec &spec = problem_.spec();
  // Caps as multiples of the plan's E: at E itself, a plan no dearer; above
  // it, one whose P drops by more than E rises; below, the reverse.
  constexpr double kFactors[] = {1.0, 1.01, 1.02, 1.05, 1.1, 1.2, 1.35, 1.5,
                                 2.0, 3.0,  0.98, 0.95, 0.9, 0.8, 0.65, 0.5};
  constexpr int kMaxMoves = 32, kStairSteps = 8;
  constexpr double kStairPrice = 2;
  // Evaluates `found`; true (and it replaces the plan) when it is better.
  auto adopt = [&](Placement &found, const PlacementEval *&next) {
    next = &search_.evaluate(found);
    if (!next->betterThan(eval))
      return false;
    plan = std::move(found);
    eval = *next;
    return true;
  };
  for (int move = 0; move < kMaxMoves && !search_.timeUp(); ++move) {
    double price = 0;
    for (const Stage &s : eval.stages)
      price += spec.deviceTypes[s.deviceType].pricePerSecond() *
               static_cast<double>(s.replicas);
    double e = static_cast<double>(spec.job.batchSize) / eval.throughput;
    bool improved = false;
    for (double factor : kFactors) {
      double cap = e * factor * (1 + 1e-12);
      // A plan under the cap beats this one only with P·cap below P·E.
      std::optional<Placement> found =
          capSolver_->solve(cap, price * std::max(1.0, 1 / factor));
      const PlacementEval *next;
      if (found && (improved = adopt(*found, next)))
        break;
    }
    // The steps of P*(cap) just below E, which the multiples can step over:
    // each the cheapest plan under the last one's E (dearer and faster; at
    // most kStairPrice times this plan's price), up to kStairSteps of them.
    int steps = 0;
    for (double cap = e; !improved;) {
      cap = std::nextafter(cap, 0.0);
      std::optional<Placement> found =
          capSolver_->solve(cap, price * kStairPrice);
      const PlacementEval *next;
      if (!found || (improved = adopt(*found, next)) || !next->feasible ||
          ++steps == kStairSteps)
        break;
      cap = std::min(cap, spec.job.batchSize / next->throughput);
    }
    if (!improved)
      return;
  }
}

void Trainer::trainBatch(int size) {
  // Sample: each plan with its own generator, seeded in order, so that the
  // plans do not depend on the number of threads.
  Exploration exploration{options_.explorationNoise, drawWithheld()};
  std::vector<uint64_t> seeds(static_cast<size_t>(size));
  for (uint64_t &seed : seeds)
    seed = rng_();
  parallelFor(size, threads_, [&](int b, int w) {
    std::mt19937_64 rng(seeds[static_cast<size_t>(b)]);
    plans_[b] = policy_.sample(rng, caches_[b], workspaces_[w], exploration);
  });

  // Evaluate; reward to go per step.
  VectorXd sum = VectorXd::Zero(static_cast<Index>(numLayers_));
  int best = 0;
  PlacementEval bestEval;
  for (int b = 0; b < size; ++b) {
    const PlacementEval &eval = search_.evaluate(plans_[b]);
    rewards_[b] = reward_(eval);
    elites_.offer(plans_[b], rewards_[b]);
    if (b == 0 || rewards_[b] > rewards_[best]) {
      best = b;
      bestEval = eval;
    }
  }
  // The batch's best plan, improved by local moves, is offered to the
  // elites: the policy imitates it if it beats the batch.
  if (options_.polishEvaluations > 0) {
    Placement polished = improveLocally(search_, plans_[best], bestEval,
                                        options_.polishEvaluations);
    // A polished plan better than every earlier one is also refined by
    // the rebalancer (Rebalance.h). Its result goes to the tracker only:
    // imitating it made the policy settle on its sequence of stage types.
    if ((options_.rebalance || options_.capRefinement) &&
        bestEval.betterThan(bestPolished_)) {
      bestPolished_ = bestEval;
      PlacementEval refined = bestEval;
      Placement plan = polished;
      if (options_.capRefinement)
        refineCaps(plan, refined);
      if (options_.rebalance)
        rebalancer_.improve(search_, std::move(plan), refined);
    }
    if (polished != plans_[best])
      elites_.offer(polished, reward_(bestEval));
  }
  for (int b = 0; b < size; ++b) {
    rewardsToGo(plans_[b], rewards_[b], returns_[b]);
    sum += returns_[b];
  }

  // Advantages: the leave-one-out mean of the other plans' rewards to go as
  // the per-step baseline (unbiased: it does not depend on the plan),
  // normalised by their spread. A single plan has no baseline: no update.
  double variance = 0;
  if (size > 1)
    for (int b = 0; b < size; ++b) {
      advantages_[b] = returns_[b] - (sum - returns_[b]) / (size - 1);
      variance += advantages_[b].squaredNorm();
    }
  double scale = static_cast<double>(size) * static_cast<double>(numLayers_);
  double spread = std::max(std::sqrt(variance / scale), 1e-3);
  int items = size > 1 ? size : 0;
  for (int b = 0; b < items; ++b)
    advantages_[b] /= spread * size;

  // Self-imitation: the best plans seen, where they beat the batch.
  for (const auto &[r, plan] : elites_.plans()) {
    size_t i = static_cast<size_t>(items);
    rewardsToGo(plan, r, returns_[i]);
    VectorXd gain = ((returns_[i] - sum / size) / spread).cwiseMax(0.0);
    if (gain.sum() == 0)
      continue;
    plans_[i] = plan;
    advantages_[i] = options_.selfImitation * gain.cwiseMin(3.0) / size;
    ++items;
  }

  // Gradients in parallel, summed in order.
  parallelFor(items, threads_, [&](int b, int w) {
    bool sampled = b < size && size > 1;
    if (!sampled)
      policy_.forwardFor(plans_[b], caches_[b], workspaces_[w]);
    policy_.gradient(plans_[b], caches_[b], advantages_[b],
                     sampled ? options_.entropyBonus / size : 0, workspaces_[w],
                     grads_[b]);
  });
  if (items == 0)
    return;
  for (int b = 0; b < items; ++b)
    policy_.accumulate(grads_[b]);
  policy_.step();
}

} // namespace

SearchResult heterps::planner::placeRL(const PlacementProblem &problem,
                                       const RLOptions &options) {
  SearchTracker search(problem, options.timeBudgetSeconds);
  if (problem.numTypes() == 0)
    return search.finish();
  if (problem.numLayers() == 0) {
    search.evaluate({});
    return search.finish();
  }
  Trainer(problem, options, search).run();
  return search.finish();
}
