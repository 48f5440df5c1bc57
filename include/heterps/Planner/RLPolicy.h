//===- RLPolicy.h - the LSTM policy behind placeRL --------------*- C++ -*-===//
//
// The pieces of the RL scheduler (RLPlacer.h), exposed so that unit tests can
// check the maths: the layer features, the LSTM parameters, the forward pass
// over a sequence, log-probabilities and entropies with their gradients
// (backpropagation through time), gradient clipping, Adam, and the Policy
// that samples plans and applies REINFORCE updates.
//
// This header needs Eigen (link Eigen3::Eigen); RLPlacer.h, the planner's
// interface, does not.
//
// Notation, for a sequence of N steps, D input features, H hidden units and
// T actions (device types):
//   gates  a_t = W x_t + U h_{t-1} + b        (4H: input, forget, cell, output)
//   i, f, o = sigmoid(a_i, a_f, a_o); g = tanh(a_g)
//   c_t = f * c_{t-1} + i * g;  h_t = o * tanh(c_t);  h_0 = c_0 = 0
//   logits z_t = V h_t + d;  pi_t = softmax(z_t)
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_PLANNER_RLPOLICY_H
#define HETERPS_PLANNER_RLPOLICY_H

#include "heterps/Planner/Placement.h"

#include <Eigen/Dense>

#include <random>
#include <string>
#include <vector>

namespace heterps::planner::rl {

//===----------------------------------------------------------------------===//
// Features
//===----------------------------------------------------------------------===//

/// Where each feature sits in a step's input vector (see RLPlacer.h for what
/// they mean). The static features come first, then the ones that depend on
/// the plan chosen so far (previous action and plan state).
struct FeatureLayout {
  static constexpr size_t numFrequencies = 4; // f = 1, 2, 4, 8
  static constexpr size_t numKinds = 12;
  size_t numTypes = 0;

  /// i / (N - 1), then sin and cos for each frequency.
  size_t position() const { return 0; }
  /// One-hot of the layer kind.
  size_t kind() const { return 1 + 2 * numFrequencies; }
  /// log1p(activation bytes), log1p(parameter bytes), normalised.
  size_t bytes() const { return kind() + numKinds; }
  /// OCT per device type, log-scaled.
  size_t computeTime() const { return bytes() + 2; }
  /// ODT per device type, log-scaled.
  size_t commTime() const { return computeTime() + numTypes; }
  /// Per device type, the price of the devices the layer alone would need to
  /// meet the floor, log-scaled (zero without a problem).
  size_t layerPrice() const { return commTime() + numTypes; }
  /// One-hot of the previous layer's device type (the action of step t-1).
  size_t previousAction() const { return layerPrice() + numTypes; }
  /// The state of the partial plan (PlanState).
  size_t planState() const { return previousAction() + numTypes; }
  size_t size() const { return planState() + planStateSize(); }
  /// Per type, for the layer joining the open stage (same type) or opening
  /// one: devices it adds, the type's devices in use after it, the spare
  /// fraction of a device in that stage and its time / (B / floor); then the
  /// open stage's serial load and length, and the slowest closed stage.
  size_t planStateSize() const { return 10 * numTypes + 3; }
};

/// An index drawn from the distribution `p` (a column of probabilities;
/// one of probability 0 is never drawn, and rounding falls back to the last
/// possible index).
template <typename Column>
size_t drawIndex(const Column &p, std::mt19937_64 &rng) {
  double u = std::uniform_real_distribution<double>(0, 1)(rng), sum = 0;
  Eigen::Index last = 0;
  for (Eigen::Index k = 0; k < p.size(); ++k) {
    if (p[k] == 0)
      continue;
    sum += p[k];
    last = k;
    if (u < sum)
      return static_cast<size_t>(k);
  }
  return static_cast<size_t>(last);
}

/// Index of `kind` among the 12 known layer kinds, or -1.
int kindIndex(const std::string &kind);

/// The static features of every layer, one column per layer, with the
/// previous-action and plan-state slots left zero. With a problem, also the
/// layer-price features.
Eigen::MatrixXd layerFeatures(const std::vector<Layer> &layers,
                              size_t numTypes);
Eigen::MatrixXd layerFeatures(const PlacementProblem &problem);

/// Writes the one-hot of actions[t - 1] into the previous-action slots of
/// column t (and zeros into those of column 0).
void setPreviousActions(Eigen::MatrixXd &inputs, const FeatureLayout &layout,
                        const Placement &actions);

/// What the policy knows about the plan it is building: the stages closed so
/// far and the open one (the run of the previous layer's type). Stage times
/// are CT = Cs + Cp / k and DT = Ds + Dp / k (serial and parallel parts, for
/// the problem's batch); a stage needs the smallest k with CT, DT <= tau =
/// B / floor, as provision() gives it.
class PlanState {
public:
  explicit PlanState(const PlacementProblem &problem);

  /// Back to the empty plan.
  void reset();
  /// Writes the features for placing `layer` next into `out`
  /// (FeatureLayout::planStateSize() values).
  void write(size_t layer, double *out) const;
  /// Whether `layer` may go on `type`: false when the stage it would join or
  /// open needs more devices than the type has left to meet the floor (the
  /// plan could not be feasible whatever follows: a stage's need only grows
  /// with its layers, and devices once committed stay so). `allowed` gets
  /// one value per type; when no type is allowed (the plan is infeasible
  /// anyway), all are.
  void allowedTypes(size_t layer, double *allowed) const;
  /// Places `layer` (the next one) on `type`.
  void place(size_t layer, size_t type);
  /// The job cost of the plan so far, its open stage included, with each
  /// stage at the fewest replicas meeting the floor (provision() may add
  /// replicas to the slowest stages where that is cheaper): the rewards'
  /// shaping, not the plan's score.
  double partialCost() const;

  /// Fills the previous-action and plan-state slots of every column of
  /// `inputs`, and `allowed` (T x N), for the plan `actions`.
  void fill(Eigen::MatrixXd &inputs, Eigen::MatrixXd &allowed,
            const FeatureLayout &layout, const Placement &actions);

private:
  using Parts = SplitTimes;
  /// Continuous k meeting the floor (0 when nothing is parallel), or
  /// infinity when the serial part alone misses it.
  double devicesFor(const Parts &parts) const;
  /// Closes the open stage: commits its devices.
  void close();
  const Parts &part(size_t layer, size_t type) const {
    return parts_[layer * numTypes_ + type];
  }

  size_t numTypes_, numLayers_;
  double tau_;
  std::vector<Parts> parts_;
  std::vector<double> maxCount_, pricePerSecond_;
  double batchesPerJob_, maxPrice_ = 0;
  // The plan so far.
  bool open_ = false;
  size_t runType_ = 0, runLength_ = 0;
  Parts run_;
  std::vector<double> committed_; // devices of closed stages, per type
  double slowest_ = 0;            // the longest closed stage time
};

//===----------------------------------------------------------------------===//
// Parameters
//===----------------------------------------------------------------------===//

/// All weights of the policy in one flat vector (so that clipping and Adam
/// treat them as one), with views of its blocks. Gradients use the same type.
class LSTMParams {
public:
  using MatrixView = Eigen::Map<Eigen::MatrixXd>;
  using ConstMatrixView = Eigen::Map<const Eigen::MatrixXd>;
  using VectorView = Eigen::Map<Eigen::VectorXd>;
  using ConstVectorView = Eigen::Map<const Eigen::VectorXd>;

  /// A named slice of flat().
  struct Block {
    const char *name;
    Eigen::Index offset, size;
  };

  LSTMParams() = default;
  /// All zeros.
  LSTMParams(size_t inputSize, size_t hiddenSize, size_t numActions);

  /// Uniform in [-1/sqrt(H), 1/sqrt(H)] for W, U, V; b = 0 except the
  /// forget-gate bias, 1 (remember by default); d = 0, G = 0.
  void initRandom(std::mt19937_64 &rng);

  Eigen::Index inputSize() const { return inputSize_; }
  Eigen::Index hiddenSize() const { return hiddenSize_; }
  Eigen::Index numActions() const { return numActions_; }

  /// Input weights, 4H x D.
  MatrixView W() { return {at(0), 4 * hiddenSize_, inputSize_}; }
  ConstMatrixView W() const { return {at(0), 4 * hiddenSize_, inputSize_}; }
  /// Recurrent weights, 4H x H.
  MatrixView U() { return {at(1), 4 * hiddenSize_, hiddenSize_}; }
  ConstMatrixView U() const { return {at(1), 4 * hiddenSize_, hiddenSize_}; }
  /// Gate bias, 4H.
  VectorView b() { return {at(2), 4 * hiddenSize_}; }
  ConstVectorView b() const { return {at(2), 4 * hiddenSize_}; }
  /// Output weights, T x H.
  MatrixView V() { return {at(3), numActions_, hiddenSize_}; }
  ConstMatrixView V() const { return {at(3), numActions_, hiddenSize_}; }
  /// Output bias, T.
  VectorView d() { return {at(4), numActions_}; }
  ConstVectorView d() const { return {at(4), numActions_}; }
  /// Input-to-output (skip) weights, T x D.
  MatrixView G() { return {at(5), numActions_, inputSize_}; }
  ConstMatrixView G() const { return {at(5), numActions_, inputSize_}; }

  Eigen::VectorXd &flat() { return flat_; }
  const Eigen::VectorXd &flat() const { return flat_; }
  /// W, U, b, V, d, G, in that order.
  std::vector<Block> blocks() const;

private:
  double *at(int block) { return flat_.data() + offsets_[block]; }
  const double *at(int block) const { return flat_.data() + offsets_[block]; }

  Eigen::Index inputSize_ = 0, hiddenSize_ = 0, numActions_ = 0;
  static constexpr int numBlocks = 6;
  Eigen::Index offsets_[numBlocks] = {0, 0, 0, 0, 0, 0};
  Eigen::VectorXd flat_;
};

//===----------------------------------------------------------------------===//
// Forward and backward
//===----------------------------------------------------------------------===//

/// What the forward pass keeps for the backward pass (N steps). Reusing one
/// cache across episodes of the same length allocates nothing.
struct ForwardCache {
  Eigen::MatrixXd inputs;   // D x N, previous-action slots filled
  Eigen::MatrixXd gates;    // 4H x N, after their non-linearities
  Eigen::MatrixXd cells;    // H x (N+1), column 0 is c_0 = 0
  Eigen::MatrixXd hidden;   // H x (N+1), column 0 is h_0 = 0
  Eigen::MatrixXd cellTanh; // H x N, tanh(c_t) for t = 1..N
  Eigen::MatrixXd probs;    // T x N
  /// T x N, 1 where a type may be chosen and 0 where it is masked (its
  /// probability is 0); empty when every type may be.
  Eigen::MatrixXd allowed;
  /// T x N, added to the logits (exploration noise, NoisyPolicy); empty
  /// when none.
  Eigen::MatrixXd logitNoise;
  // Scratch of the backward pass.
  Eigen::MatrixXd dLogits, dHidden, dGates;
};

/// Sizes the cache for N = cache.inputs.cols() steps and computes W x_t + b
/// for every step from cache.inputs (which the caller has filled).
void projectInputs(const LSTMParams &params, ForwardCache &cache);
/// Step t: adds U h_{t-1} to the projected inputs in cache.gates, applies the
/// non-linearities, and computes c_t, h_t and the probabilities (the softmax
/// over the allowed types when cache.allowed is set).
void lstmStep(const LSTMParams &params, ForwardCache &cache, Eigen::Index t);
/// The whole forward pass over `inputs` (D x N).
void forward(const LSTMParams &params, const Eigen::MatrixXd &inputs,
             ForwardCache &cache);

/// The per-step probabilities (T x N) for `inputs`.
Eigen::MatrixXd stepProbabilities(const LSTMParams &params,
                                  const Eigen::MatrixXd &inputs);
/// log pi(actions) = sum_t log pi_t(a_t) for `inputs`, whose
/// previous-action slots should match `actions` (setPreviousActions).
double logProbability(const LSTMParams &params, const Eigen::MatrixXd &inputs,
                      const Placement &actions);
/// Sum over the steps of the entropies of pi_t, from a forward pass.
double entropy(const ForwardCache &cache);

/// Backpropagation through time: given dJ/dz_t for every step (T x N, in
/// cache.dLogits), writes dJ/dparams into `grad` (resized as needed).
void backward(const LSTMParams &params, ForwardCache &cache, LSTMParams &grad);

/// Fills cache.dLogits with the gradient of the REINFORCE objective
///   J = sum_t weights[t] * log pi_t(a_t) + entropyBonus * sum_t H(pi_t)
/// with respect to the logits: weights[t] * (onehot(a_t) - pi_t) -
/// entropyBonus * pi_t * (log pi_t + H(pi_t)).
void objectiveLogitGradient(ForwardCache &cache, const Placement &actions,
                            const Eigen::VectorXd &weights,
                            double entropyBonus);

/// sum_t weights[t] * log pi_t(a_t) and its gradient.
double logProbGradient(const LSTMParams &params, const Eigen::MatrixXd &inputs,
                       const Placement &actions, const Eigen::VectorXd &weights,
                       LSTMParams &grad);
/// sum_t H(pi_t) and its gradient.
double entropyGradient(const LSTMParams &params, const Eigen::MatrixXd &inputs,
                       LSTMParams &grad);

//===----------------------------------------------------------------------===//
// Optimisation
//===----------------------------------------------------------------------===//

/// Scales `grad` down to global norm `maxNorm` if it is longer; returns the
/// norm before clipping.
double clipGlobalNorm(Eigen::VectorXd &grad, double maxNorm);

/// Adam for gradient ascent (the objective is maximised).
class Adam {
public:
  Adam(Eigen::Index size, double learningRate, double beta1 = 0.9,
       double beta2 = 0.999, double epsilon = 1e-8);
  /// params += lr * mhat / (sqrt(vhat) + eps).
  void ascend(Eigen::VectorXd &params, const Eigen::VectorXd &grad);

private:
  double learningRate_, beta1_, beta2_, epsilon_;
  double beta1Power_ = 1, beta2Power_ = 1;
  Eigen::VectorXd m_, v_;
};

//===----------------------------------------------------------------------===//
// Policy
//===----------------------------------------------------------------------===//

/// How one episode explores (Policy::sample).
struct Exploration {
  /// Standard deviation of a perturbation, drawn once per episode, of the
  /// output weights that read the plan-dependent inputs (previous action,
  /// plan state) and of the output bias (NoisyNet-style): the whole plan is
  /// sampled from one consistently perturbed policy, so that a different
  /// stage-length or type preference is tried throughout, not at one step.
  double noise = 0;
  /// Types the episode may not use (empty: none), like masked ones.
  std::vector<bool> withheld;
};

/// What one sampling thread needs of its own.
struct Workspace {
  explicit Workspace(const PlacementProblem &problem) : state(problem) {}
  PlanState state;
  Eigen::MatrixXd noise; // T x (plan-dependent inputs + 1), last column bias
  Eigen::VectorXd weights;
};

/// The policy of one placement problem: its features, weights and optimiser.
/// The const members may run concurrently, each thread with its own
/// Workspace and ForwardCache.
class Policy {
public:
  static constexpr double maxGradNorm = 5;

  Policy(const PlacementProblem &problem, int hiddenSize, double learningRate,
         std::mt19937_64 &rng);

  /// Samples a placement, one layer at a time, feeding each choice back as
  /// the next step's previous-action and plan-state input. The forward pass
  /// stays in `cache` for gradient().
  Placement sample(std::mt19937_64 &rng, ForwardCache &cache,
                   Workspace &workspace,
                   const Exploration &exploration = {}) const;
  /// The arg max type at every step (fed back the same way).
  Placement mostLikely(ForwardCache &cache, Workspace &workspace) const;
  /// Makes `cache` hold the forward pass of the plan `actions`: its inputs
  /// (static features, previous actions and plan state), allowed types and
  /// probabilities.
  void forwardFor(const Placement &actions, ForwardCache &cache,
                  Workspace &workspace) const;
  /// Writes into `grad` the gradient of sum_t advantages[t] * log
  /// pi_t(a_t) + entropyBonus * sum_t H(pi_t), for the forward pass of
  /// `actions` in `cache`. Steps whose action is masked (only in infeasible
  /// plans, which have no probability to move) are left out.
  void gradient(const Placement &actions, ForwardCache &cache,
                const Eigen::VectorXd &advantages, double entropyBonus,
                Workspace &workspace, LSTMParams &grad) const;

  /// Adds `grad` to the pending update.
  void accumulate(const LSTMParams &grad);
  /// Applies the pending update: clips it to global norm maxGradNorm and
  /// ascends it with Adam.
  void step();

  /// Single-threaded conveniences, on the policy's own workspace and cache.
  Placement sample(std::mt19937_64 &rng);
  Placement mostLikely();
  /// log pi(actions).
  double logProbability(const Placement &actions);
  /// Adds the gradient of advantage * log pi(actions) + entropyBonus *
  /// sum_t H(pi_t) (or one advantage per step) to the pending update.
  void accumulate(const Placement &actions, double advantage,
                  double entropyBonus);
  void accumulate(const Placement &actions, const Eigen::VectorXd &advantages,
                  double entropyBonus);
  /// One REINFORCE step on one plan: accumulate(), then step().
  void reinforce(const Placement &actions, double advantage,
                 double entropyBonus);

  const LSTMParams &params() const { return params_; }
  const FeatureLayout &layout() const { return layout_; }

private:
  /// Forward pass into `cache`, the action of step t chosen by `choose(t)`
  /// (which reads cache.probs.col(t)); `exploration` as in sample().
  template <typename Choose>
  Placement rollout(ForwardCache &cache, Workspace &workspace,
                    const Exploration &exploration, Choose choose) const;

  /// W x + b for the static part of the inputs, the same in every episode
  /// until the next step().
  void projectStaticInputs();

  FeatureLayout layout_;
  Eigen::MatrixXd features_;  // previous-action and plan-state slots zero
  Eigen::MatrixXd projected_; // 4H x N, see projectStaticInputs()
  LSTMParams params_, grad_, pending_;
  Adam adam_;
  Workspace workspace_;
  ForwardCache cache_;
};

} // namespace heterps::planner::rl

#endif // HETERPS_PLANNER_RLPOLICY_H
