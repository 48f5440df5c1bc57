//===- AnnotateCosts.cpp - per-layer, per-device-type costs ---------------===//

#include "PlanIR.h"
#include "heterps/Planner/Profile.h"
#include "heterps/Support/PrintableLine.h"
#include "heterps/Transforms/Passes.h"

namespace mlir::hps {
#define GEN_PASS_DEF_ANNOTATECOSTS
#include "heterps/Transforms/Passes.h.inc"
} // namespace mlir::hps

using namespace mlir;
using namespace mlir::hps;
namespace planner = heterps::planner;

namespace {

struct AnnotateCostsPass
    : public mlir::hps::impl::AnnotateCostsBase<AnnotateCostsPass> {
  using AnnotateCostsBase::AnnotateCostsBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (cluster.empty()) {
      emitError(module.getLoc(),
                "hps-annotate-costs: the 'cluster' option (a cluster "
                "spec file) is required");
      return signalPassFailure();
    }
    llvm::Expected<planner::ClusterSpec> spec =
        planner::loadClusterSpec(cluster);
    if (!spec) {
      emitError(module.getLoc())
          << "hps-annotate-costs: "
          << heterps::printableLine(llvm::toString(spec.takeError()));
      return signalPassFailure();
    }
    planner::Profile measured;
    if (!profile.empty()) {
      llvm::Expected<planner::Profile> loaded = planner::loadProfile(profile);
      if (!loaded) {
        emitError(module.getLoc())
            << "hps-annotate-costs: "
            << heterps::printableLine(llvm::toString(loaded.takeError()));
        return signalPassFailure();
      }
      measured = std::move(*loaded);
    }
    FailureOr<func::FuncOp> func =
        getModelFunction(module, "hps-annotate-costs");
    if (failed(func))
      return signalPassFailure();

    SmallVector<LayerOpInterface> layers = collectLayers(*func);
    // Else the analytic costs would silently stay in place.
    if (const std::string *node = firstUnknownLayer(layers, measured)) {
      emitError(module.getLoc())
          << "hps-annotate-costs: " << profile << ": layer '"
          << heterps::printableLine(*node, 200)
          << "' is not in the model (the profile has " << measured.size()
          << " layers, the model " << layers.size() << ")";
      return signalPassFailure();
    }

    Builder b(module.getContext());
    for (LayerOpInterface op : layers) {
      planner::Layer layer{
          layerName(op),           stringifyLayerKind(op.getLayerKind()).str(),
          op.getFlops(),           op.getParamBytes(),
          op.getActivationBytes(), {}};
      auto fromProfile = measured.find(layer.name);
      SmallVector<NamedAttribute> costs;
      for (const planner::DeviceType &device : spec->deviceTypes) {
        planner::LayerCost c = planner::analyticCost(
            layer, device, spec->job.batchSize, spec->job.step);
        if (fromProfile != measured.end())
          if (auto it = fromProfile->second.find(device.name);
              it != fromProfile->second.end())
            c = it->second;
        costs.push_back(b.getNamedAttr(
            device.name,
            CostAttr::get(b.getContext(), APFloat(c.oct), APFloat(c.odt),
                          APFloat(c.alpha), APFloat(c.beta), APFloat(c.b0))));
      }
      op->setAttr(HPSDialect::kCostsAttrName, b.getDictionaryAttr(costs));
    }
    // The spec itself, not its path: the passes after this one and a
    // saved module need no file.
    module->setAttr(HPSDialect::kClusterAttrName,
                    clusterAttrOf(b.getContext(), *spec));
  }
};

} // namespace
