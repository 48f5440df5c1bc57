//===- Train.cpp - training from Python -----------------------------------===//
//
// heterps.train(): the library's training loop (Train/TrainingLoop.h) on a
// single-stage trainer, or on the in-process pipelined trainer when the
// plan has several stages or pipeline options are given, as heterps-run
// --train does. The package (heterps/__init__.py) checks the options and
// fills their defaults; here they arrive as a dict. The GIL is released
// while training; each step takes it back briefly to report progress,
// to call the user's callbacks and to notice Ctrl-C, which stops the run
// as --stop-after-steps would (checkpointed) and then raises
// KeyboardInterrupt.
//
//===----------------------------------------------------------------------===//

#include "Arrays.h"
#include "Common.h"

#include "heterps/Runtime/AtomicFile.h"
#include "heterps/Runtime/Pipeline.h"
#include "heterps/Runtime/PipelineTrain/PipelineTrainer.h"
#include "heterps/Runtime/Plan.h"
#include "heterps/Runtime/Train/Checkpoint.h"
#include "heterps/Runtime/Train/SaveModel.h"
#include "heterps/Runtime/Train/Trainer.h"
#include "heterps/Runtime/Train/TrainingLoop.h"
#include "heterps/Transforms/LowerToRuntime.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"

#include <pybind11/stl.h>

namespace py = pybind11;
using namespace heterps::python;
using namespace heterps::runtime;
using namespace heterps::runtime::train;

namespace {

template <typename T> T option(const py::dict &options, const char *key) {
  return options[key].cast<T>();
}

/// A data set from a spec string or an (inputs, targets) pair of arrays.
data::Dataset dataset(const py::dict &options, const char *spec,
                      const char *arrays) {
  if (!options[spec].is_none())
    return unwrap(data::loadDataset(option<std::string>(options, spec)));
  auto pair = options[arrays].cast<py::tuple>();
  return unwrap(
      data::makeDataset(tensorOf(pair[0].cast<py::array>(), "inputs"),
                        tensorOf(pair[1].cast<py::array>(), "targets"),
                        "arrays", "inputs", "targets"));
}

/// The pipeline options the dict gives; the trainer's settings carried over.
pipeline::PipelineTrainerOptions
pipelineOptions(const py::dict &options, const TrainerOptions &trainer,
                pipeline::TraceRecorder *trace) {
  auto o = pipeline::PipelineTrainerOptions::from(trainer);
  o.schedule =
      unwrap(pipeline::parseSchedule(option<std::string>(options, "schedule")));
  o.consistency =
      unwrap(ps::parseConsistency(option<std::string>(options, "consistency")));
  o.microBatches = option<int>(options, "micro_batches");
  o.replicas = option<std::vector<int>>(options, "replicas");
  o.serverShards = option<int>(options, "ps_shards");
  o.trace = trace;
  return o;
}

/// Calls back into Python after each step and epoch; remembers the first
/// Python error (a callback's, or Ctrl-C) and asks the loop to stop.
class Progress {
public:
  Progress(py::object onStep, py::object onEpoch)
      : onStep(std::move(onStep)), onEpoch(std::move(onEpoch)) {}

  LoopEvents events() {
    LoopEvents e;
    e.stepped = [this](const StepEvent &s) {
      py::gil_scoped_acquire gil;
      if (stop)
        return;
      if (PyErr_CheckSignals() != 0)
        return fail();
      if (onStep.is_none())
        return;
      call(onStep,
           py::dict(py::arg("epoch") = s.epoch + 1, py::arg("step") = s.step,
                    py::arg("steps_per_epoch") = s.stepsPerEpoch,
                    py::arg("global_step") = s.globalStep,
                    py::arg("loss") = s.meanLoss,
                    py::arg("samples_per_s") = s.samplesPerSecond,
                    py::arg("seconds_left") = s.secondsLeft));
    };
    e.epochEnded = [this](const llvm::json::Object &entry) {
      py::gil_scoped_acquire gil;
      if (stop || onEpoch.is_none())
        return;
      std::string text;
      llvm::raw_string_ostream os(text);
      os << llvm::json::Value(llvm::json::Object(entry));
      os.flush();
      call(onEpoch, py::module_::import("json").attr("loads")(text));
    };
    e.stopRequested = [this] { return stop; };
    return e;
  }

  /// Raises the Python error that stopped the run, if any.
  void rethrow() {
    if (error)
      throw *error;
  }

private:
  /// A callback that returns False stops the run; one that raises too.
  void call(py::object &callback, py::object arg) {
    try {
      py::object result = callback(arg);
      if (!result.is_none() && !result.cast<bool>())
        stop = true;
    } catch (py::error_already_set &e) {
      error.emplace(std::move(e));
      stop = true;
    }
  }
  void fail() {
    error.emplace();
    stop = true;
  }

  py::object onStep, onEpoch;
  std::optional<py::error_already_set> error;
  bool stop = false;
};

std::string trainModel(const IRModule &model, const py::dict &options) {
  plan::Plan plan;
  {
    FirstError diagnostics(model.context.get());
    mlir::FailureOr<plan::Plan> lowered =
        mlir::hps::lowerToRuntimePlan(model.op());
    if (mlir::failed(lowered))
      diagnostics.raise(model.path);
    plan = std::move(*lowered);
  }
  data::Dataset train = dataset(options, "data", "arrays");
  std::optional<data::Dataset> eval;
  if (!options["eval_data"].is_none() || !options["eval_arrays"].is_none())
    eval = dataset(options, "eval_data", "eval_arrays");

  TrainerOptions trainer;
  trainer.numThreads = option<int>(options, "threads");
  trainer.seed = option<uint64_t>(options, "seed");
  trainer.emulateMissingDevices =
      option<bool>(options, "emulate_missing_devices");
  trainer.loss = unwrap(parseLoss(option<std::string>(options, "loss")));
  trainer.optimizer.kind =
      unwrap(parseOptimizer(option<std::string>(options, "optimizer")));
  trainer.optimizer.momentum = option<float>(options, "momentum");
  trainer.optimizer.nesterov = option<bool>(options, "nesterov");
  trainer.optimizer.weightDecay = option<float>(options, "weight_decay");
  trainer.frozen = option<std::vector<std::string>>(options, "freeze");

  LoopOptions loop;
  loop.epochs = option<int>(options, "epochs");
  loop.batch = option<int64_t>(options, "batch");
  loop.seed = trainer.seed;
  loop.schedule.kind =
      unwrap(parseSchedule(option<std::string>(options, "lr_schedule")));
  loop.schedule.base = option<float>(options, "lr");
  loop.schedule.stepEpochs = option<int>(options, "lr_step");
  loop.schedule.gamma = option<float>(options, "lr_gamma");
  loop.schedule.epochs = loop.epochs;
  loop.maxSteps = option<int64_t>(options, "max_steps");
  loop.eval = eval ? &*eval : nullptr;
  loop.checkpointDir = option<std::string>(options, "checkpoint");
  loop.checkpointEvery = option<int64_t>(options, "checkpoint_every");
  loop.resume = option<bool>(options, "resume");
  loop.key = CheckpointKey{option<std::string>(options, "optimizer"),
                           lossName(trainer.loss), loop.batch, loop.seed,
                           train.size()};
  loop.stopAfter = option<int64_t>(options, "stop_after_steps");
  loop.flopsPerSample = trainingFlopsPerSample(plan);
  auto saveModel = option<std::string>(options, "save_model");
  auto traceFile = option<std::string>(options, "trace");
  for (const std::string &file : {saveModel, traceFile})
    if (!file.empty())
      if (llvm::Error e = checkCanReplace(file))
        raise(std::move(e));
  if (!loop.checkpointDir.empty()) {
    if (!loop.resume &&
        llvm::sys::fs::exists(checkpointPath(loop.checkpointDir)))
      raise(loop.checkpointDir +
            ": holds the checkpoint of an earlier run; pass resume=True to "
            "continue it, or name another directory");
    if (std::error_code ec =
            llvm::sys::fs::create_directories(loop.checkpointDir))
      raise(loop.checkpointDir + ": " + ec.message());
    if (llvm::Error e = checkCanReplace(checkpointPath(loop.checkpointDir)))
      raise(std::move(e));
  }

  pipeline::TraceRecorder trace;
  bool pipelined = option<bool>(options, "pipelined") ||
                   stageRanges(plan).size() > 1 || !traceFile.empty();
  Progress progress(options["on_step"], options["on_epoch"]);
  std::optional<pipeline::PipelineTrainerOptions> pipelineSettings;
  if (pipelined)
    pipelineSettings =
        pipelineOptions(options, trainer, traceFile.empty() ? nullptr : &trace);
  std::optional<llvm::Expected<LoopResult>> result;
  std::unique_ptr<Trainable> job;
  {
    py::gil_scoped_release release;
    WeightMap weights = unwrap(loadWeights(plan));
    if (pipelineSettings) {
      job = std::make_unique<TrainableOf<pipeline::PipelineTrainer>>(
          unwrap(pipeline::PipelineTrainer::create(plan, std::move(weights),
                                                   *pipelineSettings)));
    } else {
      job = std::make_unique<TrainableOf<Trainer>>(
          unwrap(Trainer::create(plan, std::move(weights), trainer)));
    }
    for (const data::Dataset *d : {&train, eval ? &*eval : nullptr})
      if (d)
        if (llvm::Error e = job->checkData(*d))
          raise(std::move(e));
    result.emplace(runTrainingLoop(*job, train, loop, progress.events()));
  }
  progress.rethrow();
  LoopResult trained = unwrap(std::move(*result));
  if (!traceFile.empty()) {
    if (llvm::Error e = trace.write(traceFile))
      raise(std::move(e));
    if (llvm::Error e = trace.writePicture(pipeline::picturePath(traceFile)))
      raise(std::move(e));
  }
  if (!saveModel.empty()) {
    WeightMap weights = unwrap(job->weights());
    if (llvm::Error e = saveTrainedModel(plan, weights, saveModel))
      raise(std::move(e));
  }
  int64_t parameters = 0;
  for (const auto &p : job->parameters())
    parameters += p.second;
  llvm::json::Object report{{"parameters", parameters},
                            {"samples", train.size()},
                            {"stopped", trained.stopped},
                            {"global_step", trained.globalStep},
                            {"pipelined", pipelined},
                            {"train_flops_per_sample", loop.flopsPerSample},
                            {"epochs", std::move(trained.epochs)}};
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::json::Value(std::move(report));
  return os.str();
}

} // namespace

void heterps::python::bindTraining(py::module_ &m) {
  m.def("train", &trainModel, py::arg("model"), py::arg("options"));
}
