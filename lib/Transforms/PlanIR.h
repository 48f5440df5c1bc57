//===- PlanIR.h - between the hps IR and the planner library ----*- C++ -*-===//
//
// The passes are thin adapters: they read layers, costs, devices and stages
// from the IR into lib/Planner's structs, call the planner, and write the
// decisions back as attributes. These helpers do the reading.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_TRANSFORMS_PLANIR_H
#define HETERPS_LIB_TRANSFORMS_PLANIR_H

#include "heterps/Dialect/HPS/HPS.h"
#include "heterps/Planner/CostModel.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "llvm/ADT/StringSet.h"

namespace mlir::hps {

/// Where planning diagnostics point: the enclosing module, i.e. the model
/// file (op locations are bare ONNX node names, which messages quote).
Location modelLoc(Operation *op);

/// The ONNX node name of an op (its NameLoc), or the op name.
std::string layerName(Operation *op);

/// The function holding the model: @main, or the module's only function.
FailureOr<func::FuncOp> getModelFunction(ModuleOp module, StringRef pass);

/// The layers of a function in op order: every LayerOpInterface op except
/// weights and constants.
SmallVector<LayerOpInterface> collectLayers(func::FuncOp func);

/// `spec` as the attribute hps-annotate-costs records on the module.
ClusterAttr clusterAttrOf(MLIRContext *context,
                          const heterps::planner::ClusterSpec &spec);
/// The cluster spec recorded on the module by hps-annotate-costs.
FailureOr<heterps::planner::ClusterSpec> loadRecordedSpec(ModuleOp module,
                                                          StringRef pass);

/// Planner layers with their figures and `hps.costs` (in the spec's device
/// order).
FailureOr<std::vector<heterps::planner::Layer>>
plannerLayers(ArrayRef<LayerOpInterface> layers,
              const heterps::planner::ClusterSpec &spec, StringRef pass);

/// Index into the spec of each layer's `hps.device`.
FailureOr<std::vector<size_t>>
layerDevices(ArrayRef<LayerOpInterface> layers,
             const heterps::planner::ClusterSpec &spec, StringRef pass);

/// Stages as recorded by hps-form-stages, with the module's `hps.replicas`
/// when present (1 otherwise).
FailureOr<std::vector<heterps::planner::Stage>>
recordedStages(ModuleOp module, ArrayRef<LayerOpInterface> layers,
               const heterps::planner::ClusterSpec &spec, StringRef pass);

/// Everything a planning pass reads from a placed and staged module.
struct RecordedPlan {
  heterps::planner::ClusterSpec spec;
  SmallVector<LayerOpInterface> ops;
  std::vector<heterps::planner::Layer> layers;
  std::vector<heterps::planner::Stage> stages;
};
FailureOr<RecordedPlan> loadRecordedPlan(ModuleOp module, StringRef pass);

/// The first key of `byName` (node name -> anything, from a placement or
/// profile file) that is no layer of `layers`, or null: a file for another
/// model, or a typo, is an error rather than entries skipped silently.
template <typename Map>
const std::string *firstUnknownLayer(ArrayRef<LayerOpInterface> layers,
                                     const Map &byName) {
  llvm::StringSet<> known;
  for (LayerOpInterface op : layers)
    known.insert(layerName(op));
  for (const auto &entry : byName)
    if (!known.contains(entry.first))
      return &entry.first;
  return nullptr;
}

/// The throughput floor a pass plans for: its `throughput-limit` option
/// when set (a finite number >= 0; NaN or a negative number written in a
/// pipeline is an error, not "the job's"), else the job's throughput_limit.
FailureOr<double> throughputFloor(ModuleOp module, StringRef pass,
                                  const Pass::Option<double> &option,
                                  const heterps::planner::ClusterSpec &spec);

} // namespace mlir::hps

#endif // HETERPS_LIB_TRANSFORMS_PLANIR_H
