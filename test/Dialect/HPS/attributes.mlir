// RUN: heterps-opt %s | heterps-opt | FileCheck %s
// RUN: heterps-opt %s --mlir-print-op-generic | heterps-opt | FileCheck %s

// Attributes of the hps dialect that verify: placements recorded with
// hps.device and hps.stage, the module and argument attributes written by
// the importer, and every layer kind.

// CHECK: module attributes {hps.opset = 13 : i64,
// CHECK-SAME: hps.source = "models/lenet.onnx"}
module attributes {hps.source = "models/lenet.onnx", hps.opset = 13 : i64} {

// A two-stage pipeline: the convolutions on V100s, the classifier on CPUs.
// The unannotated ops among them (weights, a flatten) keep no attribute and
// take part in no stage check.
// CHECK-LABEL: func.func @two_stages(
// CHECK-SAME: %[[X:[^:]+]]: tensor<?x1x28x28xf32> {hps.name = "input"})
// CHECK-SAME: -> (tensor<?x10xf32> {hps.name = "logits"})
// CHECK: %[[W1:.*]] = hps.weight "conv1.weight" : tensor<8x1x5x5xf32>
// CHECK: %[[C1:.*]] = hps.conv %[[X]], %[[W1]]
// CHECK-SAME: hps.device = #hps.device<"v100">, hps.stage = 0 : i64
// CHECK: %[[R1:.*]] = hps.relu %[[C1]]
// CHECK-SAME: {hps.device = #hps.device<"v100">, hps.stage = 0 : i64}
// CHECK: %[[P1:.*]] = hps.max_pool %[[R1]]
// CHECK-SAME: hps.device = #hps.device<"v100">, hps.stage = 0 : i64
// CHECK: %[[W2:.*]] = hps.weight "conv2.weight" : tensor<16x8x5x5xf32>
// CHECK: %[[C2:.*]] = hps.conv %[[P1]], %[[W2]]
// CHECK-SAME: hps.device = #hps.device<"v100">, hps.stage = 0 : i64
// CHECK: %[[F:.*]] = hps.flatten %[[C2]] {axis = 1 : i64} :
// CHECK-SAME: -> tensor<?x784xf32>
// CHECK: %[[W3:.*]] = hps.weight "fc.weight" : tensor<10x784xf32>
// CHECK: %[[B3:.*]] = hps.weight "fc.bias" : tensor<10xf32>
// CHECK: %[[G:.*]] = hps.gemm %[[F]], %[[W3]], %[[B3]]
// CHECK-SAME: hps.device = #hps.device<"cpu">, hps.stage = 1 : i64
// CHECK: %[[S:.*]] = hps.softmax %[[G]]
// CHECK-SAME: {axis = 1 : i64, hps.device = #hps.device<"cpu">,
// CHECK-SAME: hps.stage = 1 : i64}
// CHECK: return %[[S]]
func.func @two_stages(%x: tensor<?x1x28x28xf32> {hps.name = "input"})
    -> (tensor<?x10xf32> {hps.name = "logits"}) {
  %w1 = hps.weight "conv1.weight" : tensor<8x1x5x5xf32>
  %0 = hps.conv %x, %w1 {strides = array<i64: 1, 1>,
                         dilations = array<i64: 1, 1>,
                         pads = array<i64: 2, 2, 2, 2>, group = 1 : i64,
                         hps.device = #hps.device<"v100">, hps.stage = 0}
      : (tensor<?x1x28x28xf32>, tensor<8x1x5x5xf32>) -> tensor<?x8x28x28xf32>
  %1 = hps.relu %0 {hps.device = #hps.device<"v100">, hps.stage = 0}
      : tensor<?x8x28x28xf32>
  %2 = hps.max_pool %1 {kernel_shape = array<i64: 2, 2>,
                        strides = array<i64: 2, 2>,
                        dilations = array<i64: 1, 1>,
                        pads = array<i64: 0, 0, 0, 0>, ceil_mode = false,
                        hps.device = #hps.device<"v100">, hps.stage = 0}
      : (tensor<?x8x28x28xf32>) -> tensor<?x8x14x14xf32>
  %w2 = hps.weight "conv2.weight" : tensor<16x8x5x5xf32>
  %3 = hps.conv %2, %w2 {strides = array<i64: 2, 2>,
                         dilations = array<i64: 1, 1>,
                         pads = array<i64: 2, 2, 2, 2>, group = 1 : i64,
                         hps.device = #hps.device<"v100">, hps.stage = 0}
      : (tensor<?x8x14x14xf32>, tensor<16x8x5x5xf32>) -> tensor<?x16x7x7xf32>
  %4 = hps.flatten %3 {axis = 1 : i64}
      : (tensor<?x16x7x7xf32>) -> tensor<?x784xf32>
  %w3 = hps.weight "fc.weight" : tensor<10x784xf32>
  %b3 = hps.weight "fc.bias" : tensor<10xf32>
  %5 = hps.gemm %4, %w3, %b3 {alpha = 1.0 : f32, beta = 1.0 : f32,
                              trans_a = false, trans_b = true,
                              hps.device = #hps.device<"cpu">, hps.stage = 1}
      : (tensor<?x784xf32>, tensor<10x784xf32>, tensor<10xf32>)
      -> tensor<?x10xf32>
  %6 = hps.softmax %5 {axis = 1 : i64, hps.device = #hps.device<"cpu">,
                       hps.stage = 1} : tensor<?x10xf32>
  return %6 : tensor<?x10xf32>
}

// Stage indices may skip values and repeat a device type across stages.
// The stage order is checked per block, so each function starts afresh.
// CHECK-LABEL: func.func @stages_skip(
// CHECK: hps.relu
// CHECK-SAME: {hps.device = #hps.device<"a100">, hps.stage = 0 : i64}
// CHECK: hps.sigmoid
// CHECK-SAME: {hps.device = #hps.device<"a100">, hps.stage = 2 : i64}
// CHECK: hps.tanh
// CHECK-SAME: {hps.device = #hps.device<"a100">, hps.stage = 2 : i64}
func.func @stages_skip(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = hps.relu %x {hps.device = #hps.device<"a100">, hps.stage = 0}
      : tensor<4xf32>
  %1 = hps.sigmoid %0 {hps.device = #hps.device<"a100">, hps.stage = 2}
      : tensor<4xf32>
  %2 = hps.tanh %1 {hps.device = #hps.device<"a100">, hps.stage = 2}
      : tensor<4xf32>
  return %2 : tensor<4xf32>
}

// CHECK-LABEL: func.func @stage_restarts(
// CHECK: hps.relu
// CHECK-SAME: {hps.device = #hps.device<"cpu">, hps.stage = 0 : i64}
func.func @stage_restarts(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = hps.relu %x {hps.device = #hps.device<"cpu">, hps.stage = 0}
      : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// A device without a stage, on any op, and device names with '_', '-' and
// '.'. Unstaged ops may use different devices.
// CHECK-LABEL: func.func @devices_only(
// CHECK: %[[W:.*]] = hps.weight "w" {hps.device = #hps.device<"cpu">}
// CHECK-SAME: : tensor<4xf32>
// CHECK: %[[C:.*]] = hps.constant {hps.device = #hps.device<"cpu">}
// CHECK-SAME: dense<1.000000e+00> : tensor<4xf32>
// CHECK: hps.add %[[W]], %[[C]] {hps.device = #hps.device<"tesla_v100-sxm2">}
// CHECK: hps.relu
// CHECK-SAME: {hps.device = #hps.device<"ascend.910b">}
func.func @devices_only() -> tensor<4xf32> {
  %w = hps.weight "w" {hps.device = #hps.device<"cpu">} : tensor<4xf32>
  %c = hps.constant {hps.device = #hps.device<"cpu">} dense<1.0>
      : tensor<4xf32>
  %0 = hps.add %w, %c {hps.device = #hps.device<"tesla_v100-sxm2">}
      : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = hps.relu %0 {hps.device = #hps.device<"ascend.910b">} : tensor<4xf32>
  return %1 : tensor<4xf32>
}

// Every layer kind, as a discardable attribute on a function.
// CHECK-LABEL: func.func @layer_kinds()
// CHECK-SAME: attributes {kinds = [#hps.layer_kind<conv>,
// CHECK-SAME: #hps.layer_kind<fc>, #hps.layer_kind<matmul>,
// CHECK-SAME: #hps.layer_kind<embedding>, #hps.layer_kind<pool>,
// CHECK-SAME: #hps.layer_kind<norm>, #hps.layer_kind<eltwise>,
// CHECK-SAME: #hps.layer_kind<activation>, #hps.layer_kind<softmax>,
// CHECK-SAME: #hps.layer_kind<reduce>, #hps.layer_kind<dropout>,
// CHECK-SAME: #hps.layer_kind<shape>, #hps.layer_kind<constant>]}
func.func @layer_kinds() attributes {
    kinds = [#hps.layer_kind<conv>, #hps.layer_kind<fc>,
             #hps.layer_kind<matmul>, #hps.layer_kind<embedding>,
             #hps.layer_kind<pool>, #hps.layer_kind<norm>,
             #hps.layer_kind<eltwise>, #hps.layer_kind<activation>,
             #hps.layer_kind<softmax>, #hps.layer_kind<reduce>,
             #hps.layer_kind<dropout>, #hps.layer_kind<shape>,
             #hps.layer_kind<constant>]} {
  return
}

// A layer kind and a placement next to each other on one op.
// CHECK-LABEL: func.func @kind_on_op(
// CHECK: hps.relu
// CHECK-SAME: {hps.device = #hps.device<"v100">, hps.stage = 3 : i64,
// CHECK-SAME: kind = #hps.layer_kind<activation>}
func.func @kind_on_op(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = hps.relu %x {kind = #hps.layer_kind<activation>,
                    hps.device = #hps.device<"v100">, hps.stage = 3}
      : tensor<4xf32>
  return %0 : tensor<4xf32>
}

}

// Planning attributes round-trip: per-device costs on a layer (doubles print
// in their shortest exact form), and the module's plan.
// CHECK: module attributes {hps.cluster = #hps.cluster<device_types = [#hps.device_type<name = "cpu", kind = "cpu", price_per_hour = 0.04, max_count = 10, gflops = 1000.0, memory_bandwidth_gbs = 100.0, network_bandwidth_gbs = 1.25, alpha = 0.95>, #hps.device_type<name = "v100", kind = "cuda", price_per_hour = 2.42, max_count = 32, gflops = 10000.0, memory_bandwidth_gbs = 900.0, network_bandwidth_gbs = 3.125, alpha = 1.0>], batch_size = 256, samples_per_epoch = 1281167, epochs = 1, throughput_limit = 1000.0>, hps.replicas = array<i64: 3, 1>, hps.throughput_limit = 1.000000e+02 : f64}
// CHECK: hps.relu %{{.*}} {hps.costs = {cpu = #hps.cost<oct = 0.001, odt = 2.5e-05, alpha = 0.95, beta = 1.0, b0 = 32.0>, v100 = #hps.cost<oct = 0.0001, odt = 0.1, alpha = 1.0, beta = 0.5, b0 = 256.0>}}
module attributes {hps.cluster = #hps.cluster<device_types = [#hps.device_type<name = "cpu", kind = "cpu", price_per_hour = 0.04, max_count = 10, gflops = 1000, memory_bandwidth_gbs = 100, network_bandwidth_gbs = 1.25, alpha = 0.95>, #hps.device_type<name = "v100", kind = "cuda", price_per_hour = 2.42, max_count = 32, gflops = 10000.0, memory_bandwidth_gbs = 900, network_bandwidth_gbs = 3.125, alpha = 1>], batch_size = 256, samples_per_epoch = 1281167, epochs = 1, throughput_limit = 1000>, hps.replicas = array<i64: 3, 1>, hps.throughput_limit = 100.0 : f64} {
  func.func @costs(%x: tensor<2xf32>) -> tensor<2xf32> {
    %0 = hps.relu %x {hps.costs = {cpu = #hps.cost<oct = 1.0e-3, odt = 2.5e-5, alpha = 0.95, beta = 1.0, b0 = 32.0>, v100 = #hps.cost<oct = 0.0001, odt = 0.1, alpha = 1, beta = 0.5, b0 = 256>}} : tensor<2xf32>
    return %0 : tensor<2xf32>
  }
}
