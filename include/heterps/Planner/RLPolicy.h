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
/// they mean).
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
  /// One-hot of the previous layer's device type (the action of step t-1).
  size_t previousAction() const { return commTime() + numTypes; }
  size_t size() const { return previousAction() + numTypes; }
};

/// Index of `kind` among the 12 known layer kinds, or -1.
int kindIndex(const std::string &kind);

/// The features of every layer, one column per layer, with the
/// previous-action slots left zero.
Eigen::MatrixXd layerFeatures(const std::vector<Layer> &layers,
                              size_t numTypes);

/// Writes the one-hot of actions[t - 1] into the previous-action slots of
/// column t (and zeros into those of column 0).
void setPreviousActions(Eigen::MatrixXd &inputs, const FeatureLayout &layout,
                        const Placement &actions);

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
  /// forget-gate bias, 1 (remember by default); d = 0.
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

  Eigen::VectorXd &flat() { return flat_; }
  const Eigen::VectorXd &flat() const { return flat_; }
  /// W, U, b, V, d, in that order.
  std::vector<Block> blocks() const;

private:
  double *at(int block) { return flat_.data() + offsets_[block]; }
  const double *at(int block) const { return flat_.data() + offsets_[block]; }

  Eigen::Index inputSize_ = 0, hiddenSize_ = 0, numActions_ = 0;
  Eigen::Index offsets_[5] = {0, 0, 0, 0, 0};
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
  // Scratch of the backward pass.
  Eigen::MatrixXd dLogits, dHidden, dGates;
};

/// Sizes the cache for N = cache.inputs.cols() steps and computes W x_t + b
/// for every step from cache.inputs (which the caller has filled).
void projectInputs(const LSTMParams &params, ForwardCache &cache);
/// Step t: adds U h_{t-1} to the projected inputs in cache.gates, applies the
/// non-linearities, and computes c_t, h_t and the probabilities.
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

/// The policy of one placement problem: its features, weights, optimiser and
/// forward cache.
class Policy {
public:
  static constexpr double maxGradNorm = 5;

  Policy(const std::vector<Layer> &layers, size_t numTypes, int hiddenSize,
         double learningRate, std::mt19937_64 &rng);

  /// Samples a placement, one layer at a time, feeding each choice back as
  /// the next step's previous-action input.
  Placement sample(std::mt19937_64 &rng);
  /// The arg max type at every step (fed back the same way).
  Placement mostLikely();
  /// log pi(actions).
  double logProbability(const Placement &actions);
  /// One REINFORCE step: ascends advantage * log pi(actions) +
  /// entropyBonus * sum_t H(pi_t) by Adam on the clipped gradient. Reuses
  /// the forward pass of the last sample() when it produced `actions`.
  void reinforce(const Placement &actions, double advantage,
                 double entropyBonus);

  const LSTMParams &params() const { return params_; }
  const FeatureLayout &layout() const { return layout_; }

private:
  /// Forward pass for `actions`, chosen by `choose(t)` after step t (which
  /// reads cache_.probs.col(t)).
  template <typename Choose> Placement rollout(Choose choose);
  /// Makes cache_ hold the forward pass of `actions`.
  void forwardFor(const Placement &actions);

  FeatureLayout layout_;
  Eigen::MatrixXd features_; // previous-action slots zero
  LSTMParams params_, grad_;
  Adam adam_;
  ForwardCache cache_;
  Eigen::VectorXd weights_;
  Placement cached_; // the actions cache_ holds, if cacheValid_
  bool cacheValid_ = false;
};

} // namespace heterps::planner::rl

#endif // HETERPS_PLANNER_RLPOLICY_H
