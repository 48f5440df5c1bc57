// RUN: heterps-opt %S/Inputs/two-layers.mlir --hps-annotate-costs=cluster=%S/Inputs/two-types.yaml | FileCheck %s
// RUN: heterps-opt %S/Inputs/two-layers.mlir --hps-annotate-costs="cluster=%S/Inputs/two-types.yaml profile=%S/Inputs/two-types-profile.json" | FileCheck %s --check-prefix=PROFILE

// Analytic costs for a batch of B = 20 (b0 = 20), see docs/cost-model.md.
// fc1 on cpu (1 GFLOP/s, 1 GB/s memory, 1 GB/s network, alpha 0.5):
//   OCT = 2000 FLOPs * 20 / 1e9            = 4e-05 s
//   ODT = 440 B * 20 / 1e9 + 2 * 4000 / 1e9 = 8.8e-06 + 8e-06 = 1.68e-05 s
//   beta = 8.8e-06 / 1.68e-05               = 0.5238095238095238
// fc1 on gpu (10 GFLOP/s, 10 GB/s memory, 1 GB/s network, alpha 1):
//   OCT = 2000 * 20 / 1e10 = 4e-06; ODT = 440 * 20 / 1e10 + 8e-06 = 8.88e-06
//   beta = 8.8e-07 / 8.88e-06 = 0.0990990990...
// relu1 (no parameters, so beta = 1): cpu OCT = 10 * 20 / 1e9 = 2e-07,
//   ODT = 80 * 20 / 1e9 = 1.6e-06; gpu ten times less.
// The spec itself travels on the module, not its path.
// CHECK: module attributes {hps.cluster = #hps.cluster<device_types = [#hps.device_type<name = "cpu", kind = "cpu", price_per_hour = 36.0, max_count = 4, gflops = 1.0, memory_bandwidth_gbs = 1.0, network_bandwidth_gbs = 1.0, alpha = 0.5>, #hps.device_type<name = "gpu", kind = "cuda", price_per_hour = 360.0, max_count = 2, gflops = 10.0, memory_bandwidth_gbs = 10.0, network_bandwidth_gbs = 1.0, alpha = 1.0>], batch_size = 20, samples_per_epoch = 1000, epochs = 2, throughput_limit = 40.0>}
// CHECK: hps.gemm
// CHECK-SAME: hps.costs = {cpu = #hps.cost<oct = 4.0e-05, odt = 1.6800000000000002e-05, alpha = 0.5, beta = 0.5238095238095238, b0 = 20.0>, gpu = #hps.cost<oct = 4.0e-06, odt = 8.88e-06, alpha = 1.0, beta = 0.09909909909909911, b0 = 20.0>}
// CHECK: hps.relu
// CHECK-SAME: hps.costs = {cpu = #hps.cost<oct = 2.0e-07, odt = 1.6e-06, alpha = 0.5, beta = 1.0, b0 = 20.0>, gpu = #hps.cost<oct = 2.0e-08, odt = 1.6e-07, alpha = 1.0, beta = 1.0, b0 = 20.0>}

// The profile's measured values replace the analytic ones.
// PROFILE: hps.gemm
// PROFILE-SAME: hps.costs = {cpu = #hps.cost<oct = 0.4, odt = 0.1, alpha = 0.5, beta = 0.0, b0 = 10.0>, gpu = #hps.cost<oct = 0.1, odt = 0.2, alpha = 1.0, beta = 0.5, b0 = 10.0>}
// PROFILE: hps.relu
// PROFILE-SAME: hps.costs = {cpu = #hps.cost<oct = 0.1, odt = 0.1, alpha = 1.0, beta = 1.0, b0 = 10.0>, gpu = #hps.cost<oct = 0.01, odt = 0.05, alpha = 1.0, beta = 1.0, b0 = 10.0>}
