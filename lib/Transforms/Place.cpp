//===- Place.cpp - choose a device type per layer -------------------------===//

#include "PlanIR.h"
#include "heterps/Transforms/Passes.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

namespace mlir::hps {
#define GEN_PASS_DEF_PLACE
#include "heterps/Transforms/Passes.h.inc"
} // namespace mlir::hps

using namespace mlir;
using namespace mlir::hps;
namespace planner = heterps::planner;

namespace {

/// node name -> device type name, from a JSON object.
FailureOr<llvm::StringMap<std::string>> readPlacement(ModuleOp module,
                                                      StringRef path) {
  auto fail = [&](const Twine &what) {
    return emitError(module.getLoc()) << "hps-place: " << path << ": " << what;
  };
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer)
    return fail("cannot open: " + buffer.getError().message());
  llvm::Expected<llvm::json::Value> json =
      llvm::json::parse((*buffer)->getBuffer());
  if (!json)
    return fail("invalid JSON: " + llvm::toString(json.takeError()));
  const llvm::json::Object *object = json->getAsObject();
  if (!object)
    return fail("expected an object mapping node names to device types");
  llvm::StringMap<std::string> placement;
  for (const auto &[node, device] : *object) {
    std::optional<StringRef> name = device.getAsString();
    if (!name)
      return fail("node '" + node.str() + "': expected a device type name");
    placement[node.str()] = name->str();
  }
  return placement;
}

struct PlacePass : public mlir::hps::impl::PlaceBase<PlacePass> {
  using PlaceBase::PlaceBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<planner::ClusterSpec> spec =
        loadRecordedSpec(module, "hps-place");
    FailureOr<func::FuncOp> func = getModelFunction(module, "hps-place");
    if (failed(spec) || failed(func))
      return signalPassFailure();
    SmallVector<LayerOpInterface> layers = collectLayers(*func);

    // The device type name of each layer, by strategy.
    std::vector<std::string> devices;
    StringRef s = strategy;
    if (s.consume_front("all-")) {
      devices.assign(layers.size(), s.str());
    } else if (s == "manual") {
      if (placement.empty()) {
        emitError(module.getLoc(),
                  "hps-place: strategy=manual needs the 'placement' "
                  "option (a JSON file)");
        return signalPassFailure();
      }
      FailureOr<llvm::StringMap<std::string>> byNode =
          readPlacement(module, placement);
      if (failed(byNode))
        return signalPassFailure();
      for (LayerOpInterface op : layers) {
        auto it = byNode->find(layerName(op));
        if (it == byNode->end()) {
          emitError(modelLoc(op)) << "hps-place: layer '" << layerName(op)
                                  << "' is not in " << placement;
          return signalPassFailure();
        }
        devices.push_back(it->second);
      }
    } else {
      emitError(module.getLoc())
          << "hps-place: unknown strategy '" << strategy
          << "' (expected 'manual' or 'all-<device type>')";
      return signalPassFailure();
    }

    Builder b(module.getContext());
    llvm::json::Object saved;
    for (auto [op, device] : llvm::zip(layers, devices)) {
      if (!spec->find(device)) {
        auto diag = emitError(module.getLoc())
                    << "hps-place: device type '" << device << "' (layer '"
                    << layerName(op)
                    << "') is not in the cluster spec, which has";
        for (const planner::DeviceType &d : spec->deviceTypes)
          diag << " '" << d.name << "'";
        return signalPassFailure();
      }
      op->setAttr(HPSDialect::kDeviceAttrName,
                  DeviceAttr::get(b.getContext(), device));
      saved[layerName(op)] = device;
      // A new placement invalidates earlier stages and provisioning.
      op->removeAttr(HPSDialect::kStageAttrName);
    }
    module->removeAttr(HPSDialect::kReplicasAttrName);
    module->removeAttr(HPSDialect::kThroughputLimitAttrName);
    if (!save.empty()) {
      if (llvm::Error err =
              llvm::writeToOutput(save, [&](llvm::raw_ostream &os) {
                os << llvm::formatv("{0:2}",
                                    llvm::json::Value(std::move(saved)))
                   << "\n";
                return llvm::Error::success();
              })) {
        emitError(module.getLoc())
            << "hps-place: " << save << ": " << llvm::toString(std::move(err));
        return signalPassFailure();
      }
    }
  }
};

} // namespace
