//===- RLPlacer.h - the HeterPS RL scheduler -----------------*- C++ -*-===//
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
//     paper) and its OCT (compute time), log-scaled: log1p(1000 * x / max) /
//     log1p(1000), so three decades below the maximum stay distinguishable;
//   - per device type, the price of the devices the layer alone would need
//     to meet the floor (the greedy baseline's view), log-scaled;
//   - autoregressive inputs: the one-hot of the type chosen for layer i - 1,
//     and the state of the partial plan (PlanState): per type, the devices
//     the layer would add to the open stage or a new one, the type's devices
//     in use, the stage's time against the floor; the open stage's load and
//     length, the slowest closed stage. They let the policy see what a
//     choice costs given the choices before it.
// Types that cannot meet the floor any more with the devices their max_count
// leaves are masked (probability 0): no feasible plan uses them.
//
// Reward. Plans are evaluated by PlacementProblem::evaluate. A feasible plan
// of cost c gets r = -log(c / c_ref), where c_ref is the cost of the
// cheapest feasible all-one-type plan (all T of them are evaluated first), or
// when none is feasible the cost of the first feasible plan seen. Log-costs
// make the reward scale-free. An infeasible plan gets r = -(10 + 10 *
// shortfall), shortfall in (0, 1]; the feasible reward is clamped at -9, so
// every feasible plan outranks every infeasible one.
//
// Training. Two phases, as in the paper:
//   1. pre-training on `pretrainEpisodes` random plans (a quarter uniformly
//      random per layer, the rest random runs of types). Each one better
//      than a moving-average baseline gets an off-policy REINFORCE update
//      with its advantage: the policy learns to imitate the better random
//      plans. Worse ones are not pushed down (off-policy, that push never
//      stops and drives the logits to extremes);
//   2. on-policy REINFORCE on batches of `batchSize` plans sampled from the
//      policy. Per step the return is the reward with the cost of the plan
//      before that step taken out, and the baseline is the mean return of
//      the batch's other plans (leave-one-out, unbiased), normalised by the
//      batch's spread. Exploration: an entropy bonus; per plan a Gaussian
//      perturbation of the output weights that read the autoregressive
//      inputs (NoisyNet-style: one consistent change of preference over the
//      whole plan); and, with three types or more, batches that withhold
//      some types. Self-imitation: the `elites` best plans seen get an extra
//      update where they beat the batch, so that good rare samples are not
//      forgotten. Polish: the batch's best plan is improved by local moves
//      on its stages (LocalSearch.h, at most `polishEvaluations`
//      evaluations) and the result joins the elites, so the policy learns
//      from it. Refinement: a polished plan better than all before it is
//      first moved along the caps on its largest stage time E (the
//      cheapest plan, of any types and stages with the limits kept, whose
//      stages all fit under E, under multiples of E from 0.5 to 3, or just
//      below the E of each plan so found: Exact.h's CheapestUnderCap),
//      then refined over its sequence of stage types (Rebalance.h: exact
//      stage boundaries per sequence, a descent over neighbouring
//      sequences); those plans reach the tracker only. The policy finds
//      the region of E worth paying for, the refinement the cheapest plan
//      there; with four device types and binding limits the policy and the
//      polish alone miss the optimum by up to 15-40% in 10 s.
// Gradients (backpropagation through time) are clipped to global norm 5 and
// applied with Adam. At the end the most likely plan is evaluated too.
//
// The result is the best plan evaluated (PlacementEval::betterThan), with the
// search time and the number of evaluations. The search is seeded: with a
// time budget that does not cut it short, the same seed gives the same plan,
// whatever the number of threads.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_PLANNER_RLPLACER_H
#define HETERPS_PLANNER_RLPLACER_H

#include "heterps/Planner/Placement.h"

#include <cstdint>

namespace heterps::planner {

struct RLOptions {
  /// Cap on the on-policy episodes (plans sampled from the policy, each
  /// evaluated), after the pre-training episodes. Training stops at the cap
  /// or at the time budget, whichever comes first.
  int episodes = 1000000;
  /// Pre-training episodes: random plans, each evaluated and used for one
  /// off-policy REINFORCE update before on-policy training starts.
  int pretrainEpisodes = 500;
  /// Size of the LSTM's hidden and cell state (at least 1).
  int hiddenSize = 16;
  /// Adam step size.
  double learningRate = 0.01;
  /// Weight of the policy's entropy (summed over the layers) in the
  /// objective; keeps the policy exploring instead of collapsing early.
  double entropyBonus = 0.1;
  /// Decay of the moving-average reward baseline of pre-training: b <- decay
  /// * b + (1 - decay) * reward.
  double baselineDecay = 0.9;
  /// Plans sampled per on-policy update.
  int batchSize = 16;
  /// Best plans kept for self-imitation, and the weight of their updates.
  int elites = 4;
  double selfImitation = 1;
  /// Standard deviation of the per-episode noise on the policy's output
  /// weights (Exploration::noise); 0 samples from the policy itself.
  double explorationNoise = 1;
  /// Probability that a batch withholds some device types (with three types
  /// or more).
  double withholdProbability = 0.5;
  /// Evaluations of local improvement (LocalSearch.h) spent on each batch's
  /// best plan; the improved plan joins the elites the policy imitates. 0
  /// leaves the search to the policy alone.
  int64_t polishEvaluations = 200;
  /// Whether a polished plan better than every earlier one also gets its
  /// stage boundaries refined exactly for its sequence of stage types and
  /// the neighbouring sequences (Rebalance.h).
  bool rebalance = true;
  /// Whether a polished plan better than every earlier one is first moved
  /// along the caps on its largest stage time (see the file comment).
  bool capRefinement = true;
  /// Threads sampling plans and computing gradients. The result does not
  /// depend on it.
  int threads = 2;
  /// Seed of the random generator (weights, random plans, sampling).
  uint64_t seed = 1;
  /// Wall-clock limit in seconds; the search stops at the first batch
  /// boundary past it. The T all-one-type plans are always evaluated.
  double timeBudgetSeconds = 10;
};

/// The RL scheduler; see the file comment.
SearchResult placeRL(const PlacementProblem &problem, const RLOptions &options);

} // namespace heterps::planner

#endif // HETERPS_PLANNER_RLPLACER_H
