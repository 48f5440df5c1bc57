//===- TrainingLoopTest.cpp - the library's training loop -----------------===//
//
// The loop a tool or an embedding program runs: epochs with events, a run
// stopped with a checkpoint and resumed to the uninterrupted run's epochs,
// a job that fails and recovers (back to its last checkpoint, to the
// uninterrupted run's epochs; at most --max-restarts times), and a
// diverging run stopped before anything is saved.
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

/// A model, its data, and the losses of an uninterrupted run.
struct LoopJob {
  TempDir dir;
  MLP mlp = makeMLP(dir.file("mlp.onnx"), /*dropout=*/false);
  data::Dataset train = makeData(32, 1), eval = makeData(16, 2);
  std::vector<double> uninterruptedLosses() {
    auto whole = trainable(mlp);
    auto result = runTrainingLoop(*whole, train, loopOptions(eval));
    return result ? losses(result->epochs) : std::vector<double>();
  }
};

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
  LoopJob t;
  std::vector<double> uninterrupted = t.uninterruptedLosses();
  ASSERT_EQ(uninterrupted.size(), 3u);

  LoopOptions o = loopOptions(t.eval);
  o.checkpointDir = t.dir.file("ck");
  o.stopAfter = 6; // in the middle of the second epoch
  auto first = trainable(t.mlp);
  auto stopped = runTrainingLoop(*first, t.train, o);
  ASSERT_TRUE(bool(stopped)) << llvm::toString(stopped.takeError());
  EXPECT_TRUE(stopped->stopped);
  EXPECT_EQ(stopped->globalStep, 6);
  EXPECT_EQ(stopped->epochs.size(), 1u);

  o.stopAfter = 0;
  o.resume = true;
  auto second = trainable(t.mlp);
  int64_t resumedAt = -1;
  LoopEvents events;
  events.resumed = [&](const TrainingProgress &p) { resumedAt = p.globalStep; };
  auto resumed = runTrainingLoop(*second, t.train, o, events);
  ASSERT_TRUE(bool(resumed)) << llvm::toString(resumed.takeError());
  EXPECT_EQ(resumedAt, 6);
  EXPECT_EQ(losses(resumed->epochs), uninterrupted);

  // A checkpoint of another run does not fit.
  o.key.batch = 16;
  auto other = trainable(t.mlp);
  auto refused = runTrainingLoop(*other, t.train, o);
  ASSERT_FALSE(bool(refused));
  EXPECT_NE(llvm::toString(refused.takeError()).find("--resume: "),
            std::string::npos);
}

/// A job whose steps fail at the given global steps, once each, as a
/// distributed job does when a process dies; it recovers by counting.
class Failing final : public Trainable {
public:
  Failing(std::unique_ptr<Trainable> job, std::vector<int64_t> failAt)
      : job(std::move(job)), failAt(std::move(failAt)) {}
  const std::vector<std::pair<std::string, int64_t>> &
  parameters() const override {
    return job->parameters();
  }
  llvm::Error checkData(const data::Dataset &d) const override {
    return job->checkData(d);
  }
  llvm::Expected<LossResult> step(const Tensor &inputs, const Tensor &targets,
                                  float lr) override {
    if (!failAt.empty() && steps == failAt.front()) {
      failAt.erase(failAt.begin());
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "worker s1r0 died");
    }
    ++steps;
    return job->step(inputs, targets, lr);
  }
  llvm::Expected<EvalResult> evaluate(const data::Dataset &d,
                                      int64_t batch) override {
    return job->evaluate(d, batch);
  }
  llvm::Expected<WeightMap> weights() override { return job->weights(); }
  const plan::Plan &plan() const override { return job->plan(); }
  llvm::Expected<Trainer::State> state() override { return job->state(); }
  llvm::Error restore(Trainer::State s, int64_t at) override {
    steps = at;
    return job->restore(std::move(s), at);
  }
  bool canRecover() const override { return true; }
  llvm::Error recover(llvm::Error failure) override {
    llvm::consumeError(std::move(failure));
    ++recoveries;
    return llvm::Error::success();
  }

  int recoveries = 0;

private:
  std::unique_ptr<Trainable> job;
  std::vector<int64_t> failAt;
  int64_t steps = 0;
};

TEST(TrainingLoop, AFailedJobGoesBackToItsLastCheckpoint) {
  LoopJob t;
  std::vector<double> uninterrupted = t.uninterruptedLosses();
  ASSERT_EQ(uninterrupted.size(), 3u);

  LoopOptions o = loopOptions(t.eval);
  o.checkpointDir = t.dir.file("ck");
  o.checkpointEvery = 5;
  // Before the first periodic checkpoint (back to the one made at the
  // start), and in the third epoch (back to step 10).
  Failing job(trainable(t.mlp), {3, 11});
  std::vector<std::pair<int64_t, int64_t>> recovered;
  LoopEvents events;
  events.recovered = [&](const RecoveryEvent &r) {
    recovered.emplace_back(r.failedAt, r.restoredTo);
    EXPECT_EQ(r.failure, "worker s1r0 died");
  };
  auto result = runTrainingLoop(job, t.train, o, events);
  ASSERT_TRUE(bool(result)) << llvm::toString(result.takeError());
  EXPECT_EQ(job.recoveries, 2);
  EXPECT_EQ(recovered,
            (std::vector<std::pair<int64_t, int64_t>>{{3, 0}, {11, 10}}));
  EXPECT_EQ(losses(result->epochs), uninterrupted);

  // A job that keeps failing ends, with the last failure.
  o.maxRestarts = 1;
  llvm::sys::fs::remove_directories(o.checkpointDir);
  Failing again(trainable(t.mlp), {3, 4});
  auto failed = runTrainingLoop(again, t.train, o);
  ASSERT_FALSE(bool(failed));
  EXPECT_EQ(llvm::toString(failed.takeError()),
            "the job failed again after 1 restart (--max-restarts 1): worker "
            "s1r0 died");
  // Without a checkpoint directory there is nothing to go back to.
  o.checkpointDir.clear();
  Failing lost(trainable(t.mlp), {3});
  auto unrecovered = runTrainingLoop(lost, t.train, o);
  ASSERT_FALSE(bool(unrecovered));
  EXPECT_NE(llvm::toString(unrecovered.takeError())
                .find("with --checkpoint DIR the job would have gone back"),
            std::string::npos);
  EXPECT_EQ(lost.recoveries, 0);
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

// The FLOPs a training step does per sample (forward and two backward
// passes of every Conv, Gemm and MatMul), with the batch where the dynamic
// dimension is: first in a Conv's output, second in a transformer's
// [tokens, batch, channels].
TEST(TrainingLoop, FlopsPerSampleFindTheBatch) {
  PlanBuilder b;
  int x = b.input("x", {-1, 3, 4, 4});
  int y = b.op("Conv", {x, b.weight("w", Tensor(DType::F32, {2, 3, 3, 3}))},
               {-1, 2, 4, 4}, Attrs().ints("pads", {1, 1, 1, 1}));
  int tokens =
      b.op("Reshape", {y}, {4, -1, 8}, Attrs().ints("shape", {4, -1, 8}));
  b.output("y",
           b.op("MatMul", {tokens, b.weight("m", Tensor(DType::F32, {8, 5}))},
                {4, -1, 5}));
  double conv = 2.0 * (2 * 4 * 4) * (3 * 3 * 3), matmul = 2.0 * (4 * 5) * 8;
  EXPECT_DOUBLE_EQ(trainingFlopsPerSample(b.build()), 3 * (conv + matmul));
}
