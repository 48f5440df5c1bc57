//===- HPSBase.td - hps dialect definition -----------------*- tablegen -*-===//
//
// The hps dialect: one op per network layer, imported from ONNX, annotated by
// the placement passes and lowered to runtime kernels.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_DIALECT_HPS_HPSBASE_TD
#define HETERPS_DIALECT_HPS_HPSBASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def HPS_Dialect : Dialect {
  let name = "hps";
  let cppNamespace = "::mlir::hps";
  let summary = "Layer-level IR for heterogeneous placement and training";
  let description = [{
    The `hps` dialect models a neural network as a function whose body is one
    op per layer, in the topological order of the source ONNX graph. Values are
    builtin tensors (a dynamic batch dimension is `?`). Parameters are not
    inlined: `hps.weight` names an initializer of the source model, so the IR
    of a 500 MB model stays a few hundred kilobytes.

    Every op implements `LayerOpInterface`, which reports its layer kind,
    FLOPs, parameter bytes and activation bytes for the cost model. Placement
    passes record decisions as discardable attributes on the ops:

    * `hps.device = #hps.device<"v100">`: the device type the layer runs on;
    * `hps.stage = 2 : i64`: the pipeline stage; stage indices never decrease
      along a block and every op of one stage has the same device type.

    Cost passes add `hps.costs = {<device type> = #hps.cost<...>, ...}` to
    layers and, on the module, `hps.cluster` (the whole cluster spec, a
    `#hps.cluster`, so that a saved module needs no spec file) and
    `hps.replicas` (devices per stage, chosen by `hps-provision` for the
    throughput limit it records as `hps.throughput_limit`).
  }];
  let useDefaultAttributePrinterParser = 1;
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
  let dependentDialects = ["::mlir::func::FuncDialect"];
  let extraClassDeclaration = [{
    /// Discardable attribute naming the device type of a layer.
    static constexpr ::llvm::StringLiteral kDeviceAttrName = "hps.device";
    /// Discardable attribute holding the pipeline stage index of a layer.
    static constexpr ::llvm::StringLiteral kStageAttrName = "hps.stage";
    /// Argument/result attribute holding the ONNX graph input/output name.
    static constexpr ::llvm::StringLiteral kNameAttrName = "hps.name";
    /// Argument attribute: per dimension, the name ONNX gives it ("batch",
    /// "seq"; "" for none). Inputs that share a name must agree at run time.
    static constexpr ::llvm::StringLiteral kDimNamesAttrName = "hps.dim_names";
    /// Module attribute: path of the ONNX model the weights come from.
    static constexpr ::llvm::StringLiteral kSourceAttrName = "hps.source";
    /// Module attribute: opset of the default ONNX domain.
    static constexpr ::llvm::StringLiteral kOpsetAttrName = "hps.opset";
    /// Discardable attribute: per device type #hps.cost of a layer.
    static constexpr ::llvm::StringLiteral kCostsAttrName = "hps.costs";
    /// Module attribute: path of the cluster spec the costs came from.
    static constexpr ::llvm::StringLiteral kClusterAttrName = "hps.cluster";
    /// Module attribute: replicas (devices) of each pipeline stage.
    static constexpr ::llvm::StringLiteral kReplicasAttrName = "hps.replicas";
    /// Module attribute: how hps-place searched (strategy, search_time_s,
    /// evaluations).
    static constexpr ::llvm::StringLiteral kSearchAttrName = "hps.search";
    /// Module attribute: the throughput limit hps-provision planned for.
    static constexpr ::llvm::StringLiteral kThroughputLimitAttrName =
        "hps.throughput_limit";

  private:
    void registerAttributes();
  public:
  }];
}

#endif // HETERPS_DIALECT_HPS_HPSBASE_TD
