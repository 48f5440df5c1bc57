// RUN: heterps-opt %s -split-input-file -verify-diagnostics

// One case per diagnostic of the hps dialect: the discardable attribute
// checks of HPSDialect.cpp, the op verifiers of HPSOps.cpp and a few
// ODS-generated checks.

//===----------------------------------------------------------------------===//
// Discardable attributes: hps.device, hps.stage
//===----------------------------------------------------------------------===//

func.func @device_name_empty(%x: tensor<4xf32>) {
  // expected-error @+1 {{device type name must be a non-empty identifier of letters, digits, '_', '-' and '.', got ''}}
  %0 = hps.relu %x {hps.device = #hps.device<"">} : tensor<4xf32>
  return
}

// -----

func.func @device_name_space(%x: tensor<4xf32>) {
  // expected-error @+1 {{device type name must be a non-empty identifier of letters, digits, '_', '-' and '.', got 'v 100'}}
  %0 = hps.relu %x {hps.device = #hps.device<"v 100">} : tensor<4xf32>
  return
}

// -----

// A plain string is not a device attribute.
func.func @device_not_device_attr(%x: tensor<4xf32>) {
  // expected-error @+1 {{'hps.device' must be a #hps.device attribute}}
  %0 = hps.relu %x {hps.device = "v100"} : tensor<4xf32>
  return
}

// -----

func.func @stage_negative(%x: tensor<4xf32>) {
  // expected-error @+1 {{'hps.stage' must be a non-negative integer}}
  %0 = hps.relu %x {hps.device = #hps.device<"v100">, hps.stage = -1}
      : tensor<4xf32>
  return
}

// -----

func.func @stage_not_integer(%x: tensor<4xf32>) {
  // expected-error @+1 {{'hps.stage' must be a non-negative integer}}
  %0 = hps.relu %x {hps.device = #hps.device<"v100">, hps.stage = "first"}
      : tensor<4xf32>
  return
}

// -----

func.func @stage_without_device(%x: tensor<4xf32>) {
  // expected-error @+1 {{an op with 'hps.stage' must also have 'hps.device'}}
  %0 = hps.relu %x {hps.stage = 0} : tensor<4xf32>
  return
}

// -----

// The closest staged op before the failing one is the first relu; the
// unstaged sigmoid in between does not matter.
func.func @stage_decreases(%x: tensor<4xf32>) {
  %0 = hps.relu %x {hps.device = #hps.device<"v100">, hps.stage = 1}
      : tensor<4xf32>
  %1 = hps.sigmoid %0 : tensor<4xf32>
  // expected-error @+1 {{stage 0 follows stage 1: stage indices must not decrease along a block}}
  %2 = hps.tanh %1 {hps.device = #hps.device<"v100">, hps.stage = 0}
      : tensor<4xf32>
  return
}

// -----

func.func @stage_mixes_devices(%x: tensor<4xf32>) {
  %0 = hps.relu %x {hps.device = #hps.device<"v100">, hps.stage = 0}
      : tensor<4xf32>
  // expected-error @+1 {{stage 0 mixes device types 'v100' and 'cpu': a stage runs on one device type}}
  %1 = hps.relu %0 {hps.device = #hps.device<"cpu">, hps.stage = 0}
      : tensor<4xf32>
  return
}

// -----

func.func @unknown_attribute(%x: tensor<4xf32>) {
  // expected-error @+1 {{unknown hps attribute 'hps.placement'}}
  %0 = hps.relu %x {hps.placement = 1} : tensor<4xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// hps.weight, hps.shape
//===----------------------------------------------------------------------===//

func.func @weight_empty_name() {
  // expected-error @+1 {{'hps.weight' op expects a non-empty 'name'}}
  %0 = hps.weight "" : tensor<4xf32>
  return
}

// -----

// ODS: a weight has a static shape.
func.func @weight_dynamic() {
  // expected-error @+1 {{'hps.weight' op result #0 must be statically shaped tensor of any type values, but got 'tensor<?x4xf32>'}}
  %0 = hps.weight "w" : tensor<?x4xf32>
  return
}

// -----

func.func @shape_result(%x: tensor<?x3x8x8xf32>) {
  // expected-error @+1 {{'hps.shape' op result shape [3] does not match the computed shape [2]}}
  %0 = hps.shape %x {start = 1 : i64, end = 3 : i64}
      : (tensor<?x3x8x8xf32>) -> tensor<3xi64>
  return
}

// -----

//===----------------------------------------------------------------------===//
// hps.conv
//===----------------------------------------------------------------------===//

// ODS: inherent attributes are required.
func.func @conv_missing_group(%x: tensor<1x3x8x8xf32>,
                              %w: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{'hps.conv' op requires attribute 'group'}}
  %0 = hps.conv %x, %w {strides = array<i64: 1, 1>,
                        dilations = array<i64: 1, 1>,
                        pads = array<i64: 1, 1, 1, 1>}
      : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  return
}

// -----

func.func @conv_group(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{'hps.conv' op expects 'group' to be positive, got 0}}
  %0 = hps.conv %x, %w {strides = array<i64: 1, 1>,
                        dilations = array<i64: 1, 1>,
                        pads = array<i64: 1, 1, 1, 1>, group = 0 : i64}
      : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  return
}

// -----

func.func @conv_input_rank(%x: tensor<1x3xf32>, %w: tensor<4x3xf32>) {
  // expected-error @+1 {{'hps.conv' op expects input of rank 3 to 5, got rank 2}}
  %0 = hps.conv %x, %w {strides = array<i64>, dilations = array<i64>,
                        pads = array<i64>, group = 1 : i64}
      : (tensor<1x3xf32>, tensor<4x3xf32>) -> tensor<1x4xf32>
  return
}

// -----

func.func @conv_weight_rank(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3xf32>) {
  // expected-error @+1 {{'hps.conv' op expects weight of rank 4 like the input, got rank 3}}
  %0 = hps.conv %x, %w {strides = array<i64: 1, 1>,
                        dilations = array<i64: 1, 1>,
                        pads = array<i64: 1, 1, 1, 1>, group = 1 : i64}
      : (tensor<1x3x8x8xf32>, tensor<4x3x3xf32>) -> tensor<1x4x8x8xf32>
  return
}

// -----

func.func @conv_strides_count(%x: tensor<1x3x8x8xf32>,
                              %w: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{'hps.conv' op expects 'strides' to have 2 values (one per spatial dimension), got 1}}
  %0 = hps.conv %x, %w {strides = array<i64: 1>,
                        dilations = array<i64: 1, 1>,
                        pads = array<i64: 1, 1, 1, 1>, group = 1 : i64}
      : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  return
}

// -----

func.func @conv_dilations_count(%x: tensor<1x3x8x8xf32>,
                                %w: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{'hps.conv' op expects 'dilations' to have 2 values (one per spatial dimension), got 3}}
  %0 = hps.conv %x, %w {strides = array<i64: 1, 1>,
                        dilations = array<i64: 1, 1, 1>,
                        pads = array<i64: 1, 1, 1, 1>, group = 1 : i64}
      : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  return
}

// -----

func.func @conv_pads_count(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{'hps.conv' op expects 'pads' to have 4 values (begin and end per spatial dimension), got 2}}
  %0 = hps.conv %x, %w {strides = array<i64: 1, 1>,
                        dilations = array<i64: 1, 1>,
                        pads = array<i64: 1, 1>, group = 1 : i64}
      : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  return
}

// -----

func.func @conv_strides_positive(%x: tensor<1x3x8x8xf32>,
                                 %w: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{'hps.conv' op expects 'strides' values to be positive, got [1, 0]}}
  %0 = hps.conv %x, %w {strides = array<i64: 1, 0>,
                        dilations = array<i64: 1, 1>,
                        pads = array<i64: 1, 1, 1, 1>, group = 1 : i64}
      : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  return
}

// -----

func.func @conv_dilations_positive(%x: tensor<1x3x8x8xf32>,
                                   %w: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{'hps.conv' op expects 'dilations' values to be positive, got [0, 1]}}
  %0 = hps.conv %x, %w {strides = array<i64: 1, 1>,
                        dilations = array<i64: 0, 1>,
                        pads = array<i64: 1, 1, 1, 1>, group = 1 : i64}
      : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  return
}

// -----

func.func @conv_pads_negative(%x: tensor<1x3x8x8xf32>,
                              %w: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{'hps.conv' op expects 'pads' values to be non-negative, got [1, -1, 1, 1]}}
  %0 = hps.conv %x, %w {strides = array<i64: 1, 1>,
                        dilations = array<i64: 1, 1>,
                        pads = array<i64: 1, -1, 1, 1>, group = 1 : i64}
      : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  return
}

// -----

func.func @conv_channels(%x: tensor<1x3x8x8xf32>, %w: tensor<4x2x3x3xf32>) {
  // expected-error @+1 {{'hps.conv' op expects input channels (3) to equal weight dimension 1 (2) times group (1)}}
  %0 = hps.conv %x, %w {strides = array<i64: 1, 1>,
                        dilations = array<i64: 1, 1>,
                        pads = array<i64: 1, 1, 1, 1>, group = 1 : i64}
      : (tensor<1x3x8x8xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x8x8xf32>
  return
}

// -----

// 8 input channels = 2 per group * 4 groups, but 6 filters do not split
// into 4 groups.
func.func @conv_filters_group(%x: tensor<1x8x8x8xf32>,
                              %w: tensor<6x2x3x3xf32>) {
  // expected-error @+1 {{'hps.conv' op expects the number of filters (6) to be divisible by group (4)}}
  %0 = hps.conv %x, %w {strides = array<i64: 1, 1>,
                        dilations = array<i64: 1, 1>,
                        pads = array<i64: 1, 1, 1, 1>, group = 4 : i64}
      : (tensor<1x8x8x8xf32>, tensor<6x2x3x3xf32>) -> tensor<1x6x8x8xf32>
  return
}

// -----

func.func @conv_bias(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>,
                     %b: tensor<3xf32>) {
  // expected-error @+1 {{'hps.conv' op expects 'bias' of shape [4], got [3]}}
  %0 = hps.conv %x, %w, %b {strides = array<i64: 1, 1>,
                            dilations = array<i64: 1, 1>,
                            pads = array<i64: 1, 1, 1, 1>, group = 1 : i64}
      : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<3xf32>)
      -> tensor<1x4x8x8xf32>
  return
}

// -----

func.func @conv_bias_rank(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>,
                          %b: tensor<1x4xf32>) {
  // expected-error @+1 {{'hps.conv' op expects 'bias' of shape [4], got [1, 4]}}
  %0 = hps.conv %x, %w, %b {strides = array<i64: 1, 1>,
                            dilations = array<i64: 1, 1>,
                            pads = array<i64: 1, 1, 1, 1>, group = 1 : i64}
      : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<1x4xf32>)
      -> tensor<1x4x8x8xf32>
  return
}

// -----

// Dilation 2 makes the 3-wide kernel span 5 elements.
func.func @conv_window(%x: tensor<1x3x4x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{'hps.conv' op spatial dimension 0 of size 4 padded by 0+0 is smaller than the dilated window of size 5}}
  %0 = hps.conv %x, %w {strides = array<i64: 1, 1>,
                        dilations = array<i64: 2, 1>,
                        pads = array<i64: 0, 0, 0, 0>, group = 1 : i64}
      : (tensor<1x3x4x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x1x6xf32>
  return
}

// -----

func.func @conv_result(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{'hps.conv' op result shape [1, 4, 8, 8] does not match the computed shape [1, 4, 6, 6]}}
  %0 = hps.conv %x, %w {strides = array<i64: 1, 1>,
                        dilations = array<i64: 1, 1>,
                        pads = array<i64: 0, 0, 0, 0>, group = 1 : i64}
      : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// hps.conv_transpose
//===----------------------------------------------------------------------===//

func.func @conv_transpose_output_padding_count(%x: tensor<1x4x8x8xf32>,
                                               %w: tensor<4x2x3x3xf32>) {
  // expected-error @+1 {{'hps.conv_transpose' op expects 'output_padding' to have 2 values (one per spatial dimension), got 1}}
  %0 = hps.conv_transpose %x, %w {strides = array<i64: 2, 2>,
                                  dilations = array<i64: 1, 1>,
                                  pads = array<i64: 1, 1, 1, 1>,
                                  output_padding = array<i64: 1>,
                                  group = 1 : i64}
      : (tensor<1x4x8x8xf32>, tensor<4x2x3x3xf32>) -> tensor<1x2x16x16xf32>
  return
}

// -----

func.func @conv_transpose_output_padding_negative(%x: tensor<1x4x8x8xf32>,
                                                  %w: tensor<4x2x3x3xf32>) {
  // expected-error @+1 {{'hps.conv_transpose' op expects 'output_padding' values to be non-negative, got [0, -1]}}
  %0 = hps.conv_transpose %x, %w {strides = array<i64: 2, 2>,
                                  dilations = array<i64: 1, 1>,
                                  pads = array<i64: 1, 1, 1, 1>,
                                  output_padding = array<i64: 0, -1>,
                                  group = 1 : i64}
      : (tensor<1x4x8x8xf32>, tensor<4x2x3x3xf32>) -> tensor<1x2x15x14xf32>
  return
}

// -----

func.func @conv_transpose_channels(%x: tensor<1x3x8x8xf32>,
                                   %w: tensor<4x2x3x3xf32>) {
  // expected-error @+1 {{'hps.conv_transpose' op expects input channels (3) to equal weight dimension 0 (4)}}
  %0 = hps.conv_transpose %x, %w {strides = array<i64: 1, 1>,
                                  dilations = array<i64: 1, 1>,
                                  pads = array<i64: 0, 0, 0, 0>,
                                  output_padding = array<i64: 0, 0>,
                                  group = 1 : i64}
      : (tensor<1x3x8x8xf32>, tensor<4x2x3x3xf32>) -> tensor<1x2x10x10xf32>
  return
}

// -----

// The output has weight dimension 1 * group = 2 channels.
func.func @conv_transpose_bias(%x: tensor<1x4x8x8xf32>,
                               %w: tensor<4x2x3x3xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{'hps.conv_transpose' op expects 'bias' of shape [2], got [4]}}
  %0 = hps.conv_transpose %x, %w, %b {strides = array<i64: 1, 1>,
                                      dilations = array<i64: 1, 1>,
                                      pads = array<i64: 0, 0, 0, 0>,
                                      output_padding = array<i64: 0, 0>,
                                      group = 1 : i64}
      : (tensor<1x4x8x8xf32>, tensor<4x2x3x3xf32>, tensor<4xf32>)
      -> tensor<1x2x10x10xf32>
  return
}

// -----

// 1 * (1 - 1) + 0 + (1 - 1) * 1 + 1 - 1 - 1 = -1.
func.func @conv_transpose_empty_output(%x: tensor<1x4x1xf32>,
                                       %w: tensor<4x2x1xf32>) {
  // expected-error @+1 {{'hps.conv_transpose' op spatial dimension 0 of the output would have size -1}}
  %0 = hps.conv_transpose %x, %w {strides = array<i64: 1>,
                                  dilations = array<i64: 1>,
                                  pads = array<i64: 1, 1>,
                                  output_padding = array<i64: 0>,
                                  group = 1 : i64}
      : (tensor<1x4x1xf32>, tensor<4x2x1xf32>) -> tensor<1x2x1xf32>
  return
}

// -----

func.func @conv_transpose_result(%x: tensor<1x4x8x8xf32>,
                                 %w: tensor<4x2x3x3xf32>) {
  // expected-error @+1 {{'hps.conv_transpose' op result shape [1, 2, 16, 16] does not match the computed shape [1, 2, 15, 15]}}
  %0 = hps.conv_transpose %x, %w {strides = array<i64: 2, 2>,
                                  dilations = array<i64: 1, 1>,
                                  pads = array<i64: 1, 1, 1, 1>,
                                  output_padding = array<i64: 0, 0>,
                                  group = 1 : i64}
      : (tensor<1x4x8x8xf32>, tensor<4x2x3x3xf32>) -> tensor<1x2x16x16xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// hps.gemm
//===----------------------------------------------------------------------===//

func.func @gemm_a_rank(%a: tensor<1x2x4xf32>, %b: tensor<4x8xf32>) {
  // expected-error @+1 {{'hps.gemm' op expects 'a' of rank 2, got rank 3}}
  %0 = hps.gemm %a, %b {alpha = 1.0 : f32, beta = 1.0 : f32,
                        trans_a = false, trans_b = false}
      : (tensor<1x2x4xf32>, tensor<4x8xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @gemm_b_rank(%a: tensor<2x4xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{'hps.gemm' op expects 'b' of rank 2, got rank 1}}
  %0 = hps.gemm %a, %b {alpha = 1.0 : f32, beta = 1.0 : f32,
                        trans_a = false, trans_b = false}
      : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2xf32>
  return
}

// -----

// With trans_b the inner dimension of b is its dimension 1.
func.func @gemm_inner(%a: tensor<2x4xf32>, %b: tensor<4x5xf32>) {
  // expected-error @+1 {{'hps.gemm' op expects the inner dimensions to agree, got 4 (a) and 5 (b)}}
  %0 = hps.gemm %a, %b {alpha = 1.0 : f32, beta = 1.0 : f32,
                        trans_a = false, trans_b = true}
      : (tensor<2x4xf32>, tensor<4x5xf32>) -> tensor<2x4xf32>
  return
}

// -----

func.func @gemm_c(%a: tensor<2x4xf32>, %b: tensor<4x8xf32>, %c: tensor<3xf32>) {
  // expected-error @+1 {{'hps.gemm' op expects 'c' of shape [3] to broadcast to [2, 8]}}
  %0 = hps.gemm %a, %b, %c {alpha = 1.0 : f32, beta = 1.0 : f32,
                            trans_a = false, trans_b = false}
      : (tensor<2x4xf32>, tensor<4x8xf32>, tensor<3xf32>) -> tensor<2x8xf32>
  return
}

// -----

// c broadcasts with [2, 8] but to a larger shape.
func.func @gemm_c_rank(%a: tensor<2x4xf32>, %b: tensor<4x8xf32>,
                       %c: tensor<1x2x8xf32>) {
  // expected-error @+1 {{'hps.gemm' op expects 'c' of shape [1, 2, 8] to broadcast to [2, 8]}}
  %0 = hps.gemm %a, %b, %c {alpha = 1.0 : f32, beta = 1.0 : f32,
                            trans_a = false, trans_b = false}
      : (tensor<2x4xf32>, tensor<4x8xf32>, tensor<1x2x8xf32>)
      -> tensor<2x8xf32>
  return
}

// -----

func.func @gemm_result(%a: tensor<4x2xf32>, %b: tensor<4x8xf32>) {
  // expected-error @+1 {{'hps.gemm' op result shape [4, 8] does not match the computed shape [2, 8]}}
  %0 = hps.gemm %a, %b {alpha = 1.0 : f32, beta = 1.0 : f32,
                        trans_a = true, trans_b = false}
      : (tensor<4x2xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// hps.matmul
//===----------------------------------------------------------------------===//

func.func @matmul_scalar(%a: tensor<f32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{'hps.matmul' op expects operands of rank at least 1}}
  %0 = hps.matmul %a, %b : (tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @matmul_inner(%a: tensor<2x4xf32>, %b: tensor<5x8xf32>) {
  // expected-error @+1 {{'hps.matmul' op expects the inner dimensions to agree, got 4 and 5}}
  %0 = hps.matmul %a, %b : (tensor<2x4xf32>, tensor<5x8xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @matmul_batch(%a: tensor<2x3x4xf32>, %b: tensor<3x4x5xf32>) {
  // expected-error @+1 {{'hps.matmul' op batch dimensions [2] and [3] are not broadcastable}}
  %0 = hps.matmul %a, %b : (tensor<2x3x4xf32>, tensor<3x4x5xf32>)
      -> tensor<2x3x5xf32>
  return
}

// -----

// A vector lhs drops the row dimension.
func.func @matmul_result(%a: tensor<4xf32>, %b: tensor<2x4x8xf32>) {
  // expected-error @+1 {{'hps.matmul' op result shape [2, 1, 8] does not match the computed shape [2, 8]}}
  %0 = hps.matmul %a, %b : (tensor<4xf32>, tensor<2x4x8xf32>)
      -> tensor<2x1x8xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Element-wise arithmetic
//===----------------------------------------------------------------------===//

func.func @add_broadcast(%a: tensor<2x3xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{'hps.add' op operands of shapes [2, 3] and [4] are not broadcastable}}
  %0 = hps.add %a, %b : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @sub_broadcast(%a: tensor<?x3x8x8xf32>, %b: tensor<4x1x1xf32>) {
  // expected-error @+1 {{'hps.sub' op operands of shapes [?, 3, 8, 8] and [4, 1, 1] are not broadcastable}}
  %0 = hps.sub %a, %b : (tensor<?x3x8x8xf32>, tensor<4x1x1xf32>)
      -> tensor<?x3x8x8xf32>
  return
}

// -----

func.func @mul_broadcast(%a: tensor<2xf32>, %b: tensor<3xf32>) {
  // expected-error @+1 {{'hps.mul' op operands of shapes [2] and [3] are not broadcastable}}
  %0 = hps.mul %a, %b : (tensor<2xf32>, tensor<3xf32>) -> tensor<2xf32>
  return
}

// -----

func.func @div_broadcast(%a: tensor<2x3xf32>, %b: tensor<3x2xf32>) {
  // expected-error @+1 {{'hps.div' op operands of shapes [2, 3] and [3, 2] are not broadcastable}}
  %0 = hps.div %a, %b : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @pow_broadcast(%a: tensor<2x3xf32>, %b: tensor<2xi64>) {
  // expected-error @+1 {{'hps.pow' op operands of shapes [2, 3] and [2] are not broadcastable}}
  %0 = hps.pow %a, %b : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<2x3xf32>
  return
}

// -----

func.func @max_broadcast(%a: tensor<4x3xf32>, %b: tensor<2x1xf32>) {
  // expected-error @+1 {{'hps.max' op operands of shapes [4, 3] and [2, 1] are not broadcastable}}
  %0 = hps.max %a, %b : (tensor<4x3xf32>, tensor<2x1xf32>) -> tensor<4x3xf32>
  return
}

// -----

func.func @min_broadcast(%a: tensor<5xf32>, %b: tensor<1x3xf32>) {
  // expected-error @+1 {{'hps.min' op operands of shapes [5] and [1, 3] are not broadcastable}}
  %0 = hps.min %a, %b : (tensor<5xf32>, tensor<1x3xf32>) -> tensor<1x5xf32>
  return
}

// -----

func.func @prelu_slope(%x: tensor<2x4xf32>, %s: tensor<3xf32>) {
  // expected-error @+1 {{'hps.prelu' op expects the slope of shape [3] to broadcast to the input shape [2, 4]}}
  %0 = hps.prelu %x, %s : (tensor<2x4xf32>, tensor<3xf32>) -> tensor<2x4xf32>
  return
}

// -----

// The slope broadcasts one way only: it may not grow the input.
func.func @prelu_slope_rank(%x: tensor<4xf32>, %s: tensor<2x4xf32>) {
  // expected-error @+1 {{'hps.prelu' op expects the slope of shape [2, 4] to broadcast to the input shape [4]}}
  %0 = hps.prelu %x, %s : (tensor<4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  return
}

// -----

func.func @prelu_result(%x: tensor<2x4xf32>, %s: tensor<4xf32>) {
  // expected-error @+1 {{'hps.prelu' op result shape [2, 5] does not match the computed shape [2, 4]}}
  %0 = hps.prelu %x, %s : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x5xf32>
  return
}

// -----

func.func @add_result(%a: tensor<2x3xf32>, %b: tensor<3xf32>) {
  // expected-error @+1 {{'hps.add' op result shape [3, 3] does not match the computed shape [2, 3]}}
  %0 = hps.add %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<3x3xf32>
  return
}

// -----

// ODS: SameOperandsAndResultElementType.
func.func @add_element_type(%a: tensor<3xf32>, %b: tensor<3xf16>) {
  // expected-error @+1 {{'hps.add' op requires the same element type for all operands and results}}
  %0 = hps.add %a, %b : (tensor<3xf32>, tensor<3xf16>) -> tensor<3xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Activations and softmax
//===----------------------------------------------------------------------===//

// ODS: SameOperandsAndResultType (only the generic form can spell it).
func.func @relu_type(%x: tensor<4xf32>) {
  // expected-error @+1 {{'hps.relu' op requires the same type for all operands and results}}
  %0 = "hps.relu"(%x) : (tensor<4xf32>) -> tensor<4xf16>
  return
}

// -----

func.func @clip_bounds(%x: tensor<4xf32>) {
  // expected-error @+1 {{'hps.clip' op expects 'min' (6.500000e+00) to be at most 'max' (0.000000e+00)}}
  %0 = hps.clip %x {min = 6.5 : f32, max = 0.0 : f32} : tensor<4xf32>
  return
}

// -----

func.func @dropout_ratio(%x: tensor<4xf32>) {
  // expected-error @+1 {{'hps.dropout' op expects 'ratio' in [0, 1), got 1.000000e+00}}
  %0 = hps.dropout %x {ratio = 1.0 : f32} : tensor<4xf32>
  return
}

// -----

func.func @dropout_ratio_negative(%x: tensor<4xf32>) {
  // expected-error @+1 {{'hps.dropout' op expects 'ratio' in [0, 1), got -5.000000e-01}}
  %0 = hps.dropout %x {ratio = -0.5 : f32} : tensor<4xf32>
  return
}

// -----

func.func @softmax_axis(%x: tensor<2x3x4xf32>) {
  // expected-error @+1 {{'hps.softmax' op expects 'axis' in [-3, 2], got 3}}
  %0 = hps.softmax %x {axis = 3 : i64} : tensor<2x3x4xf32>
  return
}

// -----

func.func @log_softmax_axis(%x: tensor<2x3x4xf32>) {
  // expected-error @+1 {{'hps.log_softmax' op expects 'axis' in [-3, 2], got -4}}
  %0 = hps.log_softmax %x {axis = -4 : i64, coerce_2d} : tensor<2x3x4xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

func.func @max_pool_kernel_empty(%x: tensor<1x4xf32>) {
  // expected-error @+1 {{'hps.max_pool' op expects a non-empty 'kernel_shape'}}
  %0 = hps.max_pool %x {kernel_shape = array<i64>, strides = array<i64>,
                        dilations = array<i64>, pads = array<i64>,
                        ceil_mode = false}
      : (tensor<1x4xf32>) -> tensor<1x4xf32>
  return
}

// -----

func.func @max_pool_kernel_positive(%x: tensor<1x4x8x8xf32>) {
  // expected-error @+1 {{'hps.max_pool' op expects 'kernel_shape' values to be positive, got [2, 0]}}
  %0 = hps.max_pool %x {kernel_shape = array<i64: 2, 0>,
                        strides = array<i64: 2, 2>,
                        dilations = array<i64: 1, 1>,
                        pads = array<i64: 0, 0, 0, 0>, ceil_mode = false}
      : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
  return
}

// -----

func.func @max_pool_strides_count(%x: tensor<1x4x8x8xf32>) {
  // expected-error @+1 {{'hps.max_pool' op expects 'strides' to have 2 values (one per spatial dimension), got 1}}
  %0 = hps.max_pool %x {kernel_shape = array<i64: 2, 2>,
                        strides = array<i64: 2>,
                        dilations = array<i64: 1, 1>,
                        pads = array<i64: 0, 0, 0, 0>, ceil_mode = false}
      : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
  return
}

// -----

func.func @max_pool_dilations_positive(%x: tensor<1x4x8x8xf32>) {
  // expected-error @+1 {{'hps.max_pool' op expects 'dilations' values to be positive, got [1, -1]}}
  %0 = hps.max_pool %x {kernel_shape = array<i64: 2, 2>,
                        strides = array<i64: 2, 2>,
                        dilations = array<i64: 1, -1>,
                        pads = array<i64: 0, 0, 0, 0>, ceil_mode = false}
      : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
  return
}

// -----

func.func @max_pool_input_rank(%x: tensor<1x4x8xf32>) {
  // expected-error @+1 {{'hps.max_pool' op expects input of rank 4 (N x C and one dimension per kernel axis), got rank 3}}
  %0 = hps.max_pool %x {kernel_shape = array<i64: 2, 2>,
                        strides = array<i64: 2, 2>,
                        dilations = array<i64: 1, 1>,
                        pads = array<i64: 0, 0, 0, 0>, ceil_mode = false}
      : (tensor<1x4x8xf32>) -> tensor<1x4x4xf32>
  return
}

// -----

func.func @max_pool_pads_kernel(%x: tensor<1x4x8x8xf32>) {
  // expected-error @+1 {{'hps.max_pool' op expects pads smaller than the kernel, got pad 2 for kernel size 2 on spatial dimension 1}}
  %0 = hps.max_pool %x {kernel_shape = array<i64: 2, 2>,
                        strides = array<i64: 2, 2>,
                        dilations = array<i64: 1, 1>,
                        pads = array<i64: 0, 0, 0, 2>, ceil_mode = false}
      : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x5xf32>
  return
}

// -----

// A 2-wide kernel with dilation 2 spans 3 elements.
func.func @max_pool_window(%x: tensor<1x4x8x2xf32>) {
  // expected-error @+1 {{'hps.max_pool' op spatial dimension 1 of size 2 padded by 0+0 is smaller than the dilated window of size 3}}
  %0 = hps.max_pool %x {kernel_shape = array<i64: 2, 2>,
                        strides = array<i64: 1, 1>,
                        dilations = array<i64: 2, 2>,
                        pads = array<i64: 0, 0, 0, 0>, ceil_mode = false}
      : (tensor<1x4x8x2xf32>) -> tensor<1x4x6x1xf32>
  return
}

// -----

// Without ceil_mode: (8 - 3) / 2 + 1 = 3.
func.func @max_pool_result(%x: tensor<1x4x8x8xf32>) {
  // expected-error @+1 {{'hps.max_pool' op result shape [1, 4, 4, 4] does not match the computed shape [1, 4, 3, 3]}}
  %0 = hps.max_pool %x {kernel_shape = array<i64: 3, 3>,
                        strides = array<i64: 2, 2>,
                        dilations = array<i64: 1, 1>,
                        pads = array<i64: 0, 0, 0, 0>, ceil_mode = false}
      : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
  return
}

// -----

func.func @average_pool_pads_count(%x: tensor<1x4x8x8xf32>) {
  // expected-error @+1 {{'hps.average_pool' op expects 'pads' to have 4 values (begin and end per spatial dimension), got 2}}
  %0 = hps.average_pool %x {kernel_shape = array<i64: 2, 2>,
                            strides = array<i64: 2, 2>,
                            pads = array<i64: 0, 0>, ceil_mode = false,
                            count_include_pad = false}
      : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
  return
}

// -----

func.func @average_pool_result(%x: tensor<?x4x8x8xf32>) {
  // expected-error @+1 {{'hps.average_pool' op result shape [?, 4, 8, 8] does not match the computed shape [?, 4, 4, 4]}}
  %0 = hps.average_pool %x {kernel_shape = array<i64: 2, 2>,
                            strides = array<i64: 2, 2>,
                            pads = array<i64: 0, 0, 0, 0>, ceil_mode = false,
                            count_include_pad = false}
      : (tensor<?x4x8x8xf32>) -> tensor<?x4x8x8xf32>
  return
}

// -----

func.func @global_average_pool_rank(%x: tensor<1x4xf32>) {
  // expected-error @+1 {{'hps.global_average_pool' op expects input of rank at least 3, got rank 2}}
  %0 = hps.global_average_pool %x : (tensor<1x4xf32>) -> tensor<1x4xf32>
  return
}

// -----

func.func @global_max_pool_result(%x: tensor<1x4x8x8xf32>) {
  // expected-error @+1 {{'hps.global_max_pool' op result shape [1, 4] does not match the computed shape [1, 4, 1, 1]}}
  %0 = hps.global_max_pool %x : (tensor<1x4x8x8xf32>) -> tensor<1x4xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Normalisation
//===----------------------------------------------------------------------===//

func.func @batch_norm_epsilon(%x: tensor<1x4x8x8xf32>, %s: tensor<4xf32>) {
  // expected-error @+1 {{'hps.batch_norm' op expects 'epsilon' to be non-negative}}
  %0 = hps.batch_norm %x, %s, %s, %s, %s
      {epsilon = -1.0e-5 : f32, momentum = 0.9 : f32}
      : (tensor<1x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>,
         tensor<4xf32>) -> tensor<1x4x8x8xf32>
  return
}

// -----

func.func @batch_norm_rank(%x: tensor<4xf32>, %s: tensor<4xf32>) {
  // expected-error @+1 {{'hps.batch_norm' op expects input of rank at least 2, got rank 1}}
  %0 = hps.batch_norm %x, %s, %s, %s, %s
      {epsilon = 1.0e-5 : f32, momentum = 0.9 : f32}
      : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>,
         tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @batch_norm_scale(%x: tensor<1x4x8x8xf32>, %s: tensor<4xf32>,
                            %t: tensor<3xf32>) {
  // expected-error @+1 {{'hps.batch_norm' op expects 'scale' of shape [4], got [3]}}
  %0 = hps.batch_norm %x, %t, %s, %s, %s
      {epsilon = 1.0e-5 : f32, momentum = 0.9 : f32}
      : (tensor<1x4x8x8xf32>, tensor<3xf32>, tensor<4xf32>, tensor<4xf32>,
         tensor<4xf32>) -> tensor<1x4x8x8xf32>
  return
}

// -----

func.func @batch_norm_bias(%x: tensor<1x4x8x8xf32>, %s: tensor<4xf32>,
                           %t: tensor<3xf32>) {
  // expected-error @+1 {{'hps.batch_norm' op expects 'bias' of shape [4], got [3]}}
  %0 = hps.batch_norm %x, %s, %t, %s, %s
      {epsilon = 1.0e-5 : f32, momentum = 0.9 : f32}
      : (tensor<1x4x8x8xf32>, tensor<4xf32>, tensor<3xf32>, tensor<4xf32>,
         tensor<4xf32>) -> tensor<1x4x8x8xf32>
  return
}

// -----

func.func @batch_norm_mean(%x: tensor<1x4x8x8xf32>, %s: tensor<4xf32>,
                           %t: tensor<3xf32>) {
  // expected-error @+1 {{'hps.batch_norm' op expects 'mean' of shape [4], got [3]}}
  %0 = hps.batch_norm %x, %s, %s, %t, %s
      {epsilon = 1.0e-5 : f32, momentum = 0.9 : f32}
      : (tensor<1x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<3xf32>,
         tensor<4xf32>) -> tensor<1x4x8x8xf32>
  return
}

// -----

// With unknown channels only the rank of the statistics is checked.
func.func @batch_norm_var(%x: tensor<?x?x8x8xf32>, %s: tensor<4xf32>,
                          %t: tensor<1x4xf32>) {
  // expected-error @+1 {{'hps.batch_norm' op expects 'var' of shape [?], got [1, 4]}}
  %0 = hps.batch_norm %x, %s, %s, %s, %t
      {epsilon = 1.0e-5 : f32, momentum = 0.9 : f32}
      : (tensor<?x?x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>,
         tensor<1x4xf32>) -> tensor<?x?x8x8xf32>
  return
}

// -----

func.func @batch_norm_result(%x: tensor<1x4x8x8xf32>, %s: tensor<4xf32>) {
  // expected-error @+1 {{'hps.batch_norm' op result shape [1, 4, 4, 4] does not match the computed shape [1, 4, 8, 8]}}
  %0 = hps.batch_norm %x, %s, %s, %s, %s
      {epsilon = 1.0e-5 : f32, momentum = 0.9 : f32}
      : (tensor<1x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>,
         tensor<4xf32>) -> tensor<1x4x4x4xf32>
  return
}

// -----

func.func @lrn_size(%x: tensor<1x4x8x8xf32>) {
  // expected-error @+1 {{'hps.lrn' op expects 'size' to be positive, got 0}}
  %0 = hps.lrn %x {size = 0 : i64, alpha = 1.0e-4 : f32, beta = 0.75 : f32,
                   bias = 1.0 : f32} : tensor<1x4x8x8xf32>
  return
}

// -----

func.func @lrn_rank(%x: tensor<1x4xf32>) {
  // expected-error @+1 {{'hps.lrn' op expects input of rank at least 3, got rank 2}}
  %0 = hps.lrn %x {size = 5 : i64, alpha = 1.0e-4 : f32, beta = 0.75 : f32,
                   bias = 1.0 : f32} : tensor<1x4xf32>
  return
}

// -----

func.func @arg_max_axis(%x: tensor<2x5xf32>) {
  // expected-error @+1 {{'hps.arg_max' op expects 'axis' in [-2, 1], got 2}}
  %0 = hps.arg_max %x {axis = 2 : i64, keepdims = true,
                       select_last_index = false}
      : (tensor<2x5xf32>) -> tensor<2x1xi64>
  return
}

// -----

func.func @arg_min_result(%x: tensor<2x5xf32>) {
  // expected-error @+1 {{'hps.arg_min' op result shape [2, 1] does not match the computed shape [2]}}
  %0 = hps.arg_min %x {axis = 1 : i64, keepdims = false,
                       select_last_index = false}
      : (tensor<2x5xf32>) -> tensor<2x1xi64>
  return
}

// -----

func.func @lstm_hidden(%x: tensor<3x2x4xf32>, %w: tensor<1x0x4xf32>,
                       %r: tensor<1x0x0xf32>, %b: tensor<1x0xf32>) {
  // expected-error @+1 {{'hps.lstm' op expects a positive 'hidden_size', got 0}}
  %0 = hps.lstm %x, %w, %r, %b {direction = "forward", hidden_size = 0 : i64,
                                linear_before_reset = false}
      : (tensor<3x2x4xf32>, tensor<1x0x4xf32>, tensor<1x0x0xf32>,
         tensor<1x0xf32>) -> tensor<3x1x2x0xf32>
  return
}

// -----

func.func @gru_direction(%x: tensor<3x2x4xf32>, %w: tensor<1x6x4xf32>,
                         %r: tensor<1x6x2xf32>, %b: tensor<1x12xf32>) {
  // expected-error @+1 {{'hps.gru' op expects 'direction' forward, reverse or bidirectional, got 'both'}}
  %0 = hps.gru %x, %w, %r, %b {direction = "both", hidden_size = 2 : i64,
                               linear_before_reset = true}
      : (tensor<3x2x4xf32>, tensor<1x6x4xf32>, tensor<1x6x2xf32>,
         tensor<1x12xf32>) -> tensor<3x1x2x2xf32>
  return
}

// -----

func.func @lstm_weights(%x: tensor<3x2x4xf32>, %w: tensor<1x8x4xf32>,
                        %r: tensor<1x8x2xf32>, %b: tensor<1x16xf32>) {
  // expected-error @+1 {{'hps.lstm' op expects 'weights' of shape [2, 8, 4], got [1, 8, 4]}}
  %0 = hps.lstm %x, %w, %r, %b {direction = "bidirectional",
                                hidden_size = 2 : i64,
                                linear_before_reset = false}
      : (tensor<3x2x4xf32>, tensor<1x8x4xf32>, tensor<1x8x2xf32>,
         tensor<1x16xf32>) -> tensor<3x2x2x2xf32>
  return
}

// -----

func.func @lstm_state(%x: tensor<3x2x4xf32>, %w: tensor<1x8x4xf32>,
                      %r: tensor<1x8x2xf32>, %b: tensor<1x16xf32>,
                      %s: tensor<1x2x2xf32>) {
  // expected-error @+1 {{'hps.lstm' op expects 'initial_state' of shape [2, 2, 2], got [1, 2, 2]}}
  %0 = hps.lstm %x, %w, %r, %b, %s {direction = "forward",
                                    hidden_size = 2 : i64,
                                    linear_before_reset = false}
      : (tensor<3x2x4xf32>, tensor<1x8x4xf32>, tensor<1x8x2xf32>,
         tensor<1x16xf32>, tensor<1x2x2xf32>) -> tensor<3x1x2x2xf32>
  return
}

// -----

func.func @rnn_result(%x: tensor<3x2x4xf32>, %w: tensor<1x2x4xf32>,
                      %r: tensor<1x2x2xf32>, %b: tensor<1x4xf32>) {
  // expected-error @+1 {{'hps.rnn' op result shape [3, 1, 2, 3] does not match the computed shape [3, 1, 2, 2]}}
  %0 = hps.rnn %x, %w, %r, %b {direction = "reverse", hidden_size = 2 : i64,
                               linear_before_reset = false}
      : (tensor<3x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x2xf32>,
         tensor<1x4xf32>) -> tensor<3x1x2x3xf32>
  return
}

// -----

func.func @layer_norm_axis(%x: tensor<2x5x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'hps.layer_norm' op expects 'axis' in [-3, 2], got 3}}
  %0 = hps.layer_norm %x, %g {axis = 3 : i64, epsilon = 1.0e-5 : f32}
      : (tensor<2x5x8xf32>, tensor<8xf32>) -> tensor<2x5x8xf32>
  return
}

// -----

func.func @layer_norm_scale(%x: tensor<2x5x8xf32>, %g: tensor<4x8xf32>) {
  // expected-error @+1 {{'hps.layer_norm' op expects 'scale' of shape [4, 8] to broadcast to the normalised dimensions [5, 8]}}
  %0 = hps.layer_norm %x, %g {axis = 1 : i64, epsilon = 1.0e-5 : f32}
      : (tensor<2x5x8xf32>, tensor<4x8xf32>) -> tensor<2x5x8xf32>
  return
}

// -----

// The bias has more dimensions than the normalised part [8].
func.func @layer_norm_bias(%x: tensor<2x5x8xf32>, %g: tensor<8xf32>,
                           %b: tensor<2x8xf32>) {
  // expected-error @+1 {{'hps.layer_norm' op expects 'bias' of shape [2, 8] to broadcast to the normalised dimensions [8]}}
  %0 = hps.layer_norm %x, %g, %b {axis = 2 : i64, epsilon = 1.0e-5 : f32}
      : (tensor<2x5x8xf32>, tensor<8xf32>, tensor<2x8xf32>)
      -> tensor<2x5x8xf32>
  return
}

// -----

func.func @layer_norm_result(%x: tensor<2x5x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'hps.layer_norm' op result shape [2, 40] does not match the computed shape [2, 5, 8]}}
  %0 = hps.layer_norm %x, %g {axis = -1 : i64, epsilon = 1.0e-5 : f32}
      : (tensor<2x5x8xf32>, tensor<8xf32>) -> tensor<2x40xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// hps.flatten, hps.reshape, hps.transpose
//===----------------------------------------------------------------------===//

// Flatten accepts axis == rank.
func.func @flatten_axis(%x: tensor<2x3x4x5xf32>) {
  // expected-error @+1 {{'hps.flatten' op expects 'axis' in [-4, 4], got 5}}
  %0 = hps.flatten %x {axis = 5 : i64}
      : (tensor<2x3x4x5xf32>) -> tensor<120x1xf32>
  return
}

// -----

func.func @flatten_result(%x: tensor<2x3x4x5xf32>) {
  // expected-error @+1 {{'hps.flatten' op result shape [2, 60] does not match the computed shape [6, 20]}}
  %0 = hps.flatten %x {axis = 2 : i64}
      : (tensor<2x3x4x5xf32>) -> tensor<2x60xf32>
  return
}

// -----

func.func @reshape_value(%x: tensor<2x3x4xf32>) {
  // expected-error @+1 {{'hps.reshape' op expects 'shape' values of at least -1, got -2}}
  %0 = hps.reshape %x {shape = array<i64: 2, -2>, allowzero = false}
      : (tensor<2x3x4xf32>) -> tensor<2x12xf32>
  return
}

// -----

// Found by fuzzing the importer: a shape constant near 2^62 overflowed the
// element count.
func.func @reshape_overflow(%x: tensor<2x3x4xf32>) {
  // expected-error @+1 {{'hps.reshape' op expects a 'shape' whose element count fits in 64 bits}}
  %0 = hps.reshape %x {shape = array<i64: 8, 4611686018427387910>, allowzero = false}
      : (tensor<2x3x4xf32>) -> tensor<2x12xf32>
  return
}

// -----

func.func @reshape_two_inferred(%x: tensor<2x3x4xf32>) {
  // expected-error @+1 {{'hps.reshape' op expects at most one -1 in 'shape'}}
  %0 = hps.reshape %x {shape = array<i64: -1, -1>, allowzero = false}
      : (tensor<2x3x4xf32>) -> tensor<2x12xf32>
  return
}

// -----

func.func @reshape_allowzero(%x: tensor<2x3x4xf32>) {
  // expected-error @+1 {{'hps.reshape' op cannot combine 0 and -1 in 'shape' when 'allowzero' is set}}
  %0 = hps.reshape %x {shape = array<i64: 0, -1>, allowzero = true}
      : (tensor<2x3x4xf32>) -> tensor<0x24xf32>
  return
}

// -----

func.func @reshape_copy_rank(%x: tensor<2x12xf32>) {
  // expected-error @+1 {{'hps.reshape' op 'shape' copies input dimension 2 (value 0) but the input has rank 2}}
  %0 = hps.reshape %x {shape = array<i64: 2, 12, 0>, allowzero = false}
      : (tensor<2x12xf32>) -> tensor<2x12x1xf32>
  return
}

// -----

func.func @reshape_infer(%x: tensor<2x3x4xf32>) {
  // expected-error @+1 {{'hps.reshape' op cannot infer the -1 dimension: 24 elements are not divisible by 5}}
  %0 = hps.reshape %x {shape = array<i64: 5, -1>, allowzero = false}
      : (tensor<2x3x4xf32>) -> tensor<5x5xf32>
  return
}

// -----

func.func @reshape_elements(%x: tensor<2x3x4xf32>) {
  // expected-error @+1 {{'hps.reshape' op expects [5, 5] to hold the 24 elements of the input}}
  %0 = hps.reshape %x {shape = array<i64: 5, 5>, allowzero = false}
      : (tensor<2x3x4xf32>) -> tensor<5x5xf32>
  return
}

// -----

func.func @reshape_result(%x: tensor<2x3x4xf32>) {
  // expected-error @+1 {{'hps.reshape' op result shape [6, 4] does not match the computed shape [4, 6]}}
  %0 = hps.reshape %x {shape = array<i64: 4, -1>, allowzero = false}
      : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  return
}

// -----

func.func @transpose_perm(%x: tensor<2x3x4xf32>) {
  // expected-error @+1 {{'hps.transpose' op expects 'perm' to be a permutation of [0, 3), got [0, 1, 1]}}
  %0 = hps.transpose %x {perm = array<i64: 0, 1, 1>}
      : (tensor<2x3x4xf32>) -> tensor<2x3x3xf32>
  return
}

// -----

func.func @transpose_perm_size(%x: tensor<2x3x4xf32>) {
  // expected-error @+1 {{'hps.transpose' op expects 'perm' to be a permutation of [0, 3), got [1, 0]}}
  %0 = hps.transpose %x {perm = array<i64: 1, 0>}
      : (tensor<2x3x4xf32>) -> tensor<3x2xf32>
  return
}

// -----

func.func @transpose_result(%x: tensor<2x3x4xf32>) {
  // expected-error @+1 {{'hps.transpose' op result shape [4, 3, 2] does not match the computed shape [2, 4, 3]}}
  %0 = hps.transpose %x {perm = array<i64: 0, 2, 1>}
      : (tensor<2x3x4xf32>) -> tensor<4x3x2xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// hps.concat, hps.split
//===----------------------------------------------------------------------===//

// ODS: SameOperandsAndResultElementType wants an operand, so this fires
// before the verifier's own "expects at least one input".
func.func @concat_no_input() {
  // expected-error @+1 {{'hps.concat' op expected 1 or more operands, but found 0}}
  %0 = hps.concat {axis = 0 : i64} : () -> tensor<1xf32>
  return
}

// -----

func.func @concat_axis(%a: tensor<1x2x4xf32>, %b: tensor<1x3x4xf32>) {
  // expected-error @+1 {{'hps.concat' op expects 'axis' in [-3, 2], got 3}}
  %0 = hps.concat %a, %b {axis = 3 : i64}
      : (tensor<1x2x4xf32>, tensor<1x3x4xf32>) -> tensor<1x5x4xf32>
  return
}

// -----

func.func @concat_rank(%a: tensor<1x2x4xf32>, %b: tensor<3x4xf32>) {
  // expected-error @+1 {{'hps.concat' op expects all inputs to have rank 3, input 1 has rank 2}}
  %0 = hps.concat %a, %b {axis = 1 : i64}
      : (tensor<1x2x4xf32>, tensor<3x4xf32>) -> tensor<1x5x4xf32>
  return
}

// -----

func.func @concat_size(%a: tensor<1x2x4xf32>, %b: tensor<1x3x5xf32>) {
  // expected-error @+1 {{'hps.concat' op expects input 1 to have size 4 in dimension 2 like the first ranked input, got 5}}
  %0 = hps.concat %a, %b {axis = 1 : i64}
      : (tensor<1x2x4xf32>, tensor<1x3x5xf32>) -> tensor<1x5x4xf32>
  return
}

// -----

func.func @concat_result(%a: tensor<1x2x4xf32>, %b: tensor<1x3x4xf32>) {
  // expected-error @+1 {{'hps.concat' op result shape [1, 6, 4] does not match the computed shape [1, 5, 4]}}
  %0 = hps.concat %a, %b {axis = -2 : i64}
      : (tensor<1x2x4xf32>, tensor<1x3x4xf32>) -> tensor<1x6x4xf32>
  return
}

// -----

func.func @split_count(%x: tensor<1x6x4xf32>) {
  // expected-error @+1 {{'hps.split' op expects 'split' to have one size per result (2), got 3}}
  %0:2 = hps.split %x {axis = 1 : i64, split = array<i64: 2, 2, 2>}
      : (tensor<1x6x4xf32>) -> (tensor<1x2x4xf32>, tensor<1x4x4xf32>)
  return
}

// -----

func.func @split_negative(%x: tensor<1x6x4xf32>) {
  // expected-error @+1 {{'hps.split' op expects 'split' values to be non-negative, got [-1, 7]}}
  %0:2 = hps.split %x {axis = 1 : i64, split = array<i64: -1, 7>}
      : (tensor<1x6x4xf32>) -> (tensor<1x2x4xf32>, tensor<1x4x4xf32>)
  return
}

// -----

func.func @split_axis(%x: tensor<1x6x4xf32>) {
  // expected-error @+1 {{'hps.split' op expects 'axis' in [-3, 2], got -4}}
  %0:2 = hps.split %x {axis = -4 : i64, split = array<i64: 2, 4>}
      : (tensor<1x6x4xf32>) -> (tensor<1x2x4xf32>, tensor<1x4x4xf32>)
  return
}

// -----

func.func @split_sum(%x: tensor<1x6x4xf32>) {
  // expected-error @+1 {{'hps.split' op expects 'split' sizes to add up to dimension 1 of the input (6), got 5}}
  %0:2 = hps.split %x {axis = 1 : i64, split = array<i64: 2, 3>}
      : (tensor<1x6x4xf32>) -> (tensor<1x2x4xf32>, tensor<1x3x4xf32>)
  return
}

// -----

func.func @split_result(%x: tensor<1x6x4xf32>) {
  // expected-error @+1 {{'hps.split' op result shape [1, 3, 4] does not match the computed shape [1, 4, 4]}}
  %0:2 = hps.split %x {axis = 1 : i64, split = array<i64: 2, 4>}
      : (tensor<1x6x4xf32>) -> (tensor<1x2x4xf32>, tensor<1x3x4xf32>)
  return
}

// -----

//===----------------------------------------------------------------------===//
// hps.slice, hps.squeeze, hps.unsqueeze
//===----------------------------------------------------------------------===//

func.func @slice_lengths(%x: tensor<10x20xf32>) {
  // expected-error @+1 {{'hps.slice' op expects 'starts', 'ends', 'axes' and 'steps' to have the same length}}
  %0 = hps.slice %x {starts = array<i64: 0, 0>, ends = array<i64: 5>,
                     axes = array<i64: 0>, steps = array<i64: 1>}
      : (tensor<10x20xf32>) -> tensor<5x20xf32>
  return
}

// -----

func.func @slice_step_zero(%x: tensor<10x20xf32>) {
  // expected-error @+1 {{'hps.slice' op expects 'steps' values to be non-zero}}
  %0 = hps.slice %x {starts = array<i64: 0>, ends = array<i64: 5>,
                     axes = array<i64: 0>, steps = array<i64: 0>}
      : (tensor<10x20xf32>) -> tensor<5x20xf32>
  return
}

// -----

func.func @slice_axis(%x: tensor<10x20xf32>) {
  // expected-error @+1 {{'hps.slice' op expects 'axes' in [-2, 1], got 2}}
  %0 = hps.slice %x {starts = array<i64: 0>, ends = array<i64: 5>,
                     axes = array<i64: 2>, steps = array<i64: 1>}
      : (tensor<10x20xf32>) -> tensor<10x20xf32>
  return
}

// -----

// Axes 1 and -1 name the same axis of a rank-2 input.
func.func @slice_axis_twice(%x: tensor<10x20xf32>) {
  // expected-error @+1 {{'hps.slice' op expects 'axes' to name each axis once, got axis 1 twice}}
  %0 = hps.slice %x {starts = array<i64: 0, 0>, ends = array<i64: 5, 5>,
                     axes = array<i64: 1, -1>, steps = array<i64: 1, 1>}
      : (tensor<10x20xf32>) -> tensor<10x5xf32>
  return
}

// -----

// Backwards from the last row with step -3 selects rows 9, 6, 3 and 0.
func.func @slice_result(%x: tensor<10x20xf32>) {
  // expected-error @+1 {{'hps.slice' op result shape [3, 20] does not match the computed shape [4, 20]}}
  %0 = hps.slice %x {starts = array<i64: -1>, ends = array<i64: -100>,
                     axes = array<i64: 0>, steps = array<i64: -3>}
      : (tensor<10x20xf32>) -> tensor<3x20xf32>
  return
}

// -----

func.func @squeeze_size(%x: tensor<1x3x1x4xf32>) {
  // expected-error @+1 {{'hps.squeeze' op cannot squeeze dimension 1 of size 3}}
  %0 = hps.squeeze %x {axes = array<i64: 1>}
      : (tensor<1x3x1x4xf32>) -> tensor<1x1x4xf32>
  return
}

// -----

func.func @squeeze_axis(%x: tensor<1x3x1x4xf32>) {
  // expected-error @+1 {{'hps.squeeze' op expects 'axes' in [-4, 3], got -5}}
  %0 = hps.squeeze %x {axes = array<i64: -5>}
      : (tensor<1x3x1x4xf32>) -> tensor<3x1x4xf32>
  return
}

// -----

func.func @squeeze_axis_twice(%x: tensor<1x3x1x4xf32>) {
  // expected-error @+1 {{'hps.squeeze' op expects 'axes' to name each axis once, got axis 2 twice}}
  %0 = hps.squeeze %x {axes = array<i64: 2, -2>}
      : (tensor<1x3x1x4xf32>) -> tensor<1x3x4xf32>
  return
}

// -----

func.func @squeeze_result(%x: tensor<1x3x1x4xf32>) {
  // expected-error @+1 {{'hps.squeeze' op result shape [1, 3, 4] does not match the computed shape [3, 4]}}
  %0 = hps.squeeze %x {axes = array<i64>}
      : (tensor<1x3x1x4xf32>) -> tensor<1x3x4xf32>
  return
}

// -----

// Unsqueeze axes index the output, of rank 3 here.
func.func @unsqueeze_axis(%x: tensor<3x4xf32>) {
  // expected-error @+1 {{'hps.unsqueeze' op expects 'axes' in [-3, 2], got 3}}
  %0 = hps.unsqueeze %x {axes = array<i64: 3>}
      : (tensor<3x4xf32>) -> tensor<3x4x1xf32>
  return
}

// -----

func.func @unsqueeze_axis_twice(%x: tensor<3x4xf32>) {
  // expected-error @+1 {{'hps.unsqueeze' op expects 'axes' to name each axis once, got axis 0 twice}}
  %0 = hps.unsqueeze %x {axes = array<i64: 0, -4>}
      : (tensor<3x4xf32>) -> tensor<1x1x3x4xf32>
  return
}

// -----

func.func @unsqueeze_result(%x: tensor<3x4xf32>) {
  // expected-error @+1 {{'hps.unsqueeze' op result shape [1, 3, 4] does not match the computed shape [3, 1, 4]}}
  %0 = hps.unsqueeze %x {axes = array<i64: 1>}
      : (tensor<3x4xf32>) -> tensor<1x3x4xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// hps.pad, hps.gather
//===----------------------------------------------------------------------===//

func.func @pad_mode(%x: tensor<1x3x4x4xf32>) {
  // expected-error @+1 {{'hps.pad' op expects 'mode' to be "constant", "reflect" or "edge", got "wrap"}}
  %0 = hps.pad %x {pads = array<i64: 0, 0, 1, 1, 0, 0, 1, 1>, mode = "wrap",
                   value = 0.0 : f32}
      : (tensor<1x3x4x4xf32>) -> tensor<1x3x6x6xf32>
  return
}

// -----

func.func @pad_count(%x: tensor<1x3x4x4xf32>) {
  // expected-error @+1 {{'hps.pad' op expects 'pads' to have 8 values (begin and end per dimension), got 4}}
  %0 = hps.pad %x {pads = array<i64: 1, 1, 1, 1>, mode = "constant",
                   value = 0.0 : f32}
      : (tensor<1x3x4x4xf32>) -> tensor<1x3x6x6xf32>
  return
}

// -----

func.func @pad_crop(%x: tensor<1x3x4x4xf32>) {
  // expected-error @+1 {{'hps.pad' op expects pads to keep dimension 2 non-negative, got 4 + -3 + -2}}
  %0 = hps.pad %x {pads = array<i64: 0, 0, -3, 0, 0, 0, -2, 0>,
                   mode = "constant", value = 0.0 : f32}
      : (tensor<1x3x4x4xf32>) -> tensor<1x3x0x4xf32>
  return
}

// -----

func.func @pad_result(%x: tensor<1x3x4x4xf32>) {
  // expected-error @+1 {{'hps.pad' op result shape [1, 3, 6, 6] does not match the computed shape [1, 3, 5, 5]}}
  %0 = hps.pad %x {pads = array<i64: 0, 0, 1, 1, 0, 0, 0, 0>,
                   mode = "edge", value = 0.0 : f32}
      : (tensor<1x3x4x4xf32>) -> tensor<1x3x6x6xf32>
  return
}

// -----

func.func @gather_scalar_data(%d: tensor<f32>, %i: tensor<2xi64>) {
  // expected-error @+1 {{'hps.gather' op expects 'data' of rank at least 1}}
  %0 = hps.gather %d, %i {axis = 0 : i64}
      : (tensor<f32>, tensor<2xi64>) -> tensor<2xf32>
  return
}

// -----

func.func @gather_axis(%d: tensor<3x4xf32>, %i: tensor<2xi64>) {
  // expected-error @+1 {{'hps.gather' op expects 'axis' in [-2, 1], got 2}}
  %0 = hps.gather %d, %i {axis = 2 : i64}
      : (tensor<3x4xf32>, tensor<2xi64>) -> tensor<3x4xf32>
  return
}

// -----

func.func @gather_result(%d: tensor<1000x64xf32>, %i: tensor<2x8xi64>) {
  // expected-error @+1 {{'hps.gather' op result shape [16, 64] does not match the computed shape [2, 8, 64]}}
  %0 = hps.gather %d, %i {axis = 0 : i64}
      : (tensor<1000x64xf32>, tensor<2x8xi64>) -> tensor<16x64xf32>
  return
}

// -----

// ODS: indices are i32 or i64.
func.func @gather_indices_type(%d: tensor<3x4xf32>, %i: tensor<2xf32>) {
  // expected-error @+1 {{'hps.gather' op operand #1 must be tensor of 32-bit signless integer or 64-bit signless integer values, but got 'tensor<2xf32>'}}
  %0 = hps.gather %d, %i {axis = 0 : i64}
      : (tensor<3x4xf32>, tensor<2xf32>) -> tensor<2x4xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

func.func @reduce_mean_axis(%x: tensor<1x4x8x8xf32>) {
  // expected-error @+1 {{'hps.reduce_mean' op expects 'axes' in [-4, 3], got 4}}
  %0 = hps.reduce_mean %x {axes = array<i64: 2, 4>, keepdims = true}
      : (tensor<1x4x8x8xf32>) -> tensor<1x4x1x1xf32>
  return
}

// -----

func.func @reduce_sum_axis_twice(%x: tensor<1x4x8x8xf32>) {
  // expected-error @+1 {{'hps.reduce_sum' op expects 'axes' to name each axis once, got axis 3 twice}}
  %0 = hps.reduce_sum %x {axes = array<i64: 3, -1>, keepdims = true}
      : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x1xf32>
  return
}

// -----

func.func @reduce_mean_result(%x: tensor<1x4x8x8xf32>) {
  // expected-error @+1 {{'hps.reduce_mean' op result shape [1, 4] does not match the computed shape [1, 4, 1, 1]}}
  %0 = hps.reduce_mean %x {axes = array<i64: 2, 3>, keepdims = true}
      : (tensor<1x4x8x8xf32>) -> tensor<1x4xf32>
  return
}

// -----

// Empty axes reduce everything.
func.func @reduce_sum_result(%x: tensor<1x4x8x8xf32>) {
  // expected-error @+1 {{'hps.reduce_sum' op result shape [1] does not match the computed shape []}}
  %0 = hps.reduce_sum %x {axes = array<i64>, keepdims = false}
      : (tensor<1x4x8x8xf32>) -> tensor<1xf32>
  return
}

// -----

func.func @reduce_max_axis_twice(%x: tensor<2x4x8xf32>) {
  // expected-error @+1 {{'hps.reduce_max' op expects 'axes' to name each axis once, got axis 0 twice}}
  %0 = hps.reduce_max %x {axes = array<i64: 0, -3>, keepdims = false}
      : (tensor<2x4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @reduce_min_result(%x: tensor<2x4x8xf32>) {
  // expected-error @+1 {{'hps.reduce_min' op result shape [2, 1, 8] does not match the computed shape [2, 8]}}
  %0 = hps.reduce_min %x {axes = array<i64: 1>, keepdims = false}
      : (tensor<2x4x8xf32>) -> tensor<2x1x8xf32>
  return
}

// -----

// I64Attr values are signed: a negative size is rejected as negative.
func.func @lrn_negative_size(%x: tensor<1x4x8x8xf32>) {
  // expected-error @+1 {{'hps.lrn' op expects 'size' to be positive, got -1}}
  %0 = hps.lrn %x {size = -1 : i64, alpha = 1.0e-4 : f32, beta = 0.75 : f32,
                   bias = 1.0 : f32} : tensor<1x4x8x8xf32>
  return
}

// -----

// With an unranked input the weight's rank is still checked.
func.func @conv_unranked_input_weight_rank(%x: tensor<*xf32>, %w: tensor<4x3xf32>) {
  // expected-error @+1 {{'hps.conv' op expects weight of rank 3 to 5, got rank 2}}
  %0 = hps.conv %x, %w {strides = array<i64>, dilations = array<i64>,
                        pads = array<i64>, group = 1 : i64}
      : (tensor<*xf32>, tensor<4x3xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @conv_transpose_group(%x: tensor<1x3x5xf32>, %w: tensor<3x2x3xf32>) {
  // expected-error @+1 {{'hps.conv_transpose' op expects input channels (3) to be divisible by group (2)}}
  %0 = hps.conv_transpose %x, %w {strides = array<i64: 1>,
      dilations = array<i64: 1>, pads = array<i64: 0, 0>,
      output_padding = array<i64: 0>, group = 2 : i64}
      : (tensor<1x3x5xf32>, tensor<3x2x3xf32>) -> tensor<1x4x7xf32>
  return
}

// -----

// An unranked input does not hide a mismatch between the ranked ones.
func.func @concat_unranked_mixed(%a: tensor<1x2x4xf32>, %u: tensor<*xf32>,
                                 %b: tensor<1x3x5xf32>) {
  // expected-error @+1 {{'hps.concat' op expects input 2 to have size 4 in dimension 2 like the first ranked input, got 5}}
  %0 = hps.concat %a, %u, %b {axis = 1 : i64}
      : (tensor<1x2x4xf32>, tensor<*xf32>, tensor<1x3x5xf32>) -> tensor<7x7xf32>
  return
}

// -----

func.func @pow_result_type(%a: tensor<4xf32>, %b: tensor<4xi64>) {
  // expected-error @+1 {{'hps.pow' op expects the result element type to be the base's ('f32')}}
  %0 = hps.pow %a, %b : (tensor<4xf32>, tensor<4xi64>) -> tensor<4xi8>
  return
}

// -----

// Scale broadcasts to the normalised dimensions, never the other way.
func.func @layer_norm_scale_grows(%x: tensor<2x1xf32>, %s: tensor<4xf32>) {
  // expected-error @+1 {{'hps.layer_norm' op expects 'scale' of shape [4] to broadcast to the normalised dimensions [1]}}
  %0 = hps.layer_norm %x, %s {axis = 1 : i64, epsilon = 1.0e-5 : f32}
      : (tensor<2x1xf32>, tensor<4xf32>) -> tensor<2x1xf32>
  return
}

// -----

func.func @layer_norm_epsilon(%x: tensor<2x4xf32>, %s: tensor<4xf32>) {
  // expected-error @+1 {{'hps.layer_norm' op expects 'epsilon' to be non-negative, got -1}}
  %0 = hps.layer_norm %x, %s {axis = 1 : i64, epsilon = -1.0 : f32}
      : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  return
}

// -----

func.func @reshape_zero_and_infer(%x: tensor<0x4xf32>) {
  // expected-error @+1 {{'hps.reshape' op cannot infer the -1 dimension next to a dimension of size 0}}
  %0 = hps.reshape %x {shape = array<i64: 0, -1>, allowzero = false}
      : (tensor<0x4xf32>) -> tensor<0x4xf32>
  return
}

// -----

func.func @stage_unsigned(%x: tensor<2xf32>) {
  // expected-error @+1 {{'hps.stage' must be a non-negative integer}}
  %0 = hps.relu %x {hps.device = #hps.device<"cpu">, hps.stage = 1 : ui8} : tensor<2xf32>
  return
}

// -----

// expected-error @+1 {{'hps.opset' must be an integer on the module}}
module attributes {hps.opset = "thirteen"} {
}

// -----

// expected-error @+1 {{'hps.source' must be a string on the module}}
module attributes {hps.source = 7 : i64} {
}

// -----

// expected-error @+1 {{unknown hps argument attribute 'hps.bogus'}}
func.func @arg_attr(%x: tensor<2xf32> {hps.bogus = 1 : i64}) {
  return
}

// -----

// expected-error @+1 {{'hps.name' must be a string}}
func.func @result_attr(%x: tensor<2xf32>) -> (tensor<2xf32> {hps.name = 3 : i64}) {
  return %x : tensor<2xf32>
}

// -----

// expected-error @+1 {{unknown hps result attribute 'hps.device'}}
func.func @result_device(%x: tensor<2xf32>) -> (tensor<2xf32> {hps.device = #hps.device<"v100">}) {
  return %x : tensor<2xf32>
}

// -----

func.func @cost_negative(%x: tensor<2xf32>) {
  // expected-error @+1 {{'oct' and 'odt' must be non-negative}}
  %0 = hps.relu %x {hps.costs = {cpu = #hps.cost<oct = -1.0, odt = 0.0, alpha = 0.5, beta = 0.5, b0 = 1.0>}} : tensor<2xf32>
  return
}

// -----

func.func @cost_fraction(%x: tensor<2xf32>) {
  // expected-error @+1 {{'alpha' and 'beta' must be in [0, 1]}}
  %0 = hps.relu %x {hps.costs = {cpu = #hps.cost<oct = 1.0, odt = 0.0, alpha = 1.5, beta = 0.5, b0 = 1.0>}} : tensor<2xf32>
  return
}

// -----

func.func @cost_b0(%x: tensor<2xf32>) {
  // expected-error @+1 {{'b0' must be positive}}
  %0 = hps.relu %x {hps.costs = {cpu = #hps.cost<oct = 1.0, odt = 0.0, alpha = 0.5, beta = 0.5, b0 = 0.0>}} : tensor<2xf32>
  return
}

// -----

func.func @costs_not_cost(%x: tensor<2xf32>) {
  // expected-error @+1 {{'hps.costs' must map device type names to #hps.cost}}
  %0 = hps.relu %x {hps.costs = {cpu = 1.0 : f64}} : tensor<2xf32>
  return
}

// -----

// expected-error @+1 {{'hps.cluster' must be a #hps.cluster on the module}}
module attributes {hps.cluster = "/tmp/spec.yaml"} {
}

// -----

// expected-error @+1 {{'device_types' must list at least one device type}}
module attributes {hps.cluster = #hps.cluster<device_types = [], batch_size = 1, samples_per_epoch = 1, epochs = 1, throughput_limit = 0.0>} {
}

// -----

// expected-error @+1 {{device type 'cpu' is listed twice}}
module attributes {hps.cluster = #hps.cluster<device_types = [#hps.device_type<name = "cpu", kind = "cpu", price_per_hour = 1.0, max_count = 1, gflops = 1.0, memory_bandwidth_gbs = 1.0, network_bandwidth_gbs = 1.0, alpha = 0.5>, #hps.device_type<name = "cpu", kind = "cpu", price_per_hour = 1.0, max_count = 1, gflops = 1.0, memory_bandwidth_gbs = 1.0, network_bandwidth_gbs = 1.0, alpha = 0.5>], batch_size = 1, samples_per_epoch = 1, epochs = 1, throughput_limit = 0.0>} {
}

// -----

// expected-error @+1 {{'device_types' must hold #hps.device_type attributes}}
module attributes {hps.cluster = #hps.cluster<device_types = [1 : i64], batch_size = 1, samples_per_epoch = 1, epochs = 1, throughput_limit = 0.0>} {
}

// -----

// expected-error @+1 {{'batch_size', 'samples_per_epoch' and 'epochs' must be at least 1}}
module attributes {hps.cluster = #hps.cluster<device_types = [#hps.device_type<name = "cpu", kind = "cpu", price_per_hour = 1.0, max_count = 1, gflops = 1.0, memory_bandwidth_gbs = 1.0, network_bandwidth_gbs = 1.0, alpha = 0.5>], batch_size = 0, samples_per_epoch = 1, epochs = 1, throughput_limit = 0.0>} {
}

// -----

// expected-error @+1 {{'throughput_limit' must be a non-negative number}}
module attributes {hps.cluster = #hps.cluster<device_types = [#hps.device_type<name = "cpu", kind = "cpu", price_per_hour = 1.0, max_count = 1, gflops = 1.0, memory_bandwidth_gbs = 1.0, network_bandwidth_gbs = 1.0, alpha = 0.5>], batch_size = 1, samples_per_epoch = 1, epochs = 1, throughput_limit = -1.0>} {
}

// -----

// expected-error @+1 {{'step' must be training or inference, not 'serving'}}
module attributes {hps.cluster = #hps.cluster<device_types = [#hps.device_type<name = "cpu", kind = "cpu", price_per_hour = 1.0, max_count = 1, gflops = 1.0, memory_bandwidth_gbs = 1.0, network_bandwidth_gbs = 1.0, alpha = 0.5>], batch_size = 1, samples_per_epoch = 1, epochs = 1, throughput_limit = 0.0, step = "serving">} {
}

// -----

// expected-error @+2 {{device type 'tpu0': 'kind' must be cpu or cuda, got 'tpu'}}
// expected-error @+1 {{failed to parse HPS_ClusterAttr parameter 'device_types'}}
module attributes {hps.cluster = #hps.cluster<device_types = [#hps.device_type<name = "tpu0", kind = "tpu", price_per_hour = 1.0, max_count = 1, gflops = 1.0, memory_bandwidth_gbs = 1.0, network_bandwidth_gbs = 1.0, alpha = 0.5>], batch_size = 1, samples_per_epoch = 1, epochs = 1, throughput_limit = 0.0>} {
}

// -----

// expected-error @+2 {{device type 'cpu': 'max_count' must be at least 1}}
// expected-error @+1 {{failed to parse HPS_ClusterAttr parameter 'device_types'}}
module attributes {hps.cluster = #hps.cluster<device_types = [#hps.device_type<name = "cpu", kind = "cpu", price_per_hour = 1.0, max_count = 0, gflops = 1.0, memory_bandwidth_gbs = 1.0, network_bandwidth_gbs = 1.0, alpha = 0.5>], batch_size = 1, samples_per_epoch = 1, epochs = 1, throughput_limit = 0.0>} {
}

// -----

// expected-error @+2 {{device type 'cpu': 'gflops', 'memory_bandwidth_gbs' and 'network_bandwidth_gbs' must be positive}}
// expected-error @+1 {{failed to parse HPS_ClusterAttr parameter 'device_types'}}
module attributes {hps.cluster = #hps.cluster<device_types = [#hps.device_type<name = "cpu", kind = "cpu", price_per_hour = 1.0, max_count = 1, gflops = 0.0, memory_bandwidth_gbs = 1.0, network_bandwidth_gbs = 1.0, alpha = 0.5>], batch_size = 1, samples_per_epoch = 1, epochs = 1, throughput_limit = 0.0>} {
}

// -----

// expected-error @+2 {{device type 'cpu': 'alpha' must be in [0, 1]}}
// expected-error @+1 {{failed to parse HPS_ClusterAttr parameter 'device_types'}}
module attributes {hps.cluster = #hps.cluster<device_types = [#hps.device_type<name = "cpu", kind = "cpu", price_per_hour = 1.0, max_count = 1, gflops = 1.0, memory_bandwidth_gbs = 1.0, network_bandwidth_gbs = 1.0, alpha = 1.5>], batch_size = 1, samples_per_epoch = 1, epochs = 1, throughput_limit = 0.0>} {
}

// -----

// expected-error @+2 {{device type 'cpu': 'price_per_hour' must be a non-negative number}}
// expected-error @+1 {{failed to parse HPS_ClusterAttr parameter 'device_types'}}
module attributes {hps.cluster = #hps.cluster<device_types = [#hps.device_type<name = "cpu", kind = "cpu", price_per_hour = -1.0, max_count = 1, gflops = 1.0, memory_bandwidth_gbs = 1.0, network_bandwidth_gbs = 1.0, alpha = 0.5>], batch_size = 1, samples_per_epoch = 1, epochs = 1, throughput_limit = 0.0>} {
}

// -----

// expected-error @+1 {{'hps.replicas' must be an array of positive integers on the module}}
module attributes {hps.replicas = array<i64: 2, 0>} {
}

// -----

// expected-error @+1 {{'hps.throughput_limit' must be a non-negative float on the module}}
module attributes {hps.throughput_limit = -5.0 : f64} {
}

// -----

// expected-error @+1 {{'hps.search' must be a dictionary with 'strategy', 'search_time_s' and 'evaluations' on the module}}
module attributes {hps.search = {strategy = "rl"}} {
}

// -----

// expected-error @+1 {{'hps.search' entry 'gap' must be a float}}
module attributes {hps.search = {strategy = "rl", search_time_s = 1.0 : f64, evaluations = 10 : i64, gap = "small"}} {
}

//===----------------------------------------------------------------------===//
// Run-time shapes, index tensors and masks (DynamicShapeOps.cpp)
//===----------------------------------------------------------------------===//

// -----

func.func @dynamic_reshape_count(%x: tensor<2x6xf32>, %s: tensor<2xi64>) {
  // expected-error @+1 {{result [4, 4] does not hold the 12 elements of the input}}
  %0 = hps.dynamic_reshape %x, %s {allowzero = false} : (tensor<2x6xf32>, tensor<2xi64>) -> tensor<4x4xf32>
  return
}

// -----

func.func @dynamic_reshape_type(%x: tensor<2x6xf32>, %s: tensor<2xi64>) {
  // expected-error @+1 {{changes the element type}}
  %0 = hps.dynamic_reshape %x, %s {allowzero = false} : (tensor<2x6xf32>, tensor<2xi64>) -> tensor<?x?xi64>
  return
}

// -----

func.func @dynamic_reshape_rank(%x: tensor<2x6xf32>, %s: tensor<3xi64>) {
  // expected-error @+1 {{result of rank 2 for a shape operand of 3 values}}
  %0 = hps.dynamic_reshape %x, %s {allowzero = false} : (tensor<2x6xf32>, tensor<3xi64>) -> tensor<?x?xf32>
  return
}

// -----

func.func @expand_dim(%x: tensor<3x4xf32>, %s: tensor<2xi64>) {
  // expected-error @+1 {{cannot expand dimension 0 of size 3 to 5}}
  %0 = hps.expand %x, %s : (tensor<3x4xf32>, tensor<2xi64>) -> tensor<5x4xf32>
  return
}

// -----

func.func @expand_rank(%x: tensor<3x4xf32>, %s: tensor<3xi64>) {
  // expected-error @+1 {{result of rank 2 for an input of rank 2 and a shape operand of 3 values}}
  %0 = hps.expand %x, %s : (tensor<3x4xf32>, tensor<3xi64>) -> tensor<3x4xf32>
  return
}

// -----

func.func @constant_of_shape_to(%s: tensor<2xi64>) {
  // expected-error @+1 {{result type 'tensor<?x?xf32>' does not match 'to' = 7}}
  %0 = hps.constant_of_shape %s {value = 0.0 : f32, to = 7 : i64} : (tensor<2xi64>) -> tensor<?x?xf32>
  return
}

// -----

func.func @constant_of_shape_code(%s: tensor<2xi64>) {
  // expected-error @+1 {{expects 'to' to be 1 (FLOAT), 7 (INT64) or 9 (BOOL), got 11}}
  %0 = hps.constant_of_shape %s {value = 0.0 : f32, to = 11 : i64} : (tensor<2xi64>) -> tensor<?x?xf32>
  return
}

// -----

func.func @range_types(%a: tensor<i64>, %b: tensor<f32>) {
  // expected-error @+1 {{expects start, limit and delta of one element type}}
  %0 = hps.range %a, %b, %a : (tensor<i64>, tensor<f32>, tensor<i64>) -> tensor<?xi64>
  return
}

// -----

func.func @range_scalars(%a: tensor<2xi64>, %b: tensor<i64>) {
  // expected-error @+1 {{expects scalar start, limit and delta, got shape [2]}}
  %0 = hps.range %a, %b, %b : (tensor<2xi64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  return
}

// -----

func.func @cast_to(%x: tensor<4xi1>) {
  // expected-error @+1 {{result type 'tensor<4xi64>' does not match 'to' = 1}}
  %0 = hps.cast %x {to = 1 : i64} : (tensor<4xi1>) -> tensor<4xi64>
  return
}

// -----

func.func @compare_types(%a: tensor<4xf32>, %b: tensor<4xi64>) {
  // expected-error @+1 {{expects operands of one element type}}
  %0 = hps.less %a, %b : (tensor<4xf32>, tensor<4xi64>) -> tensor<4xi1>
  return
}

// -----

func.func @where_broadcast(%c: tensor<3xi1>, %x: tensor<4xf32>) {
  // expected-error @+1 {{operands of shapes [3], [4] and [4] are not broadcastable}}
  %0 = hps.where %c, %x, %x : (tensor<3xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @trilu_rank(%x: tensor<4xf32>) {
  // expected-error @+1 {{expects an input of rank at least 2, got rank 1}}
  %0 = hps.trilu %x {upper = true} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @cum_sum_axis(%x: tensor<4xf32>, %a: tensor<2xi64>) {
  // expected-error @+1 {{expects a one-element 'axis', got shape [2]}}
  %0 = hps.cum_sum %x, %a {exclusive = false, reverse = false} : (tensor<4xf32>, tensor<2xi64>) -> tensor<4xf32>
  return
}

// -----

func.func @dynamic_slice_counts(%x: tensor<4x4xf32>, %a: tensor<1xi64>, %b: tensor<2xi64>) {
  // expected-error @+1 {{expects as many ends, axes and steps as starts (1), got 2}}
  %0 = hps.dynamic_slice %x, %a, %b, %a, %a : (tensor<4x4xf32>, tensor<1xi64>, tensor<2xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x4xf32>
  return
}

// -----

func.func @dynamic_pad_count(%x: tensor<4x4xf32>, %p: tensor<2xi64>) {
  // expected-error @+1 {{expects 4 pads (begin and end per dimension), got 2}}
  %0 = hps.dynamic_pad %x, %p {mode = "constant"} : (tensor<4x4xf32>, tensor<2xi64>) -> tensor<?x?xf32>
  return
}

// -----

func.func @dim_names_per_dim(%x: tensor<2x3xf32> {hps.dim_names = ["batch"]}) {
  // expected-error @-1 {{'hps.dim_names' of argument 0 needs one name per dimension of 'tensor<2x3xf32>'}}
  return
}

// -----

func.func @mod_floats_without_fmod(%a: tensor<4xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{of floats needs fmod (the dividend's sign)}}
  %0 = hps.mod %a, %b {fmod = false} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @mod_not_broadcastable(%a: tensor<4xi64>, %b: tensor<3xi64>) {
  // expected-error @+1 {{operands of shapes [4] and [3] are not broadcastable}}
  %0 = hps.mod %a, %b {fmod = false} : (tensor<4xi64>, tensor<3xi64>) -> tensor<4xi64>
  return
}

// -----

func.func @scatter_nd_reduction(%d: tensor<4x8xf32>, %i: tensor<2x1xi64>, %u: tensor<2x8xf32>) {
  // expected-error @+1 {{expects reduction none, add, mul, max or min, got 'sum'}}
  %0 = hps.scatter_nd %d, %i, %u {reduction = "sum"} : (tensor<4x8xf32>, tensor<2x1xi64>, tensor<2x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @scatter_nd_rows_too_long(%d: tensor<4x8xf32>, %i: tensor<2x3xi64>, %u: tensor<2xf32>) {
  // expected-error @+1 {{index rows of length 3 do not fit data of rank 2}}
  %0 = hps.scatter_nd %d, %i, %u {reduction = "none"} : (tensor<4x8xf32>, tensor<2x3xi64>, tensor<2xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @scatter_nd_updates(%d: tensor<4x8xf32>, %i: tensor<2x1xi64>, %u: tensor<2x7xf32>) {
  // expected-error @+1 {{expects updates of shape [2, 8], got [2, 7]}}
  %0 = hps.scatter_nd %d, %i, %u {reduction = "none"} : (tensor<4x8xf32>, tensor<2x1xi64>, tensor<2x7xf32>) -> tensor<4x8xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// hps.resize, hps.dynamic_resize
//===----------------------------------------------------------------------===//

func.func @resize_mode(%x: tensor<1x3x4x4xf32>) {
  // expected-error @+1 {{'hps.resize' op expects 'mode' to be "nearest", "linear" or "cubic", got "area"}}
  %0 = hps.resize %x {scales = array<f32: 1.0, 1.0, 2.0, 2.0>,
      sizes = array<i64>, roi = array<f32>, mode = "area",
      coordinate_transformation_mode = "half_pixel",
      nearest_mode = "round_prefer_floor", cubic_coeff_a = -0.75 : f32,
      exclude_outside = false, extrapolation_value = 0.0 : f32}
      : (tensor<1x3x4x4xf32>) -> tensor<1x3x8x8xf32>
  return
}

// -----

func.func @resize_transform(%x: tensor<1x3x4x4xf32>) {
  // expected-error @+1 {{'hps.resize' op has unknown 'coordinate_transformation_mode' "corners"}}
  %0 = hps.resize %x {scales = array<f32: 1.0, 1.0, 2.0, 2.0>,
      sizes = array<i64>, roi = array<f32>, mode = "linear",
      coordinate_transformation_mode = "corners",
      nearest_mode = "round_prefer_floor", cubic_coeff_a = -0.75 : f32,
      exclude_outside = false, extrapolation_value = 0.0 : f32}
      : (tensor<1x3x4x4xf32>) -> tensor<1x3x8x8xf32>
  return
}

// -----

func.func @resize_scale(%x: tensor<1x3x4x4xf32>) {
  // expected-error @+1 {{'hps.resize' op expects positive finite 'scales', got 0.000000e+00 for dimension 2}}
  %0 = hps.resize %x {scales = array<f32: 1.0, 1.0, 0.0, 2.0>,
      sizes = array<i64>, roi = array<f32>, mode = "nearest",
      coordinate_transformation_mode = "asymmetric",
      nearest_mode = "floor", cubic_coeff_a = -0.75 : f32,
      exclude_outside = false, extrapolation_value = 0.0 : f32}
      : (tensor<1x3x4x4xf32>) -> tensor<1x3x0x8xf32>
  return
}

// -----

func.func @resize_result(%x: tensor<1x3x5x5xf32>) {
  // expected-error @+1 {{'hps.resize' op result shape [1, 3, 8, 8] does not match the computed shape [1, 3, 7, 7]}}
  %0 = hps.resize %x {scales = array<f32: 1.0, 1.0, 1.5, 1.5>,
      sizes = array<i64>, roi = array<f32>, mode = "linear",
      coordinate_transformation_mode = "half_pixel",
      nearest_mode = "round_prefer_floor", cubic_coeff_a = -0.75 : f32,
      exclude_outside = false, extrapolation_value = 0.0 : f32}
      : (tensor<1x3x5x5xf32>) -> tensor<1x3x8x8xf32>
  return
}

// -----

func.func @resize_sizes(%x: tensor<?x3x4x4xf32>) {
  // expected-error @+1 {{'hps.resize' op expects 'sizes' to have 4 values (one per dimension), got 2}}
  %0 = hps.resize %x {scales = array<f32: 1.0, 1.0, 1.0, 1.0>,
      sizes = array<i64: 8, 8>, roi = array<f32>, mode = "linear",
      coordinate_transformation_mode = "half_pixel",
      nearest_mode = "round_prefer_floor", cubic_coeff_a = -0.75 : f32,
      exclude_outside = false, extrapolation_value = 0.0 : f32}
      : (tensor<?x3x4x4xf32>) -> tensor<?x3x8x8xf32>
  return
}

// -----

func.func @resize_roi(%x: tensor<1x3x4x4xf32>) {
  // expected-error @+1 {{'hps.resize' op expects 'roi' to have 8 values (begin and end per dimension), got 0}}
  %0 = hps.resize %x {scales = array<f32: 1.0, 1.0, 2.0, 2.0>,
      sizes = array<i64>, roi = array<f32>, mode = "linear",
      coordinate_transformation_mode = "tf_crop_and_resize",
      nearest_mode = "round_prefer_floor", cubic_coeff_a = -0.75 : f32,
      exclude_outside = false, extrapolation_value = 0.0 : f32}
      : (tensor<1x3x4x4xf32>) -> tensor<1x3x8x8xf32>
  return
}

// -----

func.func @dynamic_resize_count(%x: tensor<1x3x4x4xf32>, %s: tensor<2xf32>) {
  // expected-error @+1 {{'hps.dynamic_resize' op expects 4 scales or sizes (one per dimension), got 2}}
  %0 = hps.dynamic_resize %x, %s {mode = "nearest",
      coordinate_transformation_mode = "asymmetric", nearest_mode = "floor",
      cubic_coeff_a = -0.75 : f32, exclude_outside = false,
      extrapolation_value = 0.0 : f32}
      : (tensor<1x3x4x4xf32>, tensor<2xf32>) -> tensor<?x?x?x?xf32>
  return
}

// -----

func.func @dynamic_resize_roi(%x: tensor<1x3x4x4xf32>, %s: tensor<4xi64>) {
  // expected-error @+1 {{'hps.dynamic_resize' op expects a 'roi' operand exactly for "tf_crop_and_resize"}}
  %0 = hps.dynamic_resize %x, %s {mode = "linear",
      coordinate_transformation_mode = "tf_crop_and_resize",
      nearest_mode = "floor", cubic_coeff_a = -0.75 : f32,
      exclude_outside = false, extrapolation_value = 0.0 : f32}
      : (tensor<1x3x4x4xf32>, tensor<4xi64>) -> tensor<?x?x?x?xf32>
  return
}
