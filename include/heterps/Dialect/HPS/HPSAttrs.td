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

#endif // HETERPS_DIALECT_HPS_HPSATTRS_TD
