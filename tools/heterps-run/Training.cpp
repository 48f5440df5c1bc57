//===- Training.cpp - heterps-run --train ---------------------------------===//
//
// Parses the training options, reads the data, makes the trainer (one
// stage, pipelined, or the coordinator of a distributed job) and runs the
// library's training loop (Train/TrainingLoop.h) on it; prints its progress
// and per-epoch table, and writes the report and the trained model.
// Progress goes to stderr: a live line on a terminal, a plain line every
// tenth of an epoch otherwise; the per-epoch table goes to stdout.
//
//===----------------------------------------------------------------------===//

#include "Training.h"
#include "Distributed.h"
#include "OptionChecks.h"

#include "heterps/Runtime/AtomicFile.h"
#include "heterps/Runtime/Pipeline.h"
#include "heterps/Runtime/PipelineTrain/PipelineTrainer.h"
#include "heterps/Runtime/PipelineTrain/StepProfile.h"
#include "heterps/Runtime/Plan.h"
#include "heterps/Runtime/Train/Checkpoint.h"
#include "heterps/Runtime/Train/SaveModel.h"
#include "heterps/Runtime/Train/Trainer.h"
#include "heterps/Runtime/Train/TrainingLoop.h"
#include "heterps/Support/PrintableLine.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"

#include <algorithm>
#include <cstdio>

using namespace heterps;
using namespace heterps::runtime;
using namespace heterps::runtime::train;
using namespace heterps::tools;
namespace cl = llvm::cl;

llvm::cl::OptionCategory &tools::trainingCategory() {
  static cl::OptionCategory category("heterps-run training options");
  return category;
}

llvm::cl::OptionCategory &tools::pipelineCategory() {
  static cl::OptionCategory category(
      "heterps-run pipelined training options (a plan of several stages, "
      "or any of these options, trains through the parameter server)");
  return category;
}

namespace {

cl::opt<bool> trainFlag("train",
                        cl::desc("Train the model (see the options below)"),
                        cl::cat(tools::trainingCategory()));
cl::opt<std::string>
    dataSpec("data",
             cl::desc("Training data: fashion-mnist[:train|:test] or "
                      "inputs=FILE,targets=FILE (.npy, .pb or IDX files)"),
             cl::value_desc("SPEC"), cl::cat(tools::trainingCategory()));
cl::opt<std::string> evalSpec("eval-data",
                              cl::desc("Held-out data evaluated after every "
                                       "epoch (same forms as --data)"),
                              cl::value_desc("SPEC"),
                              cl::cat(tools::trainingCategory()));
cl::opt<std::string> lossOption("loss",
                                cl::desc("softmax-ce (default), bce-logits or "
                                         "mse"),
                                cl::init("softmax-ce"),
                                cl::cat(tools::trainingCategory()));
cl::opt<std::string>
    optimizerName("optimizer",
                  cl::desc("sgd (default), momentum, adam or adagrad"),
                  cl::init("sgd"), cl::cat(tools::trainingCategory()));
cl::opt<float> learningRate("lr", cl::desc("Learning rate (default 0.01)"),
                            cl::init(0.01f),
                            cl::cat(tools::trainingCategory()));
cl::opt<float> momentum("momentum",
                        cl::desc("Momentum of --optimizer momentum "
                                 "(default 0.9)"),
                        cl::init(0.9f), cl::cat(tools::trainingCategory()));
cl::opt<bool> nesterov("nesterov", cl::desc("Nesterov momentum"),
                       cl::cat(tools::trainingCategory()));
cl::opt<float> weightDecay("weight-decay",
                           cl::desc("L2 weight decay (default 0)"),
                           cl::init(0.f), cl::cat(tools::trainingCategory()));
cl::opt<std::string> scheduleName(
    "lr-schedule",
    cl::desc("constant (default), step (x --lr-gamma every --lr-step "
             "epochs) or cosine (to 0 over the epochs)"),
    cl::init("constant"), cl::cat(tools::trainingCategory()));
cl::opt<int> lrStep("lr-step",
                    cl::desc("Epochs per step of --lr-schedule "
                             "step (default 1)"),
                    cl::init(1), cl::cat(tools::trainingCategory()));
cl::opt<float> lrGamma("lr-gamma",
                       cl::desc("Factor per step of --lr-schedule step "
                                "(default 0.1)"),
                       cl::init(0.1f), cl::cat(tools::trainingCategory()));
cl::opt<int> epochs("epochs", cl::desc("Epochs (default 1)"), cl::init(1),
                    cl::cat(tools::trainingCategory()));
cl::opt<int64_t> maxSteps("max-steps",
                          cl::desc("Stop each epoch after N steps (for "
                                   "quick measurements; default: all)"),
                          cl::value_desc("N"), cl::init(0),
                          cl::cat(tools::trainingCategory()));
cl::opt<uint64_t> seed("seed",
                       cl::desc("Seeds the shuffling and dropout (default 1)"),
                       cl::init(1), cl::cat(tools::trainingCategory()));
cl::list<std::string> freeze("freeze",
                             cl::desc("Initializers to keep fixed "
                                      "(comma-separated names)"),
                             cl::CommaSeparated, cl::value_desc("NAMES"),
                             cl::cat(tools::trainingCategory()));
cl::opt<std::string> checkpointDir(
    "checkpoint",
    cl::desc("Keep a checkpoint in DIR (DIR/checkpoint.pb, replaced "
             "atomically): every --checkpoint-every steps and when the run "
             "ends. A distributed job's processes write their parts into "
             "DIR/step-N, which checkpoint.pb names (on several hosts DIR "
             "must be a directory every host sees); the job then survives "
             "a process that dies"),
    cl::value_desc("DIR"), cl::cat(tools::trainingCategory()));
cl::opt<int64_t> checkpointEvery(
    "checkpoint-every",
    cl::desc("Steps between checkpoints (default 0: at the end of every "
             "epoch)"),
    cl::value_desc("N"), cl::init(0), cl::cat(tools::trainingCategory()));
cl::opt<bool> resume("resume",
                     cl::desc("Continue the run whose checkpoint is in "
                              "--checkpoint DIR (same model, data, "
                              "--batch, --seed, --loss and --optimizer)"),
                     cl::cat(tools::trainingCategory()));
cl::opt<int64_t> stopAfter(
    "stop-after-steps",
    cl::desc("Stop once N steps have been taken in all, counting those "
             "before --resume (writes the checkpoint)"),
    cl::value_desc("N"), cl::init(0), cl::cat(tools::trainingCategory()));
cl::opt<std::string>
    scheduleOption("schedule",
                   cl::desc("Pipeline schedule: gpipe (default) or 1f1b"),
                   cl::init("gpipe"), cl::cat(tools::pipelineCategory()));
cl::opt<int> microBatches("micro-batches",
                          cl::desc("Micro-batches per step (default 1)"),
                          cl::value_desc("M"), cl::init(1),
                          cl::cat(tools::pipelineCategory()));
cl::list<int> replicasOption(
    "replicas",
    cl::desc("Replicas per stage (default: the plan's, else 1 each)"),
    cl::CommaSeparated, cl::value_desc("K1,K2,..."),
    cl::cat(tools::pipelineCategory()));
cl::opt<std::string> consistencyOption(
    "consistency",
    cl::desc("Parameter-server consistency: bsp (default) or asp"),
    cl::init("bsp"), cl::cat(tools::pipelineCategory()));
cl::opt<int> serverShards("ps-shards",
                          cl::desc("Parameter-server shards (default 2)"),
                          cl::init(2), cl::cat(tools::pipelineCategory()));
cl::opt<int64_t> sparseMinRows(
    "sparse-min-rows",
    cl::desc("Gather tables of at least N rows live in sparse parameter-"
             "server tables: never loaded, rows pulled and pushed as "
             "batches touch them (default 1000000)"),
    cl::value_desc("N"), cl::init(1000000), cl::cat(tools::pipelineCategory()));
cl::opt<std::string> sparseOptimizer(
    "sparse-optimizer",
    cl::desc("Optimizer of sparse tables at the server: adagrad (default) "
             "or sgd"),
    cl::init("adagrad"), cl::cat(tools::pipelineCategory()));
cl::opt<float> sparseInitScale(
    "sparse-init-scale",
    cl::desc("Sparse table rows start uniform in [-S, S) (default 0.01)"),
    cl::value_desc("S"), cl::init(0.01f), cl::cat(tools::pipelineCategory()));
cl::opt<std::string>
    traceFile("trace",
              cl::desc("Write a Chrome trace (Perfetto) of every forward, "
                       "backward, pull and push, and a picture of the "
                       "schedule beside it (FILE.svg)"),
              cl::value_desc("FILE.json"), cl::cat(tools::pipelineCategory()));
cl::opt<std::string>
    saveModel("save-model",
              cl::desc("Write the trained model as ONNX (replaced atomically)"),
              cl::value_desc("OUT.onnx"), cl::cat(tools::trainingCategory()));

constexpr const char *kTool = "heterps-run";

int fail(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), kTool)
      << printableLine(message.str()) << "\n";
  return 1;
}

/// The --checkpoint directory: one that can be written, and that holds no
/// checkpoint unless --resume continues it (a new run would replace it).
llvm::Error checkCheckpointDir() {
  if (checkpointDir.empty())
    return llvm::Error::success();
  auto problem = [](const llvm::Twine &what) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   checkpointDir + ": " + what);
  };
  if (llvm::sys::fs::exists(checkpointDir) &&
      !llvm::sys::fs::is_directory(checkpointDir))
    return problem("not a directory");
  std::string file = checkpointPath(checkpointDir);
  if (!resume && llvm::sys::fs::exists(file))
    return problem("holds the checkpoint of an earlier run; pass --resume to "
                   "continue it, or name another directory");
  if (std::error_code ec = llvm::sys::fs::create_directories(checkpointDir))
    return problem(ec.message());
  return checkCanReplace(file);
}

/// `x` with %g: learning rates such as 0.001 or 1e-05.
std::string shortFloat(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", x);
  return text;
}

std::string clock(double seconds) {
  auto s = static_cast<int64_t>(seconds + 0.5);
  return llvm::formatv("{0}:{1:d2}", s / 60, s % 60).str();
}

bool pipelineRequested(const plan::Plan &plan, bool sparseTables) {
  cl::Option *options[] = {&scheduleOption, &microBatches, &consistencyOption,
                           &serverShards,   &traceFile,    &sparseOptimizer,
                           &sparseInitScale};
  return sparseTables || tools::remoteServerRequested() ||
         tools::distributedRequested() ||
         runtime::stageRanges(plan).size() > 1 ||
         replicasOption.getNumOccurrences() > 0 ||
         llvm::any_of(options,
                      [](cl::Option *o) { return o->getNumOccurrences() > 0; });
}

/// The single-stage trainer's options, as the flags describe them.
llvm::Expected<TrainerOptions> trainerOptions(const TrainingRun &run) {
  TrainerOptions options;
  options.numThreads = run.threads;
  options.seed = seed;
  options.emulateMissingDevices = run.emulateMissingDevices;
  auto loss = parseLoss(lossOption);
  if (!loss)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "--loss: " +
                                       llvm::toString(loss.takeError()));
  options.loss = *loss;
  auto optimizer = parseOptimizer(optimizerName);
  if (!optimizer)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "--optimizer: " +
                                       llvm::toString(optimizer.takeError()));
  options.optimizer.kind = *optimizer;
  options.optimizer.momentum = momentum;
  options.optimizer.nesterov = nesterov;
  options.optimizer.weightDecay = weightDecay;
  options.frozen.assign(freeze.begin(), freeze.end());
  return options;
}

/// The pipelined trainer's options, as the flags describe them.
llvm::Expected<pipeline::PipelineTrainerOptions>
pipelineOptions(const plan::Plan &plan, const TrainerOptions &trainer,
                pipeline::TraceRecorder *trace) {
  auto options = pipeline::PipelineTrainerOptions::from(trainer);
  auto schedule = pipeline::parseSchedule(scheduleOption);
  if (!schedule)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "--schedule: " +
                                       llvm::toString(schedule.takeError()));
  auto consistency = ps::parseConsistency(consistencyOption);
  if (!consistency)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "--consistency: " +
                                       llvm::toString(consistency.takeError()));
  options.schedule = *schedule;
  options.consistency = *consistency;
  options.microBatches = microBatches;
  options.replicas.assign(replicasOption.begin(), replicasOption.end());
  options.serverShards = serverShards;
  options.trace = trace;
  if (sparseOptimizer == "sgd")
    options.sparseOptimizer.kind = ps::SparseOptimizerOptions::Kind::SGD;
  else if (sparseOptimizer != "adagrad")
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "--sparse-optimizer: unknown optimizer '" +
                                       sparseOptimizer +
                                       "' (expected adagrad or sgd)");
  options.sparseInitScale = sparseInitScale;
  // The job, as its processes must agree on it: the model and every
  // option that changes what a step computes or how it is cut up.
  std::string identity = plan.SerializeAsString();
  llvm::raw_string_ostream os(identity);
  os << "|seed=" << options.seed << "|sparse-init=" << options.sparseInitScale
     << "|schedule=" << scheduleOption << "|m=" << options.microBatches
     << "|consistency=" << consistencyOption
     << "|shards=" << options.serverShards
     << "|loss=" << static_cast<int>(options.loss)
     << "|optimizer=" << static_cast<int>(options.optimizer.kind) << ","
     << options.optimizer.momentum << "," << options.optimizer.nesterov << ","
     << options.optimizer.weightDecay << "|sparse-optimizer=" << sparseOptimizer
     << "|replicas=";
  for (int k : options.replicas)
    os << k << ",";
  for (const std::string &name : options.frozen)
    os << "|frozen=" << name;
  os.flush();
  options.job =
      llvm::utohexstr(llvm::xxh3_64bits(llvm::arrayRefFromStringRef(identity)),
                      /*LowerCase=*/true);
  return options;
}

/// The job's processes: parameter-server shards and a worker per replica
/// of each stage (--replicas, else the plan's).
distributed::JobShape jobShape(const plan::Plan &plan,
                               const pipeline::PipelineTrainerOptions &o) {
  distributed::JobShape shape;
  shape.shards = o.serverShards;
  shape.replicas = o.replicas;
  if (shape.replicas.empty()) {
    int p = static_cast<int>(runtime::stageRanges(plan).size());
    for (int s = 0; s < p; ++s)
      shape.replicas.push_back(
          s < plan.stages_size() ? std::max(1, plan.stages(s).replicas()) : 1);
  }
  return shape;
}

/// The per-stage table and the measured-vs-predicted table of a pipelined
/// run, on stdout; the same figures for the report.
llvm::json::Object reportPipeline(const pipeline::PipelineTrainer &trainer,
                                  const pipeline::StepProfile &profile,
                                  int64_t batch) {
  const auto &o = trainer.settings();
  llvm::outs() << llvm::formatv(
      "\npipeline: {0} stages, {1}, {2} micro-batches, {3}, mean of {4} "
      "steps\n\n",
      trainer.numStages(), pipeline::scheduleName(o.schedule), o.microBatches,
      o.consistency == ps::Consistency::BSP ? "BSP" : "ASP", profile.steps());
  llvm::outs() << "| stage | replicas | forward ms | backward ms | pull ms | "
                  "push ms | micro-batches held |\n"
                  "|---:|---:|---:|---:|---:|---:|---:|\n";
  llvm::json::Array stages;
  for (auto [s, st] : llvm::enumerate(profile.stages())) {
    llvm::outs() << llvm::formatv(
        "| {0} | {1} | {2:F2} | {3:F2} | {4:F2} | {5:F2} | {6} |\n", s,
        st.replicas, 1e3 * st.forward, 1e3 * st.backward, 1e3 * st.pull,
        1e3 * st.push, st.stashSlots);
    stages.push_back(llvm::json::Object{{"replicas", st.replicas},
                                        {"forward_s", st.forward},
                                        {"backward_s", st.backward},
                                        {"pull_s", st.pull},
                                        {"push_s", st.push},
                                        {"micro_batches_held", st.stashSlots}});
  }
  pipeline::StepProfile::Prediction p = profile.predict();
  double measured = profile.stepSeconds();
  double formula =
      pipeline::idealBubbleFraction(trainer.numStages(), o.microBatches);
  llvm::outs() << llvm::formatv(
      "\n| step | measured | cost model | schedule model |\n"
      "|---|---:|---:|---:|\n"
      "| ms | {0:F2} | {1:F2} ({2:F2}x) | {3:F2} ({4:F2}x) |\n"
      "| samples/s | {5:F0} | {6:F0} | {7:F0} |\n"
      "| bubble fraction | {8:F3} | - | {9:F3} (formula {10:F3}) |\n",
      1e3 * measured, 1e3 * p.costModelSeconds, p.costModelSeconds / measured,
      1e3 * p.scheduleSeconds, p.scheduleSeconds / measured, batch / measured,
      batch / p.costModelSeconds, batch / p.scheduleSeconds,
      profile.bubbleFraction(), p.scheduleBubble, formula);
  llvm::outs().flush();
  return llvm::json::Object{
      {"stages", std::move(stages)},
      {"schedule", pipeline::scheduleName(o.schedule)},
      {"micro_batches", o.microBatches},
      {"step_s", measured},
      {"cost_model_step_s", p.costModelSeconds},
      {"schedule_model_step_s", p.scheduleSeconds},
      {"bubble_fraction", profile.bubbleFraction()},
      {"schedule_model_bubble_fraction", p.scheduleBubble},
      {"bubble_fraction_formula", formula}};
}

} // namespace

bool tools::trainingRequested() { return trainFlag; }

void tools::noteEmulatedDevice(const plan::Plan &plan,
                               llvm::StringRef deviceType,
                               llvm::StringRef verb) {
  std::string kind = runtime::deviceKind(plan, deviceType);
  llvm::errs() << kTool << ": note: ops placed on '" << deviceType << "'"
               << (kind.empty() ? "" : " (kind " + kind + ")") << " " << verb
               << " on the emulated device (--emulate-missing-devices)\n";
}

int tools::runTraining(const plan::Plan &plan, const TrainingRun &run) {
  if (dataSpec.empty())
    return fail("--train needs --data SPEC");
  if (OptionProblem p = firstProblem(
          {atLeast(epochs, 1), positive(learningRate), atLeast(momentum, 0.f),
           atLeast(weightDecay, 0.f), atLeast(lrStep, 1), positive(lrGamma),
           atLeast(maxSteps, int64_t(0)), atLeast(checkpointEvery, int64_t(0)),
           atLeast(stopAfter, int64_t(0)), atLeast(sparseMinRows, int64_t(0)),
           atLeast(sparseInitScale, 0.f)}))
    return fail(*p);
  if (resume && checkpointDir.empty())
    return fail("--resume needs --checkpoint DIR");
  // The outputs are the coordinator's: the job's other ranks write none.
  if (!helperRank()) {
    if (llvm::Error e = checkCheckpointDir())
      return fail("--checkpoint: " + llvm::toString(std::move(e)));
    // Output places that cannot be written fail now, not after training.
    for (const cl::opt<std::string> *file : {&saveModel, &traceFile})
      if (!file->empty())
        if (llvm::Error e = checkCanReplace(*file))
          return fail("--" + file->ArgStr + ": " +
                      llvm::toString(std::move(e)));
    if (!traceFile.empty())
      if (llvm::Error e = checkCanReplace(pipeline::picturePath(traceFile)))
        return fail("--trace: " + llvm::toString(std::move(e)));
  }
  auto devices = runtime::Devices::create(
      plan, trainingDevices(run.threads, run.emulateMissingDevices));
  if (!devices)
    return fail(run.modelPath + ": " + llvm::toString(devices.takeError()));
  for (const std::string &device : (*devices)->emulated())
    noteEmulatedDevice(plan, device, "train");
  int64_t batch = run.batch > 0 ? run.batch : 32;
  auto made = trainerOptions(run);
  if (!made)
    return fail(llvm::toString(made.takeError()));
  TrainerOptions options = std::move(*made);
  LRSchedule schedule;
  auto kind = parseSchedule(scheduleName);
  if (!kind)
    return fail("--lr-schedule: " + llvm::toString(kind.takeError()));
  schedule.kind = *kind;
  schedule.base = learningRate;
  schedule.stepEpochs = lrStep;
  schedule.gamma = lrGamma;
  schedule.epochs = epochs;

  pipeline::TraceRecorder trace;
  std::optional<pipeline::PipelineTrainerOptions> pipelined_options;
  std::optional<distributed::JobShape> shape;
  if (distributedRequested()) {
    if (!traceFile.empty())
      return fail("--trace: a distributed job's processes are not traced "
                  "yet");
    auto o = pipelineOptions(plan, options, nullptr);
    if (!o)
      return fail(run.modelPath + ": " + llvm::toString(o.takeError()));
    pipelined_options = std::move(*o);
    shape = jobShape(plan, *pipelined_options);
    auto role = distributedRole(*shape);
    if (!role)
      return fail(llvm::toString(role.takeError()));
    if (role->kind == distributed::Role::ParameterServer)
      return runPSRank(*role, *shape);
    if (role->kind == distributed::Role::Worker)
      return runWorkerRank(
          *role, *shape, pipelined_options->job,
          [&](ps::Transport &server, pipeline::StageExchange &links)
              -> llvm::Expected<std::unique_ptr<pipeline::PipelineTrainer>> {
            std::set<int32_t> sparse =
                pipeline::gatherTables(plan, sparseMinRows);
            auto weights = loadWeights(
                plan, [&](int32_t v) { return sparse.count(v) > 0; });
            if (!weights)
              return weights.takeError();
            pipeline::PipelineTrainerOptions o = *pipelined_options;
            o.remoteServer = &server;
            o.exchange = &links;
            o.localReplicas = {{role->stage, role->replica}};
            return pipeline::PipelineTrainer::create(plan, std::move(*weights),
                                                     o);
          });
  }

  auto data = data::loadDataset(dataSpec);
  if (!data)
    return fail("--data: " + llvm::toString(data.takeError()));
  std::optional<data::Dataset> evalData;
  if (!evalSpec.empty()) {
    auto loaded = data::loadDataset(evalSpec);
    if (!loaded)
      return fail("--eval-data: " + llvm::toString(loaded.takeError()));
    evalData = std::move(*loaded);
  }
  // Large embedding tables are never read: the parameter server serves
  // them row by row.
  std::set<int32_t> sparse = pipeline::gatherTables(plan, sparseMinRows);
  if (!sparse.empty() && !saveModel.empty())
    return fail("--save-model: the model has sparse tables (Gather tables "
                "of at least --sparse-min-rows rows), which are not written "
                "back yet");
  auto weights =
      loadWeights(plan, [&](int32_t v) { return sparse.count(v) > 0; });
  if (!weights)
    return fail(llvm::toString(weights.takeError()));
  // The job's other processes outlive the trainer that reaches them.
  std::unique_ptr<JobProcesses> processes;
  if (remoteServerRequested() && !distributedRequested()) {
    auto started = startRemoteServer(serverShards);
    if (!started)
      return fail("--ps: " + llvm::toString(started.takeError()));
    processes = std::move(*started);
  }
  if (shape) {
    auto started = startJob(*shape, pipelined_options->job);
    if (!started)
      return fail(llvm::toString(started.takeError()));
    processes = std::move(*started);
  }
  std::unique_ptr<Trainable> job;
  pipeline::PipelineTrainer *pipelined = nullptr;
  if (processes || pipelineRequested(plan, !sparse.empty())) {
    auto o = pipelined_options
                 ? llvm::Expected<pipeline::PipelineTrainerOptions>(
                       *pipelined_options)
                 : pipelineOptions(plan, options,
                                   traceFile.empty() ? nullptr : &trace);
    if (!o)
      return fail(run.modelPath + ": " + llvm::toString(o.takeError()));
    if (processes) {
      o->remoteServer = &processes->server();
      o->runner = processes->runner();
      o->recovery = processes->recovery();
      o->checkpoints = processes->checkpoints();
    }
    auto trainer =
        pipeline::PipelineTrainer::create(plan, std::move(*weights), *o);
    if (!trainer)
      return fail(run.modelPath + ": " + llvm::toString(trainer.takeError()));
    if (processes)
      processes->started();
    pipelined = trainer->get();
    job = std::make_unique<TrainableOf<pipeline::PipelineTrainer>>(
        std::move(*trainer));
  } else {
    auto trainer = Trainer::create(plan, std::move(*weights), options);
    if (!trainer)
      return fail(run.modelPath + ": " + llvm::toString(trainer.takeError()));
    job = std::make_unique<TrainableOf<Trainer>>(std::move(*trainer));
  }
  for (const data::Dataset *d : {&*data, evalData ? &*evalData : nullptr})
    if (d)
      if (llvm::Error e = job->checkData(*d))
        return fail(llvm::toString(std::move(e)));

  int64_t numParams = 0;
  for (const auto &p : job->parameters())
    numParams += p.second;
  llvm::errs() << llvm::formatv(
      "{0}: training {1} parameters in {2} tensors on {3} samples, batch "
      "{4}, {5}, {6}\n",
      kTool, numParams, job->parameters().size(), data->size(), batch,
      train::lossName(options.loss), optimizerName.getValue());

  LoopOptions loop;
  loop.epochs = epochs;
  loop.batch = batch;
  loop.seed = seed;
  loop.schedule = schedule;
  loop.maxSteps = maxSteps;
  loop.eval = evalData ? &*evalData : nullptr;
  loop.checkpointDir = checkpointDir;
  loop.checkpointEvery = checkpointEvery;
  loop.resume = resume;
  loop.key = CheckpointKey{optimizerName, train::lossName(options.loss), batch,
                           seed, data->size()};
  loop.stopAfter = stopAfter;
  loop.maxRestarts = maxRestarts();
  loop.flopsPerSample = trainingFlopsPerSample(plan);

  // Progress on stderr: a live line on a terminal, a line every tenth of an
  // epoch otherwise; the epoch table on stdout.
  bool live = llvm::errs().is_displayed();
  pipeline::StepProfile profile(pipelined ? pipelined->settings().schedule
                                          : pipeline::ScheduleKind::GPipe,
                                microBatches);
  LoopEvents events;
  events.resumed = [&](const TrainingProgress &p) {
    llvm::errs() << llvm::formatv("{0}: resuming at epoch {1}, batch {2} "
                                  "(step {3})\n",
                                  kTool, p.epoch + 1, p.nextBatch + 1,
                                  p.globalStep);
  };
  events.recovered = [&](const RecoveryEvent &r) {
    llvm::errs() << llvm::formatv(
        "{0}: recovered ({1} of --max-restarts {2}) in {3:F1} s: back at "
        "step {4} from the checkpoint; {5} steps to redo\n",
        kTool, r.restarts, maxRestarts(), r.seconds, r.restoredTo,
        r.failedAt - r.restoredTo);
  };
  events.stepped = [&](const StepEvent &e) {
    // The first step of a run sets its kernels up: not a pipeline figure.
    if (pipelined && pipelined->stepsDone() > e.firstGlobalStep + 1)
      profile.add(pipelined->lastStep());
    bool report = live || e.step == e.stepsPerEpoch ||
                  e.step % std::max<int64_t>(e.stepsPerEpoch / 10, 1) == 0;
    if (!report)
      return;
    llvm::errs() << llvm::formatv(
        "{0}epoch {1}/{2} step {3}/{4} loss {5:F4} {6:F0} samples/s ETA "
        "{7}{8}",
        live ? "\r" : "", e.epoch + 1, epochs.getValue(), e.step,
        e.stepsPerEpoch, e.meanLoss, e.samplesPerSecond, clock(e.secondsLeft),
        live ? "   " : "\n");
    if (live && e.step == e.stepsPerEpoch)
      llvm::errs() << "\n";
  };
  // A job that recovered finishes again the epoch its checkpoint was in:
  // its row is in the table already.
  int64_t tabled = 0;
  events.epochEnded = [&](const llvm::json::Object &entry) {
    if (*entry.getInteger("epoch") <= tabled)
      return;
    tabled = *entry.getInteger("epoch");
    auto number = [&](llvm::StringRef key) {
      std::optional<double> v = entry.getNumber(key);
      return v ? llvm::formatv("{0:F4}", *v).str() : std::string("-");
    };
    if (std::optional<double> auc = entry.getNumber("eval_auc"))
      llvm::errs() << llvm::formatv("{0}: epoch {1} eval AUC {2:F4}\n", kTool,
                                    *entry.getInteger("epoch"), *auc);
    llvm::outs() << llvm::formatv(
        "| {0} | {1} | {2:F4} | {3} | {4} | {5} | {6:F1} | {7:F0} | "
        "{8:F1} |\n",
        *entry.getInteger("epoch"), shortFloat(*entry.getNumber("lr")),
        *entry.getNumber("loss"), number("train_accuracy"), number("eval_loss"),
        number("eval_accuracy"), *entry.getNumber("seconds"),
        *entry.getNumber("samples_per_s"), *entry.getNumber("gflops_per_s"));
    llvm::outs().flush();
  };
  llvm::outs() << "| epoch | lr | mean loss | train accuracy | eval loss | "
                  "eval accuracy | seconds | samples/s | GFLOP/s |\n"
                  "|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  auto trained = runTrainingLoop(*job, *data, loop, events);
  if (!trained)
    return fail(llvm::toString(trained.takeError()));
  if (trained->stopped)
    llvm::errs() << llvm::formatv(
        "{0}: stopped after step {1}{2}\n", kTool, trained->globalStep,
        checkpointDir.empty() ? "" : " (--resume continues it)");

  std::optional<llvm::json::Object> pipelineReport;
  if (pipelined && profile.steps())
    pipelineReport = reportPipeline(*pipelined, profile, batch);
  if (pipelined && !pipelined->sparse().empty()) {
    int64_t rows = 0;
    for (int32_t v : pipelined->sparse())
      rows += plan.values(v).dims(0);
    int64_t stored = pipelined->storedSparseRows();
    if (stored >= 0)
      llvm::errs() << llvm::formatv(
          "{0}: sparse tables: {1} of {2} rows stored ({3:F2}%)\n", kTool,
          stored, rows, 100.0 * double(stored) / double(rows));
    if (pipelineReport) {
      (*pipelineReport)["sparse_rows"] = rows;
      (*pipelineReport)["sparse_rows_stored"] = stored;
    }
  }
  if (!traceFile.empty()) {
    if (llvm::Error e = trace.write(traceFile))
      return fail(llvm::toString(std::move(e)));
    std::string picture = pipeline::picturePath(traceFile);
    if (llvm::Error e = trace.writePicture(picture))
      return fail(llvm::toString(std::move(e)));
    llvm::errs() << kTool << ": wrote " << traceFile << " ("
                 << trace.numEvents() << " events) and " << picture << "\n";
  }
  if (!saveModel.empty()) {
    auto weights = job->weights();
    if (!weights)
      return fail("--save-model: " + llvm::toString(weights.takeError()));
    if (llvm::Error e = saveTrainedModel(plan, *weights, saveModel))
      return fail("--save-model: " + llvm::toString(std::move(e)));
    llvm::errs() << kTool << ": wrote " << saveModel << "\n";
  }
  if (run.reportPath.empty())
    return 0;
  llvm::json::Object report{
      {"model", run.modelPath},
      {"data", dataSpec.getValue()},
      {"batch", batch},
      {"threads", static_cast<int64_t>(run.threads)},
      {"loss", train::lossName(options.loss)},
      {"optimizer", optimizerName.getValue()},
      {"lr", static_cast<double>(learningRate.getValue())},
      {"seed", static_cast<int64_t>(seed.getValue())},
      {"parameters", numParams},
      {"train_flops_per_sample", loop.flopsPerSample},
      {"epochs", std::move(trained->epochs)}};
  if (pipelineReport)
    report["pipeline"] = std::move(*pipelineReport);
  if (!run.planReport.empty()) {
    llvm::Expected<llvm::json::Value> planned =
        llvm::json::parse(run.planReport);
    if (!planned)
      return fail("--report: " + llvm::toString(planned.takeError()));
    report["plan"] = std::move(*planned);
  }
  if (trained->checkpoints)
    report["checkpoints"] = llvm::json::Object{
        {"count", trained->checkpoints},
        {"seconds", trained->checkpointSeconds},
        {"bytes", static_cast<int64_t>(trained->checkpointBytes)}};
  if (llvm::Error e = writeJsonFileAtomically(
          run.reportPath, llvm::json::Value(std::move(report))))
    return fail("--report: " + llvm::toString(std::move(e)));
  return 0;
}

llvm::Expected<MeasurementSetup>
tools::measurementSetup(const plan::Plan &plan, const TrainingRun &run) {
  if (dataSpec.empty())
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "--train needs --data SPEC");
  auto data = data::loadDataset(dataSpec);
  if (!data)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "--data: " +
                                       llvm::toString(data.takeError()));
  int64_t batch = std::min(run.batch > 0 ? run.batch : 32, data->size());
  auto trainer = trainerOptions(run);
  if (!trainer)
    return trainer.takeError();
  auto pipelined = pipelineOptions(plan, *trainer, nullptr);
  if (!pipelined)
    return pipelined.takeError();
  MeasurementSetup setup;
  setup.inputs = data::sampleRows(data->inputs, 0, batch);
  setup.targets = data::sampleRows(data->targets, 0, batch);
  setup.trainer = std::move(*pipelined);
  setup.learningRate = learningRate;
  setup.sparseTables = pipeline::gatherTables(plan, sparseMinRows);
  return setup;
}
