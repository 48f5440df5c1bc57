//===- Provision.cpp - devices per stage under the throughput limit -------===//

#include "PlanIR.h"
#include "heterps/Transforms/Passes.h"

#include "llvm/Support/FormatVariadic.h"

namespace mlir::hps {
#define GEN_PASS_DEF_PROVISION
#include "heterps/Transforms/Passes.h.inc"
} // namespace mlir::hps

using namespace mlir;
using namespace mlir::hps;
namespace planner = heterps::planner;

namespace {

struct ProvisionPass : public mlir::hps::impl::ProvisionBase<ProvisionPass> {
  using ProvisionBase::ProvisionBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<RecordedPlan> plan = loadRecordedPlan(module, "hps-provision");
    if (failed(plan))
      return signalPassFailure();
    const planner::ClusterSpec &spec = plan->spec;
    std::vector<planner::Layer> &layers = plan->layers;
    std::vector<planner::Stage> &stages = plan->stages;

    FailureOr<double> floor =
        throughputFloor(module, "hps-provision", throughputLimit, spec);
    if (failed(floor))
      return signalPassFailure();
    double limit = *floor;
    planner::Provisioning result =
        planner::provision(spec, layers, stages, limit);
    if (!result.feasible) {
      const planner::Stage &capping = stages[result.cappingStage];
      auto diag = emitError(module.getLoc())
                  << "hps-provision: throughput limit "
                  << llvm::formatv("{0:F1}", limit).str()
                  << " samples/s cannot be met; the best achievable is "
                  << llvm::formatv("{0:F1}", result.bestThroughput).str()
                  << " samples/s";
      if (!capping.layers.empty())
        diag << ", capped by stage " << result.cappingStage << " ("
             << spec.deviceTypes[capping.deviceType].name << ", layers '"
             << layers[capping.layers.front()].name << "' to '"
             << layers[capping.layers.back()].name << "', " << capping.replicas
             << " devices)";
      diag << ": " << result.reason;
      return signalPassFailure();
    }
    SmallVector<int64_t> replicas;
    for (const planner::Stage &s : stages)
      replicas.push_back(s.replicas);
    Builder b(module.getContext());
    module->setAttr(HPSDialect::kReplicasAttrName,
                    b.getDenseI64ArrayAttr(replicas));
    module->setAttr(HPSDialect::kThroughputLimitAttrName,
                    b.getF64FloatAttr(limit));
  }
};

} // namespace
