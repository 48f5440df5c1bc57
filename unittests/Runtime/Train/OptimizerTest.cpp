//===- OptimizerTest.cpp - updates, schedules and losses by hand ----------===//

#include "heterps/Runtime/Train/Optimizer.h"
#include "heterps/Runtime/Train/Loss.h"

#include "gtest/gtest.h"

#include <cmath>

using namespace heterps::runtime;
using namespace heterps::runtime::train;

namespace {

/// Parameter values after `steps` updates of p = 1 with gradient 0.5.
std::vector<float> run(OptimizerOptions options, int steps, float lr = 0.1f) {
  Optimizer optimizer(options);
  Tensor p = Tensor::fromFloats({1}, {1.f});
  Tensor g = Tensor::fromFloats({1}, {0.5f});
  std::vector<float> out;
  for (int i = 0; i < steps; ++i) {
    optimizer.update(0, p, g, lr);
    out.push_back(p.data<float>()[0]);
  }
  return out;
}

TEST(Optimizer, SGDWithWeightDecay) {
  OptimizerOptions o;
  EXPECT_FLOAT_EQ(run(o, 1)[0], 0.95f);
  o.weightDecay = 0.1f; // g = 0.5 + 0.1
  EXPECT_FLOAT_EQ(run(o, 1)[0], 0.94f);
}

TEST(Optimizer, MomentumAndNesterov) {
  OptimizerOptions o;
  o.kind = OptimizerKind::Momentum;
  o.momentum = 0.9f;
  std::vector<float> p = run(o, 2);
  EXPECT_FLOAT_EQ(p[0], 0.95f);          // b = 0.5
  EXPECT_FLOAT_EQ(p[1], 0.95f - 0.095f); // b = 0.95
  o.nesterov = true;
  p = run(o, 2);
  EXPECT_FLOAT_EQ(p[0], 1.f - 0.1f * (0.5f + 0.45f));
  EXPECT_FLOAT_EQ(p[1], p[0] - 0.1f * (0.5f + 0.9f * 0.95f));
}

TEST(Optimizer, AdamAndAdagrad) {
  OptimizerOptions o;
  o.kind = OptimizerKind::Adam;
  // Bias-corrected first steps move by lr (the gradient is constant).
  std::vector<float> p = run(o, 3);
  EXPECT_NEAR(p[0], 0.9f, 1e-6);
  EXPECT_NEAR(p[2], 0.7f, 1e-5);
  o.kind = OptimizerKind::Adagrad;
  p = run(o, 2);
  EXPECT_NEAR(p[0], 0.9f, 1e-6); // s = 0.25
  EXPECT_NEAR(p[1], 0.9f - 0.1f * 0.5f / std::sqrt(0.5f), 1e-6);
}

TEST(LRSchedule, StepAndCosine) {
  LRSchedule s;
  s.base = 1.f;
  s.kind = LRSchedule::Kind::Step;
  s.stepEpochs = 2;
  s.gamma = 0.5f;
  EXPECT_FLOAT_EQ(s.at(1), 1.f);
  EXPECT_FLOAT_EQ(s.at(2), 0.5f);
  EXPECT_FLOAT_EQ(s.at(5), 0.25f);
  s.kind = LRSchedule::Kind::Cosine;
  s.epochs = 4;
  EXPECT_FLOAT_EQ(s.at(0), 1.f);
  EXPECT_FLOAT_EQ(s.at(2), 0.5f);
  EXPECT_NEAR(s.at(4), 0.f, 1e-7);
}

TEST(Loss, SoftmaxCrossEntropy) {
  Tensor logits = Tensor::fromFloats({2, 3}, {0, 0, 0, 1, 2, 3});
  Tensor labels = Tensor::fromInts({2}, {1, 2});
  LossResult r = llvm::cantFail(
      computeLoss(LossKind::SoftmaxCrossEntropy, logits, labels));
  double second = std::log(std::exp(1) + std::exp(2) + std::exp(3)) - 3;
  EXPECT_NEAR(r.loss, (std::log(3.0) + second) / 2, 1e-6);
  EXPECT_NEAR(r.grad.data<float>()[1], (1 / 3.0 - 1) / 2, 1e-6);
  EXPECT_EQ(r.correct, 1); // the first row's argmax is 0
  EXPECT_EQ(r.judged, 2);
}

TEST(Loss, BinaryCrossEntropyAndMSE) {
  Tensor x = Tensor::fromFloats({2}, {0.f, 2.f});
  Tensor t = Tensor::fromFloats({2}, {1.f, 0.f});
  LossResult bce = llvm::cantFail(computeLoss(LossKind::BCEWithLogits, x, t));
  EXPECT_NEAR(bce.loss, (std::log(2.0) + std::log1p(std::exp(2.0))) / 2, 1e-6);
  EXPECT_NEAR(bce.grad.data<float>()[1], (1 / (1 + std::exp(-2.0))) / 2, 1e-6);
  LossResult mse = llvm::cantFail(computeLoss(LossKind::MSE, x, t));
  EXPECT_NEAR(mse.loss, (1 + 4) / 2.0, 1e-6);
  EXPECT_NEAR(mse.grad.data<float>()[0], -1.0, 1e-6);
}

TEST(Loss, FitChecksNameShapes) {
  llvm::Error e =
      checkLossFits(LossKind::SoftmaxCrossEntropy, {-1, 10}, DType::F32, {10});
  EXPECT_EQ(llvm::toString(std::move(e)),
            "loss softmax-ce needs one i64 class label per sample, the data "
            "has f32[10]");
  e = checkLossFits(LossKind::MSE, {-1, 10}, DType::F32, {3});
  EXPECT_EQ(llvm::toString(std::move(e)),
            "loss mse needs targets shaped as the model output per sample "
            "[10], the data has [3]");
  EXPECT_FALSE(bool(parseLoss("hinge")));
  llvm::consumeError(parseLoss("hinge").takeError());
}

} // namespace
