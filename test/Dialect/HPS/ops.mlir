// RUN: heterps-opt %s | heterps-opt | FileCheck %s
// RUN: heterps-opt %s --mlir-print-op-generic | heterps-opt | FileCheck %s

// Round trip of every hps op through the custom and the generic form. Each
// function checks the printed form of one op or of a small group of ops.

//===----------------------------------------------------------------------===//
// Parameters and constants
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @weight(
// CHECK: %[[W:.*]] = hps.weight "conv1.weight" : tensor<64x3x7x7xf32>
// CHECK: return %[[W]]
func.func @weight() -> tensor<64x3x7x7xf32> {
  %0 = hps.weight "conv1.weight" : tensor<64x3x7x7xf32>
  return %0 : tensor<64x3x7x7xf32>
}

// CHECK-LABEL: func.func @constant(
// CHECK: %[[I:.*]] = hps.constant dense<[1, -1]> : tensor<2xi64>
// CHECK: %[[F:.*]] = hps.constant dense<5.000000e-01> : tensor<4xf32>
// CHECK: return %[[I]], %[[F]]
func.func @constant() -> (tensor<2xi64>, tensor<4xf32>) {
  %0 = hps.constant dense<[1, -1]> : tensor<2xi64>
  %1 = hps.constant dense<0.5> : tensor<4xf32>
  return %0, %1 : tensor<2xi64>, tensor<4xf32>
}

// `end` past the rank is clamped.
// CHECK-LABEL: func.func @shape(
// CHECK-SAME: %[[X:[^:]+]]: tensor<?x3x8x8xf32>
// CHECK: %[[S0:.*]] = hps.shape %[[X]] {end = 4 : i64, start = 0 : i64}
// CHECK-SAME: : (tensor<?x3x8x8xf32>) -> tensor<4xi64>
// CHECK: %[[S1:.*]] = hps.shape %[[X]] {end = 9 : i64, start = 2 : i64}
// CHECK-SAME: : (tensor<?x3x8x8xf32>) -> tensor<2xi64>
// Negative start/end count from the back: [-1, 4) is the last dimension.
// CHECK: %[[S2:.*]] = hps.shape %[[X]] {end = 4 : i64, start = -1 : i64}
// CHECK-SAME: : (tensor<?x3x8x8xf32>) -> tensor<1xi64>
// CHECK: return %[[S0]], %[[S1]], %[[S2]]
func.func @shape(%x: tensor<?x3x8x8xf32>)
    -> (tensor<4xi64>, tensor<2xi64>, tensor<1xi64>) {
  %0 = hps.shape %x {start = 0 : i64, end = 4 : i64}
      : (tensor<?x3x8x8xf32>) -> tensor<4xi64>
  %1 = hps.shape %x {start = 2 : i64, end = 9 : i64}
      : (tensor<?x3x8x8xf32>) -> tensor<2xi64>
  %2 = hps.shape %x {start = -1 : i64, end = 4 : i64}
      : (tensor<?x3x8x8xf32>) -> tensor<1xi64>
  return %0, %1, %2 : tensor<4xi64>, tensor<2xi64>, tensor<1xi64>
}

//===----------------------------------------------------------------------===//
// Convolutions
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @conv_1d(
// CHECK-SAME: %[[X:[^:]+]]: tensor<1x3x16xf32>, %[[W:[^:]+]]: tensor<8x3x5xf32>
// CHECK: %[[R:.*]] = hps.conv %[[X]], %[[W]] {dilations = array<i64: 1>,
// CHECK-SAME: group = 1 : i64, pads = array<i64: 2, 2>,
// CHECK-SAME: strides = array<i64: 1>}
// CHECK-SAME: : (tensor<1x3x16xf32>, tensor<8x3x5xf32>) -> tensor<1x8x16xf32>
// CHECK: return %[[R]]
func.func @conv_1d(%x: tensor<1x3x16xf32>, %w: tensor<8x3x5xf32>)
    -> tensor<1x8x16xf32> {
  %0 = hps.conv %x, %w {strides = array<i64: 1>, dilations = array<i64: 1>,
                        pads = array<i64: 2, 2>, group = 1 : i64}
      : (tensor<1x3x16xf32>, tensor<8x3x5xf32>) -> tensor<1x8x16xf32>
  return %0 : tensor<1x8x16xf32>
}

// CHECK-LABEL: func.func @conv_2d_bias(
// CHECK-SAME: %[[X:[^:]+]]: tensor<1x3x8x8xf32>,
// CHECK-SAME: %[[W:[^:]+]]: tensor<4x3x3x3xf32>,
// CHECK-SAME: %[[B:[^:]+]]: tensor<4xf32>
// CHECK: %[[R:.*]] = hps.conv %[[X]], %[[W]], %[[B]]
// CHECK-SAME: {dilations = array<i64: 1, 1>, group = 1 : i64,
// CHECK-SAME: pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>}
// CHECK-SAME: : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>)
// CHECK-SAME: -> tensor<1x4x8x8xf32>
// CHECK: return %[[R]]
func.func @conv_2d_bias(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>,
                        %b: tensor<4xf32>) -> tensor<1x4x8x8xf32> {
  %0 = hps.conv %x, %w, %b {strides = array<i64: 1, 1>,
                            dilations = array<i64: 1, 1>,
                            pads = array<i64: 1, 1, 1, 1>, group = 1 : i64}
      : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>)
      -> tensor<1x4x8x8xf32>
  return %0 : tensor<1x4x8x8xf32>
}

// No bias, stride 2, no padding: (8 - 3) / 2 + 1 = 3.
// CHECK-LABEL: func.func @conv_2d_strided(
// CHECK-SAME: %[[X:[^:]+]]: tensor<1x3x8x8xf32>,
// CHECK-SAME: %[[W:[^:]+]]: tensor<4x3x3x3xf32>
// CHECK: %[[R:.*]] = hps.conv %[[X]], %[[W]]
// CHECK-SAME: {dilations = array<i64: 1, 1>, group = 1 : i64,
// CHECK-SAME: pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>}
// CHECK-SAME: : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>)
// CHECK-SAME: -> tensor<1x4x3x3xf32>
func.func @conv_2d_strided(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>)
    -> tensor<1x4x3x3xf32> {
  %0 = hps.conv %x, %w {strides = array<i64: 2, 2>,
                        dilations = array<i64: 1, 1>,
                        pads = array<i64: 0, 0, 0, 0>, group = 1 : i64}
      : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x3x3xf32>
  return %0 : tensor<1x4x3x3xf32>
}

// Grouped (4 groups of 2 channels) and depthwise (8 groups of 1 channel).
// CHECK-LABEL: func.func @conv_2d_grouped(
// CHECK-SAME: %[[X:[^:]+]]: tensor<1x8x8x8xf32>,
// CHECK-SAME: %[[W:[^:]+]]: tensor<8x2x3x3xf32>,
// CHECK-SAME: %[[DW:[^:]+]]: tensor<8x1x3x3xf32>
// CHECK: %[[R0:.*]] = hps.conv %[[X]], %[[W]]
// CHECK-SAME: group = 4 : i64
// CHECK-SAME: : (tensor<1x8x8x8xf32>, tensor<8x2x3x3xf32>)
// CHECK-SAME: -> tensor<1x8x8x8xf32>
// CHECK: %[[R1:.*]] = hps.conv %[[X]], %[[DW]]
// CHECK-SAME: group = 8 : i64
// CHECK-SAME: : (tensor<1x8x8x8xf32>, tensor<8x1x3x3xf32>)
// CHECK-SAME: -> tensor<1x8x6x6xf32>
// CHECK: return %[[R0]], %[[R1]]
func.func @conv_2d_grouped(%x: tensor<1x8x8x8xf32>, %w: tensor<8x2x3x3xf32>,
                           %dw: tensor<8x1x3x3xf32>)
    -> (tensor<1x8x8x8xf32>, tensor<1x8x6x6xf32>) {
  %0 = hps.conv %x, %w {strides = array<i64: 1, 1>,
                        dilations = array<i64: 1, 1>,
                        pads = array<i64: 1, 1, 1, 1>, group = 4 : i64}
      : (tensor<1x8x8x8xf32>, tensor<8x2x3x3xf32>) -> tensor<1x8x8x8xf32>
  %1 = hps.conv %x, %dw {strides = array<i64: 1, 1>,
                         dilations = array<i64: 1, 1>,
                         pads = array<i64: 0, 0, 0, 0>, group = 8 : i64}
      : (tensor<1x8x8x8xf32>, tensor<8x1x3x3xf32>) -> tensor<1x8x6x6xf32>
  return %0, %1 : tensor<1x8x8x8xf32>, tensor<1x8x6x6xf32>
}

// Dilation 2 turns the 3x3 kernel into a 5x5 window: 16 - 5 + 1 = 12.
// CHECK-LABEL: func.func @conv_2d_dilated(
// CHECK-SAME: %[[X:[^:]+]]: tensor<1x3x16x16xf32>,
// CHECK-SAME: %[[W:[^:]+]]: tensor<4x3x3x3xf32>
// CHECK: %[[R:.*]] = hps.conv %[[X]], %[[W]]
// CHECK-SAME: {dilations = array<i64: 2, 2>, group = 1 : i64,
// CHECK-SAME: pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>}
// CHECK-SAME: -> tensor<1x4x12x12xf32>
func.func @conv_2d_dilated(%x: tensor<1x3x16x16xf32>, %w: tensor<4x3x3x3xf32>)
    -> tensor<1x4x12x12xf32> {
  %0 = hps.conv %x, %w {strides = array<i64: 1, 1>,
                        dilations = array<i64: 2, 2>,
                        pads = array<i64: 0, 0, 0, 0>, group = 1 : i64}
      : (tensor<1x3x16x16xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x12x12xf32>
  return %0 : tensor<1x4x12x12xf32>
}

// CHECK-LABEL: func.func @conv_3d(
// CHECK-SAME: %[[X:[^:]+]]: tensor<1x2x4x8x8xf32>,
// CHECK-SAME: %[[W:[^:]+]]: tensor<4x2x3x3x3xf32>
// CHECK: %[[R:.*]] = hps.conv %[[X]], %[[W]]
// CHECK-SAME: {dilations = array<i64: 1, 1, 1>, group = 1 : i64,
// CHECK-SAME: pads = array<i64: 1, 1, 1, 1, 1, 1>,
// CHECK-SAME: strides = array<i64: 1, 1, 1>}
// CHECK-SAME: -> tensor<1x4x4x8x8xf32>
func.func @conv_3d(%x: tensor<1x2x4x8x8xf32>, %w: tensor<4x2x3x3x3xf32>)
    -> tensor<1x4x4x8x8xf32> {
  %0 = hps.conv %x, %w {strides = array<i64: 1, 1, 1>,
                        dilations = array<i64: 1, 1, 1>,
                        pads = array<i64: 1, 1, 1, 1, 1, 1>, group = 1 : i64}
      : (tensor<1x2x4x8x8xf32>, tensor<4x2x3x3x3xf32>)
      -> tensor<1x4x4x8x8xf32>
  return %0 : tensor<1x4x4x8x8xf32>
}

// A dynamic batch, and an unranked input whose shape is not checked.
// CHECK-LABEL: func.func @conv_dynamic(
// CHECK-SAME: %[[X:[^:]+]]: tensor<?x3x8x8xf32>,
// CHECK-SAME: %[[W:[^:]+]]: tensor<4x3x3x3xf32>,
// CHECK-SAME: %[[U:[^:]+]]: tensor<*xf32>
// CHECK: %[[R0:.*]] = hps.conv %[[X]], %[[W]]
// CHECK-SAME: : (tensor<?x3x8x8xf32>, tensor<4x3x3x3xf32>)
// CHECK-SAME: -> tensor<?x4x8x8xf32>
// CHECK: %[[R1:.*]] = hps.conv %[[U]], %[[W]]
// CHECK-SAME: : (tensor<*xf32>, tensor<4x3x3x3xf32>) -> tensor<*xf32>
// CHECK: return %[[R0]], %[[R1]]
func.func @conv_dynamic(%x: tensor<?x3x8x8xf32>, %w: tensor<4x3x3x3xf32>,
                        %u: tensor<*xf32>)
    -> (tensor<?x4x8x8xf32>, tensor<*xf32>) {
  %0 = hps.conv %x, %w {strides = array<i64: 1, 1>,
                        dilations = array<i64: 1, 1>,
                        pads = array<i64: 1, 1, 1, 1>, group = 1 : i64}
      : (tensor<?x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<?x4x8x8xf32>
  %1 = hps.conv %u, %w {strides = array<i64: 1, 1>,
                        dilations = array<i64: 1, 1>,
                        pads = array<i64: 1, 1, 1, 1>, group = 1 : i64}
      : (tensor<*xf32>, tensor<4x3x3x3xf32>) -> tensor<*xf32>
  return %0, %1 : tensor<?x4x8x8xf32>, tensor<*xf32>
}

// 2 * (8 - 1) + 1 + (3 - 1) * 1 + 1 - 1 - 1 = 16.
// CHECK-LABEL: func.func @conv_transpose_2d(
// CHECK-SAME: %[[X:[^:]+]]: tensor<1x4x8x8xf32>,
// CHECK-SAME: %[[W:[^:]+]]: tensor<4x2x3x3xf32>,
// CHECK-SAME: %[[B:[^:]+]]: tensor<2xf32>
// CHECK: %[[R:.*]] = hps.conv_transpose %[[X]], %[[W]], %[[B]]
// CHECK-SAME: {dilations = array<i64: 1, 1>, group = 1 : i64,
// CHECK-SAME: output_padding = array<i64: 1, 1>,
// CHECK-SAME: pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>}
// CHECK-SAME: : (tensor<1x4x8x8xf32>, tensor<4x2x3x3xf32>, tensor<2xf32>)
// CHECK-SAME: -> tensor<1x2x16x16xf32>
// CHECK: return %[[R]]
func.func @conv_transpose_2d(%x: tensor<1x4x8x8xf32>, %w: tensor<4x2x3x3xf32>,
                             %b: tensor<2xf32>) -> tensor<1x2x16x16xf32> {
  %0 = hps.conv_transpose %x, %w, %b {strides = array<i64: 2, 2>,
                                      dilations = array<i64: 1, 1>,
                                      pads = array<i64: 1, 1, 1, 1>,
                                      output_padding = array<i64: 1, 1>,
                                      group = 1 : i64}
      : (tensor<1x4x8x8xf32>, tensor<4x2x3x3xf32>, tensor<2xf32>)
      -> tensor<1x2x16x16xf32>
  return %0 : tensor<1x2x16x16xf32>
}

// Two groups of 3 output channels.
// CHECK-LABEL: func.func @conv_transpose_1d_grouped(
// CHECK-SAME: %[[X:[^:]+]]: tensor<?x4x5xf32>, %[[W:[^:]+]]: tensor<4x3x3xf32>
// CHECK: %[[R:.*]] = hps.conv_transpose %[[X]], %[[W]]
// CHECK-SAME: {dilations = array<i64: 1>, group = 2 : i64,
// CHECK-SAME: output_padding = array<i64: 0>, pads = array<i64: 0, 0>,
// CHECK-SAME: strides = array<i64: 1>}
// CHECK-SAME: : (tensor<?x4x5xf32>, tensor<4x3x3xf32>) -> tensor<?x6x7xf32>
func.func @conv_transpose_1d_grouped(%x: tensor<?x4x5xf32>,
                                     %w: tensor<4x3x3xf32>)
    -> tensor<?x6x7xf32> {
  %0 = hps.conv_transpose %x, %w {strides = array<i64: 1>,
                                  dilations = array<i64: 1>,
                                  pads = array<i64: 0, 0>,
                                  output_padding = array<i64: 0>,
                                  group = 2 : i64}
      : (tensor<?x4x5xf32>, tensor<4x3x3xf32>) -> tensor<?x6x7xf32>
  return %0 : tensor<?x6x7xf32>
}

//===----------------------------------------------------------------------===//
// Dense layers
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @gemm(
// CHECK-SAME: %[[A:[^:]+]]: tensor<2x4xf32>, %[[B:[^:]+]]: tensor<8x4xf32>,
// CHECK-SAME: %[[C:[^:]+]]: tensor<8xf32>, %[[AT:[^:]+]]: tensor<4x2xf32>,
// CHECK-SAME: %[[BN:[^:]+]]: tensor<4x8xf32>
// CHECK: %[[R0:.*]] = hps.gemm %[[A]], %[[B]], %[[C]]
// CHECK-SAME: {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32,
// CHECK-SAME: trans_a = false, trans_b = true}
// CHECK-SAME: : (tensor<2x4xf32>, tensor<8x4xf32>, tensor<8xf32>)
// CHECK-SAME: -> tensor<2x8xf32>
// CHECK: %[[R1:.*]] = hps.gemm %[[AT]], %[[BN]]
// CHECK-SAME: {alpha = 5.000000e-01 : f32, beta = 0.000000e+00 : f32,
// CHECK-SAME: trans_a = true, trans_b = false}
// CHECK-SAME: : (tensor<4x2xf32>, tensor<4x8xf32>) -> tensor<2x8xf32>
// CHECK: return %[[R0]], %[[R1]]
func.func @gemm(%a: tensor<2x4xf32>, %b: tensor<8x4xf32>, %c: tensor<8xf32>,
                %at: tensor<4x2xf32>, %bn: tensor<4x8xf32>)
    -> (tensor<2x8xf32>, tensor<2x8xf32>) {
  %0 = hps.gemm %a, %b, %c {alpha = 1.0 : f32, beta = 1.0 : f32,
                            trans_a = false, trans_b = true}
      : (tensor<2x4xf32>, tensor<8x4xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  %1 = hps.gemm %at, %bn {alpha = 0.5 : f32, beta = 0.0 : f32,
                          trans_a = true, trans_b = false}
      : (tensor<4x2xf32>, tensor<4x8xf32>) -> tensor<2x8xf32>
  return %0, %1 : tensor<2x8xf32>, tensor<2x8xf32>
}

// Vector operands, broadcast batch dimensions ([2, 1] with [5]) and a
// dynamic batch.
// CHECK-LABEL: func.func @matmul(
// CHECK-SAME: %[[V:[^:]+]]: tensor<4xf32>, %[[M:[^:]+]]: tensor<4x8xf32>,
// CHECK-SAME: %[[L:[^:]+]]: tensor<2x1x3x4xf32>,
// CHECK-SAME: %[[R:[^:]+]]: tensor<5x4x6xf32>,
// CHECK-SAME: %[[D:[^:]+]]: tensor<?x3x4xf32>
// CHECK: %[[R0:.*]] = hps.matmul %[[V]], %[[M]]
// CHECK-SAME: : (tensor<4xf32>, tensor<4x8xf32>) -> tensor<8xf32>
// CHECK: %[[R1:.*]] = hps.matmul %[[V]], %[[V]]
// CHECK-SAME: : (tensor<4xf32>, tensor<4xf32>) -> tensor<f32>
// CHECK: %[[R2:.*]] = hps.matmul %[[L]], %[[R]]
// CHECK-SAME: : (tensor<2x1x3x4xf32>, tensor<5x4x6xf32>)
// CHECK-SAME: -> tensor<2x5x3x6xf32>
// CHECK: %[[R3:.*]] = hps.matmul %[[D]], %[[M]]
// CHECK-SAME: : (tensor<?x3x4xf32>, tensor<4x8xf32>) -> tensor<?x3x8xf32>
// CHECK: return %[[R0]], %[[R1]], %[[R2]], %[[R3]]
func.func @matmul(%v: tensor<4xf32>, %m: tensor<4x8xf32>,
                  %l: tensor<2x1x3x4xf32>, %r: tensor<5x4x6xf32>,
                  %d: tensor<?x3x4xf32>)
    -> (tensor<8xf32>, tensor<f32>, tensor<2x5x3x6xf32>, tensor<?x3x8xf32>) {
  %0 = hps.matmul %v, %m : (tensor<4xf32>, tensor<4x8xf32>) -> tensor<8xf32>
  %1 = hps.matmul %v, %v : (tensor<4xf32>, tensor<4xf32>) -> tensor<f32>
  %2 = hps.matmul %l, %r : (tensor<2x1x3x4xf32>, tensor<5x4x6xf32>)
      -> tensor<2x5x3x6xf32>
  %3 = hps.matmul %d, %m : (tensor<?x3x4xf32>, tensor<4x8xf32>)
      -> tensor<?x3x8xf32>
  return %0, %1, %2, %3
      : tensor<8xf32>, tensor<f32>, tensor<2x5x3x6xf32>, tensor<?x3x8xf32>
}

//===----------------------------------------------------------------------===//
// Element-wise arithmetic
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @binary(
// CHECK-SAME: %[[A:[^:]+]]: tensor<2x3x4xf32>, %[[B:[^:]+]]: tensor<4xf32>,
// CHECK-SAME: %[[C:[^:]+]]: tensor<1x3x1x1xf32>,
// CHECK-SAME: %[[X:[^:]+]]: tensor<?x3x8x8xf32>,
// CHECK-SAME: %[[S:[^:]+]]: tensor<f32>
// CHECK: %[[R0:.*]] = hps.add %[[A]], %[[B]]
// CHECK-SAME: : (tensor<2x3x4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32>
// CHECK: %[[R1:.*]] = hps.sub %[[X]], %[[C]]
// CHECK-SAME: : (tensor<?x3x8x8xf32>, tensor<1x3x1x1xf32>)
// CHECK-SAME: -> tensor<?x3x8x8xf32>
// CHECK: %[[R2:.*]] = hps.mul %[[B]], %[[A]]
// CHECK-SAME: : (tensor<4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
// CHECK: %[[R3:.*]] = hps.div %[[S]], %[[B]]
// CHECK-SAME: : (tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK: return %[[R0]], %[[R1]], %[[R2]], %[[R3]]
func.func @binary(%a: tensor<2x3x4xf32>, %b: tensor<4xf32>,
                  %c: tensor<1x3x1x1xf32>, %x: tensor<?x3x8x8xf32>,
                  %s: tensor<f32>)
    -> (tensor<2x3x4xf32>, tensor<?x3x8x8xf32>, tensor<2x3x4xf32>,
        tensor<4xf32>) {
  %0 = hps.add %a, %b : (tensor<2x3x4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32>
  %1 = hps.sub %x, %c : (tensor<?x3x8x8xf32>, tensor<1x3x1x1xf32>)
      -> tensor<?x3x8x8xf32>
  %2 = hps.mul %b, %a : (tensor<4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %3 = hps.div %s, %b : (tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
  return %0, %1, %2, %3 : tensor<2x3x4xf32>, tensor<?x3x8x8xf32>,
                          tensor<2x3x4xf32>, tensor<4xf32>
}

// Pow takes an exponent of another element type; PRelu broadcasts the slope
// to the input only.
// CHECK-LABEL: func.func @binary_more(
// CHECK-SAME: %[[X:[^:]+]]: tensor<?x4x8x8xf32>,
// CHECK-SAME: %[[S:[^:]+]]: tensor<4x1x1xf32>, %[[E:[^:]+]]: tensor<i64>
// CHECK: %[[R0:.*]] = hps.pow %[[X]], %[[E]]
// CHECK-SAME: : (tensor<?x4x8x8xf32>, tensor<i64>) -> tensor<?x4x8x8xf32>
// CHECK: %[[R1:.*]] = hps.max %[[R0]], %[[S]]
// CHECK-SAME: : (tensor<?x4x8x8xf32>, tensor<4x1x1xf32>)
// CHECK-SAME: -> tensor<?x4x8x8xf32>
// CHECK: %[[R2:.*]] = hps.min %[[S]], %[[R1]]
// CHECK-SAME: : (tensor<4x1x1xf32>, tensor<?x4x8x8xf32>)
// CHECK-SAME: -> tensor<?x4x8x8xf32>
// CHECK: %[[R3:.*]] = hps.prelu %[[R2]], %[[S]]
// CHECK-SAME: : (tensor<?x4x8x8xf32>, tensor<4x1x1xf32>)
// CHECK-SAME: -> tensor<?x4x8x8xf32>
// CHECK: return %[[R3]]
func.func @binary_more(%x: tensor<?x4x8x8xf32>, %s: tensor<4x1x1xf32>,
                       %e: tensor<i64>) -> tensor<?x4x8x8xf32> {
  %0 = hps.pow %x, %e : (tensor<?x4x8x8xf32>, tensor<i64>)
      -> tensor<?x4x8x8xf32>
  %1 = hps.max %0, %s : (tensor<?x4x8x8xf32>, tensor<4x1x1xf32>)
      -> tensor<?x4x8x8xf32>
  %2 = hps.min %s, %1 : (tensor<4x1x1xf32>, tensor<?x4x8x8xf32>)
      -> tensor<?x4x8x8xf32>
  %3 = hps.prelu %2, %s : (tensor<?x4x8x8xf32>, tensor<4x1x1xf32>)
      -> tensor<?x4x8x8xf32>
  return %3 : tensor<?x4x8x8xf32>
}

// CHECK-LABEL: func.func @binary_unranked(
// CHECK-SAME: %[[U:[^:]+]]: tensor<*xf32>, %[[B:[^:]+]]: tensor<4xf32>
// CHECK: %[[R:.*]] = hps.add %[[U]], %[[B]]
// CHECK-SAME: : (tensor<*xf32>, tensor<4xf32>) -> tensor<*xf32>
func.func @binary_unranked(%u: tensor<*xf32>, %b: tensor<4xf32>)
    -> tensor<*xf32> {
  %0 = hps.add %u, %b : (tensor<*xf32>, tensor<4xf32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

//===----------------------------------------------------------------------===//
// Activations
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @activations(
// CHECK-SAME: %[[X:[^:]+]]: tensor<?x16xf32>
// CHECK: %[[R0:.*]] = hps.relu %[[X]] : tensor<?x16xf32>
// CHECK: %[[R1:.*]] = hps.sigmoid %[[R0]] : tensor<?x16xf32>
// CHECK: %[[R2:.*]] = hps.tanh %[[R1]] : tensor<?x16xf32>
// CHECK: %[[R3:.*]] = hps.leaky_relu %[[R2]] {alpha = 1.250000e-01 : f32}
// CHECK-SAME: : tensor<?x16xf32>
// CHECK: %[[R4:.*]] = hps.elu %[[R3]] {alpha = 1.000000e+00 : f32}
// CHECK-SAME: : tensor<?x16xf32>
// CHECK: %[[R5:.*]] = hps.selu %[[R4]]
// CHECK-SAME: {alpha = 1.67326319 : f32, gamma = 1.05070102 : f32}
// CHECK-SAME: : tensor<?x16xf32>
// CHECK: %[[R6:.*]] = hps.identity %[[R5]] : tensor<?x16xf32>
// CHECK: %[[R7:.*]] = hps.dropout %[[R6]] {ratio = 5.000000e-01 : f32}
// CHECK-SAME: : tensor<?x16xf32>
// CHECK: return %[[R7]]
func.func @activations(%x: tensor<?x16xf32>) -> tensor<?x16xf32> {
  %0 = hps.relu %x : tensor<?x16xf32>
  %1 = hps.sigmoid %0 : tensor<?x16xf32>
  %2 = hps.tanh %1 : tensor<?x16xf32>
  %3 = hps.leaky_relu %2 {alpha = 0.125 : f32} : tensor<?x16xf32>
  %4 = hps.elu %3 {alpha = 1.0 : f32} : tensor<?x16xf32>
  %5 = hps.selu %4 {alpha = 1.67326319 : f32, gamma = 1.05070102 : f32}
      : tensor<?x16xf32>
  %6 = hps.identity %5 : tensor<?x16xf32>
  %7 = hps.dropout %6 {ratio = 0.5 : f32} : tensor<?x16xf32>
  return %7 : tensor<?x16xf32>
}

// CHECK-LABEL: func.func @activations_more(
// CHECK-SAME: %[[X:[^:]+]]: tensor<2x?xf32>
// CHECK: %[[R0:.*]] = hps.hard_sigmoid %[[X]]
// CHECK-SAME: {alpha = 2.500000e-01 : f32, beta = 5.000000e-01 : f32}
// CHECK-SAME: : tensor<2x?xf32>
// CHECK: %[[R1:.*]] = hps.softplus %[[R0]] : tensor<2x?xf32>
// CHECK: %[[R2:.*]] = hps.softsign %[[R1]] : tensor<2x?xf32>
// CHECK: %[[R3:.*]] = hps.erf %[[R2]] : tensor<2x?xf32>
// CHECK: %[[R4:.*]] = hps.hard_swish %[[R3]] : tensor<2x?xf32>
// CHECK: return %[[R4]]
func.func @activations_more(%x: tensor<2x?xf32>) -> tensor<2x?xf32> {
  %0 = hps.hard_sigmoid %x {alpha = 0.25 : f32, beta = 0.5 : f32}
      : tensor<2x?xf32>
  %1 = hps.softplus %0 : tensor<2x?xf32>
  %2 = hps.softsign %1 : tensor<2x?xf32>
  %3 = hps.erf %2 : tensor<2x?xf32>
  %4 = hps.hard_swish %3 : tensor<2x?xf32>
  return %4 : tensor<2x?xf32>
}

// CHECK-LABEL: func.func @unary_math(
// CHECK-SAME: %[[X:[^:]+]]: tensor<8xf32>
// CHECK: %[[R0:.*]] = hps.abs %[[X]] : tensor<8xf32>
// CHECK: %[[R1:.*]] = hps.neg %[[R0]] : tensor<8xf32>
// CHECK: %[[R2:.*]] = hps.exp %[[R1]] : tensor<8xf32>
// CHECK: %[[R3:.*]] = hps.log %[[R2]] : tensor<8xf32>
// CHECK: %[[R4:.*]] = hps.sqrt %[[R3]] : tensor<8xf32>
// CHECK: %[[R5:.*]] = hps.reciprocal %[[R4]] : tensor<8xf32>
// CHECK: %[[R6:.*]] = hps.floor %[[R5]] : tensor<8xf32>
// CHECK: %[[R7:.*]] = hps.ceil %[[R6]] : tensor<8xf32>
// CHECK: return %[[R7]]
func.func @unary_math(%x: tensor<8xf32>) -> tensor<8xf32> {
  %0 = hps.abs %x : tensor<8xf32>
  %1 = hps.neg %0 : tensor<8xf32>
  %2 = hps.exp %1 : tensor<8xf32>
  %3 = hps.log %2 : tensor<8xf32>
  %4 = hps.sqrt %3 : tensor<8xf32>
  %5 = hps.reciprocal %4 : tensor<8xf32>
  %6 = hps.floor %5 : tensor<8xf32>
  %7 = hps.ceil %6 : tensor<8xf32>
  return %7 : tensor<8xf32>
}

// A missing bound is unbounded.
// CHECK-LABEL: func.func @clip(
// CHECK-SAME: %[[X:[^:]+]]: tensor<8xf32>
// CHECK: %[[R0:.*]] = hps.clip %[[X]] {min = 0.000000e+00 : f32}
// CHECK-SAME: : tensor<8xf32>
// CHECK: %[[R1:.*]] = hps.clip %[[R0]]
// CHECK-SAME: {max = 6.000000e+00 : f32, min = 0.000000e+00 : f32}
// CHECK-SAME: : tensor<8xf32>
// CHECK: %[[R2:.*]] = hps.clip %[[R1]] : tensor<8xf32>
// CHECK: return %[[R2]]
func.func @clip(%x: tensor<8xf32>) -> tensor<8xf32> {
  %0 = hps.clip %x {min = 0.0 : f32} : tensor<8xf32>
  %1 = hps.clip %0 {min = 0.0 : f32, max = 6.0 : f32} : tensor<8xf32>
  %2 = hps.clip %1 : tensor<8xf32>
  return %2 : tensor<8xf32>
}

// CHECK-LABEL: func.func @softmax(
// CHECK-SAME: %[[X:[^:]+]]: tensor<2x3x4xf32>
// CHECK: %[[R0:.*]] = hps.softmax %[[X]] {axis = -1 : i64} : tensor<2x3x4xf32>
// CHECK: %[[R1:.*]] = hps.log_softmax %[[X]] {axis = 1 : i64, coerce_2d}
// CHECK-SAME: : tensor<2x3x4xf32>
// CHECK: return %[[R0]], %[[R1]]
func.func @softmax(%x: tensor<2x3x4xf32>)
    -> (tensor<2x3x4xf32>, tensor<2x3x4xf32>) {
  %0 = hps.softmax %x {axis = -1 : i64} : tensor<2x3x4xf32>
  %1 = hps.log_softmax %x {axis = 1 : i64, coerce_2d} : tensor<2x3x4xf32>
  return %0, %1 : tensor<2x3x4xf32>, tensor<2x3x4xf32>
}

// Unranked operands are accepted: the axis cannot be checked.
// CHECK-LABEL: func.func @unary_unranked(
// CHECK-SAME: %[[U:[^:]+]]: tensor<*xf32>
// CHECK: %[[R0:.*]] = hps.relu %[[U]] : tensor<*xf32>
// CHECK: %[[R1:.*]] = hps.softmax %[[R0]] {axis = 5 : i64} : tensor<*xf32>
// CHECK: return %[[R1]]
func.func @unary_unranked(%u: tensor<*xf32>) -> tensor<*xf32> {
  %0 = hps.relu %u : tensor<*xf32>
  %1 = hps.softmax %0 {axis = 5 : i64} : tensor<*xf32>
  return %1 : tensor<*xf32>
}

//===----------------------------------------------------------------------===//
// Pooling and normalisation
//===----------------------------------------------------------------------===//

// With ceil_mode a 3x3 window at stride 2 over 8 gives ceil(5 / 2) + 1 = 4.
// CHECK-LABEL: func.func @max_pool(
// CHECK-SAME: %[[X:[^:]+]]: tensor<1x4x8x8xf32>
// CHECK: %[[R0:.*]] = hps.max_pool %[[X]]
// CHECK-SAME: {ceil_mode = false, dilations = array<i64: 1, 1>,
// CHECK-SAME: kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>,
// CHECK-SAME: strides = array<i64: 2, 2>}
// CHECK-SAME: : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
// CHECK: %[[R1:.*]] = hps.max_pool %[[X]]
// CHECK-SAME: {ceil_mode = true, dilations = array<i64: 1, 1>,
// CHECK-SAME: kernel_shape = array<i64: 3, 3>, pads = array<i64: 0, 0, 0, 0>,
// CHECK-SAME: strides = array<i64: 2, 2>}
// CHECK-SAME: : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
// CHECK: return %[[R0]], %[[R1]]
func.func @max_pool(%x: tensor<1x4x8x8xf32>)
    -> (tensor<1x4x4x4xf32>, tensor<1x4x4x4xf32>) {
  %0 = hps.max_pool %x {kernel_shape = array<i64: 2, 2>,
                        strides = array<i64: 2, 2>,
                        dilations = array<i64: 1, 1>,
                        pads = array<i64: 0, 0, 0, 0>, ceil_mode = false}
      : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
  %1 = hps.max_pool %x {kernel_shape = array<i64: 3, 3>,
                        strides = array<i64: 2, 2>,
                        dilations = array<i64: 1, 1>,
                        pads = array<i64: 0, 0, 0, 0>, ceil_mode = true}
      : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
  return %0, %1 : tensor<1x4x4x4xf32>, tensor<1x4x4x4xf32>
}

// CHECK-LABEL: func.func @average_pool(
// CHECK-SAME: %[[X:[^:]+]]: tensor<?x4x8x8xf32>
// CHECK: %[[R:.*]] = hps.average_pool %[[X]]
// CHECK-SAME: {ceil_mode = false, count_include_pad = false,
// CHECK-SAME: kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>,
// CHECK-SAME: strides = array<i64: 1, 1>}
// CHECK-SAME: : (tensor<?x4x8x8xf32>) -> tensor<?x4x8x8xf32>
// CHECK: return %[[R]]
func.func @average_pool(%x: tensor<?x4x8x8xf32>) -> tensor<?x4x8x8xf32> {
  %0 = hps.average_pool %x {kernel_shape = array<i64: 3, 3>,
                            strides = array<i64: 1, 1>,
                            pads = array<i64: 1, 1, 1, 1>, ceil_mode = false,
                            count_include_pad = false}
      : (tensor<?x4x8x8xf32>) -> tensor<?x4x8x8xf32>
  return %0 : tensor<?x4x8x8xf32>
}

// CHECK-LABEL: func.func @global_pool(
// CHECK-SAME: %[[X:[^:]+]]: tensor<?x4x8x8xf32>
// CHECK: %[[R0:.*]] = hps.global_average_pool %[[X]]
// CHECK-SAME: : (tensor<?x4x8x8xf32>) -> tensor<?x4x1x1xf32>
// CHECK: %[[R1:.*]] = hps.global_max_pool %[[X]]
// CHECK-SAME: : (tensor<?x4x8x8xf32>) -> tensor<?x4x1x1xf32>
// CHECK: return %[[R0]], %[[R1]]
func.func @global_pool(%x: tensor<?x4x8x8xf32>)
    -> (tensor<?x4x1x1xf32>, tensor<?x4x1x1xf32>) {
  %0 = hps.global_average_pool %x
      : (tensor<?x4x8x8xf32>) -> tensor<?x4x1x1xf32>
  %1 = hps.global_max_pool %x : (tensor<?x4x8x8xf32>) -> tensor<?x4x1x1xf32>
  return %0, %1 : tensor<?x4x1x1xf32>, tensor<?x4x1x1xf32>
}

// CHECK-LABEL: func.func @batch_norm(
// CHECK-SAME: %[[X:[^:]+]]: tensor<?x4x8x8xf32>, %[[S:[^:]+]]: tensor<4xf32>,
// CHECK-SAME: %[[B:[^:]+]]: tensor<4xf32>, %[[M:[^:]+]]: tensor<4xf32>,
// CHECK-SAME: %[[V:[^:]+]]: tensor<4xf32>
// CHECK: %[[R:.*]] = hps.batch_norm %[[X]], %[[S]], %[[B]], %[[M]], %[[V]]
// CHECK-SAME: {epsilon = 9.99999974E-6 : f32, momentum = 0.899999976 : f32}
// CHECK-SAME: : (tensor<?x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>,
// CHECK-SAME: tensor<4xf32>, tensor<4xf32>) -> tensor<?x4x8x8xf32>
// CHECK: return %[[R]]
func.func @batch_norm(%x: tensor<?x4x8x8xf32>, %scale: tensor<4xf32>,
                      %bias: tensor<4xf32>, %mean: tensor<4xf32>,
                      %var: tensor<4xf32>) -> tensor<?x4x8x8xf32> {
  %0 = hps.batch_norm %x, %scale, %bias, %mean, %var
      {epsilon = 1.0e-5 : f32, momentum = 0.9 : f32}
      : (tensor<?x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>,
         tensor<4xf32>) -> tensor<?x4x8x8xf32>
  return %0 : tensor<?x4x8x8xf32>
}

// CHECK-LABEL: func.func @lrn(
// CHECK-SAME: %[[X:[^:]+]]: tensor<1x4x8x8xf32>
// CHECK: %[[R:.*]] = hps.lrn %[[X]]
// CHECK-SAME: {alpha = 9.99999974E-5 : f32, beta = 7.500000e-01 : f32,
// CHECK-SAME: bias = 1.000000e+00 : f32, size = 5 : i64} : tensor<1x4x8x8xf32>
// CHECK: return %[[R]]
func.func @lrn(%x: tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
  %0 = hps.lrn %x {size = 5 : i64, alpha = 1.0e-4 : f32, beta = 0.75 : f32,
                   bias = 1.0 : f32} : tensor<1x4x8x8xf32>
  return %0 : tensor<1x4x8x8xf32>
}

// The index of the extreme along an axis, i64.
// CHECK-LABEL: func.func @arg_extremes(
// CHECK: hps.arg_max %{{.*}} {axis = 1 : i64, keepdims = false, select_last_index = false} : (tensor<?x5x3xf32>) -> tensor<?x3xi64>
// CHECK: hps.arg_min %{{.*}} {axis = -1 : i64, keepdims = true, select_last_index = true} : (tensor<?x5x3xf32>) -> tensor<?x5x1xi64>
func.func @arg_extremes(%x: tensor<?x5x3xf32>)
    -> (tensor<?x3xi64>, tensor<?x5x1xi64>) {
  %0 = hps.arg_max %x {axis = 1 : i64, keepdims = false,
                       select_last_index = false}
      : (tensor<?x5x3xf32>) -> tensor<?x3xi64>
  %1 = hps.arg_min %x {axis = -1 : i64, keepdims = true,
                       select_last_index = true}
      : (tensor<?x5x3xf32>) -> tensor<?x5x1xi64>
  return %0, %1 : tensor<?x3xi64>, tensor<?x5x1xi64>
}

// Recurrent layers over a whole sequence: Y [T, D, N, H]; LSTM's initial
// state stacks the hidden states and the cells.
// CHECK-LABEL: func.func @recurrent(
// CHECK: hps.lstm %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {direction = "bidirectional", hidden_size = 2 : i64, linear_before_reset = false} : (tensor<3x?x4xf32>, tensor<2x8x4xf32>, tensor<2x8x2xf32>, tensor<2x16xf32>, tensor<4x?x2xf32>) -> tensor<3x2x?x2xf32>
// CHECK: hps.gru %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {direction = "reverse", hidden_size = 2 : i64, linear_before_reset = true} : (tensor<3x?x4xf32>, tensor<1x6x4xf32>, tensor<1x6x2xf32>, tensor<1x12xf32>) -> tensor<3x1x?x2xf32>
func.func @recurrent(%x: tensor<3x?x4xf32>, %w: tensor<2x8x4xf32>,
                     %r: tensor<2x8x2xf32>, %b: tensor<2x16xf32>,
                     %s: tensor<4x?x2xf32>, %gw: tensor<1x6x4xf32>,
                     %gr: tensor<1x6x2xf32>, %gb: tensor<1x12xf32>)
    -> (tensor<3x2x?x2xf32>, tensor<3x1x?x2xf32>) {
  %0 = hps.lstm %x, %w, %r, %b, %s {direction = "bidirectional",
                                    hidden_size = 2 : i64,
                                    linear_before_reset = false}
      : (tensor<3x?x4xf32>, tensor<2x8x4xf32>, tensor<2x8x2xf32>,
         tensor<2x16xf32>, tensor<4x?x2xf32>) -> tensor<3x2x?x2xf32>
  %1 = hps.gru %x, %gw, %gr, %gb {direction = "reverse", hidden_size = 2 : i64,
                                  linear_before_reset = true}
      : (tensor<3x?x4xf32>, tensor<1x6x4xf32>, tensor<1x6x2xf32>,
         tensor<1x12xf32>) -> tensor<3x1x?x2xf32>
  return %0, %1 : tensor<3x2x?x2xf32>, tensor<3x1x?x2xf32>
}

// Scale and bias broadcast to the normalised dimensions input[axis:].
// CHECK-LABEL: func.func @layer_norm(
// CHECK-SAME: %[[X:[^:]+]]: tensor<?x5x8xf32>, %[[G:[^:]+]]: tensor<8xf32>,
// CHECK-SAME: %[[B:[^:]+]]: tensor<8xf32>, %[[G2:[^:]+]]: tensor<5x1xf32>
// CHECK: %[[R0:.*]] = hps.layer_norm %[[X]], %[[G]], %[[B]]
// CHECK-SAME: {axis = -1 : i64, epsilon = 9.99999974E-6 : f32}
// CHECK-SAME: : (tensor<?x5x8xf32>, tensor<8xf32>, tensor<8xf32>)
// CHECK-SAME: -> tensor<?x5x8xf32>
// CHECK: %[[R1:.*]] = hps.layer_norm %[[X]], %[[G2]]
// CHECK-SAME: {axis = 1 : i64, epsilon = 9.99999974E-6 : f32}
// CHECK-SAME: : (tensor<?x5x8xf32>, tensor<5x1xf32>) -> tensor<?x5x8xf32>
// CHECK: return %[[R0]], %[[R1]]
func.func @layer_norm(%x: tensor<?x5x8xf32>, %g: tensor<8xf32>,
                      %b: tensor<8xf32>, %g2: tensor<5x1xf32>)
    -> (tensor<?x5x8xf32>, tensor<?x5x8xf32>) {
  %0 = hps.layer_norm %x, %g, %b {axis = -1 : i64, epsilon = 1.0e-5 : f32}
      : (tensor<?x5x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<?x5x8xf32>
  %1 = hps.layer_norm %x, %g2 {axis = 1 : i64, epsilon = 1.0e-5 : f32}
      : (tensor<?x5x8xf32>, tensor<5x1xf32>) -> tensor<?x5x8xf32>
  return %0, %1 : tensor<?x5x8xf32>, tensor<?x5x8xf32>
}

//===----------------------------------------------------------------------===//
// Shape manipulation and data movement
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @flatten(
// CHECK-SAME: %[[X:[^:]+]]: tensor<2x3x4x5xf32>,
// CHECK-SAME: %[[D:[^:]+]]: tensor<?x3x4xf32>
// CHECK: %[[R0:.*]] = hps.flatten %[[X]] {axis = 1 : i64}
// CHECK-SAME: : (tensor<2x3x4x5xf32>) -> tensor<2x60xf32>
// CHECK: %[[R1:.*]] = hps.flatten %[[X]] {axis = 0 : i64}
// CHECK-SAME: : (tensor<2x3x4x5xf32>) -> tensor<1x120xf32>
// CHECK: %[[R2:.*]] = hps.flatten %[[X]] {axis = -1 : i64}
// CHECK-SAME: : (tensor<2x3x4x5xf32>) -> tensor<24x5xf32>
// CHECK: %[[R3:.*]] = hps.flatten %[[D]] {axis = 1 : i64}
// CHECK-SAME: : (tensor<?x3x4xf32>) -> tensor<?x12xf32>
// CHECK: return %[[R0]], %[[R1]], %[[R2]], %[[R3]]
func.func @flatten(%x: tensor<2x3x4x5xf32>, %d: tensor<?x3x4xf32>)
    -> (tensor<2x60xf32>, tensor<1x120xf32>, tensor<24x5xf32>,
        tensor<?x12xf32>) {
  %0 = hps.flatten %x {axis = 1 : i64}
      : (tensor<2x3x4x5xf32>) -> tensor<2x60xf32>
  %1 = hps.flatten %x {axis = 0 : i64}
      : (tensor<2x3x4x5xf32>) -> tensor<1x120xf32>
  %2 = hps.flatten %x {axis = -1 : i64}
      : (tensor<2x3x4x5xf32>) -> tensor<24x5xf32>
  %3 = hps.flatten %d {axis = 1 : i64} : (tensor<?x3x4xf32>) -> tensor<?x12xf32>
  return %0, %1, %2, %3
      : tensor<2x60xf32>, tensor<1x120xf32>, tensor<24x5xf32>, tensor<?x12xf32>
}

// 0 copies the input dimension, -1 is inferred.
// CHECK-LABEL: func.func @reshape(
// CHECK-SAME: %[[X:[^:]+]]: tensor<2x3x4xf32>, %[[D:[^:]+]]: tensor<?x3x4xf32>,
// CHECK-SAME: %[[U:[^:]+]]: tensor<*xf32>
// CHECK: %[[R0:.*]] = hps.reshape %[[X]]
// CHECK-SAME: {allowzero = false, shape = array<i64: 0, -1>}
// CHECK-SAME: : (tensor<2x3x4xf32>) -> tensor<2x12xf32>
// CHECK: %[[R1:.*]] = hps.reshape %[[X]]
// CHECK-SAME: {allowzero = true, shape = array<i64: 4, 6>}
// CHECK-SAME: : (tensor<2x3x4xf32>) -> tensor<4x6xf32>
// CHECK: %[[R2:.*]] = hps.reshape %[[D]]
// CHECK-SAME: {allowzero = false, shape = array<i64: 0, -1>}
// CHECK-SAME: : (tensor<?x3x4xf32>) -> tensor<?x12xf32>
// CHECK: %[[R3:.*]] = hps.reshape %[[U]]
// CHECK-SAME: {allowzero = false, shape = array<i64: 2, 12>}
// CHECK-SAME: : (tensor<*xf32>) -> tensor<2x12xf32>
// CHECK: return %[[R0]], %[[R1]], %[[R2]], %[[R3]]
func.func @reshape(%x: tensor<2x3x4xf32>, %d: tensor<?x3x4xf32>,
                   %u: tensor<*xf32>)
    -> (tensor<2x12xf32>, tensor<4x6xf32>, tensor<?x12xf32>,
        tensor<2x12xf32>) {
  %0 = hps.reshape %x {shape = array<i64: 0, -1>, allowzero = false}
      : (tensor<2x3x4xf32>) -> tensor<2x12xf32>
  %1 = hps.reshape %x {shape = array<i64: 4, 6>, allowzero = true}
      : (tensor<2x3x4xf32>) -> tensor<4x6xf32>
  %2 = hps.reshape %d {shape = array<i64: 0, -1>, allowzero = false}
      : (tensor<?x3x4xf32>) -> tensor<?x12xf32>
  %3 = hps.reshape %u {shape = array<i64: 2, 12>, allowzero = false}
      : (tensor<*xf32>) -> tensor<2x12xf32>
  return %0, %1, %2, %3
      : tensor<2x12xf32>, tensor<4x6xf32>, tensor<?x12xf32>, tensor<2x12xf32>
}

// CHECK-LABEL: func.func @transpose(
// CHECK-SAME: %[[X:[^:]+]]: tensor<?x3x8x8xf32>
// CHECK: %[[R:.*]] = hps.transpose %[[X]] {perm = array<i64: 0, 2, 3, 1>}
// CHECK-SAME: : (tensor<?x3x8x8xf32>) -> tensor<?x8x8x3xf32>
// CHECK: return %[[R]]
func.func @transpose(%x: tensor<?x3x8x8xf32>) -> tensor<?x8x8x3xf32> {
  %0 = hps.transpose %x {perm = array<i64: 0, 2, 3, 1>}
      : (tensor<?x3x8x8xf32>) -> tensor<?x8x8x3xf32>
  return %0 : tensor<?x8x8x3xf32>
}

// CHECK-LABEL: func.func @concat(
// CHECK-SAME: %[[A:[^:]+]]: tensor<1x2x4xf32>, %[[B:[^:]+]]: tensor<1x3x4xf32>,
// CHECK-SAME: %[[C:[^:]+]]: tensor<1x3x2xf32>
// CHECK: %[[R0:.*]] = hps.concat %[[A]], %[[B]] {axis = 1 : i64}
// CHECK-SAME: : (tensor<1x2x4xf32>, tensor<1x3x4xf32>) -> tensor<1x5x4xf32>
// CHECK: %[[R1:.*]] = hps.concat %[[B]], %[[C]] {axis = -1 : i64}
// CHECK-SAME: : (tensor<1x3x4xf32>, tensor<1x3x2xf32>) -> tensor<1x3x6xf32>
// CHECK: return %[[R0]], %[[R1]]
func.func @concat(%a: tensor<1x2x4xf32>, %b: tensor<1x3x4xf32>,
                  %c: tensor<1x3x2xf32>)
    -> (tensor<1x5x4xf32>, tensor<1x3x6xf32>) {
  %0 = hps.concat %a, %b {axis = 1 : i64}
      : (tensor<1x2x4xf32>, tensor<1x3x4xf32>) -> tensor<1x5x4xf32>
  %1 = hps.concat %b, %c {axis = -1 : i64}
      : (tensor<1x3x4xf32>, tensor<1x3x2xf32>) -> tensor<1x3x6xf32>
  return %0, %1 : tensor<1x5x4xf32>, tensor<1x3x6xf32>
}

// CHECK-LABEL: func.func @split(
// CHECK-SAME: %[[X:[^:]+]]: tensor<?x6x4xf32>
// CHECK: %[[R:.*]]:2 = hps.split %[[X]]
// CHECK-SAME: {axis = 1 : i64, split = array<i64: 2, 4>}
// CHECK-SAME: : (tensor<?x6x4xf32>) -> (tensor<?x2x4xf32>, tensor<?x4x4xf32>)
// CHECK: return %[[R]]#0, %[[R]]#1
func.func @split(%x: tensor<?x6x4xf32>)
    -> (tensor<?x2x4xf32>, tensor<?x4x4xf32>) {
  %0:2 = hps.split %x {axis = 1 : i64, split = array<i64: 2, 4>}
      : (tensor<?x6x4xf32>) -> (tensor<?x2x4xf32>, tensor<?x4x4xf32>)
  return %0#0, %0#1 : tensor<?x2x4xf32>, tensor<?x4x4xf32>
}

// The last 3 rows; every other column, from the last one backwards.
// CHECK-LABEL: func.func @slice(
// CHECK-SAME: %[[X:[^:]+]]: tensor<10x20xf32>
// CHECK: %[[R0:.*]] = hps.slice %[[X]]
// CHECK-SAME: {axes = array<i64: 0>, ends = array<i64: 10>,
// CHECK-SAME: starts = array<i64: -3>, steps = array<i64: 1>}
// CHECK-SAME: : (tensor<10x20xf32>) -> tensor<3x20xf32>
// CHECK: %[[R1:.*]] = hps.slice %[[X]]
// CHECK-SAME: {axes = array<i64: 1>, ends = array<i64: -100>,
// CHECK-SAME: starts = array<i64: -1>, steps = array<i64: -2>}
// CHECK-SAME: : (tensor<10x20xf32>) -> tensor<10x10xf32>
// CHECK: return %[[R0]], %[[R1]]
func.func @slice(%x: tensor<10x20xf32>)
    -> (tensor<3x20xf32>, tensor<10x10xf32>) {
  %0 = hps.slice %x {starts = array<i64: -3>, ends = array<i64: 10>,
                     axes = array<i64: 0>, steps = array<i64: 1>}
      : (tensor<10x20xf32>) -> tensor<3x20xf32>
  %1 = hps.slice %x {starts = array<i64: -1>, ends = array<i64: -100>,
                     axes = array<i64: 1>, steps = array<i64: -2>}
      : (tensor<10x20xf32>) -> tensor<10x10xf32>
  return %0, %1 : tensor<3x20xf32>, tensor<10x10xf32>
}

// Empty `axes` squeezes every size-1 dimension.
// CHECK-LABEL: func.func @squeeze_unsqueeze(
// CHECK-SAME: %[[X:[^:]+]]: tensor<1x3x1x4xf32>, %[[Y:[^:]+]]: tensor<3x4xf32>
// CHECK: %[[R0:.*]] = hps.squeeze %[[X]] {axes = array<i64: 0, -2>}
// CHECK-SAME: : (tensor<1x3x1x4xf32>) -> tensor<3x4xf32>
// CHECK: %[[R1:.*]] = hps.squeeze %[[X]] {axes = array<i64>}
// CHECK-SAME: : (tensor<1x3x1x4xf32>) -> tensor<3x4xf32>
// CHECK: %[[R2:.*]] = hps.unsqueeze %[[Y]] {axes = array<i64: 0, 3>}
// CHECK-SAME: : (tensor<3x4xf32>) -> tensor<1x3x4x1xf32>
// CHECK: return %[[R0]], %[[R1]], %[[R2]]
func.func @squeeze_unsqueeze(%x: tensor<1x3x1x4xf32>, %y: tensor<3x4xf32>)
    -> (tensor<3x4xf32>, tensor<3x4xf32>, tensor<1x3x4x1xf32>) {
  %0 = hps.squeeze %x {axes = array<i64: 0, -2>}
      : (tensor<1x3x1x4xf32>) -> tensor<3x4xf32>
  %1 = hps.squeeze %x {axes = array<i64>}
      : (tensor<1x3x1x4xf32>) -> tensor<3x4xf32>
  %2 = hps.unsqueeze %y {axes = array<i64: 0, 3>}
      : (tensor<3x4xf32>) -> tensor<1x3x4x1xf32>
  return %0, %1, %2 : tensor<3x4xf32>, tensor<3x4xf32>, tensor<1x3x4x1xf32>
}

// Negative pads crop.
// CHECK-LABEL: func.func @pad(
// CHECK-SAME: %[[X:[^:]+]]: tensor<1x3x4x4xf32>
// CHECK: %[[R0:.*]] = hps.pad %[[X]] {mode = "constant",
// CHECK-SAME: pads = array<i64: 0, 0, 1, 1, 0, 0, 1, 1>,
// CHECK-SAME: value = 0.000000e+00 : f32}
// CHECK-SAME: : (tensor<1x3x4x4xf32>) -> tensor<1x3x6x6xf32>
// CHECK: %[[R1:.*]] = hps.pad %[[X]] {mode = "reflect",
// CHECK-SAME: pads = array<i64: 0, 0, 1, 0, 0, 0, 0, -1>,
// CHECK-SAME: value = 0.000000e+00 : f32}
// CHECK-SAME: : (tensor<1x3x4x4xf32>) -> tensor<1x3x5x3xf32>
// CHECK: return %[[R0]], %[[R1]]
func.func @pad(%x: tensor<1x3x4x4xf32>)
    -> (tensor<1x3x6x6xf32>, tensor<1x3x5x3xf32>) {
  %0 = hps.pad %x {pads = array<i64: 0, 0, 1, 1, 0, 0, 1, 1>,
                   mode = "constant", value = 0.0 : f32}
      : (tensor<1x3x4x4xf32>) -> tensor<1x3x6x6xf32>
  %1 = hps.pad %x {pads = array<i64: 0, 0, 1, 0, 0, 0, 0, -1>,
                   mode = "reflect", value = 0.0 : f32}
      : (tensor<1x3x4x4xf32>) -> tensor<1x3x5x3xf32>
  return %0, %1 : tensor<1x3x6x6xf32>, tensor<1x3x5x3xf32>
}

// A bilinear upsampling to sizes with a dynamic batch (a segmentation
// head's), and a nearest one by scales computed at run time.
// CHECK-LABEL: func.func @resize(
// CHECK-SAME: %[[X:[^:]+]]: tensor<?x3x4x4xf32>, %[[S:[^:]+]]: tensor<4xf32>
// CHECK: %[[R0:.*]] = hps.resize %[[X]] {coordinate_transformation_mode = "pytorch_half_pixel",
// CHECK-SAME: mode = "linear", nearest_mode = "floor", roi = array<f32>,
// CHECK-SAME: scales = array<f32: 1.000000e+00, 1.000000e+00, 1.000000e+00, 1.000000e+00>,
// CHECK-SAME: sizes = array<i64: 0, 3, 9, 8>}
// CHECK-SAME: : (tensor<?x3x4x4xf32>) -> tensor<?x3x9x8xf32>
// CHECK: %[[R1:.*]] = hps.dynamic_resize %[[X]], %[[S]] {
// CHECK-SAME: mode = "nearest"
// CHECK-SAME: : (tensor<?x3x4x4xf32>, tensor<4xf32>) -> tensor<?x?x?x?xf32>
// CHECK: return %[[R0]], %[[R1]]
func.func @resize(%x: tensor<?x3x4x4xf32>, %s: tensor<4xf32>)
    -> (tensor<?x3x9x8xf32>, tensor<?x?x?x?xf32>) {
  %0 = hps.resize %x {scales = array<f32: 1.0, 1.0, 1.0, 1.0>,
      sizes = array<i64: 0, 3, 9, 8>, roi = array<f32>, mode = "linear",
      coordinate_transformation_mode = "pytorch_half_pixel",
      nearest_mode = "floor", cubic_coeff_a = -0.75 : f32,
      exclude_outside = false, extrapolation_value = 0.0 : f32}
      : (tensor<?x3x4x4xf32>) -> tensor<?x3x9x8xf32>
  %1 = hps.dynamic_resize %x, %s {mode = "nearest",
      coordinate_transformation_mode = "asymmetric", nearest_mode = "floor",
      cubic_coeff_a = -0.75 : f32, exclude_outside = false,
      extrapolation_value = 0.0 : f32}
      : (tensor<?x3x4x4xf32>, tensor<4xf32>) -> tensor<?x?x?x?xf32>
  return %0, %1 : tensor<?x3x9x8xf32>, tensor<?x?x?x?xf32>
}

// An embedding lookup, and a gather along the last axis with i32 indices.
// CHECK-LABEL: func.func @gather(
// CHECK-SAME: %[[IDS:[^:]+]]: tensor<2x8xi64>, %[[X:[^:]+]]: tensor<3x4x5xf32>,
// CHECK-SAME: %[[I:[^:]+]]: tensor<2xi32>
// CHECK: %[[T:.*]] = hps.weight "embedding.weight" : tensor<1000x64xf32>
// CHECK: %[[R0:.*]] = hps.gather %[[T]], %[[IDS]] {axis = 0 : i64}
// CHECK-SAME: : (tensor<1000x64xf32>, tensor<2x8xi64>) -> tensor<2x8x64xf32>
// CHECK: %[[R1:.*]] = hps.gather %[[X]], %[[I]] {axis = -1 : i64}
// CHECK-SAME: : (tensor<3x4x5xf32>, tensor<2xi32>) -> tensor<3x4x2xf32>
// CHECK: return %[[R0]], %[[R1]]
func.func @gather(%ids: tensor<2x8xi64>, %x: tensor<3x4x5xf32>,
                  %i: tensor<2xi32>)
    -> (tensor<2x8x64xf32>, tensor<3x4x2xf32>) {
  %table = hps.weight "embedding.weight" : tensor<1000x64xf32>
  %0 = hps.gather %table, %ids {axis = 0 : i64}
      : (tensor<1000x64xf32>, tensor<2x8xi64>) -> tensor<2x8x64xf32>
  %1 = hps.gather %x, %i {axis = -1 : i64}
      : (tensor<3x4x5xf32>, tensor<2xi32>) -> tensor<3x4x2xf32>
  return %0, %1 : tensor<2x8x64xf32>, tensor<3x4x2xf32>
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

// Empty `axes` reduces over all axes.
// CHECK-LABEL: func.func @reduce(
// CHECK-SAME: %[[X:[^:]+]]: tensor<?x4x8x8xf32>
// CHECK: %[[R0:.*]] = hps.reduce_mean %[[X]]
// CHECK-SAME: {axes = array<i64: 2, 3>, keepdims = true}
// CHECK-SAME: : (tensor<?x4x8x8xf32>) -> tensor<?x4x1x1xf32>
// CHECK: %[[R1:.*]] = hps.reduce_sum %[[X]]
// CHECK-SAME: {axes = array<i64>, keepdims = false}
// CHECK-SAME: : (tensor<?x4x8x8xf32>) -> tensor<f32>
// CHECK: %[[R2:.*]] = hps.reduce_sum %[[X]]
// CHECK-SAME: {axes = array<i64: -1>, keepdims = false}
// CHECK-SAME: : (tensor<?x4x8x8xf32>) -> tensor<?x4x8xf32>
// CHECK: return %[[R0]], %[[R1]], %[[R2]]
func.func @reduce(%x: tensor<?x4x8x8xf32>)
    -> (tensor<?x4x1x1xf32>, tensor<f32>, tensor<?x4x8xf32>) {
  %0 = hps.reduce_mean %x {axes = array<i64: 2, 3>, keepdims = true}
      : (tensor<?x4x8x8xf32>) -> tensor<?x4x1x1xf32>
  %1 = hps.reduce_sum %x {axes = array<i64>, keepdims = false}
      : (tensor<?x4x8x8xf32>) -> tensor<f32>
  %2 = hps.reduce_sum %x {axes = array<i64: -1>, keepdims = false}
      : (tensor<?x4x8x8xf32>) -> tensor<?x4x8xf32>
  return %0, %1, %2 : tensor<?x4x1x1xf32>, tensor<f32>, tensor<?x4x8xf32>
}

// CHECK-LABEL: func.func @reduce_max_min(
// CHECK-SAME: %[[X:[^:]+]]: tensor<2x4x8xf32>
// CHECK: %[[R0:.*]] = hps.reduce_max %[[X]]
// CHECK-SAME: {axes = array<i64: 1>, keepdims = true}
// CHECK-SAME: : (tensor<2x4x8xf32>) -> tensor<2x1x8xf32>
// CHECK: %[[R1:.*]] = hps.reduce_min %[[X]]
// CHECK-SAME: {axes = array<i64: -1, 0>, keepdims = false}
// CHECK-SAME: : (tensor<2x4x8xf32>) -> tensor<4xf32>
// CHECK: return %[[R0]], %[[R1]]
func.func @reduce_max_min(%x: tensor<2x4x8xf32>)
    -> (tensor<2x1x8xf32>, tensor<4xf32>) {
  %0 = hps.reduce_max %x {axes = array<i64: 1>, keepdims = true}
      : (tensor<2x4x8xf32>) -> tensor<2x1x8xf32>
  %1 = hps.reduce_min %x {axes = array<i64: -1, 0>, keepdims = false}
      : (tensor<2x4x8xf32>) -> tensor<4xf32>
  return %0, %1 : tensor<2x1x8xf32>, tensor<4xf32>
}

//===----------------------------------------------------------------------===//
// Discardable attributes
//===----------------------------------------------------------------------===//

// hps.device, hps.stage and a layer kind next to the inherent attributes.
// CHECK-LABEL: func.func @annotated(
// CHECK-SAME: %[[X:[^:]+]]: tensor<1x3x8x8xf32>,
// CHECK-SAME: %[[W:[^:]+]]: tensor<4x3x3x3xf32>
// CHECK: %[[C:.*]] = hps.conv %[[X]], %[[W]]
// CHECK-SAME: {dilations = array<i64: 1, 1>, group = 1 : i64,
// CHECK-SAME: hps.device = #hps.device<"v100">, hps.stage = 0 : i64,
// CHECK-SAME: kind = #hps.layer_kind<conv>, pads = array<i64: 1, 1, 1, 1>,
// CHECK-SAME: strides = array<i64: 1, 1>}
// CHECK: %[[R:.*]] = hps.relu %[[C]]
// CHECK-SAME: {hps.device = #hps.device<"v100">, hps.stage = 0 : i64}
// CHECK-SAME: : tensor<1x4x8x8xf32>
// CHECK: return %[[R]]
func.func @annotated(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>)
    -> tensor<1x4x8x8xf32> {
  %0 = hps.conv %x, %w {strides = array<i64: 1, 1>,
                        dilations = array<i64: 1, 1>,
                        pads = array<i64: 1, 1, 1, 1>, group = 1 : i64,
                        hps.device = #hps.device<"v100">, hps.stage = 0,
                        kind = #hps.layer_kind<conv>}
      : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  %1 = hps.relu %0 {hps.device = #hps.device<"v100">, hps.stage = 0 : i64}
      : tensor<1x4x8x8xf32>
  return %1 : tensor<1x4x8x8xf32>
}

//===----------------------------------------------------------------------===//
// Run-time shapes, index tensors and masks
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @run_time_shapes(
// CHECK: %[[N:.*]] = hps.range %{{.*}}, %{{.*}}, %{{.*}} : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
// CHECK: hps.constant_of_shape %{{.*}} {to = 1 : i64, value = 1.000000e+00 : f32} : (tensor<2xi64>) -> tensor<?x?xf32>
// CHECK: hps.expand %{{.*}}, %{{.*}} : (tensor<1x4xf32>, tensor<2xi64>) -> tensor<?x4xf32>
// CHECK: hps.dynamic_reshape %{{.*}}, %{{.*}} {allowzero = false} : (tensor<?x4xf32>, tensor<2xi64>) -> tensor<?x?xf32>
// CHECK: hps.dynamic_slice %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : (tensor<?x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x4xf32>
// CHECK: hps.dynamic_pad %{{.*}}, %{{.*}} value %{{.*}} {mode = "constant"} : (tensor<?x4xf32>, tensor<4xi64>, tensor<f32>) -> tensor<?x?xf32>
func.func @run_time_shapes(%start: tensor<i64>, %limit: tensor<i64>,
                           %step: tensor<i64>, %shape: tensor<2xi64>,
                           %row: tensor<1x4xf32>, %bound: tensor<1xi64>,
                           %pads: tensor<4xi64>, %fill: tensor<f32>)
    -> (tensor<?xi64>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x4xf32>,
        tensor<?x?xf32>) {
  %0 = hps.range %start, %limit, %step
      : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  %1 = hps.constant_of_shape %shape {value = 1.0 : f32, to = 1 : i64}
      : (tensor<2xi64>) -> tensor<?x?xf32>
  %2 = hps.expand %row, %shape : (tensor<1x4xf32>, tensor<2xi64>) -> tensor<?x4xf32>
  %3 = hps.dynamic_reshape %2, %shape {allowzero = false}
      : (tensor<?x4xf32>, tensor<2xi64>) -> tensor<?x?xf32>
  %4 = hps.dynamic_slice %2, %bound, %bound, %bound, %bound
      : (tensor<?x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>,
         tensor<1xi64>) -> tensor<?x4xf32>
  %5 = hps.dynamic_pad %4, %pads value %fill {mode = "constant"}
      : (tensor<?x4xf32>, tensor<4xi64>, tensor<f32>) -> tensor<?x?xf32>
  return %0, %1, %3, %4, %5
      : tensor<?xi64>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x4xf32>,
        tensor<?x?xf32>
}

// CHECK-LABEL: func.func @masks(
// CHECK: %[[F:.*]] = hps.greater %{{.*}}, %{{.*}} : (tensor<1x4xi64>, tensor<4x1xi64>) -> tensor<4x4xi1>
// CHECK: %[[E:.*]] = hps.equal %{{.*}}, %{{.*}} : (tensor<4x4xf32>, tensor<f32>) -> tensor<4x4xi1>
// CHECK: %[[A:.*]] = hps.and %[[F]], %[[E]] : (tensor<4x4xi1>, tensor<4x4xi1>) -> tensor<4x4xi1>
// CHECK: %[[NOT:.*]] = hps.not %[[A]] : tensor<4x4xi1>
// CHECK: hps.where %[[NOT]], %{{.*}}, %{{.*}} : (tensor<4x4xi1>, tensor<4x4xf32>, tensor<f32>) -> tensor<4x4xf32>
// CHECK: hps.cast %[[NOT]] {to = 1 : i64} : (tensor<4x4xi1>) -> tensor<4x4xf32>
// CHECK: hps.trilu %{{.*}}, %{{.*}} {upper = false} : (tensor<4x4xf32>, tensor<i64>) -> tensor<4x4xf32>
// CHECK: hps.cum_sum %{{.*}}, %{{.*}} {exclusive = true, reverse = false} : (tensor<4x4xf32>, tensor<i64>) -> tensor<4x4xf32>
func.func @masks(%rows: tensor<4x1xi64>, %cols: tensor<1x4xi64>,
                 %x: tensor<4x4xf32>, %fill: tensor<f32>, %k: tensor<i64>)
    -> (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>) {
  %0 = hps.greater %cols, %rows
      : (tensor<1x4xi64>, tensor<4x1xi64>) -> tensor<4x4xi1>
  %1 = hps.equal %x, %fill : (tensor<4x4xf32>, tensor<f32>) -> tensor<4x4xi1>
  %2 = hps.and %0, %1 : (tensor<4x4xi1>, tensor<4x4xi1>) -> tensor<4x4xi1>
  %3 = hps.not %2 : tensor<4x4xi1>
  %4 = hps.where %3, %x, %fill
      : (tensor<4x4xi1>, tensor<4x4xf32>, tensor<f32>) -> tensor<4x4xf32>
  %5 = hps.cast %3 {to = 1 : i64} : (tensor<4x4xi1>) -> tensor<4x4xf32>
  %6 = hps.trilu %x, %k {upper = false}
      : (tensor<4x4xf32>, tensor<i64>) -> tensor<4x4xf32>
  %7 = hps.cum_sum %x, %k {exclusive = true, reverse = false}
      : (tensor<4x4xf32>, tensor<i64>) -> tensor<4x4xf32>
  return %4, %5, %6, %7
      : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>
}

// CHECK-LABEL: func.func @windows(
// CHECK: hps.mod %{{.*}}, %{{.*}} {fmod = false} : (tensor<4xi64>, tensor<i64>) -> tensor<4xi64>
// CHECK: hps.mod %{{.*}}, %{{.*}} {fmod = true} : (tensor<4x4xf32>, tensor<f32>) -> tensor<4x4xf32>
// CHECK: hps.scatter_nd %{{.*}}, %{{.*}}, %{{.*}} {reduction = "add"} : (tensor<4x4xf32>, tensor<2x1xi64>, tensor<2x4xf32>) -> tensor<4x4xf32>
func.func @windows(%i: tensor<4xi64>, %n: tensor<i64>, %x: tensor<4x4xf32>,
                   %d: tensor<f32>, %rows: tensor<2x1xi64>,
                   %u: tensor<2x4xf32>)
    -> (tensor<4xi64>, tensor<4x4xf32>, tensor<4x4xf32>) {
  %0 = hps.mod %i, %n {fmod = false}
      : (tensor<4xi64>, tensor<i64>) -> tensor<4xi64>
  %1 = hps.mod %x, %d {fmod = true}
      : (tensor<4x4xf32>, tensor<f32>) -> tensor<4x4xf32>
  %2 = hps.scatter_nd %x, %rows, %u {reduction = "add"}
      : (tensor<4x4xf32>, tensor<2x1xi64>, tensor<2x4xf32>) -> tensor<4x4xf32>
  return %0, %1, %2 : tensor<4xi64>, tensor<4x4xf32>, tensor<4x4xf32>
}
