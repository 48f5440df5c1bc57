//===- PlanIR.cpp - between the hps IR and the planner library ------------===//

#include "PlanIR.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

using namespace mlir;
using namespace mlir::hps;
namespace planner = heterps::planner;

Location mlir::hps::modelLoc(Operation *op) {
  if (auto module = op->getParentOfType<ModuleOp>())
    return module.getLoc();
  return op->getLoc();
}

std::string mlir::hps::layerName(Operation *op) {
  if (auto loc = dyn_cast<NameLoc>(op->getLoc()))
    return loc.getName().str();
  return op->getName().getStringRef().str();
}

FailureOr<func::FuncOp> mlir::hps::getModelFunction(ModuleOp module,
                                                    StringRef pass) {
  if (auto main = module.lookupSymbol<func::FuncOp>("main"))
    return main;
  auto funcs = module.getOps<func::FuncOp>();
  if (std::distance(funcs.begin(), funcs.end()) != 1)
    return emitError(module.getLoc())
           << pass
           << ": expects a function @main or exactly one "
              "function in the module";
  return *funcs.begin();
}

SmallVector<LayerOpInterface> mlir::hps::collectLayers(func::FuncOp func) {
  SmallVector<LayerOpInterface> layers;
  func.walk([&](LayerOpInterface op) {
    if (op.getLayerKind() != LayerKind::constant)
      layers.push_back(op);
  });
  return layers;
}

ClusterAttr mlir::hps::clusterAttrOf(MLIRContext *context,
                                     const planner::ClusterSpec &spec) {
  SmallVector<Attribute> types;
  for (const planner::DeviceType &t : spec.deviceTypes)
    types.push_back(DeviceTypeAttr::get(
        context, t.name, t.kind, APFloat(t.pricePerHour), t.maxCount,
        APFloat(t.gflops), APFloat(t.memoryBandwidthGBs),
        APFloat(t.networkBandwidthGBs), APFloat(t.alpha)));
  const planner::Job &job = spec.job;
  return ClusterAttr::get(context, ArrayAttr::get(context, types),
                          job.batchSize, job.samplesPerEpoch, job.epochs,
                          APFloat(job.throughputLimit),
                          planner::stepName(job.step));
}

FailureOr<planner::ClusterSpec> mlir::hps::loadRecordedSpec(ModuleOp module,
                                                            StringRef pass) {
  auto cluster =
      module->getAttrOfType<ClusterAttr>(HPSDialect::kClusterAttrName);
  if (!cluster)
    return emitError(module.getLoc())
           << pass
           << ": no cluster spec recorded on the module; "
              "run hps-annotate-costs first";
  // The attribute verified what the YAML reader checks.
  planner::ClusterSpec spec;
  for (Attribute a : cluster.getDeviceTypes()) {
    auto t = cast<DeviceTypeAttr>(a);
    spec.deviceTypes.push_back({t.getName().str(), t.getKind().str(),
                                t.getPricePerHour().convertToDouble(),
                                t.getMaxCount(),
                                t.getGflops().convertToDouble(),
                                t.getMemoryBandwidthGbs().convertToDouble(),
                                t.getNetworkBandwidthGbs().convertToDouble(),
                                t.getAlpha().convertToDouble()});
  }
  spec.job = {cluster.getBatchSize(), cluster.getSamplesPerEpoch(),
              cluster.getEpochs(),
              cluster.getThroughputLimit().convertToDouble(),
              *planner::parseStep(cluster.getStep())};
  return spec;
}

FailureOr<std::vector<planner::Layer>>
mlir::hps::plannerLayers(ArrayRef<LayerOpInterface> layers,
                         const planner::ClusterSpec &spec, StringRef pass) {
  std::vector<planner::Layer> out;
  for (LayerOpInterface op : layers) {
    planner::Layer layer;
    layer.name = layerName(op);
    layer.kind = stringifyLayerKind(op.getLayerKind()).str();
    layer.flops = op.getFlops();
    layer.paramBytes = op.getParamBytes();
    layer.activationBytes = op.getActivationBytes();
    auto costs = op->getAttrOfType<DictionaryAttr>(HPSDialect::kCostsAttrName);
    for (const planner::DeviceType &device : spec.deviceTypes) {
      auto cost = costs ? costs.getAs<CostAttr>(device.name) : CostAttr();
      if (!cost)
        return emitError(modelLoc(op))
               << pass << ": layer '" << layer.name << "' has no cost for "
               << "device type '" << device.name
               << "'; run hps-annotate-costs with this cluster spec first";
      layer.costs.push_back(
          {cost.getOct().convertToDouble(), cost.getOdt().convertToDouble(),
           cost.getAlpha().convertToDouble(), cost.getBeta().convertToDouble(),
           cost.getB0().convertToDouble()});
    }
    out.push_back(std::move(layer));
  }
  return out;
}

FailureOr<std::vector<size_t>>
mlir::hps::layerDevices(ArrayRef<LayerOpInterface> layers,
                        const planner::ClusterSpec &spec, StringRef pass) {
  std::vector<size_t> devices;
  for (LayerOpInterface op : layers) {
    auto device = op->getAttrOfType<DeviceAttr>(HPSDialect::kDeviceAttrName);
    if (!device)
      return emitError(modelLoc(op)) << pass << ": layer '" << layerName(op)
                                     << "' has no device; run hps-place first";
    std::optional<size_t> index = spec.find(device.getName().str());
    if (!index)
      return emitError(modelLoc(op))
             << pass << ": layer '" << layerName(op) << "' is on device type '"
             << device.getName() << "', which the cluster spec does not list";
    devices.push_back(*index);
  }
  return devices;
}

FailureOr<std::vector<planner::Stage>>
mlir::hps::recordedStages(ModuleOp module, ArrayRef<LayerOpInterface> layers,
                          const planner::ClusterSpec &spec, StringRef pass) {
  FailureOr<std::vector<size_t>> devices = layerDevices(layers, spec, pass);
  if (failed(devices))
    return failure();
  std::vector<planner::Stage> stages;
  for (auto [i, op] : llvm::enumerate(layers)) {
    auto stage = op->getAttrOfType<IntegerAttr>(HPSDialect::kStageAttrName);
    if (!stage)
      return emitError(modelLoc(op))
             << pass << ": layer '" << layerName(op)
             << "' has no stage; run hps-form-stages first";
    size_t index = stage.getInt();
    if (index != stages.size() && index + 1 != stages.size())
      return emitError(modelLoc(op))
             << pass << ": stage " << index << " of layer '" << layerName(op)
             << "' skips a stage index";
    if (index == stages.size())
      stages.push_back(planner::Stage{(*devices)[i], {}, 1});
    stages.back().layers.push_back(i);
  }
  if (auto replicas = module->getAttrOfType<DenseI64ArrayAttr>(
          HPSDialect::kReplicasAttrName)) {
    if (replicas.size() != static_cast<int64_t>(stages.size()))
      return emitError(module.getLoc())
             << pass << ": 'hps.replicas' has " << replicas.size()
             << " entries for " << stages.size() << " stages";
    for (auto [stage, k] : llvm::zip(stages, replicas.asArrayRef()))
      stage.replicas = k;
  }
  return stages;
}

FailureOr<RecordedPlan> mlir::hps::loadRecordedPlan(ModuleOp module,
                                                    StringRef pass) {
  FailureOr<planner::ClusterSpec> spec = loadRecordedSpec(module, pass);
  FailureOr<func::FuncOp> func = getModelFunction(module, pass);
  if (failed(spec) || failed(func))
    return failure();
  RecordedPlan plan{std::move(*spec), collectLayers(*func), {}, {}};
  if (plan.ops.empty())
    return emitError(module.getLoc()) << pass << ": the model has no layers";
  FailureOr<std::vector<planner::Layer>> layers =
      plannerLayers(plan.ops, plan.spec, pass);
  FailureOr<std::vector<planner::Stage>> stages =
      recordedStages(module, plan.ops, plan.spec, pass);
  if (failed(layers) || failed(stages))
    return failure();
  plan.layers = std::move(*layers);
  plan.stages = std::move(*stages);
  return plan;
}

FailureOr<double>
mlir::hps::throughputFloor(ModuleOp module, StringRef pass,
                           const Pass::Option<double> &option,
                           const heterps::planner::ClusterSpec &spec) {
  // -1 is the default an options struct carries; written out in a pipeline
  // it is a mistake like any negative number.
  double limit = option;
  if (option.getNumOccurrences() == 0 && limit == -1)
    return spec.job.throughputLimit;
  if (!(limit >= 0) || std::isinf(limit))
    return emitError(module.getLoc())
           << pass << ": throughput-limit must be a number of samples per "
           << "second, at least 0, got "
           << llvm::formatv("{0}", llvm::format("%g", limit)).str();
  return limit;
}
