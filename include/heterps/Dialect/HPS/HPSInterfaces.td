//===- HPSInterfaces.td - hps op interfaces ----------------*- tablegen -*-===//

#ifndef HETERPS_DIALECT_HPS_HPSINTERFACES_TD
#define HETERPS_DIALECT_HPS_HPSINTERFACES_TD

include "mlir/IR/OpBase.td"

def HPS_LayerOpInterface : OpInterface<"LayerOpInterface"> {
  let cppNamespace = "::mlir::hps";
  let description = [{
    Static figures of one layer used by the cost model. Figures are for one
    execution of the op on its operand types; a dynamic dimension counts as 1,
    so with a dynamic batch dimension the figures are per sample. A value of
    unranked type contributes nothing. FLOPs count a multiply-add as two.
  }];
  let methods = [
    InterfaceMethod<"Kind of layer.", "::mlir::hps::LayerKind", "getLayerKind",
      (ins), [{}], [{ return ConcreteOp::kLayerKind; }]>,
    InterfaceMethod<"Floating-point operations of one execution.",
      "int64_t", "getFlops", (ins), [{}],
      [{
        return ::mlir::hps::detail::defaultFlops($_op.getOperation(),
                                                 ConcreteOp::kLayerKind);
      }]>,
    InterfaceMethod<"Bytes of parameters: operands defined by `hps.weight`.",
      "int64_t", "getParamBytes", (ins), [{}],
      [{ return ::mlir::hps::detail::paramBytes($_op.getOperation()); }]>,
    InterfaceMethod<"Bytes of activations read (non-parameter operands) and "
      "written (results).", "int64_t", "getActivationBytes", (ins), [{}],
      [{
        return ::mlir::hps::detail::activationBytes($_op.getOperation(),
                                                    ConcreteOp::kLayerKind);
      }]>,
  ];
}

#endif // HETERPS_DIALECT_HPS_HPSINTERFACES_TD
