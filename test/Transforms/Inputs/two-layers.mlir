// A two-layer model shared by the cost-model tests: fc1 (Gemm, 2*10*100 =
// 2000 FLOPs and 440 activation bytes per sample, 4000 parameter bytes) and
// relu1 (10 FLOPs and 80 activation bytes per sample).
func.func @main(%x: tensor<?x100xf32>) -> tensor<?x10xf32> {
  %w = hps.weight "fc1.weight" : tensor<10x100xf32>
  %0 = hps.gemm %x, %w {alpha = 1.0 : f32, beta = 1.0 : f32, trans_a = false, trans_b = true} : (tensor<?x100xf32>, tensor<10x100xf32>) -> tensor<?x10xf32> loc("fc1")
  %1 = hps.relu %0 : tensor<?x10xf32> loc("relu1")
  return %1 : tensor<?x10xf32>
}
