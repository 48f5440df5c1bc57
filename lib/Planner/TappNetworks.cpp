//===- TappNetworks.cpp - TAPP's networks, forward and backward -----------===//
//
// See TappNetworks.h for the notation.
//
//===----------------------------------------------------------------------===//

#include "heterps/Planner/TappNetworks.h"

#include <algorithm>
#include <cmath>

using namespace heterps::planner;
using namespace heterps::planner::tapp;
using Eigen::Index;
using Eigen::MatrixXd;
using Eigen::VectorXd;

//===----------------------------------------------------------------------===//
// Features
//===----------------------------------------------------------------------===//

MatrixXd tapp::layerFeatures(const PlacementProblem &problem) {
  FeatureLayout layout{problem.numTypes()};
  MatrixXd shared = rl::layerFeatures(problem);
  Index n = shared.cols();
  MatrixXd x(static_cast<Index>(layout.size()), n);
  x.topRows(static_cast<Index>(layout.sharedSize())) =
      shared.topRows(static_cast<Index>(layout.sharedSize()));

  double maxFlops = 0;
  for (const Layer &l : problem.layers())
    maxFlops = std::max(maxFlops, std::log1p(static_cast<double>(l.flops)));
  for (Index i = 0; i < n; ++i) {
    const Layer &l = problem.layers()[static_cast<size_t>(i)];
    x(layout.unknownKind(), i) = rl::kindIndex(l.kind) < 0 ? 1 : 0;
    x(layout.flops(), i) =
        maxFlops > 0 ? std::log1p(static_cast<double>(l.flops)) / maxFlops : 0;
    x(layout.nextLayer(), i) =
        i + 1 < n ? static_cast<double>(i + 1) / static_cast<double>(n - 1)
                  : -0.1;
  }
  return x;
}

//===----------------------------------------------------------------------===//
// Parameters
//===----------------------------------------------------------------------===//

Params::Params(size_t featureSize, size_t hiddenSize, size_t groups,
               size_t types, double localityPrior)
    : featureSize_(static_cast<Index>(featureSize)),
      hiddenSize_(static_cast<Index>(hiddenSize)),
      numGroups_(static_cast<Index>(groups)),
      numTypes_(static_cast<Index>(types)), localityPrior_(localityPrior) {
  Index d = featureSize_, h = hiddenSize_, g = numGroups_, t = numTypes_;
  Index e = groupInputSize();
  const Block shapes[NumBlocks] = {
      {"W1", 0, h, d}, {"b1", 0, h, 1},     {"W2", 0, g, h},
      {"b2", 0, g, 1}, {"Wq", 0, h, e},     {"Wk", 0, h, e},
      {"Wv", 0, h, e}, {"Wo", 0, t, h + e}, {"bo", 0, t, 1}};
  Index offset = 0;
  for (int k = 0; k < NumBlocks; ++k) {
    blocks_[k] = shapes[k];
    blocks_[k].offset = offset;
    offset += shapes[k].rows * shapes[k].cols;
  }
  flat_ = VectorXd::Zero(offset);
}

void Params::initRandom(std::mt19937_64 &rng) {
  for (const Block &b : blocks_) {
    if (b.cols == 1) // a bias
      continue;
    double scale = 1 / std::sqrt(static_cast<double>(b.cols));
    std::uniform_real_distribution<double> uniform(-scale, scale);
    for (Index k = 0; k < b.rows * b.cols; ++k)
      flat_[b.offset + k] = uniform(rng);
  }
}

Eigen::Map<MatrixXd> Params::operator[](BlockId id) {
  const Block &b = blocks_[id];
  return {flat_.data() + b.offset, b.rows, b.cols};
}

Eigen::Map<const MatrixXd> Params::operator[](BlockId id) const {
  const Block &b = blocks_[id];
  return {flat_.data() + b.offset, b.rows, b.cols};
}

//===----------------------------------------------------------------------===//
// Forward
//===----------------------------------------------------------------------===//

Placement Sample::placement() const {
  Placement plan(groupOfLayer.size());
  for (size_t i = 0; i < plan.size(); ++i)
    plan[i] = typeOfGroup[groupOfLayer[i]];
  return plan;
}

/// Softmax of every column, shifted by its maximum for stability.
static void softmaxColumns(MatrixXd &m) {
  for (Index c = 0; c < m.cols(); ++c) {
    auto col = m.col(c);
    col = (col.array() - col.maxCoeff()).exp();
    col /= col.sum();
  }
}

void tapp::partitionForward(const Params &params, const MatrixXd &features,
                            Pass &pass) {
  pass.hidden.noalias() = params[Params::W1] * features;
  pass.hidden.colwise() += params[Params::B1].col(0);
  pass.hidden = pass.hidden.array().tanh().matrix();
  pass.groupProbs.noalias() = params[Params::W2] * pass.hidden;
  pass.groupProbs.colwise() += params[Params::B2].col(0);
  // The locality prior: -kappa * (G * pos_i - g - 1/2)^2.
  Index n = features.cols(), g = params.numGroups();
  if (params.localityPrior() != 0)
    for (Index i = 0; i < n; ++i) {
      double at =
          n > 1 ? static_cast<double>(g * i) / static_cast<double>(n - 1) : 0;
      for (Index k = 0; k < g; ++k) {
        double d = at - static_cast<double>(k) - 0.5;
        pass.groupProbs(k, i) -= params.localityPrior() * d * d;
      }
    }
  softmaxColumns(pass.groupProbs);
}

void tapp::buildGroupInputs(const MatrixXd &features,
                            const std::vector<size_t> &groupOfLayer,
                            size_t numGroups, Pass &pass) {
  Index d = features.rows(), n = features.cols();
  Index g = static_cast<Index>(numGroups);
  // Column of each non-empty group, in ascending group order.
  std::vector<Index> column(numGroups, -1);
  for (size_t layerGroup : groupOfLayer)
    column[layerGroup] = 0;
  pass.groups.clear();
  for (size_t k = 0; k < numGroups; ++k)
    if (column[k] == 0) {
      column[k] = static_cast<Index>(pass.groups.size());
      pass.groups.push_back(k);
    }
  Index m = static_cast<Index>(pass.groups.size());
  pass.groupInputs = MatrixXd::Zero(d + 1 + g, m);
  VectorXd count = VectorXd::Zero(m);
  for (Index i = 0; i < n; ++i) {
    Index c = column[groupOfLayer[static_cast<size_t>(i)]];
    pass.groupInputs.col(c).head(d) += features.col(i);
    count[c] += 1;
    // Layer i feeds layer i + 1: a dependency when that is another group.
    if (i + 1 < n) {
      size_t next = groupOfLayer[static_cast<size_t>(i + 1)];
      if (column[next] != c)
        pass.groupInputs(d + 1 + static_cast<Index>(next), c) = 1;
    }
  }
  for (Index c = 0; c < m; ++c) {
    pass.groupInputs.col(c).head(d) /= count[c];
    pass.groupInputs(d, c) = count[c] / static_cast<double>(n);
  }
}

void tapp::allocationForward(const Params &params, Pass &pass) {
  const MatrixXd &u = pass.groupInputs;
  Index h = params.hiddenSize(), e = params.groupInputSize();
  pass.query.noalias() = params[Params::Wq] * u;
  pass.key.noalias() = params[Params::Wk] * u;
  pass.value.noalias() = params[Params::Wv] * u;
  pass.attention.noalias() = pass.key.transpose() * pass.query;
  pass.attention /= std::sqrt(static_cast<double>(h));
  softmaxColumns(pass.attention);
  pass.context.noalias() = pass.value * pass.attention;
  auto wo = params[Params::Wo];
  pass.typeProbs.noalias() = wo.leftCols(h) * pass.context;
  pass.typeProbs.noalias() += wo.rightCols(e) * u;
  pass.typeProbs.colwise() += params[Params::Bo].col(0);
  softmaxColumns(pass.typeProbs);
}

template <typename Column> static size_t argMax(const Column &p) {
  Index best;
  p.maxCoeff(&best);
  return static_cast<size_t>(best);
}

/// Both networks, each choice made by `choose(probability column)`.
template <typename Choose>
static Sample rollout(const Params &params, const MatrixXd &features,
                      Pass &pass, Choose choose) {
  Sample s;
  partitionForward(params, features, pass);
  s.groupOfLayer.resize(static_cast<size_t>(features.cols()));
  for (Index i = 0; i < features.cols(); ++i)
    s.groupOfLayer[static_cast<size_t>(i)] = choose(pass.groupProbs.col(i));
  size_t groups = static_cast<size_t>(params.numGroups());
  buildGroupInputs(features, s.groupOfLayer, groups, pass);
  allocationForward(params, pass);
  s.typeOfGroup.assign(groups, 0);
  for (size_t m = 0; m < pass.groups.size(); ++m)
    s.typeOfGroup[pass.groups[m]] =
        choose(pass.typeProbs.col(static_cast<Index>(m)));
  return s;
}

Sample tapp::sample(const Params &params, const MatrixXd &features,
                    std::mt19937_64 &rng, Pass &pass) {
  return rollout(params, features, pass,
                 [&](const auto &p) { return rl::drawIndex(p, rng); });
}

Sample tapp::mostLikely(const Params &params, const MatrixXd &features,
                        Pass &pass) {
  return rollout(params, features, pass,
                 [](const auto &p) { return argMax(p); });
}

void tapp::forward(const Params &params, const MatrixXd &features,
                   const Sample &s, Pass &pass) {
  partitionForward(params, features, pass);
  buildGroupInputs(features, s.groupOfLayer,
                   static_cast<size_t>(params.numGroups()), pass);
  allocationForward(params, pass);
}

/// The type chosen for each non-empty group, in the pass's column order.
static Placement groupActions(const Pass &pass, const Sample &s) {
  Placement actions(pass.groups.size());
  for (size_t m = 0; m < actions.size(); ++m)
    actions[m] = s.typeOfGroup[pass.groups[m]];
  return actions;
}

/// sum over columns of log probs(actions[c], c).
static double sumLogProb(const MatrixXd &probs, const Placement &actions) {
  double sum = 0;
  for (Index c = 0; c < probs.cols(); ++c)
    sum += std::log(probs(static_cast<Index>(actions[c]), c));
  return sum;
}

double tapp::logProbability(const Pass &pass, const Sample &s) {
  return sumLogProb(pass.groupProbs, s.groupOfLayer) +
         sumLogProb(pass.typeProbs, groupActions(pass, s));
}

/// Sum of the entropies of the columns of `probs` (rl::entropy's).
static double entropyOf(const MatrixXd &probs) {
  rl::ForwardCache head;
  head.probs = probs;
  return rl::entropy(head);
}

double tapp::entropy(const Pass &pass) {
  return entropyOf(pass.groupProbs) + entropyOf(pass.typeProbs);
}

//===----------------------------------------------------------------------===//
// Backward
//===----------------------------------------------------------------------===//

/// dJ/dlogits of a softmax head, J = weight * sum log p(a) + entropyBonus *
/// sum H(p): the RL policy's formula (rl::objectiveLogitGradient), which
/// reads only the probabilities of its cache.
static MatrixXd headGradient(const MatrixXd &probs, const Placement &actions,
                             double weight, double entropyBonus) {
  rl::ForwardCache head;
  head.probs = probs;
  rl::objectiveLogitGradient(
      head, actions, VectorXd::Constant(probs.cols(), weight), entropyBonus);
  return std::move(head.dLogits);
}

double tapp::gradient(const Params &params, const MatrixXd &features,
                      const Pass &pass, const Sample &s, double weight,
                      double entropyBonus, Params &grad) {
  if (grad.flat().size() != params.flat().size())
    grad = params;
  Index h = params.hiddenSize(), e = params.groupInputSize();

  // Partition: z = W2 h + b2, h = tanh(a), a = W1 x + b1.
  MatrixXd dz =
      headGradient(pass.groupProbs, s.groupOfLayer, weight, entropyBonus);
  grad[Params::W2].noalias() = dz * pass.hidden.transpose();
  grad[Params::B2] = dz.rowwise().sum();
  MatrixXd da = params[Params::W2].transpose() * dz;
  da.array() *= 1 - pass.hidden.array().square();
  grad[Params::W1].noalias() = da * features.transpose();
  grad[Params::B1] = da.rowwise().sum();

  // Allocation: y = Wo [C; U] + bo.
  MatrixXd dy =
      headGradient(pass.typeProbs, groupActions(pass, s), weight, entropyBonus);
  const MatrixXd &u = pass.groupInputs;
  auto dWo = grad[Params::Wo];
  dWo.leftCols(h).noalias() = dy * pass.context.transpose();
  dWo.rightCols(e).noalias() = dy * u.transpose();
  grad[Params::Bo] = dy.rowwise().sum();
  // C = Vv P.
  MatrixXd dc = params[Params::Wo].leftCols(h).transpose() * dy;
  MatrixXd dv = dc * pass.attention.transpose();
  MatrixXd dp = pass.value.transpose() * dc;
  // P = column softmax of S: dS_jg = P_jg (dP_jg - sum_k P_kg dP_kg).
  const MatrixXd &p = pass.attention;
  Eigen::RowVectorXd weighted = (p.array() * dp.array()).colwise().sum();
  MatrixXd ds = p.array() * (dp.rowwise() - weighted).array();
  // S = K^T Q / sqrt(H).
  ds /= std::sqrt(static_cast<double>(h));
  MatrixXd dq = pass.key * ds;
  MatrixXd dk = pass.query * ds.transpose();
  grad[Params::Wq].noalias() = dq * u.transpose();
  grad[Params::Wk].noalias() = dk * u.transpose();
  grad[Params::Wv].noalias() = dv * u.transpose();

  return weight * logProbability(pass, s) + entropyBonus * entropy(pass);
}
