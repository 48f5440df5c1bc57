// RUN: heterps-opt %s --hps-lower-to-runtime -o /dev/null | FileCheck %s

// The plan of a placed two-layer model: values with -1 for dynamic dims,
// the weight by initializer name, ops by ONNX type with the dialect's
// attribute names, device and stage.
// CHECK: version: 1
// CHECK: model_path: "model.onnx"
// CHECK: values {
// CHECK-NEXT: name: "x"
// CHECK-NEXT: dtype: FLOAT
// CHECK-NEXT: dims: -1
// CHECK-NEXT: dims: 4
// (proto3 text omits zeros: input value 0, stage 0.)
// CHECK: inputs {
// CHECK-NEXT: name: "x"
// CHECK-NEXT: }
// CHECK: outputs {
// CHECK-NEXT: name: "y"
// CHECK-NEXT: value: 4
// CHECK: weights {
// CHECK-NEXT: value: 1
// CHECK-NEXT: initializer: "fc.weight"
// CHECK: weights {
// CHECK-NEXT: value: 2
// CHECK-NEXT: raw_data: "\000\000\200?\000\000\000@"
// CHECK: ops {
// CHECK-NEXT: name: "fc"
// CHECK-NEXT: type: "Gemm"
// CHECK: name: "trans_b"
// CHECK-NEXT: i: 1
// CHECK: inputs: 0
// CHECK-NEXT: inputs: 1
// CHECK-NEXT: inputs: 2
// CHECK-NEXT: outputs: 3
// CHECK-NEXT: device: "gpu"
// CHECK-NEXT: }
// CHECK: ops {
// CHECK-NEXT: name: "act"
// CHECK-NEXT: type: "LeakyRelu"
// CHECK-NEXT: attributes {
// CHECK-NEXT: name: "alpha"
// CHECK-NEXT: f: 0.1
// CHECK: device: "cpu"
// CHECK-NEXT: stage: 1
module attributes {hps.source = "model.onnx"} {
  func.func @main(%x: tensor<?x4xf32> {hps.name = "x"}) -> (tensor<?x2xf32> {hps.name = "y"}) {
    %w = hps.weight "fc.weight" : tensor<2x4xf32>
    %b = hps.constant dense<[1.0, 2.0]> : tensor<2xf32> loc("bias")
    %0 = hps.gemm %x, %w, %b {alpha = 1.0 : f32, beta = 1.0 : f32, trans_a = false, trans_b = true, hps.device = #hps.device<"gpu">, hps.stage = 0 : i64} : (tensor<?x4xf32>, tensor<2x4xf32>, tensor<2xf32>) -> tensor<?x2xf32> loc("fc")
    %1 = hps.leaky_relu %0 {alpha = 0.1 : f32, hps.device = #hps.device<"cpu">, hps.stage = 1 : i64} : tensor<?x2xf32> loc("act")
    return %1 : tensor<?x2xf32>
  }
}
