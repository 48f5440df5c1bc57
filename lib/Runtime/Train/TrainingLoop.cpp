//===- TrainingLoop.cpp - epochs, evaluation, checkpoints -----------------===//

#include "heterps/Runtime/Train/TrainingLoop.h"
#include "heterps/Runtime/Data/BatchLoader.h"
#include "heterps/Support/NestingDepth.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"

#include <chrono>
#include <cmath>
#include <optional>

using namespace heterps;
using namespace heterps::runtime;
using namespace heterps::runtime::train;

Trainable::~Trainable() = default;

static llvm::Error loopError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// A NaN or infinite `what`: the run stops and saves nothing.
static llvm::Error diverged(llvm::StringRef what, double value,
                            const llvm::Twine &when) {
  return loopError(llvm::Twine("the ") + what + " is " +
                   (std::isnan(value) ? "NaN" : "infinite") + " " + when +
                   ": training diverged (try a lower --lr); nothing saved");
}

/// Restores `job` from the checkpoint in `dir`; where the run stood.
static llvm::Expected<TrainingProgress>
resumeFrom(llvm::StringRef dir, Trainable &job, const CheckpointKey &key) {
  auto weights = job.weights();
  if (!weights)
    return weights.takeError();
  auto loaded = loadCheckpoint(dir, job.plan(), *weights, key);
  if (!loaded)
    return loaded.takeError();
  if (llvm::Error e =
          job.restore(std::move(loaded->state), loaded->progress.globalStep))
    return loopError(checkpointPath(dir) + ": " + llvm::toString(std::move(e)) +
                     "; not resuming");
  return loaded->progress;
}

namespace {

/// One run of the loop: its position, its epochs' entries and its
/// checkpoints.
class Run {
public:
  Run(Trainable &job, const data::Dataset &train, const LoopOptions &options,
      const LoopEvents &events)
      : job(job), train(train), o(options), events(events) {}

  llvm::Expected<LoopResult> run();
  /// Where the run stood (the step it reached when it failed).
  int64_t globalStep() const { return progress.globalStep; }
  /// Whether the run failed in the job (a step, an evaluation, a
  /// checkpoint's state): what a recovery may cure.
  bool jobFailed() const { return failedInJob; }
  /// Set for the run that continues a job brought back after a failure.
  RecoveryEvent *recovery = nullptr;
  std::chrono::steady_clock::time_point failedAt;

private:
  llvm::Error resume();
  llvm::Error checkpoint();
  /// One epoch's steps; false when stopped by stopAfter.
  llvm::Expected<bool> steps(int epoch, float lr, data::BatchLoader &loader,
                             int64_t stepsPerEpoch);
  llvm::Expected<llvm::json::Object> finishEpoch(int epoch, float lr);

  Trainable &job;
  const data::Dataset &train;
  const LoopOptions &o;
  const LoopEvents &events;
  TrainingProgress progress;
  /// The global step this run started from.
  int64_t firstGlobalStep = 0;
  llvm::json::Array epochs;
  bool failedInJob = false;
  int64_t checkpoints = 0;
  double checkpointSeconds = 0;
  uint64_t checkpointBytes = 0;
  /// Marks an error of the job's.
  llvm::Error inJob(llvm::Error e) {
    failedInJob = true;
    return e;
  }
};

llvm::Error Run::resume() {
  auto loaded = resumeFrom(o.checkpointDir, job, o.key);
  if (!loaded) {
    llvm::Error e =
        loopError("--resume: " + llvm::toString(loaded.takeError()));
    // Restoring after a failure reaches every process: another may fail.
    return recovery ? inJob(std::move(e)) : std::move(e);
  }
  progress = *loaded;
  if (recovery) {
    recovery->restoredTo = progress.globalStep;
    recovery->seconds = std::chrono::duration<double>(
                            std::chrono::steady_clock::now() - failedAt)
                            .count();
    if (events.recovered)
      events.recovered(*recovery);
  } else if (events.resumed) {
    events.resumed(progress);
  }
  // Written by an earlier run, but the file may have been tampered with.
  llvm::Expected<llvm::json::Value> parsed =
      [&]() -> llvm::Expected<llvm::json::Value> {
    if (llvm::Error e =
            checkNestingDepth(progress.finishedEpochs, "the epoch reports"))
      return std::move(e);
    return llvm::json::parse(progress.finishedEpochs);
  }();
  if (!parsed || !parsed->getAsArray()) {
    if (!parsed)
      llvm::consumeError(parsed.takeError());
    return loopError("--resume: the checkpoint's epoch reports are not a "
                     "JSON array");
  }
  epochs = std::move(*parsed->getAsArray());
  return llvm::Error::success();
}

llvm::Error Run::checkpoint() {
  if (o.checkpointDir.empty())
    return llvm::Error::success();
  auto start = std::chrono::steady_clock::now();
  progress.finishedEpochs =
      llvm::formatv("{0}", llvm::json::Value(llvm::json::Array(epochs))).str();
  auto state = job.state();
  if (!state)
    return inJob(state.takeError());
  if (llvm::Error e = checkFiniteWeights(job.plan(), state->weights))
    return loopError("--checkpoint: not written: " +
                     llvm::toString(std::move(e)));
  if (llvm::Error e =
          saveCheckpoint(o.checkpointDir, job.plan(), *state, o.key, progress))
    return loopError("--checkpoint: " + llvm::toString(std::move(e)));
  ++checkpoints;
  checkpointSeconds +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  llvm::sys::fs::file_size(checkpointPath(o.checkpointDir), checkpointBytes);
  for (const Trainer::Part &part : state->parts)
    checkpointBytes += part.bytes;
  return llvm::Error::success();
}

llvm::Expected<bool> Run::steps(int epoch, float lr, data::BatchLoader &loader,
                                int64_t stepsPerEpoch) {
  // Time this run spends, added to what a resumed epoch had spent.
  auto start = std::chrono::steady_clock::now();
  double secondsBefore = progress.seconds;
  while (progress.steps < stepsPerEpoch) {
    if ((o.stopAfter > 0 && progress.globalStep >= o.stopAfter) ||
        (events.stopRequested && events.stopRequested()))
      return false;
    std::optional<data::Batch> b = loader.next();
    if (!b)
      break;
    auto result = job.step(b->inputs, b->targets, lr);
    if (!result)
      return inJob(result.takeError());
    // Every later step would be NaN too: stop before saving such weights.
    if (!std::isfinite(result->loss))
      return diverged("loss", result->loss,
                      llvm::formatv("at epoch {0}, step {1}", epoch + 1,
                                    progress.steps + 1));
    progress.lossSum += result->loss;
    progress.correct += result->correct;
    progress.judged += result->judged;
    progress.samples += b->inputs.dim(0);
    ++progress.steps;
    ++progress.nextBatch;
    ++progress.globalStep;
    progress.seconds =
        secondsBefore +
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    if (o.checkpointEvery > 0 && progress.globalStep % o.checkpointEvery == 0)
      if (llvm::Error e = checkpoint())
        return std::move(e);
    if (events.stepped) {
      StepEvent event;
      event.epoch = epoch;
      event.step = progress.steps;
      event.stepsPerEpoch = stepsPerEpoch;
      event.globalStep = progress.globalStep;
      event.firstGlobalStep = firstGlobalStep;
      event.meanLoss = progress.lossSum / progress.steps;
      event.samplesPerSecond = progress.samples / progress.seconds;
      event.secondsLeft =
          progress.seconds / progress.steps * (stepsPerEpoch - progress.steps);
      events.stepped(event);
    }
  }
  return true;
}

llvm::Expected<llvm::json::Object> Run::finishEpoch(int epoch, float lr) {
  const TrainingProgress &p = progress;
  llvm::json::Object entry{
      {"epoch", epoch + 1},
      {"lr", static_cast<double>(lr)},
      {"steps", p.steps},
      {"loss", p.lossSum / std::max<int64_t>(p.steps, 1)},
      {"seconds", p.seconds},
      {"samples_per_s", p.samples / p.seconds},
      {"gflops_per_s", o.flopsPerSample * p.samples / p.seconds / 1e9}};
  if (p.judged)
    entry["train_accuracy"] = double(p.correct) / p.judged;
  if (o.eval) {
    auto eval = job.evaluate(*o.eval, o.evalBatch);
    if (!eval)
      return inJob(
          loopError("evaluation: " + llvm::toString(eval.takeError())));
    if (!std::isfinite(eval->loss)) // the last update went out of range
      return diverged("evaluation loss", eval->loss,
                      llvm::formatv("after epoch {0}", epoch + 1));
    entry["eval_loss"] = eval->loss;
    if (eval->judged)
      entry["eval_accuracy"] = eval->accuracy();
    if (eval->auc >= 0)
      entry["eval_auc"] = eval->auc;
  }
  // A NaN that a Relu or MaxPool keeps out of the loss still ruins the
  // weights: the run fails rather than reporting success.
  auto trained = job.weights();
  if (!trained)
    return inJob(trained.takeError());
  if (llvm::Error e = checkFiniteWeights(job.plan(), *trained))
    return loopError(llvm::formatv("after epoch {0}: ", epoch + 1).str() +
                     llvm::toString(std::move(e)) + "; nothing saved");
  return entry;
}

llvm::Expected<LoopResult> Run::run() {
  if (o.resume) {
    if (llvm::Error e = resume())
      return std::move(e);
  } else if (job.canRecover() && !o.checkpointDir.empty()) {
    // A failure before the first checkpoint goes back to the start.
    if (llvm::Error e = checkpoint())
      return std::move(e);
  }
  firstGlobalStep = progress.globalStep;
  data::BatchLoaderOptions loaderOptions;
  loaderOptions.batchSize = o.batch;
  loaderOptions.seed = o.seed;
  data::BatchLoader loader(train, loaderOptions);
  int64_t stepsPerEpoch = loader.numBatches();
  if (o.maxSteps > 0)
    stepsPerEpoch = std::min<int64_t>(stepsPerEpoch, o.maxSteps);
  LoopResult result;
  for (int epoch = progress.epoch; epoch < o.epochs; ++epoch) {
    float lr = o.schedule.at(epoch);
    loader.startEpoch(epoch, progress.nextBatch);
    llvm::Expected<bool> finished = steps(epoch, lr, loader, stepsPerEpoch);
    if (!finished)
      return finished.takeError();
    if (!*finished) {
      result.stopped = true;
      break;
    }
    auto entry = finishEpoch(epoch, lr);
    if (!entry)
      return entry.takeError();
    if (events.epochEnded)
      events.epochEnded(*entry);
    epochs.push_back(std::move(*entry));
    // The next epoch starts from its first batch.
    progress = TrainingProgress{epoch + 1, 0, progress.globalStep};
    if (o.checkpointEvery == 0)
      if (llvm::Error e = checkpoint())
        return std::move(e);
  }
  if (result.stopped || o.checkpointEvery > 0)
    if (llvm::Error e = checkpoint())
      return std::move(e);
  result.epochs = std::move(epochs);
  result.globalStep = progress.globalStep;
  result.checkpoints = checkpoints;
  result.checkpointSeconds = checkpointSeconds;
  result.checkpointBytes = checkpointBytes;
  return result;
}

} // namespace

llvm::Expected<LoopResult> train::runTrainingLoop(Trainable &job,
                                                  const data::Dataset &train,
                                                  const LoopOptions &options,
                                                  const LoopEvents &events) {
  LoopOptions o = options;
  std::optional<RecoveryEvent> recovery;
  std::chrono::steady_clock::time_point failedAt;
  for (int restarts = 0;; ++restarts) {
    Run run(job, train, o, events);
    if (recovery) {
      run.recovery = &*recovery;
      run.failedAt = failedAt;
    }
    auto result = run.run();
    if (result || !run.jobFailed() || !job.canRecover())
      return result;
    if (o.checkpointDir.empty())
      return loopError(llvm::toString(result.takeError()) +
                       " (with --checkpoint DIR the job would have gone "
                       "back to its last checkpoint)");
    failedAt = std::chrono::steady_clock::now();
    std::string failure = llvm::toString(result.takeError());
    if (restarts >= o.maxRestarts)
      return loopError(
          (o.maxRestarts == 0
               ? "--max-restarts 0 allows no restart: "
               : llvm::formatv("the job failed again after {0} restart{1} "
                               "(--max-restarts {0}): ",
                               restarts, restarts == 1 ? "" : "s")
                     .str()) +
          failure);
    if (llvm::Error e = job.recover(loopError(failure)))
      return std::move(e);
    recovery = RecoveryEvent{failure, run.globalStep(), 0, restarts + 1, 0};
    o.resume = true;
  }
}

double train::trainingFlopsPerSample(const plan::Plan &plan) {
  auto dims = [&](int32_t v) {
    const auto &d = plan.values(v).dims();
    return std::vector<int64_t>(d.begin(), d.end());
  };
  auto count = [](const std::vector<int64_t> &shape, size_t from) {
    double n = 1;
    for (size_t i = from; i < shape.size(); ++i)
      n *= std::max<int64_t>(shape[i], 1);
    return n;
  };
  // Elements of one sample's part of a value: the dynamic dimension is the
  // batch, wherever it is (a transformer's [tokens, batch, channels] has it
  // second); a value of fixed shape has it first. A dynamic dimension that
  // merges the batch with heads (attention's [batch * heads, tokens, d])
  // counts one head.
  auto perSample = [&](const std::vector<int64_t> &shape) {
    bool dynamic = llvm::any_of(shape, [](int64_t d) { return d < 0; });
    return count(shape, dynamic ? 0 : 1);
  };
  double flops = 0;
  for (const plan::Op &op : plan.ops()) {
    if (op.type() == "Conv") {
      std::vector<int64_t> w = dims(op.inputs(1));
      // out elements per sample x (C/g x kernel) multiply-adds.
      flops += 2 * perSample(dims(op.outputs(0))) * count(w, 1);
    } else if (op.type() == "Gemm" || op.type() == "MatMul") {
      std::vector<int64_t> a = dims(op.inputs(0));
      int64_t k = 1;
      for (const plan::Attribute &attr : op.attributes())
        if (attr.name() == "trans_a" && attr.i())
          k = a.front();
      if (k == 1)
        k = a.back();
      flops += 2 * perSample(dims(op.outputs(0))) * std::max<int64_t>(k, 1);
    }
  }
  // Forward, backward-data and backward-weights.
  return 3 * flops;
}
