//===- Passes.td - HeterPS pass declarations ---------------*- tablegen -*-===//

#ifndef HETERPS_TRANSFORMS_PASSES_TD
#define HETERPS_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def LayerStats : Pass<"hps-layer-stats", "::mlir::func::FuncOp"> {
  let summary = "Print each layer's kind, FLOPs, parameter and activation bytes";
  let description = [{
    Walks the function and prints, for every op implementing
    `LayerOpInterface` (weights and constants excepted), the figures the
    cost model starts from, followed by the totals. The IR is not changed.

    Example:
    ```
    heterps-opt resnet18.onnx --hps-layer-stats=format=json -o /dev/null
    ```
  }];
  let options = [
    Option<"format", "format", "::mlir::hps::OutputFormat",
           /*default=*/"::mlir::hps::OutputFormat::Text",
           "Output format",
           [{::llvm::cl::values(
             clEnumValN(::mlir::hps::OutputFormat::Text, "text",
                        "an aligned table"),
             clEnumValN(::mlir::hps::OutputFormat::Json, "json",
                        "a JSON document"))}]>,
    Option<"output", "output", "std::string", /*default=*/"\"-\"",
           "File to write the statistics to; '-' writes to stdout">,
  ];
  let dependentDialects = ["::mlir::hps::HPSDialect"];
}

#endif // HETERPS_TRANSFORMS_PASSES_TD
