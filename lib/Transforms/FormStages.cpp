//===- FormStages.cpp - consecutive same-device layers become stages ------===//

#include "PlanIR.h"
#include "heterps/Transforms/Passes.h"

namespace mlir::hps {
#define GEN_PASS_DEF_FORMSTAGES
#include "heterps/Transforms/Passes.h.inc"
} // namespace mlir::hps

using namespace mlir;
using namespace mlir::hps;
namespace planner = heterps::planner;

namespace {

struct FormStagesPass : public mlir::hps::impl::FormStagesBase<FormStagesPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<planner::ClusterSpec> spec =
        loadRecordedSpec(module, "hps-form-stages");
    FailureOr<func::FuncOp> func = getModelFunction(module, "hps-form-stages");
    if (failed(spec) || failed(func))
      return signalPassFailure();
    SmallVector<LayerOpInterface> layers = collectLayers(*func);
    FailureOr<std::vector<size_t>> devices =
        layerDevices(layers, *spec, "hps-form-stages");
    if (failed(devices))
      return signalPassFailure();
    Builder b(module.getContext());
    std::vector<planner::Stage> stages = planner::formStages(*devices);
    for (auto [index, stage] : llvm::enumerate(stages))
      for (size_t layer : stage.layers)
        layers[layer]->setAttr(HPSDialect::kStageAttrName,
                               b.getI64IntegerAttr(index));
    module->removeAttr(HPSDialect::kReplicasAttrName);
    module->removeAttr(HPSDialect::kThroughputLimitAttrName);
  }
};

} // namespace
