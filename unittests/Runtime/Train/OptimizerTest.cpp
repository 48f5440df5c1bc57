//===- OptimizerTest.cpp - updates, schedules and losses by hand ----------===//

#include "heterps/Runtime/Train/Optimizer.h"
#include "heterps/Runtime/Train/Loss.h"

#include "gtest/gtest.h"

#include <algorithm>
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
    llvm::cantFail(optimizer.update(0, p, g, lr));
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

// Long tensors take the vectorized loops and, above 32768 elements, the
// parallel ones: every element must still follow the scalar formula.
TEST(Optimizer, LongTensorsFollowTheFormulas) {
  const int64_t n = 40003; // not a multiple of any vector width
  std::vector<float> p0(n), g(n);
  for (int64_t i = 0; i < n; ++i) {
    p0[i] = 0.001f * static_cast<float>(i % 997) - 0.5f;
    g[i] = 0.01f * static_cast<float>((i * 7919) % 201 - 100);
  }
  const float lr = 0.05f, wd = 0.01f, mu = 0.9f;
  for (OptimizerKind kind : {OptimizerKind::SGD, OptimizerKind::Momentum,
                             OptimizerKind::Adam, OptimizerKind::Adagrad})
    for (bool nesterov : {false, true}) {
      OptimizerOptions o;
      o.kind = kind;
      o.momentum = mu;
      o.nesterov = nesterov;
      o.weightDecay = wd;
      Optimizer optimizer(o);
      Tensor p = Tensor::fromFloats({n}, p0), grad = Tensor::fromFloats({n}, g);
      for (int step = 0; step < 2; ++step)
        llvm::cantFail(optimizer.update(0, p, grad, lr));
      for (int64_t i = 0; i < n; i += 1009) {
        // Two steps of the textbook update, in double.
        double w = p0[i], m = 0, v = 0;
        for (int t = 1; t <= 2; ++t) {
          double gi = g[i] + wd * w;
          switch (kind) {
          case OptimizerKind::SGD:
            w -= lr * gi;
            break;
          case OptimizerKind::Momentum:
            m = mu * m + gi;
            w -= lr * (nesterov ? gi + mu * m : m);
            break;
          case OptimizerKind::Adam:
            m = 0.9 * m + 0.1 * gi;
            v = 0.999 * v + 0.001 * gi * gi;
            w -= lr * (m / (1 - std::pow(0.9, t))) /
                 (std::sqrt(v / (1 - std::pow(0.999, t))) + 1e-8);
            break;
          case OptimizerKind::Adagrad:
            v += gi * gi;
            w -= lr * gi / (std::sqrt(v) + 1e-10);
            break;
          }
        }
        ASSERT_NEAR(p.data<float>()[i], w, 1e-5)
            << "optimizer " << static_cast<int>(kind) << ", nesterov "
            << nesterov << ", element " << i;
      }
    }
}

/// Elements stored last to first, plus `pad` trailing zeros: a stand-in
/// for a backend's blocked layout.
class ReversedLayout : public Layout {
public:
  ReversedLayout(int64_t n, int64_t pad) : n(n), pad(pad) {}
  size_t bytes() const override { return (n + pad) * sizeof(float); }
  llvm::Expected<Tensor> toPlain(const Tensor &t) const override {
    Tensor plain(DType::F32, t.shape());
    for (int64_t i = 0; i < n; ++i)
      plain.data<float>()[i] = t.data<float>()[n - 1 - i];
    return plain;
  }
  llvm::Expected<Tensor> fromPlain(const Tensor &plain) const override {
    Tensor t(DType::F32, plain.shape(),
             std::make_shared<ReversedLayout>(*this));
    std::fill(t.data<float>(), t.data<float>() + n + pad, 0.f);
    for (int64_t i = 0; i < n; ++i)
      t.data<float>()[n - 1 - i] = plain.data<float>()[i];
    return t;
  }
  bool equals(const Layout &other) const override {
    const auto *o = dynamic_cast<const ReversedLayout *>(&other);
    return o && o->n == n && o->pad == pad;
  }
  std::string describe() const override { return "reversed"; }

private:
  int64_t n, pad;
};

TEST(Optimizer, UpdatesInTheGradientsLayout) {
  OptimizerOptions o;
  o.kind = OptimizerKind::Adam;
  o.weightDecay = 0.1f;
  Optimizer plain(o), reversed(o);
  Tensor p1 = Tensor::fromFloats({3}, {1.f, 2.f, 3.f}), p2 = p1.clone();
  Tensor g1 = Tensor::fromFloats({3}, {0.5f, -1.f, 0.25f});
  auto layout = std::make_shared<ReversedLayout>(3, 2);
  Tensor g2 = llvm::cantFail(layout->fromPlain(g1));
  for (int step = 0; step < 3; ++step) {
    llvm::cantFail(plain.update(0, p1, g1, 0.1f));
    llvm::cantFail(reversed.update(0, p2, g2, 0.1f));
  }
  // The parameter and both moments moved into the gradient's layout; the
  // padding stayed zero and the values are those of the plain run.
  ASSERT_TRUE(p2.sameLayout(g2));
  ASSERT_TRUE(reversed.slots().at(0).first.sameLayout(g2));
  ASSERT_TRUE(reversed.slots().at(0).second.sameLayout(g2));
  EXPECT_EQ(p2.data<float>()[3], 0.f);
  EXPECT_EQ(p2.data<float>()[4], 0.f);
  Tensor back = llvm::cantFail(p2.toPlain());
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(back.data<float>()[i], p1.data<float>()[i]) << "element " << i;
  // A plain gradient brings them back.
  llvm::cantFail(reversed.update(0, p2, g1, 0.1f));
  llvm::cantFail(plain.update(0, p1, g1, 0.1f));
  ASSERT_TRUE(p2.isPlain());
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(p2.data<float>()[i], p1.data<float>()[i]) << "element " << i;
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
  llvm::Expected<LossResult> bad = computeLoss(
      LossKind::SoftmaxCrossEntropy, logits, Tensor::fromInts({2}, {1, 3}));
  ASSERT_FALSE(bad);
  EXPECT_EQ(llvm::toString(bad.takeError()),
            "label 3 of sample 1 is outside the model's 3 classes (0 to 2)");
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
  // A language model's logits: a label per token.
  EXPECT_FALSE(bool(checkLossFits(LossKind::SoftmaxCrossEntropy, {-1, -1, 97},
                                  DType::I64, {16})));
  e = checkLossFits(LossKind::SoftmaxCrossEntropy, {-1, 16, 97}, DType::I64,
                    {15});
  EXPECT_EQ(llvm::toString(std::move(e)),
            "loss softmax-ce needs i64 class labels shaped [16] per sample "
            "(the model output without its batch and classes), the data has "
            "i64[15]");
  e = checkLossFits(LossKind::MSE, {-1, 10}, DType::F32, {3});
  EXPECT_EQ(llvm::toString(std::move(e)),
            "loss mse needs targets shaped as the model output per sample "
            "[10], the data has [3]");
  // A segmentation output whose sizes the model leaves dynamic: the
  // data's fill them, its rank and the known ones must match.
  EXPECT_FALSE(bool(checkLossFits(LossKind::MSE, {-1, 21, -1, -1}, DType::F32,
                                  {21, 224, 224})));
  e = checkLossFits(LossKind::MSE, {-1, 21, -1, -1}, DType::F32, {20, 8, 8});
  EXPECT_EQ(llvm::toString(std::move(e)),
            "loss mse needs targets shaped as the model output per sample "
            "[21, -1, -1], the data has [20, 8, 8]");
  e = checkLossFits(LossKind::BCEWithLogits, {-1, -1}, DType::F32, {4, 4});
  EXPECT_EQ(llvm::toString(std::move(e)),
            "loss bce-logits needs targets shaped as the model output per "
            "sample [-1], the data has [4, 4]");
  EXPECT_FALSE(bool(parseLoss("hinge")));
  llvm::consumeError(parseLoss("hinge").takeError());
}

} // namespace
