// RUN: heterps-opt %s --hps-layer-stats -o /dev/null | FileCheck %s
// RUN: heterps-opt %s --hps-layer-stats=format=json -o /dev/null | FileCheck %s --check-prefix=JSON

// conv: 2 * out(1*4*8*8=256) * window(3*3*3=27) + bias 256 = 14080 FLOPs;
// params: 4*3*3*3*4 + 4*4 = 448 bytes; activations: in 3*8*8*4 = 768 + out
// 256*4 = 1024 -> 1792 bytes.
// relu: 256 FLOPs, 0 params, 1024 + 1024 = 2048 bytes.
// CHECK-LABEL: layer statistics of @main
// CHECK: layer{{.*}}flops{{.*}}param_bytes{{.*}}activation_bytes
// CHECK-NEXT: conv1 hps.conv conv 14080 448 1792
// CHECK-NEXT: relu1 hps.relu activation 256 0 2048
// CHECK-NEXT: total 14336 448 3840

// JSON: "flops": 14080
// JSON: "kind": "conv"
// JSON: "name": "conv1"
// JSON: "param_bytes": 448
// JSON: "total": {
// JSON-NEXT: "activation_bytes": 3840,
// JSON-NEXT: "flops": 14336,
// JSON-NEXT: "param_bytes": 448
func.func @main(%x: tensor<1x3x8x8xf32>) -> tensor<1x4x8x8xf32> {
  %w = hps.weight "W" : tensor<4x3x3x3xf32>
  %b = hps.weight "B" : tensor<4xf32>
  %0 = hps.conv %x, %w, %b {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32> loc("conv1")
  %1 = hps.relu %0 : tensor<1x4x8x8xf32> loc("relu1")
  return %1 : tensor<1x4x8x8xf32>
}
