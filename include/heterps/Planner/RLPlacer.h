//===- RLPlacer.h - the HeterPS reinforcement-learning scheduler -*- C++
//-*-===//
//
// placeRL searches the placement space of Placement.h with the policy-gradient
// scheduler of the HeterPS paper.
//
// Policy. An LSTM reads the layers in their (topological) order, one step
// per layer, and after each step a linear layer and a softmax over its
// hidden state give a distribution over the T device types; the layer's type
// is sampled from it. A placement is therefore a sequence of N actions with
// probability prod_i pi(a_i | layers 0..i, a_0..a_{i-1}).
//
// Features of layer i (RLPolicy.h, FeatureLayout, has the exact layout):
//   - position: i / (N - 1), and sin/cos(pi * f * i / (N - 1)) for
//     f = 1, 2, 4, 8 (a one-hot of the index would not scale to 1000 layers
//     nor carry over between models of different depth);
//   - kind: one-hot over the 12 kinds of Layer::kind (conv, fc, matmul,
//     embedding, pool, norm, eltwise, activation, softmax, reduce, dropout,
//     shape); any other kind is all zeros;
//   - sizes: log1p(activation bytes) and log1p(parameter bytes), each divided
//     by its maximum over the model;
//   - times, per device type: the layer's ODT (communication time, as in the
//     paper) and its OCT (compute time, which drives the cost as much), each
//     log-scaled: log1p(1000 * x / max) / log1p(1000), max over all layers
//     and types, so three decades below the maximum stay distinguishable;
//   - autoregressive input: the one-hot of the type chosen for layer i - 1
//     (zeros for layer 0), which lets the policy learn to keep consecutive
//     layers together (every type switch opens a stage that needs devices).
//
// Reward. Plans are evaluated by PlacementProblem::evaluate. A feasible plan
// of cost c gets r = -log(c / c_ref), where c_ref is the cost of the
// cheapest feasible all-one-type plan (all T of them are evaluated first), or
// when none is feasible the cost of the first feasible plan seen. Log-costs
// make the reward scale-free (dollars or cents, small or large jobs). An
// infeasible plan gets r = -(10 + 10 * shortfall), shortfall in (0, 1]; the
// feasible reward is clamped at -9 (a plan e^9 ~ 8000 times dearer than
// c_ref, far beyond anything the cost model produces between plans of one
// problem), so every feasible plan outranks every infeasible one and nearer
// misses outrank farther ones.
//
// Training. REINFORCE with a moving-average baseline b <- decay * b +
// (1 - decay) * r (advantage A = r - b, b taken before the update) and an
// entropy bonus: each episode ascends A * log pi(plan) + entropyBonus *
// sum_i H(pi_i), one plan per update. The gradient (backpropagation through
// time) is clipped to global norm 5 and applied with Adam (beta1 0.9, beta2
// 0.999): Adam's per-parameter scaling makes learningRate work across
// reward scales and problem sizes, where plain SGD needs retuning. Two
// phases, as in the paper:
//   1. pre-training on `pretrainEpisodes` random plans (a quarter uniformly
//      random per layer, the rest random runs of types: a random number of
//      stages with random cut points and random types). Each is evaluated
//      and, when better than the baseline, used for an off-policy REINFORCE
//      update with its advantage: the policy learns to imitate the better
//      random plans. Worse ones are not pushed down: off-policy, that push
//      never stops (the gradient of log p does not vanish as p -> 0) and
//      drives the logits to extremes before on-policy training starts;
//   2. `episodes` on-policy episodes: REINFORCE on the policy's own samples,
//      with positive and negative advantages.
// At the end the most likely plan (arg max at every step) is evaluated too.
//
// The result is the best plan evaluated (PlacementEval::betterThan), with the
// search time and the number of evaluations (T + pretrain + episodes + 1 when
// the budget allows). The search is seeded: with a time budget that does not
// cut it short, the same seed gives the same plan.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_PLANNER_RLPLACER_H
#define HETERPS_PLANNER_RLPLACER_H

#include "heterps/Planner/Placement.h"

#include <cstdint>

namespace heterps::planner {

struct RLOptions {
  /// On-policy episodes: plans sampled from the policy, each evaluated and
  /// used for one REINFORCE update (after the pre-training episodes).
  int episodes = 2000;
  /// Pre-training episodes: random plans, each evaluated and used for one
  /// off-policy REINFORCE update before on-policy training starts.
  int pretrainEpisodes = 500;
  /// Size of the LSTM's hidden and cell state (at least 1).
  int hiddenSize = 32;
  /// Adam step size.
  double learningRate = 0.01;
  /// Weight of the policy's entropy (summed over the layers) in the
  /// objective; keeps the policy exploring instead of collapsing early.
  double entropyBonus = 0.1;
  /// Decay of the moving-average reward baseline: b <- decay * b +
  /// (1 - decay) * reward.
  double baselineDecay = 0.9;
  /// Seed of the random generator (weights, random plans, sampling).
  uint64_t seed = 1;
  /// Wall-clock limit in seconds; the search stops at the first episode
  /// boundary past it. The T all-one-type plans are always evaluated.
  double timeBudgetSeconds = 10;
};

/// The RL scheduler; see the file comment.
SearchResult placeRL(const PlacementProblem &problem, const RLOptions &options);

} // namespace heterps::planner

#endif // HETERPS_PLANNER_RLPLACER_H
