//===- TrainerTest.cpp - training small models end to end -----------------===//
//
// A small MLP whose weights are initializers of an ONNX model written to a
// temporary file (the Trainer trains initializers; --save-model writes them
// back): it fits a small data set, repeats bit for bit under one seed,
// keeps frozen parameters, and round-trips through saveTrainedModel.
//
//===----------------------------------------------------------------------===//

#include "TrainTestModels.h"

#include "heterps/Runtime/Backends/CPU/CPUBackend.h"
#include "heterps/Runtime/ONNXTensor.h"
#include "heterps/Runtime/Train/SaveModel.h"

#include "llvm/Support/FileSystem.h"

#include <cmath>

using namespace heterps::runtime;
using namespace heterps::runtime::testutil;
using namespace heterps::runtime::train;

namespace {

/// The model `b` built, reading its weights from the initializers at `path`.
MLP finish(PlanBuilder &b, const std::string &path) {
  MLP model{b.build(), {}};
  model.plan.set_model_path(path);
  model.weights = llvm::cantFail(loadWeights(model.plan));
  return model;
}

/// `inputs` with labels i % 3.
data::Dataset threeClasses(Tensor inputs) {
  data::Dataset data;
  int64_t n = inputs.dim(0);
  data.inputs = std::move(inputs);
  data.targets = Tensor(DType::I64, {n});
  for (int64_t i = 0; i < n; ++i)
    data.targets.data<int64_t>()[i] = i % 3;
  return data;
}

/// Trains `a` and `b` side by side, `steps` momentum steps at rate 0.2 on
/// `data`: the same loss every step and the same weights at the end.
/// Returns a's first and last losses.
std::pair<double, double> expectSameTraining(const MLP &a, const MLP &b,
                                             const data::Dataset &data,
                                             int steps) {
  TrainerOptions options;
  options.optimizer.kind = OptimizerKind::Momentum;
  auto ta = makeTrainer(a, options), tb = makeTrainer(b, options);
  double first = 0, last = 0;
  for (int step = 0; step < steps; ++step) {
    auto la = ta->step(data.inputs, data.targets, 0.2f);
    EXPECT_TRUE(bool(la)) << llvm::toString(la.takeError());
    if (!la)
      return {first, last};
    double lb = llvm::cantFail(tb->step(data.inputs, data.targets, 0.2f)).loss;
    EXPECT_NEAR(la->loss, lb, 1e-5 * lb) << "step " << step;
    (step == 0 ? first : last) = la->loss;
  }
  std::map<std::string, Tensor> trained;
  for (auto &[value, tensor] : llvm::cantFail(tb->weights()))
    trained[b.plan.values(value).name()] = tensor;
  for (auto &[value, tensor] : llvm::cantFail(ta->weights())) {
    const std::string &name = a.plan.values(value).name();
    EXPECT_TRUE(trained.count(name)) << name;
    if (trained.count(name))
      EXPECT_TRUE(allClose(llvm::cantFail(tensor.toPlain()),
                           llvm::cantFail(trained[name].toPlain()), 1e-4f,
                           1e-5f))
          << name;
  }
  return {first, last};
}

TEST(Trainer, FitsASmallDataSet) {
  TempDir dir;
  MLP mlp = makeMLP(dir.file("mlp.onnx"), /*dropout=*/false);
  TrainerOptions options;
  options.optimizer.kind = OptimizerKind::Adam;
  auto trainer = makeTrainer(mlp, options);
  data::Dataset data = makeData(16, 1);
  ASSERT_FALSE(bool(trainer->checkData(data)));
  double first = 0, last = 0;
  for (int step = 0; step < 600; ++step) {
    auto r = trainer->step(data.inputs, data.targets, 0.05f);
    ASSERT_TRUE(bool(r)) << llvm::toString(r.takeError());
    (step == 0 ? first : last) = r->loss;
  }
  EXPECT_GT(first, 0.5);
  EXPECT_LT(last, 0.01);
  auto eval = trainer->evaluate(data, 5);
  ASSERT_TRUE(bool(eval)) << llvm::toString(eval.takeError());
  EXPECT_EQ(eval->correct, 16);
  EXPECT_LT(eval->loss, 0.02);
}

// A batch norm whose running statistics share their values with its scale
// and bias (PyTorch's exporter merges equal initializers: a new batch
// norm's variance is all ones like its scale) trains on copies of its own
// (separateRunningStatistics), and evaluation runs on them too.
TEST(Trainer, EvaluatesBatchNormsWithSharedStatistics) {
  std::mt19937 rng(3);
  TempDir dir;
  std::string model = dir.file("bn.onnx");
  writeInitializers(model, {{"scale", Tensor::fromFloats({4}, {1, 1, 1, 1})},
                            {"shift", Tensor::fromFloats({4}, {0, 0, 0, 0})},
                            {"w", randomTensor({3, 16}, rng, -0.5f, 0.5f)},
                            {"b", Tensor::fromFloats({3}, {0, 0, 0})}});
  PlanBuilder b;
  int x = b.input("x", {-1, 4, 2, 2});
  int scale = b.weightRef("scale", {4}), shift = b.weightRef("shift", {4});
  int h = b.op("BatchNormalization", {x, scale, shift, shift, scale},
               {-1, 4, 2, 2});
  h = b.op("Flatten", {h}, {-1, 16}, Attrs().i("axis", 1));
  int y = b.op("Gemm", {h, b.weightRef("w", {3, 16}), b.weightRef("b", {3})},
               {-1, 3}, Attrs().i("trans_b", 1));
  b.output("logits", y);
  plan::Plan plan = b.build();
  plan.set_model_path(model);
  auto trainer = Trainer::create(plan, llvm::cantFail(loadWeights(plan)),
                                 TrainerOptions());
  ASSERT_TRUE(bool(trainer)) << llvm::toString(trainer.takeError());
  data::Dataset data;
  data.inputs = randomTensor({8, 4, 2, 2}, rng, 1.f, 3.f);
  data.targets = Tensor(DType::I64, {8});
  for (int64_t i = 0; i < 8; ++i)
    data.targets.data<int64_t>()[i] = i % 3;
  ASSERT_TRUE(bool((*trainer)->step(data.inputs, data.targets, 0.1f)));
  auto eval = (*trainer)->evaluate(data, 4);
  ASSERT_TRUE(bool(eval)) << llvm::toString(eval.takeError());
  EXPECT_TRUE(std::isfinite(eval->loss));
}

TEST(Trainer, SameSeedSameLossesBitForBit) {
  TempDir dir;
  MLP mlp = makeMLP(dir.file("mlp.onnx"), /*dropout=*/true);
  data::Dataset data = makeData(32, 2);
  auto losses = [&](uint64_t seed) {
    TrainerOptions options;
    options.seed = seed;
    options.optimizer.kind = OptimizerKind::Momentum;
    auto trainer = makeTrainer(mlp, options);
    std::vector<double> out;
    for (int step = 0; step < 30; ++step)
      out.push_back(
          llvm::cantFail(trainer->step(data.inputs, data.targets, 0.1f)).loss);
    return out;
  };
  std::vector<double> a = losses(5), b = losses(5), c = losses(6);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c); // dropout draws from the seed
}

TEST(Trainer, FrozenParametersStay) {
  TempDir dir;
  MLP mlp = makeMLP(dir.file("mlp.onnx"), false);
  TrainerOptions options;
  options.frozen = {"w1"};
  auto trainer = makeTrainer(mlp, options);
  EXPECT_EQ(trainer->parameters().size(), 3u);
  data::Dataset data = makeData(8, 3);
  Tensor before =
      llvm::cantFail(trainer->weights()).at(1).clone(); // value 1 is w1
  ASSERT_TRUE(bool(trainer->step(data.inputs, data.targets, 0.1f)));
  EXPECT_EQ(0, std::memcmp(before.rawData(),
                           llvm::cantFail(trainer->weights()).at(1).rawData(),
                           before.bytes()));
  EXPECT_NE(0, std::memcmp(mlp.weights.at(2).rawData(),
                           llvm::cantFail(trainer->weights()).at(2).rawData(),
                           mlp.weights.at(2).bytes()));

  options.frozen = {"nope"};
  auto bad = Trainer::create(mlp.plan, mlp.weights, options);
  ASSERT_FALSE(bool(bad));
  EXPECT_EQ(llvm::toString(bad.takeError()),
            "--freeze nope: the model has no initializer of that name");
}

// A Split trains as Slices of its input: the same steps as a model
// written with two Slices.
TEST(Trainer, SplitTrainsAsSlices) {
  TempDir dir;
  MLP base = makeMLP(dir.file("mlp.onnx"), /*dropout=*/false);
  data::Dataset data = makeData(16, 3);
  auto build = [&](bool split) {
    PlanBuilder b;
    int x = b.input("x", {-1, 4});
    int h = b.op("Gemm", {x, b.weightRef("w1", {8, 4}), b.weightRef("b1", {8})},
                 {-1, 8}, Attrs().i("trans_b", 1));
    std::vector<int> parts;
    if (split) {
      parts = b.multiOp("Split", {h}, {{-1, 3}, {-1, 5}},
                        Attrs().i("axis", 1).ints("split", {3, 5}));
    } else {
      for (auto [from, to] : {std::pair(0, 3), std::pair(3, 8)})
        parts.push_back(b.op("Slice", {h}, {-1, to - from},
                             Attrs()
                                 .ints("starts", {from})
                                 .ints("ends", {to})
                                 .ints("axes", {1})
                                 .ints("steps", {1})));
    }
    int y = b.op(
        "Concat",
        {b.op("Relu", {parts[1]}, {-1, 5}), b.op("Tanh", {parts[0]}, {-1, 3})},
        {-1, 8}, Attrs().i("axis", 1));
    y = b.op("Gemm", {y, b.weightRef("w2", {3, 8}), b.weightRef("b2", {3})},
             {-1, 3}, Attrs().i("trans_b", 1));
    b.output("logits", y);
    MLP mlp{b.build(), {}};
    mlp.plan.set_model_path(base.plan.model_path());
    mlp.weights = llvm::cantFail(loadWeights(mlp.plan));
    return mlp;
  };
  MLP withSplit = build(true), withSlices = build(false);
  TrainerOptions options;
  options.optimizer.kind = OptimizerKind::Momentum;
  auto a = makeTrainer(withSplit, options),
       b = makeTrainer(withSlices, options);
  for (int step = 0; step < 5; ++step) {
    auto la = a->step(data.inputs, data.targets, 0.1f);
    ASSERT_TRUE(bool(la)) << llvm::toString(la.takeError());
    EXPECT_EQ(la->loss,
              llvm::cantFail(b->step(data.inputs, data.targets, 0.1f)).loss);
  }
}

// A Conv reading a Concat through a MaxPool trains on the Concat's parts
// (splitConcatConvs): the same losses, up to rounding, as the model with an
// Identity before the Conv, which the rewrite does not look through.
TEST(Trainer, ConcatPartsTrainAsTheConcat) {
  TempDir dir;
  std::string path = dir.file("fire.onnx");
  std::mt19937 rng(21);
  writeInitializers(path, {{"e1", randomTensor({8, 3, 1, 1}, rng, -0.5f, 0.5f)},
                           {"e3", randomTensor({8, 3, 3, 3}, rng, -0.5f, 0.5f)},
                           {"s", randomTensor({3, 16, 1, 1}, rng, -0.5f, 0.5f)},
                           {"s_b", randomTensor({3}, rng, -0.1f, 0.1f)}});
  auto build = [&](bool barrier) {
    PlanBuilder b;
    int x = b.input("x", {-1, 3, 8, 8});
    int e1 = b.op("Conv", {x, b.weightRef("e1", {8, 3, 1, 1})}, {-1, 8, 8, 8});
    int e3 = b.op("Conv", {x, b.weightRef("e3", {8, 3, 3, 3})}, {-1, 8, 8, 8},
                  Attrs().ints("pads", {1, 1, 1, 1}));
    int y = b.op(
        "Concat",
        {b.op("Relu", {e1}, {-1, 8, 8, 8}), b.op("Relu", {e3}, {-1, 8, 8, 8})},
        {-1, 16, 8, 8}, Attrs().i("axis", 1));
    y = b.op("MaxPool", {y}, {-1, 16, 4, 4},
             Attrs().ints("kernel_shape", {2, 2}).ints("strides", {2, 2}));
    if (barrier)
      y = b.op("Identity", {y}, {-1, 16, 4, 4});
    y = b.op("Conv",
             {y, b.weightRef("s", {3, 16, 1, 1}), b.weightRef("s_b", {3})},
             {-1, 3, 4, 4});
    y = b.op("GlobalAveragePool", {b.op("Relu", {y}, {-1, 3, 4, 4})},
             {-1, 3, 1, 1});
    b.output("logits", b.op("Flatten", {y}, {-1, 3}));
    return finish(b, path);
  };
  // The trained weights are the same, the sliced ones whole.
  auto [first, last] =
      expectSameTraining(build(false), build(true),
                         threeClasses(randomTensor({8, 3, 8, 8}, rng)), 20);
  EXPECT_LT(last, 0.8 * first); // it learns: the gradients reach every part
}

// SiLU (x * Sigmoid(x)) and HardSwish (x * HardSigmoid(x)) train as one
// op each (fuseSelfGates in the CPU backend's training rewrites): the same
// losses and weights as the gate and the product apart, which an Identity
// between them keeps from fusing.
TEST(Trainer, SelfGatesTrainAsTheGateAndTheProduct) {
  TempDir dir;
  std::string path = dir.file("gates.onnx");
  std::mt19937 rng(22);
  writeInitializers(path, {{"a", randomTensor({8, 3, 3, 3}, rng, -0.5f, 0.5f)},
                           {"b", randomTensor({3, 8, 1, 1}, rng, -0.5f, 0.5f)},
                           {"b_b", randomTensor({3}, rng, -0.1f, 0.1f)}});
  auto build = [&](bool barrier) {
    PlanBuilder b;
    Shape wide = {-1, 8, 6, 6}, narrow = {-1, 3, 6, 6};
    auto gate = [&](int v, const char *type, const Shape &shape,
                    const Attrs &attrs) {
      int g = b.op(type, {v}, shape, attrs);
      if (barrier)
        g = b.op("Identity", {g}, shape);
      return b.op("Mul", {v, g}, shape);
    };
    int x = b.input("x", {-1, 3, 6, 6});
    int y = b.op("Conv", {x, b.weightRef("a", {8, 3, 3, 3})}, wide,
                 Attrs().ints("pads", {1, 1, 1, 1}));
    y = gate(y, "Sigmoid", wide, Attrs());
    y = b.op("Conv",
             {y, b.weightRef("b", {3, 8, 1, 1}), b.weightRef("b_b", {3})},
             narrow);
    y = gate(y, "HardSigmoid", narrow,
             Attrs().f("alpha", 1.f / 6).f("beta", 0.5f));
    y = b.op("GlobalAveragePool", {y}, {-1, 3, 1, 1});
    b.output("logits", b.op("Flatten", {y}, {-1, 3}));
    return finish(b, path);
  };
  expectSameTraining(build(false), build(true),
                     threeClasses(randomTensor({8, 3, 6, 6}, rng)), 10);
}

static bool everyOp(const plan::Op &) { return true; }

// A zero Pad folds into the AveragePool (counting the zeros) or Conv that
// reads it in training too (fusePads in the CPU backend's training
// rewrites; Inception-v3 has nine before AveragePools): the same losses
// and weights as with an Identity after each Pad, which keeps it apart.
TEST(Trainer, ZeroPadsTrainFoldedIntoTheirReaders) {
  TempDir dir;
  std::string path = dir.file("pads.onnx");
  std::mt19937 rng(25);
  writeInitializers(path, {{"c", randomTensor({4, 3, 3, 3}, rng, -0.5f, 0.5f)},
                           {"c_b", randomTensor({4}, rng, -0.1f, 0.1f)},
                           {"v", Tensor::fromFloats({}, {0.f})}});
  auto build = [&](bool barrier) {
    PlanBuilder b;
    int pads = b.weight("p", Tensor::fromInts({8}, {0, 0, 1, 2, 0, 0, 1, 0}));
    auto pad = [&](int v, const Shape &padded) {
      int y = b.op("Pad", {v, pads}, padded);
      return barrier ? b.op("Identity", {y}, padded) : y;
    };
    int x = b.input("x", {-1, 3, 6, 6});
    int y = b.op("AveragePool", {pad(x, {-1, 3, 7, 8})}, {-1, 3, 5, 6},
                 Attrs().ints("kernel_shape", {3, 3}));
    y = b.op("Conv",
             {pad(y, {-1, 3, 6, 8}), b.weightRef("c", {4, 3, 3, 3}),
              b.weightRef("c_b", {4})},
             {-1, 4, 4, 6});
    y = b.op("GlobalAveragePool", {b.op("Relu", {y}, {-1, 4, 4, 6})},
             {-1, 4, 1, 1});
    b.output("logits", b.op("Flatten", {y}, {-1, 4}));
    return finish(b, path);
  };
  MLP folded = build(false);
  plan::Plan rewritten = folded.plan;
  CPUBackend().rewriteForTraining(rewritten, folded.weights, everyOp);
  for (const plan::Op &op : rewritten.ops())
    EXPECT_NE(op.type(), "Pad");
  auto [first, last] = expectSameTraining(
      folded, build(true), threeClasses(randomTensor({6, 3, 6, 6}, rng)), 10);
  EXPECT_LT(last, first);

  // A pad value that is an initializer trains, so its Pad stays (zero now,
  // not after a step).
  PlanBuilder b;
  int x = b.input("x", {-1, 3, 6, 6});
  int padded =
      b.op("Pad",
           {x, b.weight("p", Tensor::fromInts({8}, {0, 0, 1, 1, 0, 0, 1, 1})),
            b.weightRef("v", {})},
           {-1, 3, 8, 8});
  int y = b.op("AveragePool", {padded}, {-1, 3, 6, 6},
               Attrs().ints("kernel_shape", {3, 3}));
  b.output("y", b.op("Flatten", {y}, {-1, 108}));
  MLP trainedValue = finish(b, path);
  rewritten = trainedValue.plan;
  CPUBackend().rewriteForTraining(rewritten, trainedValue.weights, everyOp);
  EXPECT_EQ(rewritten.ops(0).type(), "Pad");
}

// nn.Linear as PyTorch's training export leaves it, MatMul(x, Transpose(W)),
// trains with the MatMul reading W in place (foldWeightTransposes in the
// CPU backend's training rewrites): the same losses and weights as with
// an Identity after each Transpose, which keeps it apart. Between the two
// layers, per-sample outer products (a batched MatMul of activations, as
// attention's heads) train as one sgemm per sample in parallel.
TEST(Trainer, TransposedWeightsTrainInPlace) {
  TempDir dir;
  std::string path = dir.file("linear.onnx");
  std::mt19937 rng(26);
  writeInitializers(path, {{"w1", randomTensor({5, 6}, rng, -0.8f, 0.8f)},
                           {"w2", randomTensor({3, 25}, rng, -0.5f, 0.5f)}});
  auto build = [&](bool barrier) {
    PlanBuilder b;
    auto linear = [&](int v, const char *w, Shape wShape, Shape out) {
      Shape tShape = {wShape[1], wShape[0]};
      int t = b.op("Transpose", {b.weightRef(w, wShape)}, tShape,
                   Attrs().ints("perm", {1, 0}));
      if (barrier)
        t = b.op("Identity", {t}, tShape);
      return b.op("MatMul", {v, t}, out);
    };
    int x = b.input("x", {-1, 6});
    int h = b.op("Relu", {linear(x, "w1", {5, 6}, {-1, 5})}, {-1, 5});
    int column =
        b.op("Reshape", {h, b.weight("col", Tensor::fromInts({3}, {0, 5, 1}))},
             {-1, 5, 1});
    int row =
        b.op("Reshape", {h, b.weight("row", Tensor::fromInts({3}, {0, 1, 5}))},
             {-1, 1, 5});
    int outer = b.op("MatMul", {column, row}, {-1, 5, 5});
    int flat = b.op("Flatten", {outer}, {-1, 25});
    b.output("logits", linear(flat, "w2", {3, 25}, {-1, 3}));
    return finish(b, path);
  };
  MLP folded = build(false);
  plan::Plan rewritten = folded.plan;
  CPUBackend().rewriteForTraining(rewritten, folded.weights, everyOp);
  for (const plan::Op &op : rewritten.ops())
    EXPECT_NE(op.type(), "Transpose");
  auto [first, last] = expectSameTraining(
      folded, build(true), threeClasses(randomTensor({12, 6}, rng)), 15);
  EXPECT_LT(last, first);
}

/// x [-1, 4 tokens, 6 channels] -> self-attention of 2 heads of 3 as
/// PyTorch exports it (per-head Reshapes and Transposes of Q, K and V, Q
/// divided by sqrt(3), the result transposed back) -> Flatten -> MatMul to
/// 3 logits. `barrier` puts an Identity after the Softmax so that nothing
/// fuses; `bias` adds a constant to the scores, which a trainable attention
/// does not take.
static MLP attentionModel(const std::string &path, bool barrier,
                          bool bias = false) {
  PlanBuilder b;
  Shape tokens = {-1, 4, 6}, heads = {-1, 4, 2, 3}, perHead = {-1, 2, 4, 3},
        scores = {-1, 2, 4, 4};
  int x = b.input("x", tokens);
  int split = b.weight("split", Tensor::fromInts({4}, {0, 4, 2, 3}));
  auto project = [&](const char *w, std::vector<int64_t> perm, Shape out) {
    int y = b.op("MatMul", {x, b.weightRef(w, {6, 6})}, tokens);
    y = b.op("Reshape", {y, split}, heads);
    return b.op("Transpose", {y}, out, Attrs().ints("perm", perm));
  };
  int q = project("wq", {0, 2, 1, 3}, perHead);
  q = b.op("Div", {q, b.weight("root", Tensor::fromFloats({}, {1.7320508f}))},
           perHead);
  int kt = project("wk", {0, 2, 3, 1}, {-1, 2, 3, 4});
  int v = project("wv", {0, 2, 1, 3}, perHead);
  int z = b.op("MatMul", {q, kt}, scores);
  if (bias)
    z = b.op("Add", {z, b.weight("bias", Tensor::fromFloats({}, {0.25f}))},
             scores);
  int p = b.op("Softmax", {z}, scores, Attrs().i("axis", -1));
  if (barrier)
    p = b.op("Identity", {p}, scores);
  int o = b.op("MatMul", {p, v}, perHead);
  o = b.op("Transpose", {o}, heads, Attrs().ints("perm", {0, 2, 1, 3}));
  int flat = b.op("Flatten", {o}, {-1, 24});
  b.output("logits",
           b.op("MatMul", {flat, b.weightRef("w2", {24, 3})}, {-1, 3}));
  return finish(b, path);
}

// Self-attention trains as one Attention op (fuseTrainableAttention in the
// CPU backend's training rewrites), reading Q, K and V through the
// Transposes' perms and writing the result transposed: the same losses and
// weights as the ops kept apart. Scores with a bias stay apart in training
// (the fused op has no bias gradient) and fuse for inference.
TEST(Trainer, AttentionTrainsAsOneOp) {
  TempDir dir;
  std::string path = dir.file("attention.onnx");
  std::mt19937 rng(27);
  writeInitializers(path, {{"wq", randomTensor({6, 6}, rng, -0.9f, 0.9f)},
                           {"wk", randomTensor({6, 6}, rng, -0.9f, 0.9f)},
                           {"wv", randomTensor({6, 6}, rng, -0.9f, 0.9f)},
                           {"w2", randomTensor({24, 3}, rng, -0.5f, 0.5f)}});
  auto typesAfter = [](const MLP &model, bool training) {
    plan::Plan plan = model.plan;
    WeightMap weights = model.weights;
    if (training)
      CPUBackend().rewriteForTraining(plan, weights, everyOp);
    else
      CPUBackend().rewriteForInference(plan, weights, everyOp);
    std::vector<std::string> types;
    for (const plan::Op &op : plan.ops())
      if (op.type() != "MatMul" && op.type() != "Reshape")
        types.push_back(op.type());
    return types;
  };
  MLP fused = attentionModel(path, false);
  EXPECT_EQ(typesAfter(fused, true),
            (std::vector<std::string>{"Attention", "Flatten"}));
  auto [first, last] =
      expectSameTraining(fused, attentionModel(path, true),
                         threeClasses(randomTensor({12, 4, 6}, rng)), 15);
  EXPECT_LT(last, first);

  MLP biased = attentionModel(path, false, /*bias=*/true);
  EXPECT_EQ(llvm::count(typesAfter(biased, true), "Softmax"), 1);
  EXPECT_EQ(llvm::count(typesAfter(biased, false), "Attention"), 1);
}

/// x [-1, 8] -> MatMul -> LayerNorm and GELU as PyTorch exports them ->
/// MatMul -> 3 logits. `barrier` puts an Identity inside each pattern so
/// that neither fuses; `trainedHalf` makes GELU's 0.5 an initializer (a
/// parameter the trainer trains), which must keep the GELU apart.
static MLP normGeluModel(const std::string &path, bool barrier,
                         bool trainedHalf = false) {
  PlanBuilder b;
  Shape rows = {-1, 8}, one = {-1, 1};
  auto constant = [&](const char *name, float v) {
    return b.weight(name, Tensor::fromFloats({}, {v}));
  };
  auto maybeBarrier = [&](int v, const Shape &shape) {
    return barrier ? b.op("Identity", {v}, shape) : v;
  };
  int x = b.input("x", rows);
  int h = b.op("MatMul", {x, b.weightRef("w1", {8, 8})}, rows);
  Attrs last = Attrs().ints("axes", {-1}).i("keepdims", 1);
  int centred = b.op("Sub", {h, b.op("ReduceMean", {h}, one, last)}, rows);
  int var =
      b.op("ReduceMean", {b.op("Pow", {centred, constant("two", 2.f)}, rows)},
           one, last);
  int rstd =
      b.op("Sqrt", {b.op("Add", {var, constant("eps", 1e-5f)}, one)}, one);
  int n = b.op("Div", {centred, maybeBarrier(rstd, one)}, rows);
  n = b.op("Mul", {n, b.weightRef("gamma", {8})}, rows);
  n = b.op("Add", {n, b.weightRef("beta", {8})}, rows);
  int erf = b.op(
      "Erf", {b.op("Div", {n, constant("sqrt2", std::sqrt(2.f))}, rows)}, rows);
  int g = b.op("Add", {maybeBarrier(erf, rows), constant("one", 1.f)}, rows);
  g = b.op("Mul", {n, g}, rows);
  int half = trainedHalf ? b.weightRef("half", {}) : constant("half", 0.5f);
  g = b.op("Mul", {g, half}, rows);
  b.output("logits", b.op("MatMul", {g, b.weightRef("w2", {8, 3})}, {-1, 3}));
  return finish(b, path);
}

static void writeNormGeluWeights(const std::string &path, std::mt19937 &rng) {
  writeInitializers(path, {{"w1", randomTensor({8, 8}, rng, -0.8f, 0.8f)},
                           {"gamma", randomTensor({8}, rng, 0.5f, 1.5f)},
                           {"beta", randomTensor({8}, rng, -0.3f, 0.3f)},
                           {"half", Tensor::fromFloats({}, {0.5f})},
                           {"w2", randomTensor({8, 3}, rng, -0.8f, 0.8f)}});
}

// GELU and LayerNorm as PyTorch exports them (9 and 5 element-wise ops)
// train as one op each (fuseLayerNorms and fuseGelus in the CPU backend's
// training rewrites): the same losses and weights, gamma and beta
// included, as the ops kept apart.
TEST(Trainer, GeluAndLayerNormTrainAsTheirDecomposedOps) {
  TempDir dir;
  std::string path = dir.file("norm_gelu.onnx");
  std::mt19937 rng(23);
  writeNormGeluWeights(path, rng);
  MLP fused = normGeluModel(path, false), apart = normGeluModel(path, true);
  plan::Plan rewritten = fused.plan;
  CPUBackend().rewriteForTraining(rewritten, fused.weights, everyOp);
  std::vector<std::string> types;
  for (const plan::Op &op : rewritten.ops())
    types.push_back(op.type());
  EXPECT_EQ(types, (std::vector<std::string>{"MatMul", "LayerNormalization",
                                             "Gelu", "MatMul"}));
  auto [first, last] = expectSameTraining(
      fused, apart, threeClasses(randomTensor({12, 8}, rng)), 15);
  EXPECT_LT(last, 0.8 * first);
}

// A GELU whose 0.5 is an initializer stays apart in training: the trainer
// trains that scalar, which a fused Gelu would fix at 0.5.
TEST(Trainer, PatternWithATrainableConstantStaysApart) {
  TempDir dir;
  std::string path = dir.file("norm_gelu.onnx");
  std::mt19937 rng(24);
  writeNormGeluWeights(path, rng);
  MLP model = normGeluModel(path, false, /*trainedHalf=*/true);
  plan::Plan rewritten = model.plan;
  CPUBackend().rewriteForTraining(rewritten, model.weights, everyOp);
  int erfs = 0, norms = 0;
  for (const plan::Op &op : rewritten.ops()) {
    erfs += op.type() == "Erf";
    norms += op.type() == "LayerNormalization";
  }
  EXPECT_EQ(erfs, 1);
  EXPECT_EQ(norms, 1);
  // The same scalar fused for inference, where nothing trains.
  plan::Plan inference = model.plan;
  WeightMap weights = model.weights;
  CPUBackend().rewriteForInference(inference, weights, everyOp);
  for (const plan::Op &op : inference.ops())
    EXPECT_NE(op.type(), "Erf");
}

// The Slices of a Split need the pieces' sizes in the plan.
TEST(Trainer, SplitOfDynamicSizesIsAnError) {
  TempDir dir;
  MLP base = makeMLP(dir.file("mlp.onnx"), /*dropout=*/false);
  PlanBuilder b;
  int x = b.input("x", {-1, 4});
  int h = b.op("Gemm", {x, b.weightRef("w1", {8, 4}), b.weightRef("b1", {8})},
               {-1, 8}, Attrs().i("trans_b", 1));
  std::vector<int> parts =
      b.multiOp("Split", {h}, {{-1, 8}, {-1, 8}}, Attrs().i("axis", 0));
  b.output("logits", b.op("Add", {parts[0], parts[1]}, {-1, 8}));
  MLP mlp{b.build(), {}};
  mlp.plan.set_model_path(base.plan.model_path());
  mlp.weights = llvm::cantFail(loadWeights(mlp.plan));
  auto trainer = Trainer::create(mlp.plan, mlp.weights, {});
  ASSERT_FALSE(bool(trainer));
  EXPECT_EQ(llvm::toString(trainer.takeError()),
            "op 1 'Split1' (Split): a Split whose piece sizes are not static "
            "cannot be trained");
}

TEST(Trainer, BadDataIsOneClearError) {
  TempDir dir;
  MLP mlp = makeMLP(dir.file("mlp.onnx"), false);
  auto trainer = makeTrainer(mlp, TrainerOptions());
  data::Dataset data = makeData(4, 4);
  data::Dataset wide = data;
  wide.inputs = Tensor(DType::F32, {4, 5});
  llvm::Error e = trainer->checkData(wide);
  EXPECT_EQ(llvm::toString(std::move(e)),
            "data 'synthetic' has samples f32[5], but the model input 'x' is "
            "f32[-1, 4] (first dimension the batch)");
  data.targets.data<int64_t>()[2] = 7;
  auto r = trainer->step(data.inputs, data.targets, 0.1f);
  ASSERT_FALSE(bool(r));
  EXPECT_EQ(llvm::toString(r.takeError()),
            "label 7 of sample 2 is outside the model's 3 classes (0 to 2)");
}

TEST(SaveTrainedModel, RoundTripsAndNeverLeavesPartialFiles) {
  TempDir dir;
  MLP mlp = makeMLP(dir.file("mlp.onnx"), false);
  auto trainer = makeTrainer(mlp, TrainerOptions());
  data::Dataset data = makeData(8, 5);
  ASSERT_TRUE(bool(trainer->step(data.inputs, data.targets, 0.1f)));
  std::string out = dir.file("trained.onnx");
  ASSERT_FALSE(bool(
      saveTrainedModel(mlp.plan, llvm::cantFail(trainer->weights()), out)));
  plan::Plan reloaded = mlp.plan;
  reloaded.set_model_path(out);
  WeightMap saved = llvm::cantFail(loadWeights(reloaded));
  for (const auto &[v, t] : llvm::cantFail(trainer->weights()))
    EXPECT_TRUE(allClose(saved.at(v), t, 0, 0)) << v;

  // A target in a missing folder: an error, and nothing written anywhere.
  llvm::Error e = saveTrainedModel(mlp.plan, llvm::cantFail(trainer->weights()),
                                   dir.file("missing/trained.onnx"));
  EXPECT_TRUE(bool(e));
  llvm::consumeError(std::move(e));
  std::error_code ec;
  int files = 0;
  for (llvm::sys::fs::directory_iterator it(dir.path, ec), end;
       it != end && !ec; it.increment(ec))
    ++files;
  EXPECT_EQ(files, 2); // mlp.onnx and trained.onnx
}

} // namespace
