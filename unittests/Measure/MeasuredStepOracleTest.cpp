//===- MeasuredStepOracleTest.cpp - step times measured by the runtime ----===//
//
// The oracle gives the runtime plan a candidate's stages (an op that is no
// layer rides with the layer before it) and times real pipelined training.
//
//===----------------------------------------------------------------------===//

#include "../Runtime/Train/TrainTestModels.h"
#include "TwoCpuTypes.h"

#include "heterps/Measure/MeasuredStepOracle.h"

#include "gtest/gtest.h"

using namespace heterps;
using namespace heterps::runtime;
using namespace heterps::runtime::testutil;
using heterps::testutil::twoCpuTypes;
using planner::Stage;

namespace {

/// The MLP's two Gemms as the planner's layers (its Relu is not one here).
std::vector<planner::Layer> gemmLayers() {
  std::vector<planner::Layer> layers(2);
  layers[0].name = "Gemm0";
  layers[1].name = "Gemm2";
  return layers;
}

std::unique_ptr<measure::MeasuredStepOracle>
makeOracle(const MLP &mlp, std::vector<planner::Layer> layers) {
  data::Dataset d = makeData(16, 3);
  measure::MeasureOptions options;
  options.trainer.numThreads = 1;
  auto oracle = measure::MeasuredStepOracle::create(
      mlp.plan, layers, twoCpuTypes(), mlp.weights, d.inputs, d.targets,
      options);
  EXPECT_TRUE(bool(oracle)) << llvm::toString(oracle.takeError());
  return oracle ? std::move(*oracle) : nullptr;
}

TEST(MeasuredStepOracle, GivesEveryOpItsLayersStage) {
  MLP mlp = makeMLP(testing::TempDir() + "measured-oracle-mlp.onnx", false);
  auto oracle = makeOracle(mlp, gemmLayers());
  ASSERT_TRUE(oracle);
  std::vector<Stage> stages = {{0, {0}, 1}, {1, {1}, 2}};
  plan::Plan staged = oracle->planFor(stages);
  ASSERT_EQ(staged.ops_size(), 3);
  // Gemm0 and the Relu after it on stage 0 (type a), Gemm2 on stage 1.
  EXPECT_EQ(staged.ops(0).stage(), 0);
  EXPECT_EQ(staged.ops(1).stage(), 0);
  EXPECT_EQ(staged.ops(2).stage(), 1);
  EXPECT_EQ(staged.ops(1).device(), "a");
  EXPECT_EQ(staged.ops(2).device(), "b");
  ASSERT_EQ(staged.stages_size(), 2);
  EXPECT_EQ(staged.stages(1).device(), "b");
  EXPECT_EQ(staged.stages(1).replicas(), 2);
}

TEST(MeasuredStepOracle, TimesTrainingStepsOfEachCandidate) {
  MLP mlp = makeMLP(testing::TempDir() + "measured-oracle-mlp.onnx", false);
  auto oracle = makeOracle(mlp, gemmLayers());
  ASSERT_TRUE(oracle);
  // One stage, then two; each measurement trains a fresh copy.
  for (const std::vector<Stage> &stages :
       {std::vector<Stage>{{0, {0, 1}, 1}},
        std::vector<Stage>{{0, {0}, 1}, {1, {1}, 2}}}) {
    llvm::Expected<double> step = oracle->stepSeconds(stages);
    ASSERT_TRUE(bool(step)) << llvm::toString(step.takeError());
    EXPECT_GT(*step, 0);
    EXPECT_LT(*step, 10);
  }
}

TEST(MeasuredStepOracle, Errors) {
  MLP mlp = makeMLP(testing::TempDir() + "measured-oracle-mlp.onnx", false);
  data::Dataset d = makeData(16, 3);
  std::vector<planner::Layer> layers = gemmLayers();
  layers[1].name = "Conv9";
  auto missing = measure::MeasuredStepOracle::create(
      mlp.plan, layers, twoCpuTypes(), mlp.weights, d.inputs, d.targets, {});
  ASSERT_FALSE(bool(missing));
  EXPECT_EQ(llvm::toString(missing.takeError()),
            "layer 'Conv9' has no op in the plan");

  measure::MeasureOptions untimed;
  untimed.timedSteps = 0;
  auto bad = measure::MeasuredStepOracle::create(mlp.plan, gemmLayers(),
                                                 twoCpuTypes(), mlp.weights,
                                                 d.inputs, d.targets, untimed);
  ASSERT_FALSE(bool(bad));
  EXPECT_EQ(llvm::toString(bad.takeError()),
            "measuring needs at least one timed step and no negative warm-up");

  auto oracle = makeOracle(mlp, gemmLayers());
  ASSERT_TRUE(oracle);
  llvm::Expected<double> none = oracle->stepSeconds({});
  ASSERT_FALSE(bool(none));
  EXPECT_EQ(llvm::toString(none.takeError()),
            "a plan to measure needs at least one stage");
}

} // namespace
