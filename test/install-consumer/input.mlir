func.func @main(%x: tensor<?x16xf32>) -> tensor<?x8xf32> {
  %w = hps.weight "w" : tensor<8x16xf32>
  %0 = hps.gemm %x, %w {alpha = 1.0 : f32, beta = 1.0 : f32, trans_a = false, trans_b = true} : (tensor<?x16xf32>, tensor<8x16xf32>) -> tensor<?x8xf32> loc("fc")
  %1 = hps.relu %0 {hps.device = #hps.device<"cpu">, hps.stage = 0 : i64} : tensor<?x8xf32>
  return %1 : tensor<?x8xf32>
}
