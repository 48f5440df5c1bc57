//===- RLPlacerTest.cpp - LSTM policy gradients, REINFORCE, placeRL -------===//

#include "heterps/Planner/RLPlacer.h"
#include "heterps/Planner/Exact.h"
#include "heterps/Planner/RLPolicy.h"

#include "gtest/gtest.h"

#include <chrono>
#include <cmath>
#include <random>

using namespace heterps::planner;
using namespace heterps::planner::rl;
using Eigen::MatrixXd;
using Eigen::VectorXd;

namespace {

//===----------------------------------------------------------------------===//
// Problems
//===----------------------------------------------------------------------===//

/// Three types with many devices: cpu $0.001/s, gpu $0.01/s, mid $0.004/s;
/// B = 100, one epoch of 100000 samples.
ClusterSpec smallSpec() {
  ClusterSpec spec;
  spec.deviceTypes = {{"cpu", "cpu", 3.6, 400, 1, 1, 1, 1},
                      {"gpu", "cuda", 36, 400, 1, 1, 1, 1},
                      {"mid", "cuda", 14.4, 400, 1, 1, 1, 1}};
  spec.job = {100, 100000, 1, 0};
  return spec;
}

/// A layer with compute times (b0 = B, fully parallel) on cpu, gpu and mid.
Layer smallLayer(const char *kind, double cpu, double gpu, double mid) {
  Layer l;
  l.name = "l";
  l.kind = kind;
  l.flops = 1000;
  l.paramBytes = 100;
  l.activationBytes = 100;
  l.costs = {{cpu, 0, 1, 1, 100}, {gpu, 0, 1, 1, 100}, {mid, 0, 1, 1, 100}};
  return l;
}

/// 8 layers whose distinct costs make one plan the unique optimum at a
/// limit of 20000 samples/s: gpu for the first three layers, mid for the
/// next three, cpu for the last two ($0.875, against $0.915 for the
/// runner-up and $1.10 for the best all-one-type plan, all on mid).
std::vector<Layer> smallLayers() {
  return {smallLayer("conv", 0.20, 0.010, 0.040),
          smallLayer("conv", 0.22, 0.011, 0.042),
          smallLayer("conv", 0.21, 0.012, 0.041),
          smallLayer("matmul", 0.18, 0.020, 0.030),
          smallLayer("matmul", 0.17, 0.021, 0.031),
          smallLayer("norm", 0.19, 0.019, 0.029),
          smallLayer("fc", 0.080, 0.015, 0.030),
          smallLayer("fc", 0.085, 0.016, 0.032)};
}
constexpr double smallLimit = 20000;

/// A cheap slow CPU and two GPU generations (as in the placement benchmark).
ClusterSpec chainSpec() {
  ClusterSpec spec;
  spec.deviceTypes = {{"cpu", "cpu", 0.04, 10, 1000, 100, 1.25, 0.9},
                      {"v100", "cuda", 2.42, 32, 10000, 900, 3.125, 0.95},
                      {"t4", "cuda", 0.53, 16, 4000, 300, 3.125, 0.95}};
  // Forward costs: the floors and limits of these tests were set for them.
  spec.job = {256, 1000000, 1, 0, Step::Inference};
  return spec;
}

/// `n` seeded layers, conv-like then fc-like, costed analytically.
std::vector<Layer> chainLayers(int n, const ClusterSpec &spec) {
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> noise(0.5, 1.5);
  std::vector<Layer> layers;
  for (int i = 0; i < n; ++i) {
    Layer l;
    l.name = "layer" + std::to_string(i);
    bool late = i >= n * 3 / 4;
    l.kind = late ? "fc" : "conv";
    l.flops = static_cast<int64_t>((late ? 2e6 : 2e8) * noise(rng));
    l.paramBytes = static_cast<int64_t>((late ? 4e7 : 4e5) * noise(rng));
    l.activationBytes = static_cast<int64_t>((late ? 1e4 : 1e6) * noise(rng));
    for (const DeviceType &d : spec.deviceTypes)
      l.costs.push_back(analyticCost(l, d, spec.job.batchSize, spec.job.step));
    layers.push_back(std::move(l));
  }
  return layers;
}

//===----------------------------------------------------------------------===//
// Helpers for the maths
//===----------------------------------------------------------------------===//

/// Parameters uniform in [-1, 1] (larger than initRandom's, so the gates
/// leave their linear range and the check covers the non-linearities).
LSTMParams randomParams(size_t d, size_t h, size_t t, uint64_t seed) {
  LSTMParams params(d, h, t);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> uniform(-1, 1);
  for (Eigen::Index k = 0; k < params.flat().size(); ++k)
    params.flat()[k] = uniform(rng);
  return params;
}

MatrixXd randomInputs(Eigen::Index d, Eigen::Index n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> uniform(-1, 1);
  MatrixXd x(d, n);
  for (Eigen::Index j = 0; j < n; ++j)
    for (Eigen::Index i = 0; i < d; ++i)
      x(i, j) = uniform(rng);
  return x;
}

/// sum_t weights[t] * log pi_t(actions[t]), from the forward pass alone.
double weightedLogProb(const LSTMParams &params, const MatrixXd &inputs,
                       const Placement &actions, const VectorXd &weights) {
  MatrixXd probs = stepProbabilities(params, inputs);
  double sum = 0;
  for (Eigen::Index t = 0; t < probs.cols(); ++t)
    sum +=
        weights[t] * std::log(probs(static_cast<Eigen::Index>(actions[t]), t));
  return sum;
}

/// Central differences of `f` at every parameter.
template <typename F>
VectorXd numericGradient(const LSTMParams &params, F f, double eps = 1e-5) {
  VectorXd grad(params.flat().size());
  LSTMParams probe = params;
  for (Eigen::Index k = 0; k < grad.size(); ++k) {
    double saved = probe.flat()[k];
    probe.flat()[k] = saved + eps;
    double up = f(probe);
    probe.flat()[k] = saved - eps;
    double down = f(probe);
    probe.flat()[k] = saved;
    grad[k] = (up - down) / (2 * eps);
  }
  return grad;
}

/// Per block: |analytic - numeric| / max(|analytic|, |numeric|) < tol.
void expectBlocksMatch(const LSTMParams &analytic, const VectorXd &numeric,
                       double tol) {
  for (const LSTMParams::Block &b : analytic.blocks()) {
    VectorXd a = analytic.flat().segment(b.offset, b.size);
    VectorXd n = numeric.segment(b.offset, b.size);
    double scale = std::max({a.norm(), n.norm(), 1e-12});
    EXPECT_LT((a - n).norm() / scale, tol)
        << "block " << b.name << ": analytic norm " << a.norm()
        << ", numeric norm " << n.norm();
  }
}

//===----------------------------------------------------------------------===//
// Features
//===----------------------------------------------------------------------===//

TEST(RLFeatures, LayoutAndValues) {
  FeatureLayout layout{3};
  // Position, kinds, bytes, then per type OCT, ODT, layer price and the
  // previous action, then the plan state.
  EXPECT_EQ(layout.size(), 9u + 12u + 2u + 4u * 3u + layout.planStateSize());
  EXPECT_EQ(layout.planStateSize(), 10u * 3u + 3u);
  EXPECT_EQ(kindIndex("conv"), 0);
  EXPECT_EQ(kindIndex("shape"), 11);
  EXPECT_EQ(kindIndex("constant"), -1);

  std::vector<Layer> layers = smallLayers();
  layers[1].kind = "mystery";
  MatrixXd x = layerFeatures(layers, 3);
  ASSERT_EQ(x.rows(), static_cast<Eigen::Index>(layout.size()));
  ASSERT_EQ(x.cols(), 8);
  // Scaled position and its first cosine.
  EXPECT_DOUBLE_EQ(x(layout.position(), 0), 0);
  EXPECT_DOUBLE_EQ(x(layout.position(), 7), 1);
  EXPECT_NEAR(x(layout.position() + 2, 7), -1, 1e-12); // cos(pi)
  // Kinds: one-hot, unknown all zeros.
  EXPECT_EQ(x.block(layout.kind(), 0, 12, 1).sum(), 1);
  EXPECT_EQ(x(layout.kind() + kindIndex("conv"), 0), 1);
  EXPECT_EQ(x.block(layout.kind(), 1, 12, 1).sum(), 0);
  EXPECT_EQ(x(layout.kind() + kindIndex("fc"), 7), 1);
  // Times are in [0, 1]; the largest OCT (layer 1 on cpu) maps to 1; ODT is
  // zero everywhere here.
  EXPECT_DOUBLE_EQ(x(layout.computeTime() + 0, 1), 1);
  EXPECT_GE(x.middleRows(layout.computeTime(), 3).minCoeff(), 0);
  EXPECT_EQ(x.middleRows(layout.commTime(), 3).norm(), 0);
  // Previous-action slots start empty and take the one-hot of a[t-1].
  EXPECT_EQ(x.middleRows(layout.previousAction(), 3).norm(), 0);
  setPreviousActions(x, layout, {2, 0, 1, 1, 1, 1, 1, 1});
  EXPECT_EQ(x.block(layout.previousAction(), 0, 3, 1).sum(), 0);
  EXPECT_EQ(x(layout.previousAction() + 2, 1), 1);
  EXPECT_EQ(x(layout.previousAction() + 0, 2), 1);
  EXPECT_EQ(x.middleRows(layout.previousAction(), 3).sum(), 7);
  // Without a problem there are no layer prices nor plan state.
  EXPECT_EQ(x.middleRows(layout.layerPrice(), 3).norm(), 0);
  EXPECT_EQ(x.bottomRows(layout.planStateSize()).norm(), 0);

  // With one, layer prices are in [0, 1] and order the types by price
  // times devices: the first layer needs 2 gpus ($0.02/s), 8 mids ($0.032/s)
  // or 40 cpus ($0.04/s) to meet the floor.
  ClusterSpec spec = smallSpec();
  PlacementProblem problem(spec, smallLayers(), smallLimit);
  MatrixXd withPrices = layerFeatures(problem);
  auto prices = withPrices.middleRows(layout.layerPrice(), 3);
  EXPECT_GE(prices.minCoeff(), 0);
  EXPECT_LE(prices.maxCoeff(), 1);
  EXPECT_LT(prices(1, 0), prices(2, 0));
  EXPECT_LT(prices(2, 0), prices(0, 0));
}

//===----------------------------------------------------------------------===//
// Plan state and masking
//===----------------------------------------------------------------------===//

/// Random placements of `n` layers over `types`: runs of random lengths.
Placement randomRuns(size_t n, size_t types, std::mt19937_64 &rng) {
  Placement plan(n);
  std::uniform_int_distribution<size_t> type(0, types - 1), length(1, 12);
  for (size_t i = 0; i < n;) {
    size_t t = type(rng), end = std::min(n, i + length(rng));
    for (; i < end; ++i)
      plan[i] = t;
  }
  return plan;
}

/// The job cost of `plan` with each stage at the fewest replicas meeting
/// the floor.
double costAtTheFloorsReplicas(const PlacementProblem &problem,
                               const Placement &plan) {
  const ClusterSpec &spec = problem.spec();
  int64_t batch = spec.job.batchSize;
  std::vector<Stage> stages = formStages(plan);
  for (Stage &s : stages)
    while (static_cast<double>(batch) /
               stageTimes(problem.layers(), s, batch, s.replicas).et() <
           problem.limit())
      ++s.replicas;
  return evaluatePlan(spec, problem.layers(), stages).cost;
}

TEST(PlanState, PartialCostOfWholePlanIsItsCost) {
  // The state's own provisioning agrees with evaluatePlan() at the floor's
  // replica counts on every feasible plan; provision() may add replicas
  // where that is cheaper.
  ClusterSpec spec = chainSpec();
  for (double limit : {250.0, 1000.0, 2000.0}) {
    PlacementProblem problem(spec, chainLayers(40, spec), limit);
    PlanState state(problem);
    std::mt19937_64 rng(3);
    int feasible = 0;
    for (int k = 0; k < 200; ++k) {
      Placement plan = randomRuns(40, 3, rng);
      state.reset();
      for (size_t i = 0; i < plan.size(); ++i)
        state.place(i, plan[i]);
      PlacementEval eval = problem.evaluate(plan);
      if (!eval.feasible)
        continue;
      ++feasible;
      double atFloor = costAtTheFloorsReplicas(problem, plan);
      EXPECT_NEAR(state.partialCost(), atFloor, 1e-9 * atFloor);
      EXPECT_LE(eval.cost, atFloor * (1 + 1e-12));
    }
    EXPECT_GT(feasible, 0) << "limit " << limit;
  }
}

TEST(PlanState, MaskNeverExcludesAFeasiblePlan) {
  // A type is masked only when the stage it would join or open cannot meet
  // the floor with the devices its type has left: no feasible plan takes a
  // masked type. Tight limits make the mask bite.
  ClusterSpec spec = chainSpec();
  for (DeviceType &d : spec.deviceTypes)
    d.maxCount = 3;
  PlacementProblem problem(spec, chainLayers(30, spec), 1500);
  PlanState state(problem);
  std::mt19937_64 rng(4);
  int feasible = 0, masked = 0;
  double allowed[3];
  for (int k = 0; k < 2000; ++k) {
    Placement plan = randomRuns(30, 3, rng);
    bool ok = problem.evaluate(plan).feasible;
    feasible += ok;
    state.reset();
    bool tookMasked = false;
    for (size_t i = 0; i < plan.size(); ++i) {
      state.allowedTypes(i, allowed);
      tookMasked |= allowed[plan[i]] == 0;
      state.place(i, plan[i]);
    }
    masked += tookMasked;
    if (ok)
      EXPECT_FALSE(tookMasked);
  }
  EXPECT_GT(feasible, 0);
  EXPECT_GT(masked, 0);
}

TEST(PlanState, FeaturesDescribeTheOpenStage) {
  // Three layers with compute time 0.3 s each on one type (B = B0, fully
  // parallel) and a floor of B / 1 s: one device takes up to three layers.
  ClusterSpec spec = smallSpec();
  std::vector<Layer> layers(4, smallLayer("conv", 0.3, 0.3, 0.3));
  PlacementProblem problem(spec, layers, 100); // tau = 1 s
  PlanState state(problem);
  FeatureLayout layout{3};
  std::vector<double> f(layout.planStateSize());
  state.write(0, f.data());
  // Opening a stage: one device added on every type.
  EXPECT_NEAR(f[0], 1.0 / 3, 1e-12);
  EXPECT_EQ(f[3 * 3], 0.3); // its time / tau
  state.place(0, 0);
  state.place(1, 0);
  state.place(2, 0);
  state.write(3, f.data());
  // Joining the cpu stage (0.9 s) would need a second device; opening one
  // elsewhere needs one.
  EXPECT_NEAR(f[0], 1.0 / 3, 1e-12);
  EXPECT_NEAR(f[6 * 3 + 0], 1, 1e-12); // cpu stage at >= 2 devices
  EXPECT_NEAR(f[6 * 3 + 1], 0, 1e-12);
  EXPECT_NEAR(f[10 * 3], 0, 1e-12); // no serial part
  EXPECT_GT(f[10 * 3 + 1], 0);      // open stage length
}

//===----------------------------------------------------------------------===//
// LSTM forward and backward
//===----------------------------------------------------------------------===//

TEST(LSTMForward, ProbabilitiesAreDistributions) {
  LSTMParams params = randomParams(6, 4, 3, 1);
  MatrixXd probs = stepProbabilities(params, randomInputs(6, 5, 2));
  ASSERT_EQ(probs.rows(), 3);
  ASSERT_EQ(probs.cols(), 5);
  EXPECT_GT(probs.minCoeff(), 0);
  for (Eigen::Index t = 0; t < 5; ++t)
    EXPECT_NEAR(probs.col(t).sum(), 1, 1e-12);
}

TEST(LSTMGradient, LogProbMatchesFiniteDifferences) {
  const size_t d = 6, h = 4, t = 3;
  LSTMParams params = randomParams(d, h, t, 3);
  MatrixXd inputs = randomInputs(d, 5, 4);
  Placement actions = {0, 2, 1, 1, 2};
  VectorXd weights(5);
  weights << 0.7, -1.3, 0.4, 2.0, -0.5;

  LSTMParams grad;
  double value = logProbGradient(params, inputs, actions, weights, grad);
  EXPECT_NEAR(value, weightedLogProb(params, inputs, actions, weights), 1e-12);
  VectorXd numeric = numericGradient(params, [&](const LSTMParams &p) {
    return weightedLogProb(p, inputs, actions, weights);
  });
  expectBlocksMatch(grad, numeric, 1e-6);
}

TEST(LSTMGradient, EntropyMatchesFiniteDifferences) {
  LSTMParams params = randomParams(5, 3, 3, 5);
  MatrixXd inputs = randomInputs(5, 5, 6);
  LSTMParams grad;
  double value = entropyGradient(params, inputs, grad);
  auto entropyOf = [&](const LSTMParams &p) {
    ForwardCache cache;
    forward(p, inputs, cache);
    return entropy(cache);
  };
  EXPECT_NEAR(value, entropyOf(params), 1e-12);
  expectBlocksMatch(grad, numericGradient(params, entropyOf), 1e-6);
}

TEST(LSTMGradient, MaskedNoisyLogProbMatchesFiniteDifferences) {
  // Masked types (probability 0) and exploration noise on the logits: the
  // softmax over the allowed types, whose gradient leaves masked logits
  // alone.
  const size_t d = 6, h = 4, t = 3;
  LSTMParams params = randomParams(d, h, t, 21);
  MatrixXd inputs = randomInputs(d, 5, 22);
  Placement actions = {0, 2, 1, 1, 2};
  VectorXd weights(5);
  weights << 0.7, -1.3, 0.4, 2.0, -0.5;
  ForwardCache cache;
  cache.allowed = MatrixXd::Ones(3, 5);
  cache.allowed(1, 0) = cache.allowed(0, 3) = cache.allowed(2, 3) = 0;
  cache.logitNoise = randomInputs(3, 5, 23);
  auto objective = [&](const LSTMParams &p) {
    ForwardCache probe;
    probe.allowed = cache.allowed;
    probe.logitNoise = cache.logitNoise;
    forward(p, inputs, probe);
    EXPECT_EQ(probe.probs(0, 3), 0);
    double sum = 0;
    for (Eigen::Index k = 0; k < 5; ++k)
      sum += weights[k] *
             std::log(probe.probs(static_cast<Eigen::Index>(actions[k]), k));
    return sum + 0.3 * entropy(probe);
  };
  forward(params, inputs, cache);
  objectiveLogitGradient(cache, actions, weights, 0.3);
  LSTMParams grad;
  backward(params, cache, grad);
  expectBlocksMatch(grad, numericGradient(params, objective), 1e-6);
}

TEST(LSTMForward, SamplingMatchesTeacherForcedForward) {
  // The policy feeds each sampled type and the plan state back as the next
  // input, and masks types step by step; recomputing the whole sequence
  // from the plan must give the same probabilities.
  ClusterSpec spec = chainSpec();
  for (DeviceType &d : spec.deviceTypes)
    d.maxCount = 3; // so that masks bite
  PlacementProblem problem(spec, chainLayers(30, spec), 1500);
  std::mt19937_64 rng(11);
  Policy policy(problem, 8, 0.01, rng);
  Workspace workspace(problem);
  for (int k = 0; k < 5; ++k) {
    ForwardCache sampled;
    Placement plan = policy.sample(rng, sampled, workspace);
    ASSERT_EQ(plan.size(), 30u);
    double logProb = 0;
    for (size_t i = 0; i < plan.size(); ++i)
      logProb += std::log(sampled.probs(static_cast<Eigen::Index>(plan[i]),
                                        static_cast<Eigen::Index>(i)));
    EXPECT_NEAR(policy.logProbability(plan), logProb, 1e-9);
    ForwardCache forced;
    policy.forwardFor(plan, forced, workspace);
    EXPECT_EQ(forced.allowed, sampled.allowed);
    EXPECT_LT((forced.inputs - sampled.inputs).norm(), 1e-12);
  }
}

TEST(LSTMForward, WithheldTypesAreNotSampled) {
  // Without binding limits, an episode that withholds a type never uses it.
  ClusterSpec spec = smallSpec();
  PlacementProblem problem(spec, smallLayers(), smallLimit);
  std::mt19937_64 rng(12);
  Policy policy(problem, 8, 0.01, rng);
  Workspace workspace(problem);
  ForwardCache cache;
  Exploration exploration{1.0, {false, true, false}};
  for (int k = 0; k < 20; ++k)
    for (size_t type : policy.sample(rng, cache, workspace, exploration))
      EXPECT_NE(type, 1u);
}

//===----------------------------------------------------------------------===//
// REINFORCE
//===----------------------------------------------------------------------===//

TEST(Reinforce, AdvantageSignSetsDirection) {
  ClusterSpec spec = smallSpec();
  PlacementProblem problem(spec, smallLayers(), smallLimit);
  for (double advantage : {1.0, -1.0}) {
    std::mt19937_64 rng(5);
    Policy policy(problem, 8, 0.01, rng);
    Placement plan = policy.sample(rng);
    double before = policy.logProbability(plan);
    policy.reinforce(plan, advantage, 0);
    double after = policy.logProbability(plan);
    if (advantage > 0)
      EXPECT_GT(after, before);
    else
      EXPECT_LT(after, before);
  }
}

TEST(Reinforce, GradientStepFollowsAdvantage) {
  // One plain gradient step on advantage * log pi, without the optimiser.
  LSTMParams params = randomParams(6, 4, 3, 8);
  MatrixXd inputs = randomInputs(6, 5, 9);
  Placement actions = {1, 1, 0, 2, 1};
  double before = logProbability(params, inputs, actions);
  for (double advantage : {0.5, -0.5}) {
    LSTMParams grad, stepped = params;
    logProbGradient(params, inputs, actions, VectorXd::Constant(5, advantage),
                    grad);
    stepped.flat() += 1e-3 * grad.flat();
    double after = logProbability(stepped, inputs, actions);
    if (advantage > 0)
      EXPECT_GT(after, before);
    else
      EXPECT_LT(after, before);
  }
}

TEST(Reinforce, EntropyGradientVanishesAtUniformPolicy) {
  // V = 0, d = 0 and G = 0 give uniform logits at every step: maximal
  // entropy, N log T, and a zero gradient.
  LSTMParams params = randomParams(5, 4, 3, 12);
  params.V().setZero();
  params.d().setZero();
  params.G().setZero();
  MatrixXd inputs = randomInputs(5, 5, 13);
  LSTMParams grad;
  double value = entropyGradient(params, inputs, grad);
  EXPECT_NEAR(value, 5 * std::log(3.0), 1e-12);
  EXPECT_LT(grad.flat().norm(), 1e-12);

  // Away from uniform, a small step along the gradient raises the entropy.
  LSTMParams skewed = randomParams(5, 4, 3, 14);
  double start = entropyGradient(skewed, inputs, grad);
  EXPECT_LT(start, 5 * std::log(3.0));
  skewed.flat() += 1e-3 * grad.flat();
  LSTMParams unused;
  EXPECT_GT(entropyGradient(skewed, inputs, unused), start);
}

TEST(Reinforce, ClipGlobalNorm) {
  VectorXd g = VectorXd::Constant(4, 5.0); // norm 10
  EXPECT_DOUBLE_EQ(clipGlobalNorm(g, 5), 10);
  EXPECT_NEAR(g.norm(), 5, 1e-12);
  EXPECT_NEAR(g[0], 2.5, 1e-12);
  VectorXd small = VectorXd::Constant(4, 0.5);
  clipGlobalNorm(small, 5);
  EXPECT_EQ(small[0], 0.5);
}

//===----------------------------------------------------------------------===//
// placeRL
//===----------------------------------------------------------------------===//

TEST(RLPlacer, SameSeedSameResult) {
  ClusterSpec spec = chainSpec();
  PlacementProblem problem(spec, chainLayers(40, spec), 20000);
  RLOptions options;
  options.episodes = 150;
  options.pretrainEpisodes = 100;
  options.timeBudgetSeconds = 1e9; // the episode counts decide
  options.polishEvaluations = 0;   // so that the evaluations are counted
  SearchResult a = placeRL(problem, options);
  SearchResult b = placeRL(problem, options);
  EXPECT_EQ(a.placement, b.placement);
  EXPECT_EQ(a.eval.cost, b.eval.cost);
  EXPECT_EQ(a.evaluations, b.evaluations);
  // T all-one-type plans, the episodes and the final most likely plan.
  EXPECT_EQ(a.evaluations, 3 + 100 + 150 + 1);

  // The number of threads does not change the result.
  options.threads = 1;
  SearchResult single = placeRL(problem, options);
  EXPECT_EQ(single.placement, a.placement);
  EXPECT_EQ(single.eval.cost, a.eval.cost);
  options.threads = 2;

  options.seed = 2;
  SearchResult c = placeRL(problem, options);
  EXPECT_EQ(c.placement.size(), 40u);
  EXPECT_EQ(c.evaluations, a.evaluations);
  options.seed = 1;

  // Local improvement is deterministic too, and can only help.
  options.polishEvaluations = 50;
  SearchResult polished = placeRL(problem, options);
  SearchResult again = placeRL(problem, options);
  EXPECT_EQ(polished.placement, again.placement);
  EXPECT_EQ(polished.evaluations, again.evaluations);
  EXPECT_GT(polished.evaluations, a.evaluations);
  // Different seeds start from different weights.
  std::mt19937_64 rng1(1), rng2(2);
  Policy p1(problem, 8, 0.01, rng1), p2(problem, 8, 0.01, rng2);
  EXPECT_NE(p1.params().flat(), p2.params().flat());
}

TEST(RLPlacer, FindsBruteForceOptimumOnSmallProblem) {
  ClusterSpec spec = smallSpec();
  PlacementProblem problem(spec, smallLayers(), smallLimit);
  SearchResult best = placeBruteForce(problem);
  ASSERT_TRUE(best.eval.feasible);
  EXPECT_EQ(best.placement, (Placement{1, 1, 1, 2, 2, 2, 0, 0}));

  RLOptions options;
  options.episodes = 2000;
  SearchResult rl = placeRL(problem, options);
  ASSERT_TRUE(rl.eval.feasible);
  EXPECT_LE(rl.eval.cost, best.eval.cost * 1.01);
  EXPECT_EQ(rl.placement, best.placement);
  // Never worse than the best all-one-type plan, which it evaluates first.
  for (size_t t = 0; t < 3; ++t)
    EXPECT_FALSE(placeAllOnType(problem, t).eval.betterThan(rl.eval));
}

TEST(RLPlacer, RespectsTimeBudget) {
  ClusterSpec spec = chainSpec();
  PlacementProblem problem(spec, chainLayers(200, spec), 2000);
  RLOptions options;
  options.timeBudgetSeconds = 0.05;
  auto start = std::chrono::steady_clock::now();
  SearchResult r = placeRL(problem, options);
  double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  EXPECT_LT(wall, 0.5);
  EXPECT_LT(r.seconds, 0.5);
  EXPECT_GE(r.evaluations, 1);
  EXPECT_LT(r.evaluations, 3 + options.pretrainEpisodes + options.episodes);
  EXPECT_EQ(r.placement.size(), 200u);
}

TEST(RLPlacer, TrainsUntilTheTimeBudget) {
  // With the default episode cap the time budget ends training.
  ClusterSpec spec = chainSpec();
  PlacementProblem problem(spec, chainLayers(20, spec), 2000);
  RLOptions options;
  options.timeBudgetSeconds = 0.3;
  SearchResult r = placeRL(problem, options);
  EXPECT_GE(r.seconds, 0.3);
  EXPECT_LT(r.seconds, 0.6);
  EXPECT_GT(r.evaluations, 3 + options.pretrainEpisodes);
}

TEST(RLPlacer, FindsTheOptimumOfAChainWithLimits) {
  // 30 layers, three types, tight limits: the exact optimum (brute force is
  // out of reach) within 1% in a few seconds.
  ClusterSpec spec = chainSpec();
  for (DeviceType &d : spec.deviceTypes)
    d.maxCount = std::max<int64_t>(1, d.maxCount / 4);
  PlacementProblem problem(spec, chainLayers(30, spec), 1500);
  RLOptions options;
  options.episodes = 20000;
  options.timeBudgetSeconds = 20;
  SearchResult rl = placeRL(problem, options);
  SearchResult exact = placeExact(problem);
  ASSERT_TRUE(exact.eval.feasible);
  ASSERT_TRUE(rl.eval.feasible);
  EXPECT_LE(rl.eval.cost, exact.eval.cost * 1.01);
}

TEST(RLPlacer, DegenerateProblems) {
  ClusterSpec spec = smallSpec();
  PlacementProblem empty(spec, {}, smallLimit);
  SearchResult none = placeRL(empty, RLOptions());
  EXPECT_TRUE(none.placement.empty());
  EXPECT_EQ(none.evaluations, 1);

  // One layer: the best type is found (every plan is one of T).
  PlacementProblem one(spec, {smallLayers()[0]}, smallLimit);
  RLOptions options;
  options.episodes = 20;
  options.pretrainEpisodes = 10;
  SearchResult r = placeRL(one, options);
  EXPECT_EQ(r.placement, placeBruteForce(one).placement);
}

} // namespace
