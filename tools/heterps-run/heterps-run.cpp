//===- heterps-run.cpp - run an ONNX model or an executable plan ----------===//
//
//   heterps-run MODEL.onnx|PLAN [--input NAME=FILE]... [--output-dir DIR]
//   heterps-run MODEL.onnx --train --data SPEC [...]   (see Training.cpp)
//
// An ONNX model is imported and lowered in-process (hps-lower-to-runtime);
// any other file is read as a plan. With inputs (ONNX TensorProto .pb, the
// ONNX test-data format, or .npy) the model runs once and its outputs are
// written as DIR/output_<k>.pb. Without inputs (or with inputs and an
// explicit --iterations) it runs on random inputs (--batch for dynamic
// dims) and the given ones --warmup + --iterations times and prints the
// latency percentiles and throughput. Every failure is one line on stderr
// and exit code 1.
//
//===----------------------------------------------------------------------===//

#include "Distributed.h"
#include "MeasuredPlacement.h"
#include "OptionChecks.h"
#include "Training.h"

#include "heterps/InitAll.h"
#include "heterps/Planner/ClusterSpec.h"
#include "heterps/Runtime/AtomicFile.h"
#include "heterps/Runtime/Executor.h"
#include "heterps/Runtime/MemoryLimit.h"
#include "heterps/Runtime/NpyFile.h"
#include "heterps/Runtime/ONNXTensor.h"
#include "heterps/Runtime/Pipeline.h"
#include "heterps/Runtime/Plan.h"
#include "heterps/Support/PrintableLine.h"
#include "heterps/Target/ONNX/ImportONNX.h"
#include "heterps/Transforms/LowerToRuntime.h"
#include "heterps/Transforms/Passes.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/WithColor.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <random>
#include <thread>

using namespace heterps::runtime;
using namespace heterps::tools;
namespace cl = llvm::cl;

namespace {

cl::OptionCategory category("heterps-run options");
cl::opt<std::string> modelPath(cl::Positional, cl::desc("<model.onnx | plan>"),
                               cl::cat(category));
cl::list<std::string>
    inputFiles("input", cl::desc("NAME=FILE: a graph input (.pb or .npy)"),
               cl::value_desc("NAME=FILE"), cl::cat(category));
cl::list<std::string> onnxDims(
    "onnx-dim",
    cl::desc("NAME=SIZE: import the .onnx model as if its dynamic dimension "
             "NAME (e.g. seq) had SIZE, so every shape depending on it is "
             "static and the planner costs it at that size (repeatable)"),
    cl::value_desc("NAME=SIZE"), cl::cat(category));
cl::opt<std::string>
    outputDir("output-dir",
              cl::desc("Write the outputs as DIR/output_<k>.pb (graph-output "
                       "order, named as the graph outputs)"),
              cl::value_desc("DIR"), cl::cat(category));
cl::opt<int64_t> batch("batch",
                       cl::desc("Size of dynamic dimensions of random inputs "
                                "(default 1); with --train, samples per step "
                                "(default 32)"),
                       cl::init(1), cl::cat(category));
cl::opt<int> warmup("warmup", cl::desc("Untimed runs first (default 3)"),
                    cl::init(3), cl::cat(category));
cl::opt<int> iterations("iterations",
                        cl::desc("Timed runs (default 10); given with --input, "
                                 "the runs are timed on those inputs"),
                        cl::init(10), cl::cat(category));
cl::opt<bool> emulateMissing(
    "emulate-missing-devices",
    cl::desc("Run ops placed on device kinds this runtime has no backend "
             "for (no GPU backend yet) on the emulated device: a memory "
             "space of its own, with transfers where stages change device"),
    cl::cat(category));
cl::opt<bool> deterministic(
    "deterministic",
    cl::desc("Choose kernel algorithms by fixed rules, not by timing them, "
             "so that every run gives bit-identical outputs"),
    cl::cat(category));
cl::opt<int> streamLength(
    "stream",
    cl::desc("Timed run of N batches through the plan's stages as a "
             "pipeline, against the same batches run one stage after the "
             "other"),
    cl::value_desc("N"), cl::init(0), cl::cat(category));
cl::opt<int> splitStages(
    "split-stages",
    cl::desc("With --stream or --train: cut the ops into K stages (see "
             "--split-by), instead of the plan's stages"),
    cl::value_desc("K"), cl::init(0), cl::cat(category));
enum class SplitBy { Ops, Time };
cl::opt<SplitBy> splitBy(
    "split-by", cl::desc("How --split-stages cuts (default: ops)"),
    cl::values(clEnumValN(SplitBy::Ops, "ops", "equal op counts"),
               clEnumValN(SplitBy::Time, "time",
                          "about equal measured time: every op is timed "
                          "on this machine first (--stream only)")),
    cl::init(SplitBy::Ops), cl::cat(category));
cl::opt<bool> opTimes(
    "op-times",
    cl::desc("After the timed run, time every op as it runs (fused, on "
             "--threads threads) and print the ms per run of each op type "
             "and of the slowest ops"),
    cl::cat(category));
cl::opt<unsigned> opTimesTop(
    "op-times-top", cl::init(10),
    cl::desc("With --op-times: how many of the slowest ops to list (0: all, "
             "in plan order)"),
    cl::cat(category));
cl::opt<std::string> profileOut(
    "profile-out",
    cl::desc("Measure every layer on this machine and write the profile "
             "JSON that hps-annotate-costs reads"),
    cl::value_desc("FILE.json"), cl::cat(category));
cl::opt<std::string> profileDevice(
    "profile-device",
    cl::desc("Device type name the profile is for (default: cpu)"),
    cl::init("cpu"), cl::cat(category));
cl::opt<std::string> clusterFile(
    "cluster",
    cl::desc("Place the model on this cluster spec (YAML) before running: "
             "costs, --strategy, stages and replicas, as heterps-opt's "
             "hps-annotate-costs, hps-place, hps-form-stages and "
             "hps-provision do"),
    cl::value_desc("FILE.yaml"), cl::cat(category));
cl::opt<std::string> strategy(
    "strategy",
    cl::desc("Placement strategy with --cluster (all-<type>, greedy, rl, "
             "exact, ...; default: all-<the spec's first CPU type>, this "
             "machine's CPU)"),
    cl::cat(category));
cl::opt<int64_t> tappPlans(
    "tapp-plans",
    cl::desc("--strategy tapp: candidate plans to train and time at most "
             "(default 30)"),
    cl::init(30), cl::cat(category));
cl::opt<double> searchSeconds(
    "search-seconds",
    cl::desc("--strategy rl or tapp: seconds of search (default 10)"),
    cl::init(10), cl::cat(category));
cl::opt<std::string> placementFile(
    "placement",
    cl::desc("With --cluster: a device type per layer (JSON, as hps-place "
             "saves it); implies --strategy manual"),
    cl::value_desc("FILE.json"), cl::cat(category));
cl::opt<std::string> costProfile(
    "cost-profile",
    cl::desc("With --cluster: measured layer costs (the JSON --profile-out "
             "writes) instead of the analytic ones"),
    cl::value_desc("FILE.json"), cl::cat(category));
cl::opt<std::string> reportPath("report",
                                cl::desc("Write the run's figures as JSON"),
                                cl::value_desc("FILE.json"), cl::cat(category));

constexpr const char *kTool = "heterps-run";

int fail(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), kTool)
      << heterps::printableLine(message.str()) << "\n";
  return 1;
}

/// The launcher's placement file for its children, removed when it exits.
std::optional<llvm::FileRemover> childPlacementRemover;

/// --cluster's passes: costs, placement (--strategy, by default every layer
/// on the spec's first CPU type), stages and replicas. --strategy tapp
/// measures its candidate plans on this machine with `run`'s training
/// flags.
llvm::Error addPlacementPasses(mlir::PassManager &pm, mlir::ModuleOp module,
                               const heterps::tools::TrainingRun &run) {
  std::string chosen = strategy;
  if (chosen.empty() && !placementFile.empty())
    chosen = "manual";
  if (chosen.empty()) {
    auto spec = heterps::planner::loadClusterSpec(clusterFile);
    if (!spec)
      return spec.takeError();
    for (const heterps::planner::DeviceType &d : spec->deviceTypes)
      if (d.kind == "cpu") {
        chosen = "all-" + d.name;
        break;
      }
    if (chosen.empty())
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          "--cluster " + clusterFile +
              ": the spec has no CPU device type; choose a --strategy");
  }
  pm.addPass(mlir::hps::createAnnotateCosts({clusterFile, costProfile}));
  mlir::hps::PlaceOptions place;
  place.strategy = chosen;
  place.placement = placementFile;
  place.tappPlans = tappPlans;
  place.timeBudget = searchSeconds;
  if (heterps::tools::launchesLocalJob() && chosen != "manual") {
    // The job's other processes place by this choice, not by searching.
    llvm::SmallString<128> saved;
    if (std::error_code ec = llvm::sys::fs::createTemporaryFile(
            "heterps-placement", "json", saved))
      return llvm::createStringError(ec, "cannot create a file for the "
                                         "placement the job's processes "
                                         "share: " +
                                             ec.message());
    childPlacementRemover.emplace(saved);
    place.save = saved.str().str();
    heterps::tools::placeChildrenBy(place.save);
  }
  if (chosen == "tapp") {
    if (!heterps::tools::trainingRequested())
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          "--strategy tapp times candidate plans by training them: it needs "
          "--train and --data");
    pm.addPass(mlir::hps::createPlace(
        place, heterps::tools::measuredStepOracles(module, run)));
  } else {
    pm.addPass(mlir::hps::createPlace(place));
  }
  pm.addPass(mlir::hps::createFormStages());
  pm.addPass(mlir::hps::createProvision());
  return llvm::Error::success();
}

/// The placement options go together: each needs --cluster, and
/// --placement is a strategy of its own.
OptionProblem checkPlacementOptions() {
  if (clusterFile.empty())
    for (const cl::Option *o : std::initializer_list<const cl::Option *>{
             &strategy, &placementFile, &costProfile, &tappPlans,
             &searchSeconds})
      if (o->getNumOccurrences())
        return "--" + o->ArgStr.str() + " needs --cluster FILE.yaml";
  if (tappPlans < 1)
    return "--tapp-plans must be at least 1, got " +
           std::to_string(tappPlans.getValue());
  if (!(searchSeconds > 0))
    return llvm::formatv("--search-seconds must be positive, got {0}",
                         searchSeconds.getValue())
        .str();
  if (heterps::tools::ranksStartedElsewhere() &&
      (strategy == "rl" || strategy == "tapp"))
    return "--strategy " + strategy.getValue() +
           (strategy == "rl" ? " ends its search on the clock"
                             : " chooses by steps timed on its own host") +
           ", so the ranks of a job started elsewhere could place the model "
           "differently: place once (hps-place save=FILE) and give every "
           "rank --placement FILE";
  if (placementFile.getNumOccurrences() && strategy.getNumOccurrences() &&
      strategy != "manual")
    return "--placement gives every layer's device type, which --strategy " +
           strategy.getValue() + " would choose instead; give one of them";
  return std::nullopt;
}

/// "2 stages: 0 cpu x1 (ops 0-5), 1 v100 x3 (ops 6-9)".
std::string describeStages(const plan::Plan &plan) {
  std::vector<std::pair<int, int>> ranges = stageRanges(plan);
  std::string text = std::to_string(ranges.size()) + " stage" +
                     (ranges.size() == 1 ? "" : "s") + ":";
  for (auto [s, range] : llvm::enumerate(ranges)) {
    const plan::Op &op = plan.ops(range.first);
    int stage = op.stage();
    std::string device = op.device().empty() ? "cpu" : op.device();
    int replicas =
        stage < plan.stages_size() ? plan.stages(stage).replicas() : 1;
    text += llvm::formatv("{0} {1} {2} x{3} (ops {4}-{5})", s ? "," : "", s,
                          device, replicas, range.first, range.second - 1)
                .str();
  }
  return text;
}

/// Imports and lowers an ONNX model; MLIR diagnostics become the error.
/// With --cluster, places it first (--strategy tapp trains candidates as
/// `run` says) and keeps the plan's report (JSON) in `run.planReport`.
llvm::Expected<plan::Plan> planFromONNX(llvm::StringRef path,
                                        heterps::tools::TrainingRun &run) {
  mlir::DialectRegistry registry;
  mlir::hps::registerAllDialects(registry);
  mlir::MLIRContext context(registry);
  context.loadAllAvailableDialects();
  std::string diagnostic;
  mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &d) {
    if (diagnostic.empty() &&
        d.getSeverity() == mlir::DiagnosticSeverity::Error)
      diagnostic = d.str();
    if (d.getSeverity() == mlir::DiagnosticSeverity::Warning)
      llvm::WithColor::warning(llvm::errs(), kTool) << d.str() << "\n";
    return mlir::success();
  });
  mlir::hps::ONNXImportOptions options;
  for (llvm::StringRef setting : onnxDims)
    if (llvm::Error e = mlir::hps::addDimSize(options, setting))
      return std::move(e);
  auto module = mlir::hps::importONNXFile(path, &context, options);
  if (!module)
    return module.takeError();
  if (!clusterFile.empty()) {
    mlir::PassManager pm(&context);
    if (llvm::Error e = addPlacementPasses(pm, **module, run))
      return e;
    if (mlir::failed(pm.run(**module)))
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     path + ": " + diagnostic);
    llvm::raw_string_ostream os(run.planReport);
    if (mlir::failed(mlir::hps::writePlanReport(
            **module, mlir::hps::OutputFormat::Json, os)))
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     path + ": " + diagnostic);
  }
  mlir::FailureOr<plan::Plan> plan = mlir::hps::lowerToRuntimePlan(**module);
  if (mlir::failed(plan))
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   path + ": " + diagnostic);
  return std::move(*plan);
}

llvm::Expected<Tensor> readInput(llvm::StringRef path) {
  if (path.ends_with(".npy"))
    return readNpyFile(path);
  return readTensorFile(path);
}

/// Uniform in [-1, 1) for floats, 0 for integers; dynamic dims -> batch.
/// An error when --batch makes it too large for the memory.
llvm::Expected<Tensor> randomInput(const plan::Binding &input,
                                   const plan::Value &value,
                                   std::mt19937 &rng) {
  Shape shape;
  for (int64_t d : value.dims())
    shape.push_back(d < 0 ? batch : d);
  DType type = static_cast<DType>(value.dtype());
  llvm::Expected<Tensor> made =
      Tensor::create(type, shape, "input '" + input.name() + "'");
  if (!made)
    return made.takeError();
  Tensor &t = *made;
  int64_t n = numElements(shape);
  if (type == DType::F32) {
    std::uniform_real_distribution<float> uniform(-1, 1);
    std::generate_n(t.data<float>(), n, [&] { return uniform(rng); });
  } else {
    std::fill_n(static_cast<char *>(t.rawData()), n * dtypeSize(type), 0);
  }
  return std::move(*made);
}

double percentile(std::vector<double> sorted, double p) {
  std::sort(sorted.begin(), sorted.end());
  size_t i =
      static_cast<size_t>(p * static_cast<double>(sorted.size() - 1) + 0.5);
  return sorted[std::min(i, sorted.size() - 1)];
}

} // namespace

/// Writes --report, if asked for; the exit status.
int writeReport(llvm::json::Object report) {
  if (reportPath.empty())
    return 0;
  if (llvm::Error e = writeJsonFileAtomically(
          reportPath, llvm::json::Value(std::move(report))))
    return fail("--report: " + llvm::toString(std::move(e)));
  return 0;
}

/// The ops of a plan as an executor ran them (fused or not) and each one's
/// seconds per run.
struct OpTimes {
  plan::Plan executed;
  std::vector<double> seconds;
  /// Per op, the backend that ran it.
  std::vector<std::string> backends;
};

/// Per op of the executed plan, seconds per run on `numThreads` threads
/// (after the warm-up runs). Unfused unless `fuse`: a time per layer, not
/// per fused group.
llvm::Expected<OpTimes> timeOps(const plan::Plan &plan,
                                const std::vector<Tensor> &inputs,
                                ExecutorOptions options, int numThreads,
                                bool fuse = false) {
  options.numThreads = numThreads;
  options.timeOps = true;
  options.fuse = fuse && options.fuse;
  auto executor = Executor::create(plan, options);
  if (!executor)
    return executor.takeError();
  for (int i = 0; i < warmup; ++i)
    if (auto r = (*executor)->run(inputs); !r)
      return r.takeError();
  std::vector<double> before = (*executor)->opSeconds();
  for (int i = 0; i < iterations; ++i)
    if (auto r = (*executor)->run(inputs); !r)
      return r.takeError();
  std::vector<double> seconds = (*executor)->opSeconds();
  for (size_t i = 0; i < seconds.size(); ++i)
    seconds[i] = (seconds[i] - (i < before.size() ? before[i] : 0)) /
                 iterations.getValue();
  std::vector<std::string> backends;
  for (int i = 0; i < (*executor)->plan().ops_size(); ++i)
    backends.push_back((*executor)->backendOf(i));
  return OpTimes{(*executor)->plan(), std::move(seconds), std::move(backends)};
}

/// --op-times: the fused ops' times by op type and the slowest ops.
int printOpTimes(const plan::Plan &plan, const std::vector<Tensor> &inputs,
                 const ExecutorOptions &options) {
  auto times = timeOps(plan, inputs, options, options.numThreads,
                       /*fuse=*/true);
  if (!times)
    return fail(llvm::toString(times.takeError()));
  const plan::Plan &fused = times->executed;
  std::map<std::string, std::pair<double, int>> byType;
  std::vector<std::pair<double, int>> ops;
  double total = 0;
  // Where devices are used, each op type is named with its backend (a GPU
  // op type without a kernel there shows as "[cpu]").
  bool devicesUsed = llvm::any_of(
      times->backends, [](const std::string &b) { return b != "cpu"; });
  auto label = [&](size_t i) {
    const std::string &type = fused.ops(static_cast<int>(i)).type();
    return devicesUsed ? type + " [" + times->backends[i] + "]" : type;
  };
  for (size_t i = 0; i < times->seconds.size(); ++i) {
    double ms = times->seconds[i] * 1e3;
    auto &[sum, count] = byType[label(i)];
    sum += ms;
    ++count;
    ops.push_back({ms, static_cast<int>(i)});
    total += ms;
  }
  llvm::outs() << llvm::formatv("op times (fused, {0} ops, {1:F3} ms per run "
                                "in all):\n",
                                ops.size(), total);
  std::vector<std::pair<double, std::string>> types;
  for (const auto &[type, entry] : byType)
    types.push_back({entry.first, type});
  llvm::sort(types, std::greater<>());
  for (const auto &[ms, type] : types)
    llvm::outs() << llvm::formatv("  {0,-24} {1,4} ops {2,9:F3} ms {3,5:F1}%\n",
                                  type, byType[type].second, ms,
                                  100 * ms / std::max(total, 1e-12));
  // All ops in plan order read as a profile; a few, slowest first, as a
  // summary.
  size_t listed = opTimesTop == 0 ? ops.size() : opTimesTop;
  if (opTimesTop != 0)
    llvm::sort(ops, std::greater<>());
  llvm::outs() << (opTimesTop == 0 ? "ops:\n" : "slowest ops:\n");
  for (size_t k = 0; k < std::min(ops.size(), listed); ++k) {
    const plan::Op &op = fused.ops(ops[k].second);
    llvm::outs() << llvm::formatv("  {0,9:F3} ms  {1} ({2})\n", ops[k].first,
                                  op.name(), label(ops[k].second));
  }
  return 0;
}

/// --split-by=time: re-cuts the plan's ops into --split-stages stages whose
/// op times add up to about equal shares; every stage keeps at least one
/// op. The times are those of the ops as they run, fused, on the threads a
/// stage worker gets: an op fused into a Conv counts 0 and the Conv the
/// group (unfused times misled: MobileNetV2's separate Clips).
int splitByTime(plan::Plan &plan, const std::vector<Tensor> &inputs,
                const ExecutorOptions &options) {
  auto times = timeOps(plan, inputs, options, options.numThreads,
                       /*fuse=*/true);
  if (!times)
    return fail(modelPath + ": " + llvm::toString(times.takeError()));
  llvm::StringMap<double> byName;
  for (auto [t, op] : llvm::zip(times->seconds, times->executed.ops()))
    byName[op.name()] += t;
  std::vector<double> seconds;
  for (const plan::Op &op : plan.ops())
    seconds.push_back(byName.lookup(op.name()));
  int numOps = plan.ops_size(), k = std::min<int>(splitStages, numOps);
  double total = 0;
  for (double t : seconds)
    total += t;
  double before = 0;
  int stage = 0;
  for (int i = 0; i < numOps; ++i) {
    // Move on when the op's midpoint lies past this stage's share, as long
    // as every later stage still gets an op; and when it must, for that.
    double midpoint = before + seconds[i] / 2;
    if (stage + 1 < k && i > 0 &&
        (midpoint > total * (stage + 1) / k || numOps - i == k - stage - 1))
      ++stage;
    plan.mutable_ops(i)->set_stage(stage);
    before += seconds[i];
  }
  return 0;
}

/// --profile-out: each layer's time on one thread is its OCT at b0 =
/// --batch; its parallel fraction alpha follows from Amdahl's law and its
/// time on all threads k: T_k = T_1 (1 - alpha + alpha / k). Layers exchange
/// nothing on one machine: ODT 0 (beta 1). BatchNorms folded into a Conv
/// have no time of their own and are left out (the cost model's analytic
/// figure stays for them).
int writeProfile(const plan::Plan &plan, const std::vector<Tensor> &inputs,
                 const ExecutorOptions &options) {
  int k = options.numThreads > 0
              ? options.numThreads
              : static_cast<int>(std::thread::hardware_concurrency());
  auto one = timeOps(plan, inputs, options, 1);
  if (!one)
    return fail(modelPath + ": " + llvm::toString(one.takeError()));
  std::vector<double> onK = one->seconds;
  if (k > 1) {
    auto many = timeOps(plan, inputs, options, k);
    if (!many)
      return fail(modelPath + ": " + llvm::toString(many.takeError()));
    onK = many->seconds;
  }
  llvm::json::Object profile;
  for (size_t i = 0; i < one->seconds.size(); ++i) {
    double t1 = one->seconds[i], tk = onK[i];
    double alpha = k > 1 && t1 > 0 ? (1 - tk / t1) / (1 - 1.0 / k) : 1;
    profile[one->executed.ops(static_cast<int>(i)).name()] = llvm::json::Object{
        {profileDevice.getValue(),
         llvm::json::Object{{"oct_s", t1},
                            {"odt_s", 0.0},
                            {"alpha", std::clamp(alpha, 0.0, 1.0)},
                            {"beta", 1.0},
                            {"b0", batch.getValue()}}}};
  }
  if (llvm::Error e = writeJsonFileAtomically(
          profileOut, llvm::json::Value(std::move(profile))))
    return fail("--profile-out: " + llvm::toString(std::move(e)));
  llvm::outs() << llvm::formatv(
      "{0}: profile of {1} layers ({2}, batch {3}, 1 and {4} threads) "
      "written to {5}\n",
      llvm::sys::path::filename(modelPath), one->seconds.size(),
      profileDevice.getValue(), batch.getValue(), k, profileOut.getValue());
  return 0;
}

/// Seconds to run `fn` once.
template <typename Fn> double secondsOf(Fn &&fn) {
  auto start = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

/// --stream: `random` repeated streamLength times through the pipeline of
/// the plan's stages and through `sequential`, after one untimed pass each.
int runStream(plan::Plan plan, const std::vector<Tensor> &random,
              const ExecutorOptions &options, Executor &sequential,
              llvm::json::Object &report) {
  PipelineOptions pipelineOptions;
  pipelineOptions.executor = options;
  auto pipeline = PipelineExecutor::create(plan, pipelineOptions);
  if (!pipeline)
    return fail(modelPath + ": " + llvm::toString(pipeline.takeError()));
  std::vector<std::vector<Tensor>> stream(streamLength, random);
  llvm::Error error = llvm::Error::success();
  auto runPipeline = [&] {
    if (auto r = (*pipeline)->run(stream); !r)
      error = r.takeError();
  };
  auto runSequential = [&] {
    for (const std::vector<Tensor> &batch : stream)
      if (auto r = sequential.run(batch); !r) {
        error = r.takeError();
        return;
      }
  };
  runPipeline(); // warm-up: primitives created, algorithms tuned
  runSequential();
  double pipelined = secondsOf(runPipeline);
  double oneStage = secondsOf(runSequential);
  if (error)
    return fail(modelPath + ": " + llvm::toString(std::move(error)));
  double samples = static_cast<double>(streamLength) * batch;
  llvm::outs() << llvm::formatv(
      "{0}: {1} batches of {2} through {3} stages: {4:F1} samples/s; one "
      "stage after the other: {5:F1} samples/s ({6:F2}x)\n",
      llvm::sys::path::filename(modelPath), streamLength.getValue(),
      batch.getValue(), (*pipeline)->numStages(), samples / pipelined,
      samples / oneStage, oneStage / pipelined);
  llvm::outs() << "stage  ops        replicas  busy_s   busy/wall\n";
  llvm::json::Array stages;
  for (auto [s, st] : llvm::enumerate((*pipeline)->stats())) {
    llvm::outs() << llvm::formatv(
        "{0,5}  {1,-9}  {2,8}  {3,7:F3}  {4,9:F2}\n", s,
        std::to_string(st.firstOp) + "-" +
            std::to_string(st.firstOp + st.numOps - 1),
        st.replicas, st.busySeconds, st.busySeconds / pipelined / st.replicas);
    stages.push_back(llvm::json::Object{{"first_op", st.firstOp},
                                        {"ops", st.numOps},
                                        {"replicas", st.replicas},
                                        {"busy_s", st.busySeconds}});
  }
  report["stream"] =
      llvm::json::Object{{"batches", streamLength.getValue()},
                         {"stages", std::move(stages)},
                         {"pipeline_samples_per_s", samples / pipelined},
                         {"single_stage_samples_per_s", samples / oneStage},
                         {"speedup", oneStage / pipelined}};
  return 0;
}

static int runTool(int argc, char **argv) {
  // libLLVM registers a -threads of its own (for LTO); ours replaces it.
  if (cl::Option *other = cl::getRegisteredOptions().lookup("threads"))
    other->removeArgument();
  cl::opt<int> threads("threads",
                       cl::desc("Threads per kernel (default: all cores)"),
                       cl::init(0), cl::cat(category));
  cl::HideUnrelatedOptions({&category, &heterps::tools::trainingCategory(),
                            &heterps::tools::pipelineCategory(),
                            &heterps::tools::distributedCategory()});
  cl::ParseCommandLineOptions(
      argc, argv,
      "HeterPS runner: runs an ONNX model or an executable plan on this "
      "machine\n");
  if (heterps::tools::roleRequested()) {
    if (!modelPath.empty())
      return fail("--role runs a role of a job, not the model " + modelPath);
    return heterps::tools::runRole();
  }
  if (modelPath.empty())
    return fail("no model given (heterps-run MODEL.onnx|PLAN [options]; "
                "--help lists them)");

  // More threads than this is a typo, and past the system's limit OpenMP
  // crashes instead of failing.
  constexpr int kMaxThreads = 1024;
  if (OptionProblem p = firstProblem(
          {atLeast(batch, int64_t(1)), atLeast(warmup, 0),
           atLeast(iterations, 1), inRange(threads, 0, kMaxThreads)}))
    return fail(*p);
  if (OptionProblem p = checkPlacementOptions())
    return fail(*p);
  // Output places that cannot be written fail now, not after the run.
  for (const cl::opt<std::string> *file : {&reportPath, &profileOut})
    if (!file->empty())
      if (llvm::Error e = checkCanReplace(*file))
        return fail("--" + file->ArgStr + ": " + llvm::toString(std::move(e)));
  if (!outputDir.empty()) {
    if (std::error_code ec = llvm::sys::fs::create_directories(outputDir))
      return fail("--output-dir: " + outputDir + ": " + ec.message());
    if (!llvm::sys::fs::is_directory(outputDir))
      return fail("--output-dir: " + outputDir + ": not a directory");
  }

  if (!onnxDims.empty() && !mlir::hps::isONNXFilename(modelPath))
    return fail("--onnx-dim applies to .onnx models, and " + modelPath +
                " is a plan");
  heterps::tools::TrainingRun run{
      modelPath, threads, batch.getNumOccurrences() ? batch.getValue() : 0,
      reportPath, emulateMissing};
  llvm::Expected<plan::Plan> plan = mlir::hps::isONNXFilename(modelPath)
                                        ? planFromONNX(modelPath, run)
                                        : loadPlan(modelPath);
  if (!plan)
    return fail(llvm::toString(plan.takeError()));
  if (!clusterFile.empty())
    llvm::errs() << kTool << ": placed on " << clusterFile << ": "
                 << describeStages(*plan) << "\n";
  if (splitStages.getNumOccurrences() && splitStages < 1)
    return fail("--split-stages must be at least 1, got " +
                llvm::Twine(splitStages.getValue()));
  if (splitStages > 0 && streamLength == 0 &&
      !heterps::tools::trainingRequested())
    return fail("--split-stages needs --stream or --train");
  if (splitBy.getNumOccurrences() && splitStages == 0)
    return fail("--split-by needs --split-stages");
  if (splitBy == SplitBy::Time && streamLength == 0)
    return fail("--split-by=time needs --stream (training splits by op "
                "counts)");
  if (splitStages > 0) {
    plan->clear_stages();
    for (int i = 0; i < plan->ops_size(); ++i)
      plan->mutable_ops(i)->set_stage(
          static_cast<int>(int64_t(i) * splitStages / plan->ops_size()));
  }
  if (heterps::tools::trainingRequested())
    return heterps::tools::runTraining(*plan, run);

  ExecutorOptions options;
  options.numThreads = threads;
  options.emulateMissingDevices = emulateMissing;
  options.autotune = !deterministic;
  auto executor = Executor::create(*plan, options);
  if (!executor)
    return fail(modelPath + ": " + llvm::toString(executor.takeError()));
  for (const std::string &device : (*executor)->emulatedDevices())
    heterps::tools::noteEmulatedDevice(*plan, device, "run");
  std::vector<std::string> fallbacks = (*executor)->fallbacks();
  if (!fallbacks.empty())
    llvm::errs() << kTool
                 << ": note: op types without a kernel on their device run on "
                    "the CPU: "
                 << llvm::join(fallbacks, ", ") << "\n";

  // Inputs from files, by name.
  std::map<std::string, Tensor> inputs;
  for (llvm::StringRef spec : inputFiles) {
    auto [name, file] = spec.split('=');
    if (name.empty() || file.empty())
      return fail("--input expects NAME=FILE, got '" + spec + "'");
    bool known = llvm::any_of(plan->inputs(), [&](const plan::Binding &b) {
      return b.name() == name;
    });
    if (!known)
      return fail("--input " + name + ": the model has no input '" + name +
                  "' (its inputs: " + describeInputs(*plan) + ")");
    llvm::Expected<Tensor> t = readInput(file);
    if (!t)
      return fail(llvm::toString(t.takeError()));
    inputs[name.str()] = std::move(*t);
  }

  // Given inputs with --iterations: timed runs on them (token ids, say,
  // whose sequence length --batch cannot give).
  bool timeGivenInputs = !inputs.empty() && outputDir.empty() &&
                         iterations.getNumOccurrences() > 0;
  if ((!inputs.empty() || !outputDir.empty()) && !timeGivenInputs) {
    // One run; inputs not given get random values.
    std::mt19937 rng(0);
    for (const plan::Binding &b : plan->inputs())
      if (!inputs.count(b.name())) {
        llvm::errs() << kTool << ": note: input '" << b.name()
                     << "' not given: random values\n";
        llvm::Expected<Tensor> t = randomInput(b, plan->values(b.value()), rng);
        if (!t)
          return fail(modelPath + ": " + llvm::toString(t.takeError()));
        inputs[b.name()] = std::move(*t);
      }
    llvm::Expected<std::vector<Tensor>> outputs = (*executor)->run(inputs);
    if (!outputs)
      return fail(modelPath + ": " + llvm::toString(outputs.takeError()));
    for (auto [k, t] : llvm::enumerate(*outputs)) {
      const std::string &name = plan->outputs(k).name();
      llvm::outs() << llvm::formatv("output {0} '{1}': {2} {3}\n", k, name,
                                    dtypeName(t.dtype()),
                                    shapeToString(t.shape()));
      if (outputDir.empty())
        continue;
      llvm::SmallString<128> path(outputDir);
      llvm::sys::path::append(path, "output_" + std::to_string(k) + ".pb");
      if (llvm::Error err = writeTensorFile(t, name, path))
        return fail(llvm::toString(std::move(err)));
    }
    return 0;
  }

  // A timed run on random inputs (and the given ones).
  std::mt19937 rng(0);
  std::vector<Tensor> random;
  int64_t samples = batch;
  for (const plan::Binding &b : plan->inputs()) {
    if (auto given = inputs.find(b.name()); given != inputs.end()) {
      if (random.empty() && given->second.rank() > 0)
        samples = given->second.dim(0);
      random.push_back(given->second);
      continue;
    }
    llvm::Expected<Tensor> t = randomInput(b, plan->values(b.value()), rng);
    if (!t)
      return fail(modelPath + ": " + llvm::toString(t.takeError()) +
                  " (see --batch)");
    random.push_back(std::move(*t));
  }
  if (!profileOut.empty())
    return writeProfile(*plan, random, options);
  if (streamLength < 0)
    return fail("--stream takes a positive count");
  if (streamLength > 0) {
    if (splitStages > 0 && splitBy == SplitBy::Time)
      if (int code = splitByTime(*plan, random, options))
        return code;
    llvm::json::Object report{{"model", modelPath},
                              {"batch", batch.getValue()},
                              {"threads", threads.getValue()}};
    if (int code = runStream(*plan, random, options, **executor, report))
      return code;
    return writeReport(std::move(report));
  }
  std::vector<double> ms;
  for (int i = 0; i < warmup + iterations; ++i) {
    auto start = std::chrono::steady_clock::now();
    llvm::Expected<std::vector<Tensor>> outputs = (*executor)->run(random);
    if (!outputs)
      return fail(modelPath + ": " + llvm::toString(outputs.takeError()));
    std::chrono::duration<double, std::milli> took =
        std::chrono::steady_clock::now() - start;
    if (i >= warmup)
      ms.push_back(took.count());
  }
  double p50 = percentile(ms, 0.5), p90 = percentile(ms, 0.9);
  double throughput = static_cast<double>(samples) * 1000.0 / p50;
  llvm::outs() << llvm::formatv(
      "{0}: batch {1}, {2} iterations: p50 {3:F3} ms, p90 {4:F3} ms, "
      "{5:F1} samples/s\n",
      llvm::sys::path::filename(modelPath), samples, ms.size(), p50, p90,
      throughput);
  if (opTimes)
    if (int code = printOpTimes(*plan, random, options))
      return code;
  return writeReport(
      llvm::json::Object{{"model", modelPath},
                         {"batch", samples},
                         {"iterations", static_cast<int64_t>(ms.size())},
                         {"threads", threads.getValue()},
                         {"p50_ms", p50},
                         {"p90_ms", p90},
                         {"samples_per_s", throughput},
                         {"cpu_fallbacks", llvm::json::Array(fallbacks)}});
}

/// After a run that used devices: the transfers into and out of each.
static void noteDeviceTransfers() {
  for (MemorySpace *space : MemorySpace::all()) {
    MemorySpace::TransferStats s = space->transferStats();
    if (space->isHost() || s.in + s.out == 0)
      continue;
    llvm::errs() << llvm::formatv(
        "{0}: note: {1}: {2} transfers in ({3}), {4} out ({5})\n", kTool,
        space->name(), s.in, formatBytes(s.bytesIn), s.out,
        formatBytes(s.bytesOut));
  }
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  try {
    int status = runTool(argc, argv);
    if (status == 0)
      noteDeviceTransfers();
    return status;
  } catch (const std::bad_alloc &) {
    // Sizes read from files are checked before they are allocated; what
    // reaches here is a run whose intermediate tensors do not fit.
    return fail("out of memory (this process may use " +
                formatBytes(memoryLimitBytes()) +
                "); try a smaller --batch or fewer --replicas");
  }
}
