//===- TrainingLoopTest.cpp - the library's training loop -----------------===//
//
// The loop a tool or an embedding program runs: epochs with events, a run
// stopped with a checkpoint and resumed to the uninterrupted run's epochs,
// and a diverging run stopped before anything is saved.
//
//===----------------------------------------------------------------------===//

#include "TrainTestModels.h"

#include "heterps/Runtime/Train/TrainingLoop.h"

using namespace heterps::runtime;
using namespace heterps::runtime::testutil;
using namespace heterps::runtime::train;

namespace {

std::unique_ptr<Trainable> trainable(const MLP &mlp) {
  TrainerOptions options;
  options.optimizer.kind = OptimizerKind::Momentum;
  return std::make_unique<TrainableOf<Trainer>>(makeTrainer(mlp, options));
}

LoopOptions loopOptions(const data::Dataset &eval) {
  LoopOptions o;
  o.epochs = 3;
  o.batch = 8;
  o.seed = 4;
  o.schedule.base = 0.1f;
  o.eval = &eval;
  o.evalBatch = 16;
  o.key = CheckpointKey{"momentum", "softmax-ce", 8, 4, 32};
  return o;
}

std::vector<double> losses(const llvm::json::Array &epochs) {
  std::vector<double> out;
  for (const llvm::json::Value &e : epochs)
    out.push_back(*e.getAsObject()->getNumber("loss"));
  return out;
}

TEST(TrainingLoop, EpochsWithEventsAndEvaluation) {
  TempDir dir;
  MLP mlp = makeMLP(dir.file("mlp.onnx"), /*dropout=*/false);
  data::Dataset train = makeData(32, 1), eval = makeData(16, 2);
  auto job = trainable(mlp);
  int steps = 0, epochs = 0;
  LoopEvents events;
  events.stepped = [&](const StepEvent &e) {
    ++steps;
    EXPECT_EQ(e.stepsPerEpoch, 4);
    EXPECT_EQ(e.globalStep, steps);
  };
  events.epochEnded = [&](const llvm::json::Object &entry) {
    ++epochs;
    EXPECT_EQ(*entry.getInteger("epoch"), epochs);
    EXPECT_TRUE(entry.getNumber("eval_loss").has_value());
  };
  auto result = runTrainingLoop(*job, train, loopOptions(eval), events);
  ASSERT_TRUE(bool(result)) << llvm::toString(result.takeError());
  EXPECT_EQ(steps, 12);
  EXPECT_EQ(epochs, 3);
  EXPECT_FALSE(result->stopped);
  std::vector<double> l = losses(result->epochs);
  ASSERT_EQ(l.size(), 3u);
  EXPECT_LT(l[2], l[0]);
}

TEST(TrainingLoop, StoppedAndResumedRunsAsOne) {
  TempDir dir;
  MLP mlp = makeMLP(dir.file("mlp.onnx"), /*dropout=*/false);
  data::Dataset train = makeData(32, 1), eval = makeData(16, 2);
  auto whole = trainable(mlp);
  auto uninterrupted = runTrainingLoop(*whole, train, loopOptions(eval));
  ASSERT_TRUE(bool(uninterrupted));

  LoopOptions o = loopOptions(eval);
  o.checkpointDir = dir.file("ck");
  o.stopAfter = 6; // in the middle of the second epoch
  auto first = trainable(mlp);
  auto stopped = runTrainingLoop(*first, train, o);
  ASSERT_TRUE(bool(stopped)) << llvm::toString(stopped.takeError());
  EXPECT_TRUE(stopped->stopped);
  EXPECT_EQ(stopped->globalStep, 6);
  EXPECT_EQ(stopped->epochs.size(), 1u);

  o.stopAfter = 0;
  o.resume = true;
  auto second = trainable(mlp);
  int64_t resumedAt = -1;
  LoopEvents events;
  events.resumed = [&](const TrainingProgress &p) { resumedAt = p.globalStep; };
  auto resumed = runTrainingLoop(*second, train, o, events);
  ASSERT_TRUE(bool(resumed)) << llvm::toString(resumed.takeError());
  EXPECT_EQ(resumedAt, 6);
  EXPECT_EQ(losses(resumed->epochs), losses(uninterrupted->epochs));

  // A checkpoint of another run does not fit.
  o.key.batch = 16;
  auto other = trainable(mlp);
  auto refused = runTrainingLoop(*other, train, o);
  ASSERT_FALSE(bool(refused));
  EXPECT_NE(llvm::toString(refused.takeError()).find("--resume: "),
            std::string::npos);
}

TEST(TrainingLoop, ADivergingRunSavesNothing) {
  TempDir dir;
  MLP mlp = makeMLP(dir.file("mlp.onnx"), /*dropout=*/false);
  data::Dataset train = makeData(32, 1), eval = makeData(16, 2);
  LoopOptions o = loopOptions(eval);
  o.schedule.base = 1e30f;
  o.checkpointDir = dir.file("ck");
  auto job = trainable(mlp);
  auto result = runTrainingLoop(*job, train, o);
  ASSERT_FALSE(bool(result));
  std::string error = llvm::toString(result.takeError());
  EXPECT_NE(error.find("training diverged (try a lower --lr); nothing saved"),
            std::string::npos)
      << error;
  EXPECT_FALSE(llvm::sys::fs::exists(checkpointPath(dir.file("ck"))));
}

} // namespace
