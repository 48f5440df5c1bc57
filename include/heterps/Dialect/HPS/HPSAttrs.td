//===- HPSAttrs.td - hps attributes and enums --------------*- tablegen -*-===//

#ifndef HETERPS_DIALECT_HPS_HPSATTRS_TD
#define HETERPS_DIALECT_HPS_HPSATTRS_TD

include "heterps/Dialect/HPS/HPSBase.td"

//===----------------------------------------------------------------------===//
// LayerKind
//===----------------------------------------------------------------------===//

def HPS_LayerKind : I32EnumAttr<"LayerKind", "kind of layer seen by the cost model", [
    I32EnumAttrCase<"conv", 0>,       // convolutions, transposed convolutions
    I32EnumAttrCase<"fc", 1>,         // Gemm, MatMul with a weight operand
    I32EnumAttrCase<"matmul", 2>,     // MatMul between two activations
    I32EnumAttrCase<"embedding", 3>,  // Gather from a weight table
    I32EnumAttrCase<"pool", 4>,
    I32EnumAttrCase<"norm", 5>,       // BatchNormalization, LRN
    I32EnumAttrCase<"eltwise", 6>,    // binary arithmetic
    I32EnumAttrCase<"activation", 7>, // unary non-linearities
    I32EnumAttrCase<"softmax", 8>,
    I32EnumAttrCase<"reduce", 9>,
    I32EnumAttrCase<"dropout", 10>,
    I32EnumAttrCase<"shape", 11>,     // data movement: reshape, concat, ...
    I32EnumAttrCase<"constant", 12>   // weights and constants
  ]> {
  let cppNamespace = "::mlir::hps";
  let genSpecializedAttr = 0;
}

def HPS_LayerKindAttr : EnumAttr<HPS_Dialect, HPS_LayerKind, "layer_kind"> {
  let summary = "Kind of a layer, as derived by LayerOpInterface";
  let assemblyFormat = "`<` $value `>`";
}

//===----------------------------------------------------------------------===//
// DeviceAttr
//===----------------------------------------------------------------------===//

def HPS_DeviceAttr : AttrDef<HPS_Dialect, "Device"> {
  let mnemonic = "device";
  let summary = "Device type a layer is placed on";
  let description = [{
    Names a device type of the cluster spec (for example `"cpu"` or
    `"v100"`). Placement passes attach it to layers as `hps.device`.

    ```mlir
    %0 = hps.relu %x {hps.device = #hps.device<"v100">} : ...
    ```
  }];
  let parameters = (ins StringRefParameter<"device type name">:$name);
  let assemblyFormat = "`<` $name `>`";
  let genVerifyDecl = 1;
}

//===----------------------------------------------------------------------===//
// CostAttr
//===----------------------------------------------------------------------===//

// A double stored as an APFloat (hashable), written as a plain float
// literal that reads back to the same value.
class HPS_F64Parameter<string desc> : APFloatParameter<desc> {
  let parser = [{ ::mlir::hps::detail::parseF64($_parser) }];
  let printer = [{ ::mlir::hps::detail::printF64($_printer, $_self) }];
}

def HPS_CostAttr : AttrDef<HPS_Dialect, "Cost"> {
  let mnemonic = "cost";
  let summary = "Costs of a layer on one device type (HeterPS OCT, ODT, alpha, beta)";
  let description = [{
    Compute time `oct` and data/communication time `odt` (seconds) of the
    layer for a batch of `b0` samples on one device, and the parallelisable
    fractions `alpha` (of `oct`) and `beta` (of `odt`). `hps-annotate-costs`
    attaches one per device type of the cluster spec:

    ```mlir
    hps.costs = {v100 = #hps.cost<oct = 1.2e-04, odt = 3.0e-05, alpha = 0.95,
                                  beta = 0.5, b0 = 256.0>}
    ```
  }];
  let parameters = (ins HPS_F64Parameter<"OCT, seconds">:$oct,
                        HPS_F64Parameter<"ODT, seconds">:$odt,
                        HPS_F64Parameter<"parallel fraction of OCT">:$alpha,
                        HPS_F64Parameter<"parallel fraction of ODT">:$beta,
                        HPS_F64Parameter<"base batch of OCT and ODT">:$b0);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

//===----------------------------------------------------------------------===//
// Cluster spec
//===----------------------------------------------------------------------===//

def HPS_DeviceTypeAttr : AttrDef<HPS_Dialect, "DeviceType"> {
  let mnemonic = "device_type";
  let summary = "One device type of the cluster spec";
  let description = [{
    A device type as the cluster spec's YAML gives it (docs/cost-model.md):
    its kind picks the runtime backend, its price and count limit bound the
    plan, its rates give the analytic costs.

    ```mlir
    #hps.device_type<name = "v100", kind = "cuda", price_per_hour = 2.42,
                     max_count = 32, gflops = 10000.0,
                     memory_bandwidth_gbs = 900.0,
                     network_bandwidth_gbs = 3.125, alpha = 0.95>
    ```
  }];
  let parameters = (ins
    StringRefParameter<"device type name">:$name,
    StringRefParameter<"kind of device: cpu or cuda">:$kind,
    HPS_F64Parameter<"dollars per device per hour">:$price_per_hour,
    "int64_t":$max_count,
    HPS_F64Parameter<"effective GFLOP/s of one device">:$gflops,
    HPS_F64Parameter<"GB/s between device memory and compute">:$memory_bandwidth_gbs,
    HPS_F64Parameter<"GB/s to the parameter server">:$network_bandwidth_gbs,
    HPS_F64Parameter<"parallel fraction of compute time">:$alpha);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def HPS_ClusterAttr : AttrDef<HPS_Dialect, "Cluster"> {
  let mnemonic = "cluster";
  let summary = "The cluster spec a module was planned for";
  let description = [{
    The whole cluster spec, which `hps-annotate-costs` records on the
    module as `hps.cluster` so that the passes after it and a saved module
    need no file: the device types (`#hps.device_type`) and the job.

    ```mlir
    module attributes {hps.cluster = #hps.cluster<
        device_types = [#hps.device_type<name = "cpu", kind = "cpu", ...>],
        batch_size = 256, samples_per_epoch = 1281167, epochs = 1,
        throughput_limit = 1000.0>} { ... }
    ```

    `step` (`training`, the default, printed only when it is not, or
    `inference`) says what the analytic costs of `hps-annotate-costs`
    model.
  }];
  let parameters = (ins
    "::mlir::ArrayAttr":$device_types,
    "int64_t":$batch_size,
    "int64_t":$samples_per_epoch,
    "int64_t":$epochs,
    HPS_F64Parameter<"samples per second the pipeline must sustain">:$throughput_limit,
    StringRefParameter<"what a step computes, which the analytic costs "
                       "model: training or inference", "\"training\"">:$step);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

#endif // HETERPS_DIALECT_HPS_HPSATTRS_TD
