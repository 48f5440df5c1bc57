// RUN: heterps-opt %s --split-input-file --verify-diagnostics --hps-lower-to-runtime=output=%t.pb -o /dev/null

// Element types the runtime has no kernels for are refused.
module {
  // expected-error @+1 {{hps-lower-to-runtime: value 'x' has type 'tensor<4xf64>', which runtime plans do not support (ranked f32, i64 and i1 tensors only)}}
  func.func @main(%x: tensor<4xf64> {hps.name = "x"}) -> tensor<4xf64> {
    return %x : tensor<4xf64>
  }
}
