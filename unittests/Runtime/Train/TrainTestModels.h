//===- TrainTestModels.h - small MLP and data for tests ---------*- C++ -*-===//
//
// The MLP's weights are initializers of an ONNX model written to a
// temporary file (the Trainer trains initializers; --save-model writes them
// back).
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_UNITTESTS_RUNTIME_TRAIN_TRAINTESTMODELS_H
#define HETERPS_UNITTESTS_RUNTIME_TRAIN_TRAINTESTMODELS_H

#include "../PlanBuilder.h"
#include "../Reference.h"

#include "heterps/Runtime/ONNXTensor.h"
#include "heterps/Runtime/Train/Trainer.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include "gtest/gtest.h"

#include <fstream>
#include <random>

namespace heterps::runtime::testutil {

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

/// An ONNX model at `modelPath` holding just `initializers` (what a plan
/// referring to them loads its weights from).
inline void writeInitializers(const std::string &modelPath,
                              const std::map<std::string, Tensor> &inits) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(13);
  for (const auto &[name, t] : inits)
    *model.mutable_graph()->add_initializer() =
        llvm::cantFail(tensorToProto(t, name));
  std::ofstream(modelPath, std::ios::binary) << model.SerializeAsString();
}

inline MLP makeMLP(const std::string &modelPath, bool dropout) {
  std::mt19937 rng(11);
  writeInitializers(modelPath, {{"w1", randomTensor({8, 4}, rng, -0.5f, 0.5f)},
                                {"b1", randomTensor({8}, rng, -0.1f, 0.1f)},
                                {"w2", randomTensor({3, 8}, rng, -0.5f, 0.5f)},
                                {"b2", randomTensor({3}, rng, -0.1f, 0.1f)}});

  PlanBuilder b;
  int x = b.input("x", {-1, 4});
  int h = b.op("Gemm", {x, b.weightRef("w1", {8, 4}), b.weightRef("b1", {8})},
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

inline data::Dataset makeData(int64_t n, unsigned seed) {
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

inline std::unique_ptr<train::Trainer>
makeTrainer(const MLP &mlp, train::TrainerOptions options) {
  auto trainer = train::Trainer::create(mlp.plan, mlp.weights, options);
  EXPECT_TRUE(bool(trainer)) << llvm::toString(trainer.takeError());
  return std::move(*trainer);
}

} // namespace heterps::runtime::testutil

#endif // HETERPS_UNITTESTS_RUNTIME_TRAIN_TRAINTESTMODELS_H
