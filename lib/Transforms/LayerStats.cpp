//===- LayerStats.cpp - print per-layer FLOPs and bytes -------------------===//

#include "PlanIR.h"
#include "heterps/Transforms/Passes.h"

#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/ToolOutputFile.h"

namespace mlir::hps {
#define GEN_PASS_DEF_LAYERSTATS
#include "heterps/Transforms/Passes.h.inc"
} // namespace mlir::hps

using namespace mlir;
using namespace mlir::hps;

namespace {

struct LayerRow {
  std::string name, op, kind;
  int64_t flops, paramBytes, activationBytes;
};

void printText(llvm::raw_ostream &os, StringRef function,
               ArrayRef<LayerRow> rows, const LayerRow &total) {
  size_t width = 5;
  for (const LayerRow &r : rows)
    width = std::max(width, r.name.size());
  auto line = [&](StringRef name, StringRef op, StringRef kind,
                  const auto &flops, const auto &params, const auto &acts) {
    os << llvm::formatv("{0} {1} {2} {3,16} {4,14} {5,16}\n",
                        llvm::left_justify(name, width),
                        llvm::left_justify(op, 22),
                        llvm::left_justify(kind, 10), flops, params, acts);
  };
  os << "layer statistics of @" << function
     << " (a dynamic dimension counts as 1)\n";
  line("layer", "op", "kind", "flops", "param_bytes", "activation_bytes");
  for (const LayerRow &r : rows)
    line(r.name, r.op, r.kind, r.flops, r.paramBytes, r.activationBytes);
  line(total.name, "", "", total.flops, total.paramBytes,
       total.activationBytes);
}

struct LayerStatsPass : public mlir::hps::impl::LayerStatsBase<LayerStatsPass> {
  using LayerStatsBase::LayerStatsBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    std::string error;
    auto file = openOutputFile(output, &error);
    if (!file) {
      emitError(func.getLoc()) << "hps-layer-stats: " << error;
      return signalPassFailure();
    }
    writeLayerStats(func, format, file->os());
    file->keep();
    markAllAnalysesPreserved();
  }
};

} // namespace

void mlir::hps::writeLayerStats(func::FuncOp func, OutputFormat format,
                                raw_ostream &os) {
  SmallVector<LayerRow> rows;
  LayerRow total{"total", "", "", 0, 0, 0};
  func.walk([&](LayerOpInterface layer) {
    LayerKind kind = layer.getLayerKind();
    if (kind == LayerKind::constant)
      return;
    LayerRow row{layerName(layer),
                 layer->getName().getStringRef().str(),
                 stringifyLayerKind(kind).str(),
                 layer.getFlops(),
                 layer.getParamBytes(),
                 layer.getActivationBytes()};
    total.flops += row.flops;
    total.paramBytes += row.paramBytes;
    total.activationBytes += row.activationBytes;
    rows.push_back(std::move(row));
  });
  if (format != OutputFormat::Json)
    return printText(os, func.getSymName(), rows, total);
  llvm::json::Array layers;
  for (const LayerRow &r : rows)
    layers.push_back(
        llvm::json::Object{{"name", r.name},
                           {"op", r.op},
                           {"kind", r.kind},
                           {"flops", r.flops},
                           {"param_bytes", r.paramBytes},
                           {"activation_bytes", r.activationBytes}});
  llvm::json::Object doc{
      {"function", func.getSymName()},
      {"layers", std::move(layers)},
      {"total",
       llvm::json::Object{{"flops", total.flops},
                          {"param_bytes", total.paramBytes},
                          {"activation_bytes", total.activationBytes}}}};
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(doc))) << "\n";
}
