//===- cuda-bench.cpp - plans on the CUDA backend against the CPU's -------===//
//
// For each executable plan (heterps-opt --hps-lower-to-runtime writes
// them): the outputs of the plan with every op on the GPU against the
// oneDNN CPU backend's (relative to the largest |CPU| output), inference
// time on the GPU per batch size (p50 of --iterations runs after warm-up,
// host input in, host output out), the same for a mixed plan whose ops
// from the first Flatten or Gemm on run on the CPU (convolutions on the
// GPU, the classifier on the CPU), and, with --train-batch, training steps
// (forward, softmax cross-entropy, backward, SGD update) of the all-GPU
// and the mixed plan. Prints one table; links only the runtime (no MLIR),
// so it runs where the compiler's libraries are not installed.
//
// Usage: heterps-cuda-bench [--batches 1,16] [--iterations 50]
//                           [--train-batch 32] [--train-steps 20]
//                           [--profile M,...] [--diagnose M,...] PLAN...
//
//===----------------------------------------------------------------------===//

#include "../Timing.h"

#include "heterps/Runtime/Executor.h"
#include "heterps/Runtime/Plan.h"
#include "heterps/Runtime/Train/Trainer.h"
#include "heterps/Runtime/Weights.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>

using namespace heterps;
using namespace heterps::runtime;
namespace cl = llvm::cl;

static cl::list<std::string> plans(cl::Positional, cl::OneOrMore,
                                   cl::desc("<plan>..."));
static cl::list<int64_t> batches("batches", cl::CommaSeparated,
                                 cl::desc("Inference batch sizes (1,16)"));
static cl::opt<int> iterations("iterations", cl::init(50),
                               cl::desc("Timed runs per measurement"));
static cl::opt<int64_t> trainBatch("train-batch", cl::init(0),
                                   cl::desc("Training batch (0: no training)"));
static cl::opt<int> trainSteps("train-steps", cl::init(20),
                               cl::desc("Timed training steps"));
static cl::list<std::string>
    profile("profile", cl::CommaSeparated,
            cl::desc("Models whose GPU time per op type to print (batch 16)"));
static cl::opt<int64_t> checkBatch("check-batch", cl::init(2),
                                   cl::desc("Batch of the CPU comparison"));
static cl::list<std::string> diagnose(
    "diagnose", cl::CommaSeparated,
    cl::desc("Models whose GPU outputs to check against the CPU's with and "
             "without fusions and autotuning, and op by op (unfused)"));

namespace {

[[noreturn]] void die(const llvm::Twine &what) {
  llvm::errs() << "heterps-cuda-bench: error: " << what << "\n";
  std::exit(1);
}

template <typename T> T check(llvm::Expected<T> v, const llvm::Twine &what) {
  if (!v)
    die(what + ": " + llvm::toString(v.takeError()));
  return std::move(*v);
}

/// Every op on "gpu" (kind cuda), or with `mixed` the ops before the first
/// Flatten or Gemm.
plan::Plan placed(plan::Plan p, bool mixed) {
  bool classifier = false;
  for (plan::Op &op : *p.mutable_ops()) {
    classifier = classifier || op.type() == "Flatten" || op.type() == "Gemm";
    op.set_device(mixed && classifier ? "" : "gpu");
    op.set_stage(mixed && classifier ? 1 : 0);
  }
  plan::DeviceType *t = p.add_device_types();
  t->set_name("gpu");
  t->set_kind("cuda");
  return p;
}

Tensor randomInput(const plan::Plan &p, int64_t batch, unsigned seed) {
  const plan::Value &v = p.values(p.inputs(0).value());
  Shape shape(v.dims().begin(), v.dims().end());
  for (int64_t &d : shape)
    d = d < 0 ? batch : d;
  if (!shape.empty())
    shape[0] = batch;
  Tensor t(DType::F32, shape);
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  for (int64_t i = 0; i < t.numElements(); ++i)
    t.data<float>()[i] = normal(rng);
  return t;
}

double relativeError(const Tensor &got, const Tensor &want) {
  if (got.shape() != want.shape())
    return INFINITY;
  double scale = 1e-12, worst = 0;
  for (int64_t i = 0; i < want.numElements(); ++i)
    scale = std::max(scale, double(std::abs(want.data<float>()[i])));
  for (int64_t i = 0; i < want.numElements(); ++i) {
    double d = std::abs(got.data<float>()[i] - want.data<float>()[i]);
    worst = std::max(worst, std::isnan(d) ? INFINITY : d);
  }
  return worst / scale;
}

double p50(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

/// p50 ms of `iterations` runs after 5 warm-up runs.
double timeInference(Executor &exec, const Tensor &x) {
  std::vector<double> ms;
  for (int i = 0; i < 5 + iterations; ++i) {
    double start = bench::now();
    check(exec.run({x}), "run");
    if (i >= 5)
      ms.push_back((bench::now() - start) * 1e3);
  }
  return p50(ms);
}

/// The op types that take the most GPU time in `p` at batch 16, each kernel
/// waiting for its work (ExecutorOptions::timeOps).
void printProfile(const std::string &name, const plan::Plan &p,
                  const WeightMap &weights) {
  ExecutorOptions options;
  options.timeOps = true;
  auto exec = check(Executor::create(placed(p, false), weights, options), name);
  Tensor x = randomInput(p, 16, 2);
  for (int i = 0; i < 3; ++i)
    check(exec->run({x}), name);
  std::vector<double> before = exec->opSeconds();
  for (int i = 0; i < iterations; ++i)
    check(exec->run({x}), name);
  std::map<std::string, std::pair<double, int>> byType;
  double total = 0;
  for (size_t i = 0; i < before.size(); ++i) {
    double ms = (exec->opSeconds()[i] - before[i]) * 1e3 / iterations;
    auto &[sum, count] = byType[exec->plan().ops(i).type() + " [" +
                                exec->backendOf(static_cast<int>(i)) + "]"];
    sum += ms;
    ++count;
    total += ms;
  }
  std::vector<std::pair<double, std::string>> types;
  for (const auto &[type, entry] : byType)
    types.push_back({entry.first, type});
  std::sort(types.rbegin(), types.rend());
  llvm::outs() << llvm::formatv(
      "{0} at batch 16, ops synchronised: {1:F3} ms\n", name, total);
  for (size_t k = 0; k < std::min<size_t>(types.size(), 8); ++k)
    llvm::outs() << llvm::formatv(
        "  {0,-32} {1,4} ops {2,9:F3} ms\n", types[k].second,
        byType[types[k].second].second, types[k].first);
}

/// Where a model's GPU outputs part from the CPU's: the relative error of
/// the logits with fusions and autotuning on or off, then, unfused, the
/// first ops whose outputs differ (every value made a graph output).
void printDiagnosis(const std::string &name, const plan::Plan &p,
                    const WeightMap &weights) {
  Tensor probe = randomInput(p, checkBatch, 1);
  ExecutorOptions reference;
  reference.fuse = false;
  auto cpu = check(Executor::create(p, weights, reference), name);
  Tensor want = check(cpu->run({probe}), name)[0];
  for (bool fuse : {true, false})
    for (bool autotune : {true, false}) {
      ExecutorOptions options;
      options.fuse = fuse;
      options.autotune = autotune;
      auto gpu =
          check(Executor::create(placed(p, false), weights, options), name);
      llvm::outs() << llvm::formatv(
          "{0}: fuse {1}, autotune {2}: rel. err {3:e1}\n", name, fuse,
          autotune, relativeError(check(gpu->run({probe}), name)[0], want));
      llvm::outs().flush(); // A run cut short by a timeout keeps its lines.
    }
  plan::Plan all = p;
  std::vector<int> producer;
  for (int i = 0; i < all.ops_size(); ++i)
    for (int32_t v : all.ops(i).outputs()) {
      plan::Binding *b = all.add_outputs();
      b->set_name("value" + std::to_string(v));
      b->set_value(v);
      producer.push_back(i);
    }
  auto cpuAll = check(Executor::create(all, weights, reference), name);
  auto gpuAll =
      check(Executor::create(placed(all, false), weights, reference), name);
  std::vector<Tensor> wantAll = check(cpuAll->run({probe}), name);
  std::vector<Tensor> gotAll = check(gpuAll->run({probe}), name);
  size_t first = p.outputs_size(), shown = 0;
  for (size_t k = first; k < wantAll.size() && shown < 5; ++k) {
    if (wantAll[k].dtype() != DType::F32)
      continue;
    double err = relativeError(gotAll[k], wantAll[k]);
    if (err <= 1e-4)
      continue;
    const plan::Op &op = all.ops(producer[k - first]);
    llvm::outs() << llvm::formatv("{0}: unfused op {1} ({2}, {3}): rel. err "
                                  "{4:e1}, shape {5}\n",
                                  name, producer[k - first], op.type(),
                                  op.name(), err, wantAll[k].typeString());
    llvm::outs().flush();
    ++shown;
  }
  if (!shown)
    llvm::outs() << name << ": every unfused op within 1e-4 of the CPU's\n";
}

/// Samples per second of `trainSteps` steps after 3 warm-up steps.
double timeTraining(const plan::Plan &p, const WeightMap &weights,
                    int64_t classes, std::string &fallbacks) {
  train::TrainerOptions options;
  auto trainer = check(train::Trainer::create(p, weights, options), "trainer");
  fallbacks = llvm::join(trainer->fallbacks(), ", ");
  Tensor x = randomInput(p, trainBatch, 3);
  Tensor y(DType::I64, {trainBatch});
  for (int64_t i = 0; i < trainBatch; ++i)
    y.data<int64_t>()[i] = i % classes;
  double start = 0;
  for (int i = 0; i < 3 + trainSteps; ++i) {
    if (i == 3)
      start = bench::now();
    check(trainer->step(x, y, 1e-3f), "training step");
  }
  return trainBatch * trainSteps / (bench::now() - start);
}

} // namespace

int main(int argc, char **argv) {
  cl::ParseCommandLineOptions(argc, argv, "HeterPS CUDA backend benchmark\n");
  std::vector<int64_t> sizes(batches.begin(), batches.end());
  if (sizes.empty())
    sizes = {1, 16};
  llvm::outs() << llvm::formatv(
      "| {0,-20} | {1,5} | {2,9} | {3,11} | {4,10} | {5,11} | {6} |\n", "model",
      "batch", "rel. err", "GPU ms p50", "samples/s", "mixed ms",
      "ops on the CPU");
  llvm::outs() << "|---|---:|---:|---:|---:|---:|---|\n";
  for (const std::string &path : plans) {
    plan::Plan p = check(loadPlan(path), path);
    WeightMap weights = check(loadWeights(p), path);
    std::string name = llvm::sys::path::stem(path).str();
    auto cpu = check(Executor::create(p, weights), name + " on the CPU");
    auto gpu = check(Executor::create(placed(p, false), weights), name);
    auto mixed = check(Executor::create(placed(p, true), weights), name);
    Tensor probe = randomInput(p, checkBatch, 1);
    std::vector<Tensor> want = check(cpu->run({probe}), name + " on the CPU");
    std::vector<Tensor> got = check(gpu->run({probe}), name + " on the GPU");
    double err = relativeError(got[0], want[0]);
    std::string fallbacks = llvm::join(gpu->fallbacks(), ", ");
    for (int64_t b : sizes) {
      Tensor x = randomInput(p, b, 2);
      double ms = timeInference(*gpu, x);
      double mixedMs = timeInference(*mixed, x);
      llvm::outs() << llvm::formatv(
          "| {0,-20} | {1,5} | {2,9:e1} | {3,11:F3} | {4,10:F0} | {5,11:F3} | "
          "{6} |\n",
          name, b, err, ms, b * 1e3 / ms, mixedMs,
          fallbacks.empty() ? "-" : fallbacks);
    }
    if (trainBatch > 0) {
      int64_t classes = want[0].shape().back();
      std::string onCPU, mixedOnCPU;
      double all = timeTraining(placed(p, false), weights, classes, onCPU);
      double part = timeTraining(placed(p, true), weights, classes, mixedOnCPU);
      llvm::outs() << llvm::formatv(
          "| {0,-20} | train {1} | all-GPU {2:F1} samples/s | mixed {3:F1} "
          "samples/s | trained on the CPU: {4} |\n",
          name, trainBatch.getValue(), all, part, onCPU.empty() ? "-" : onCPU);
    }
    if (llvm::is_contained(profile, name))
      printProfile(name, p, weights);
    if (llvm::is_contained(diagnose, name))
      printDiagnosis(name, p, weights);
    llvm::outs().flush();
  }
  return 0;
}
