//===- TrainerTest.cpp - training small models end to end -----------------===//
//
// A small MLP whose weights are initializers of an ONNX model written to a
// temporary file (the Trainer trains initializers; --save-model writes them
// back): it fits a small data set, repeats bit for bit under one seed,
// keeps frozen parameters, and round-trips through saveTrainedModel.
//
//===----------------------------------------------------------------------===//

#include "../PlanBuilder.h"
#include "../Reference.h"

#include "heterps/Runtime/ONNXTensor.h"
#include "heterps/Runtime/Train/SaveModel.h"
#include "heterps/Runtime/Train/Trainer.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <fstream>

using namespace heterps::runtime;
using namespace heterps::runtime::testutil;
using namespace heterps::runtime::train;

namespace {

/// A temporary folder removed with its files.
struct TempDir {
  llvm::SmallString<128> path;
  TempDir() {
    EXPECT_FALSE(llvm::sys::fs::createUniqueDirectory("heterps-train", path));
  }
  ~TempDir() { llvm::sys::fs::remove_directories(path); }
  std::string file(const std::string &name) const {
    llvm::SmallString<128> p(path);
    llvm::sys::path::append(p, name);
    return std::string(p);
  }
};

/// x [N, 4] -> Gemm(8) -> Relu -> Dropout? -> Gemm(3): logits.
struct MLP {
  plan::Plan plan;
  WeightMap weights;
};

MLP makeMLP(const std::string &modelPath, bool dropout) {
  std::mt19937 rng(11);
  std::map<std::string, Tensor> inits = {
      {"w1", randomTensor({8, 4}, rng, -0.5f, 0.5f)},
      {"b1", randomTensor({8}, rng, -0.1f, 0.1f)},
      {"w2", randomTensor({3, 8}, rng, -0.5f, 0.5f)},
      {"b2", randomTensor({3}, rng, -0.1f, 0.1f)}};
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(13);
  for (const auto &[name, t] : inits)
    *model.mutable_graph()->add_initializer() =
        llvm::cantFail(tensorToProto(t, name));
  std::ofstream(modelPath, std::ios::binary) << model.SerializeAsString();

  PlanBuilder b;
  int x = b.input("x", {-1, 4});
  int h = b.op("Gemm",
               {x, b.weightRef("w1", {8, 4}), b.weightRef("b1", {8})},
               {-1, 8}, Attrs().i("trans_b", 1));
  h = b.op("Relu", {h}, {-1, 8});
  if (dropout)
    h = b.op("Dropout", {h}, {-1, 8}, Attrs().f("ratio", 0.2f));
  int y = b.op("Gemm", {h, b.weightRef("w2", {3, 8}), b.weightRef("b2", {3})},
               {-1, 3}, Attrs().i("trans_b", 1));
  b.output("logits", y);
  MLP mlp{b.build(), {}};
  mlp.plan.set_model_path(modelPath);
  mlp.weights = llvm::cantFail(loadWeights(mlp.plan));
  return mlp;
}

data::Dataset makeData(int64_t n, unsigned seed) {
  std::mt19937 rng(seed);
  data::Dataset d;
  d.name = "synthetic";
  d.inputs = randomTensor({n, 4}, rng);
  d.targets = Tensor(DType::I64, {n});
  for (int64_t i = 0; i < n; ++i) {
    const float *v = d.inputs.data<float>() + 4 * i;
    d.targets.data<int64_t>()[i] = v[0] + v[1] > 0 ? (v[2] > 0 ? 2 : 1) : 0;
  }
  return d;
}

std::unique_ptr<Trainer> makeTrainer(const MLP &mlp, TrainerOptions options) {
  auto trainer = Trainer::create(mlp.plan, mlp.weights, options);
  EXPECT_TRUE(bool(trainer)) << llvm::toString(trainer.takeError());
  return std::move(*trainer);
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
  Tensor before = trainer->weights().at(1).clone(); // value 1 is w1
  ASSERT_TRUE(bool(trainer->step(data.inputs, data.targets, 0.1f)));
  EXPECT_EQ(0, std::memcmp(before.rawData(),
                           trainer->weights().at(1).rawData(), before.bytes()));
  EXPECT_NE(0, std::memcmp(mlp.weights.at(2).rawData(),
                           trainer->weights().at(2).rawData(),
                           mlp.weights.at(2).bytes()));

  options.frozen = {"nope"};
  auto bad = Trainer::create(mlp.plan, mlp.weights, options);
  ASSERT_FALSE(bool(bad));
  EXPECT_EQ(llvm::toString(bad.takeError()),
            "--freeze nope: the model has no initializer of that name");
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
            "label 7 of sample 2 is outside the model's 3 classes");
}

TEST(SaveTrainedModel, RoundTripsAndNeverLeavesPartialFiles) {
  TempDir dir;
  MLP mlp = makeMLP(dir.file("mlp.onnx"), false);
  auto trainer = makeTrainer(mlp, TrainerOptions());
  data::Dataset data = makeData(8, 5);
  ASSERT_TRUE(bool(trainer->step(data.inputs, data.targets, 0.1f)));
  std::string out = dir.file("trained.onnx");
  ASSERT_FALSE(bool(saveTrainedModel(mlp.plan, trainer->weights(), out)));
  plan::Plan reloaded = mlp.plan;
  reloaded.set_model_path(out);
  WeightMap saved = llvm::cantFail(loadWeights(reloaded));
  for (const auto &[v, t] : trainer->weights())
    EXPECT_TRUE(allClose(saved.at(v), t, 0, 0)) << v;

  // A target in a missing folder: an error, and nothing written anywhere.
  llvm::Error e = saveTrainedModel(mlp.plan, trainer->weights(),
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
