//===- TappNetworks.h - TAPP's partition and allocation nets ----*- C++ -*-===//
//
// The two networks of the TAPP search (Tapp.h), exposed so that unit tests
// can check the maths: the layer features, the parameters, sampling a plan,
// its log-probability and entropy, and their gradients (hand-written
// backpropagation through both networks).
//
// This header needs Eigen (link Eigen3::Eigen); Tapp.h does not.
//
// Notation: N layers with D features each (the columns of X), G groups of
// which M are non-empty, T device types, H hidden units (also the attention
// size).
//
// Partition network, per layer i (a feed-forward net, as in the paper):
//   h_i = tanh(W1 x_i + b1)
//   p_i(g) = softmax_g(W2 h_i + b2 - kappa * (G * pos_i - g - 1/2)^2)
// and layer i joins a group g_i sampled from p_i. The last term, a fixed
// locality prior (pos_i = i / (N - 1)), makes the groups start as G
// contiguous blocks of layers in order, like pipeline stages: with groups of
// scattered layers, group vectors all look alike and every group gets the
// same type. The learned terms can override it.
//
// Allocation network, over the M non-empty groups (empty ones are skipped).
// Group g's input u_g (E = D + 1 + G values) is the paper's "word vector" of
// the group, the mean of its layers' features, then the share of the layers
// it holds, then its dependencies: bit j is 1 when a layer of g feeds a layer
// of another group j (in our chain, layer i feeds layer i + 1). With U the
// E x M matrix of these inputs, scaled dot-product self-attention:
//   Q = Wq U, K = Wk U, Vv = Wv U                              (H x M)
//   P = softmax of each column of K^T Q / sqrt(H)             (M x M)
//   C = Vv P                     (c_g = sum_j P_jg v_j, the group's context)
// then a linear layer over the context and the group's own input (a residual
// path: a group's type depends first on its own costs):
//   q_g = softmax(Wo [c_g; u_g] + bo)                          (T values)
// and group g runs on a type t_g sampled from q_g. Layer i runs on t_{g_i}.
//
// A plan's log-probability is sum_i log p_i(g_i) + sum_g log q_g(t_g), the
// second sum conditional on the grouping: U depends on the sampled groups,
// a discrete choice, and is not differentiated.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_PLANNER_TAPPNETWORKS_H
#define HETERPS_PLANNER_TAPPNETWORKS_H

#include "heterps/Planner/Placement.h"
#include "heterps/Planner/RLPolicy.h"

#include <Eigen/Dense>

#include <random>
#include <vector>

namespace heterps::planner::tapp {

//===----------------------------------------------------------------------===//
// Features
//===----------------------------------------------------------------------===//

/// Where each feature of a layer sits (the paper's operation name, parameter
/// metrics and associated next layer).
struct FeatureLayout {
  size_t numTypes = 0;

  /// First, the static features of the RL scheduler (rl::FeatureLayout, up
  /// to its plan-dependent slots): position (i / (N - 1) and sin/cos), the
  /// one-hot of the kind (rl::kindIndex), log-scaled activation and parameter
  /// bytes, OCT, ODT and the price of the devices the layer alone needs, per
  /// type.
  size_t sharedSize() const {
    return rl::FeatureLayout{numTypes}.previousAction();
  }
  /// 1 when the kind is none of rl::kindIndex's (the paper's "unknown").
  size_t unknownKind() const { return sharedSize(); }
  /// log1p(FLOPs per sample), divided by its maximum over the model.
  size_t flops() const { return unknownKind() + 1; }
  /// The associated next layer: its position (i + 1) / (N - 1), or -0.1
  /// when there is none (the paper's filler).
  size_t nextLayer() const { return flops() + 1; }
  size_t size() const { return nextLayer() + 1; }
};

/// The features of every layer of `problem`, one column per layer.
Eigen::MatrixXd layerFeatures(const PlacementProblem &problem);

//===----------------------------------------------------------------------===//
// Parameters
//===----------------------------------------------------------------------===//

/// The weights of both networks in one flat vector, so that one optimiser
/// updates them jointly.
class Params {
public:
  enum BlockId { W1, B1, W2, B2, Wq, Wk, Wv, Wo, Bo, NumBlocks };
  struct Block {
    const char *name;
    Eigen::Index offset, rows, cols;
  };

  Params() = default;
  /// All zeros; `groups` and `types` at least 1.
  Params(size_t featureSize, size_t hiddenSize, size_t groups, size_t types,
         double localityPrior = 0);

  /// Weights uniform in [-1/sqrt(fan in), 1/sqrt(fan in)], biases 0.
  void initRandom(std::mt19937_64 &rng);

  Eigen::Index featureSize() const { return featureSize_; }
  Eigen::Index hiddenSize() const { return hiddenSize_; }
  Eigen::Index numGroups() const { return numGroups_; }
  Eigen::Index numTypes() const { return numTypes_; }
  /// E = D + 1 + G: a group's input to the allocation network.
  Eigen::Index groupInputSize() const { return featureSize_ + 1 + numGroups_; }
  /// kappa, the weight of the partition's locality prior (not learned).
  double localityPrior() const { return localityPrior_; }

  /// A block as a matrix (biases are one column).
  Eigen::Map<Eigen::MatrixXd> operator[](BlockId id);
  Eigen::Map<const Eigen::MatrixXd> operator[](BlockId id) const;
  const Block &block(BlockId id) const { return blocks_[id]; }

  Eigen::VectorXd &flat() { return flat_; }
  const Eigen::VectorXd &flat() const { return flat_; }

private:
  Eigen::Index featureSize_ = 0, hiddenSize_ = 0, numGroups_ = 0, numTypes_ = 0;
  double localityPrior_ = 0;
  Block blocks_[NumBlocks] = {};
  Eigen::VectorXd flat_;
};

//===----------------------------------------------------------------------===//
// Forward
//===----------------------------------------------------------------------===//

/// A plan as the networks choose it.
struct Sample {
  std::vector<size_t> groupOfLayer; // N values < G
  std::vector<size_t> typeOfGroup;  // G values; those of empty groups unused
  /// The device type of every layer: typeOfGroup[groupOfLayer[i]].
  Placement placement() const;
  bool operator==(const Sample &o) const {
    return groupOfLayer == o.groupOfLayer && typeOfGroup == o.typeOfGroup;
  }
};

/// What the forward passes keep for the backward pass.
struct Pass {
  // Partition network.
  Eigen::MatrixXd hidden;     // H x N, h_i
  Eigen::MatrixXd groupProbs; // G x N, p_i
  // Allocation network; column m is group groups[m].
  std::vector<size_t> groups;  // the non-empty groups, ascending (M)
  Eigen::MatrixXd groupInputs; // E x M, U
  Eigen::MatrixXd query, key, value, context; // H x M
  Eigen::MatrixXd attention;                  // M x M, P
  Eigen::MatrixXd typeProbs;                  // T x M, q_g
};

/// The partition network over every layer: pass.hidden, pass.groupProbs.
void partitionForward(const Params &params, const Eigen::MatrixXd &features,
                      Pass &pass);
/// pass.groups and pass.groupInputs for the grouping `groupOfLayer`.
void buildGroupInputs(const Eigen::MatrixXd &features,
                      const std::vector<size_t> &groupOfLayer, size_t numGroups,
                      Pass &pass);
/// The allocation network over pass.groupInputs: attention and typeProbs.
void allocationForward(const Params &params, Pass &pass);

/// Samples a plan: each layer's group, then each non-empty group's type.
/// `pass` keeps both forward passes for gradient().
Sample sample(const Params &params, const Eigen::MatrixXd &features,
              std::mt19937_64 &rng, Pass &pass);
/// The arg max group of every layer, then the arg max type of every group.
Sample mostLikely(const Params &params, const Eigen::MatrixXd &features,
                  Pass &pass);
/// Both forward passes for the plan `s` (teacher forcing).
void forward(const Params &params, const Eigen::MatrixXd &features,
             const Sample &s, Pass &pass);

/// log pi(s) = sum_i log p_i(g_i) + sum_g log q_g(t_g), from a forward pass.
double logProbability(const Pass &pass, const Sample &s);
/// sum_i H(p_i) + sum_g H(q_g), from a forward pass.
double entropy(const Pass &pass);

//===----------------------------------------------------------------------===//
// Backward
//===----------------------------------------------------------------------===//

/// Writes into `grad` (resized as needed) the gradient, with respect to every
/// parameter, of
///   J = weight * log pi(s) + entropyBonus * entropy,
/// for the forward pass of `s` in `pass`; returns J.
double gradient(const Params &params, const Eigen::MatrixXd &features,
                const Pass &pass, const Sample &s, double weight,
                double entropyBonus, Params &grad);

} // namespace heterps::planner::tapp

#endif // HETERPS_PLANNER_TAPPNETWORKS_H
