//===- Model.cpp - models and plans: import, plan, report, save -----------===//

#include "Common.h"

#include "heterps/Runtime/AtomicFile.h"
#include "heterps/Target/ONNX/ImportONNX.h"
#include "heterps/Transforms/Passes.h"

#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <pybind11/stl.h>

namespace py = pybind11;
using namespace heterps::python;

namespace {

std::shared_ptr<IRModule>
importOnnx(const std::string &path,
           const std::map<std::string, int64_t> &dims) {
  auto model = std::make_shared<IRModule>();
  model->context = makeContext();
  model->path = path;
  mlir::hps::ONNXImportOptions options;
  options.dimSizes = dims;
  FirstError diagnostics(model->context.get());
  {
    py::gil_scoped_release release;
    auto module =
        mlir::hps::importONNXFile(path, model->context.get(), options);
    if (!module)
      raise(module.takeError());
    model->module = std::move(*module);
  }
  return model;
}

/// A module saved by IRModule.save (or heterps-opt).
std::shared_ptr<IRModule> loadIr(const std::string &path) {
  auto model = std::make_shared<IRModule>();
  model->context = makeContext();
  model->path = path;
  FirstError diagnostics(model->context.get());
  llvm::SourceMgr sources;
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    raise(path + ": " + buffer.getError().message());
  sources.AddNewSourceBuffer(std::move(*buffer), llvm::SMLoc());
  model->module = mlir::parseSourceFile<mlir::ModuleOp>(
      sources, mlir::ParserConfig(model->context.get()));
  if (!model->module)
    diagnostics.raise(path);
  return model;
}

std::string printIr(const IRModule &model) {
  std::string text;
  llvm::raw_string_ostream os(text);
  model.op().print(os);
  return text;
}

/// hps-layer-stats as JSON, for the package to parse.
std::string layerStatsJson(const IRModule &model) {
  std::string text;
  llvm::raw_string_ostream os(text);
  FirstError diagnostics(model.context.get());
  for (auto func : model.op().getOps<mlir::func::FuncOp>()) {
    mlir::hps::writeLayerStats(func, mlir::hps::OutputFormat::Json, os);
    return text;
  }
  raise(model.path + ": the module holds no function");
}

struct PlanRequest {
  std::string cluster, profile, strategy, placement;
  double throughput = -1;
  uint64_t seed = 1;
  double timeBudget = 10;
  bool certify = false;
};

/// A copy of `model` planned by the hps-plan pipeline.
std::shared_ptr<IRModule> plan(const IRModule &model, const PlanRequest &r) {
  auto planned = std::make_shared<IRModule>();
  planned->context = model.context;
  planned->path = model.path;
  planned->module = model.op().clone();
  mlir::hps::PlanPipelineOptions options;
  options.cluster = r.cluster;
  options.profile = r.profile;
  options.strategy = r.strategy;
  options.placement = r.placement;
  options.throughputLimit = r.throughput;
  options.seed = r.seed;
  options.timeBudget = r.timeBudget;
  options.certify = r.certify;
  FirstError diagnostics(model.context.get());
  mlir::LogicalResult result = mlir::success();
  {
    py::gil_scoped_release release;
    mlir::PassManager pm(model.context.get());
    mlir::hps::buildPlanPipeline(pm, options);
    result = pm.run(planned->op());
  }
  if (mlir::failed(result))
    diagnostics.raise(model.path);
  return planned;
}

std::string report(const IRModule &model, const std::string &format) {
  mlir::hps::OutputFormat f;
  if (format == "text")
    f = mlir::hps::OutputFormat::Text;
  else if (format == "json")
    f = mlir::hps::OutputFormat::Json;
  else if (format == "html")
    f = mlir::hps::OutputFormat::Html;
  else
    raise("report format '" + format + "': expected text, json or html");
  std::string text;
  llvm::raw_string_ostream os(text);
  FirstError diagnostics(model.context.get());
  mlir::LogicalResult result = mlir::success();
  {
    py::gil_scoped_release release;
    result = mlir::hps::writePlanReport(model.op(), f, os);
  }
  if (mlir::failed(result))
    diagnostics.raise(model.path);
  return text;
}

/// Whether the module holds a plan (costs, placement, stages, replicas).
bool isPlanned(const IRModule &model) {
  mlir::Operation *op = model.op().getOperation();
  return op->hasAttr(mlir::hps::HPSDialect::kClusterAttrName) &&
         op->hasAttr(mlir::hps::HPSDialect::kReplicasAttrName);
}

void save(const IRModule &model, const std::string &path) {
  if (llvm::Error e = heterps::runtime::writeFileAtomically(
          path, [&](llvm::raw_ostream &os) {
            // Locations carry the ONNX node names that plans and reports
            // use.
            model.op().print(os, mlir::OpPrintingFlags().enableDebugInfo());
            return llvm::Error::success();
          }))
    raise(std::move(e));
}

} // namespace

void heterps::python::bindModel(py::module_ &m) {
  py::class_<IRModule, std::shared_ptr<IRModule>>(m, "IRModule")
      .def("__str__", &printIr)
      .def_readonly("path", &IRModule::path)
      .def("layer_stats_json", &layerStatsJson)
      .def("is_planned", &isPlanned)
      .def(
          "plan",
          [](const IRModule &model, std::string cluster, std::string strategy,
             double throughput, uint64_t seed, double timeBudget, bool certify,
             std::string profile, std::string placement) {
            return plan(model, {std::move(cluster), std::move(profile),
                                std::move(strategy), std::move(placement),
                                throughput, seed, timeBudget, certify});
          },
          py::arg("cluster"), py::arg("strategy"), py::arg("throughput"),
          py::arg("seed"), py::arg("time_budget"), py::arg("certify"),
          py::arg("profile"), py::arg("placement"))
      .def("report", &report, py::arg("format"))
      .def("save", &save, py::arg("path"));
  m.def("import_onnx", &importOnnx, py::arg("path"), py::arg("dims"));
  m.def("load_ir", &loadIr, py::arg("path"));
}
