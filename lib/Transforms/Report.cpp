//===- Report.cpp - the plan as tables or JSON ----------------------------===//

#include "PlanIR.h"
#include "PlanView.h"
#include "heterps/Transforms/Passes.h"

#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/ToolOutputFile.h"

#include <cmath>

namespace mlir::hps {
#define GEN_PASS_DEF_REPORT
#include "heterps/Transforms/Passes.h.inc"
} // namespace mlir::hps

using namespace mlir;
using namespace mlir::hps;
namespace planner = heterps::planner;

namespace {

/// JSON has no infinity: a stage that costs nothing reports null.
llvm::json::Value number(double v) {
  if (std::isinf(v))
    return nullptr;
  return v;
}

/// hps.search's values as they are: strings, numbers, booleans, and
/// arrays and dictionaries of them (tapp's timed plans).
llvm::json::Value jsonOf(Attribute value) {
  if (auto s = dyn_cast<StringAttr>(value))
    return s.getValue();
  if (auto b = dyn_cast<BoolAttr>(value))
    return b.getValue();
  if (auto f = dyn_cast<FloatAttr>(value))
    return number(f.getValueAsDouble());
  if (auto i = dyn_cast<IntegerAttr>(value))
    return i.getInt();
  if (auto array = dyn_cast<ArrayAttr>(value)) {
    llvm::json::Array out;
    for (Attribute element : array)
      out.push_back(jsonOf(element));
    return out;
  }
  if (auto dict = dyn_cast<DictionaryAttr>(value)) {
    llvm::json::Object out;
    for (NamedAttribute entry : dict)
      out[entry.getName().getValue()] = jsonOf(entry.getValue());
    return out;
  }
  return nullptr;
}

llvm::json::Value toJson(const PlanView &v) {
  const planner::ClusterSpec &spec = v.spec;
  llvm::json::Array stages;
  for (auto [i, s] : llvm::enumerate(v.stages)) {
    llvm::json::Array names;
    for (size_t l : s.layers)
      names.push_back(v.layers[l].name);
    const planner::StageTimes &t = v.figures.stages[i];
    stages.push_back(llvm::json::Object{
        {"index", static_cast<int64_t>(i)},
        {"device_type", spec.deviceTypes[s.deviceType].name},
        {"layers", std::move(names)},
        {"replicas", s.replicas},
        {"ct_s", t.ct},
        {"dt_s", t.dt},
        {"et_s", t.et()},
        {"throughput", number(v.figures.stageThroughput[i])}});
  }
  llvm::json::Array layers;
  for (const planner::Layer &l : v.layers) {
    llvm::json::Object costs;
    for (auto [d, c] : llvm::zip(spec.deviceTypes, l.costs))
      costs[d.name] = llvm::json::Object{{"oct_s", c.oct},
                                         {"odt_s", c.odt},
                                         {"alpha", c.alpha},
                                         {"beta", c.beta},
                                         {"b0", c.b0}};
    layers.push_back(llvm::json::Object{{"name", l.name},
                                        {"kind", l.kind},
                                        {"flops", l.flops},
                                        {"param_bytes", l.paramBytes},
                                        {"activation_bytes", l.activationBytes},
                                        {"costs", std::move(costs)}});
  }
  llvm::json::Object devices;
  for (auto &[name, count] : v.figures.devices)
    devices[name] = count;
  llvm::json::Array types;
  for (const planner::DeviceType &d : spec.deviceTypes)
    types.push_back(llvm::json::Object{{"name", d.name},
                                       {"kind", d.kind},
                                       {"price_per_hour", d.pricePerHour},
                                       {"max_count", d.maxCount}});
  llvm::json::Object report{
      {"job",
       llvm::json::Object{{"batch_size", spec.job.batchSize},
                          {"samples_per_epoch", spec.job.samplesPerEpoch},
                          {"epochs", spec.job.epochs},
                          {"throughput_limit", v.limit},
                          {"step", planner::stepName(spec.job.step)}}},
      {"device_types", std::move(types)},
      {"throughput", number(v.figures.throughput)},
      {"total_time_s", v.figures.totalTime},
      {"cost", v.figures.cost},
      {"feasible", v.feasible},
      {"devices", std::move(devices)},
      {"stages", std::move(stages)},
      {"layers", std::move(layers)}};
  // hps.search as it is: strategy, and search_time_s, evaluations,
  // optimal_cost, gap, optimal_throughput, certify_time_s when recorded.
  if (v.search)
    for (NamedAttribute entry : v.search)
      report[entry.getName().getValue()] = jsonOf(entry.getValue());
  return report;
}

/// Dollars with cents, or three significant digits below one dollar.
std::string money(double dollars) {
  return dollars >= 1
             ? llvm::formatv("{0:F2}", dollars).str()
             : llvm::formatv("{0}", llvm::format("%.3g", dollars)).str();
}

/// "placement: strategy rl, 2500 evaluations, 1.234 s" and the certificate.
void printSearch(llvm::raw_ostream &os, DictionaryAttr search) {
  auto real = [&](StringRef key) -> std::optional<double> {
    if (auto f = search.getAs<FloatAttr>(key))
      return f.getValueAsDouble();
    return std::nullopt;
  };
  os << "placement: strategy "
     << search.getAs<StringAttr>("strategy").getValue();
  if (auto evaluations = search.getAs<IntegerAttr>("evaluations"))
    os << llvm::formatv(", {0} evaluations, {1:F3} s", evaluations.getInt(),
                        real("search_time_s").value_or(0));
  os << "\n";
  if (auto plans = search.getAs<ArrayAttr>("timed_plans")) {
    os << llvm::formatv("timed plans ({0} oracle): step ms predicted / "
                        "timed, cost\n",
                        search.getAs<StringAttr>("oracle").getValue());
    for (auto plan : plans.getAsRange<DictionaryAttr>()) {
      if (auto error = plan.getAs<StringAttr>("error")) {
        os << llvm::formatv("  {0,10} {1,10}  {2,9}  {3}\n", "-", "failed", "",
                            error.getValue());
        continue;
      }
      auto ms = [&](StringRef key) {
        return plan.getAs<FloatAttr>(key).getValueAsDouble() * 1e3;
      };
      auto cost = plan.getAs<FloatAttr>("cost");
      os << llvm::formatv("  {0,10:F3} {1,10:F3}  {2,9}  {3}\n",
                          ms("predicted_step_s"), ms("measured_step_s"),
                          cost ? "$" + money(cost.getValueAsDouble())
                               : std::string("infeasible"),
                          plan.getAs<StringAttr>("stages").getValue());
    }
  }
  if (std::optional<double> optimal = real("optimal_cost")) {
    os << "certificate: optimal cost $" << money(*optimal);
    if (std::optional<double> gap = real("gap"))
      os << llvm::formatv(", gap {0:F2}%", *gap * 100);
    else
      os << ", this plan misses the floor or the limits";
  } else if (std::optional<double> best = real("optimal_throughput")) {
    os << llvm::formatv("certificate: no placement meets the floor; the best "
                        "achievable is {0:F1} samples/s",
                        *best);
  } else {
    return;
  }
  os << llvm::formatv(" (exact search {0:F3} s)\n",
                      real("certify_time_s").value_or(0));
}

void printText(llvm::raw_ostream &os, const PlanView &v) {
  const planner::ClusterSpec &spec = v.spec;
  os << llvm::formatv("plan: throughput {0:F1} samples/s (limit {1:F1}, {2}), "
                      "total time {3:F1} s, cost ${4}\n",
                      v.figures.throughput, v.limit,
                      v.feasible ? "met" : "NOT met", v.figures.totalTime,
                      money(v.figures.cost));
  if (v.search)
    printSearch(os, v.search);
  os << "devices:";
  for (auto &[name, count] : v.figures.devices)
    os << " " << name << " x" << count;
  os << "\n\n";
  os << llvm::formatv("{0,5} {1,-12} {2,7} {3,8} {4,12} {5,12} {6,12} "
                      "{7,14}  layers\n",
                      "stage", "device", "layers", "replicas", "ct_s", "dt_s",
                      "et_s", "samples/s");
  for (auto [i, s] : llvm::enumerate(v.stages)) {
    const planner::StageTimes &t = v.figures.stages[i];
    std::string first = v.layers[s.layers.front()].name;
    std::string last = v.layers[s.layers.back()].name;
    os << llvm::formatv("{0,5} {1,-12} {2,7} {3,8} {4,12:E3} {5,12:E3} "
                        "{6,12:E3} {7,14:F1}  {8}{9}\n",
                        i, spec.deviceTypes[s.deviceType].name, s.layers.size(),
                        s.replicas, t.ct, t.dt, t.et(),
                        v.figures.stageThroughput[i], first,
                        s.layers.size() > 1 ? " .. " + last : "");
  }
  os << "\n"
     << llvm::formatv("{0,-32} {1,-10} {2,14} {3,12} {4,6} {5,-8}", "layer",
                      "kind", "flops", "param_bytes", "stage", "device");
  for (const planner::DeviceType &d : spec.deviceTypes)
    os << llvm::formatv(" {0,12} {1,12}", "oct_s@" + d.name, "odt_s@" + d.name);
  os << "\n";
  for (auto [si, s] : llvm::enumerate(v.stages))
    for (size_t li : s.layers) {
      const planner::Layer &l = v.layers[li];
      os << llvm::formatv("{0,-32} {1,-10} {2,14} {3,12} {4,6} {5,-8}", l.name,
                          l.kind, l.flops, l.paramBytes, si,
                          spec.deviceTypes[s.deviceType].name);
      for (const planner::LayerCost &c : l.costs)
        os << llvm::formatv(" {0,12:E3} {1,12:E3}", c.oct, c.odt);
      os << "\n";
    }
}

/// The plan recorded in `module`, evaluated.
FailureOr<PlanView> loadPlanView(ModuleOp module) {
  FailureOr<RecordedPlan> plan = loadRecordedPlan(module, "hps-report");
  if (failed(plan))
    return failure();
  PlanView view{
      std::move(plan->spec),
      "model",
      module->getAttrOfType<DictionaryAttr>(HPSDialect::kSearchAttrName),
      std::move(plan->layers),
      std::move(plan->stages),
      {},
      0,
      false};
  if (auto source =
          module->getAttrOfType<StringAttr>(HPSDialect::kSourceAttrName))
    view.model = llvm::sys::path::filename(source.getValue()).str();
  const planner::ClusterSpec &spec = view.spec;
  view.limit = spec.job.throughputLimit;
  if (auto planned = module->getAttrOfType<FloatAttr>(
          HPSDialect::kThroughputLimitAttrName))
    view.limit = planned.getValueAsDouble();
  view.figures = planner::evaluatePlan(spec, view.layers, view.stages);
  view.feasible = view.figures.throughput >= view.limit;
  for (auto &[name, count] : view.figures.devices)
    view.feasible &= count <= spec.deviceTypes[*spec.find(name)].maxCount;
  return view;
}

void printReport(raw_ostream &os, const PlanView &view, OutputFormat format) {
  if (format == OutputFormat::Json)
    os << llvm::formatv("{0:2}", toJson(view)) << "\n";
  else if (format == OutputFormat::Html)
    printHtml(os, view);
  else
    printText(os, view);
}

struct ReportPass : public mlir::hps::impl::ReportBase<ReportPass> {
  using ReportBase::ReportBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    // A module without a plan fails before the output file is opened (and
    // an existing one truncated).
    FailureOr<PlanView> view = loadPlanView(module);
    if (failed(view))
      return signalPassFailure();
    std::string error;
    auto file = openOutputFile(output, &error);
    if (!file) {
      emitError(module.getLoc()) << "hps-report: " << error;
      return signalPassFailure();
    }
    printReport(file->os(), *view, format);
    file->keep();
    markAllAnalysesPreserved();
  }
};

} // namespace

LogicalResult mlir::hps::writePlanReport(ModuleOp module, OutputFormat format,
                                         raw_ostream &os) {
  FailureOr<PlanView> view = loadPlanView(module);
  if (failed(view))
    return failure();
  printReport(os, *view, format);
  return success();
}
