// RUN: heterps-opt %S/Inputs/two-layers.mlir --hps-annotate-costs=cluster=%S/Inputs/two-types.yaml | FileCheck %s
// RUN: heterps-opt %S/Inputs/two-layers.mlir --hps-annotate-costs="cluster=%S/Inputs/two-types.yaml profile=%S/Inputs/two-types-profile.json" | FileCheck %s --check-prefix=PROFILE
// RUN: sed 's/^  throughput_limit: 40$/&\n  step: inference/' %S/Inputs/two-types.yaml > %t.inference.yaml
// RUN: heterps-opt %S/Inputs/two-layers.mlir --hps-annotate-costs=cluster=%t.inference.yaml | FileCheck %s --check-prefix=INFER

// Analytic costs of a training step for a batch of B = 20 (b0 = 20), see
// docs/cost-model.md.
// fc1 on cpu (1 GFLOP/s, 1 GB/s memory, 1 GB/s network, alpha 0.5):
//   OCT = 3 passes * 2000 FLOPs * 20 / 1e9    = 1.2e-04 s
//   ODT = 3 * 440 B * 20 / 1e9 + 2 * 4000 / 1e9 = 2.64e-05 + 8e-06 = 3.44e-05 s
//   beta = 2.64e-05 / 3.44e-05                  = 0.7674418604651163
// fc1 on gpu (10 GFLOP/s, 10 GB/s memory, 1 GB/s network, alpha 1):
//   OCT = 3 * 2000 * 20 / 1e10 = 1.2e-05; ODT = 2.64e-06 + 8e-06 = 1.064e-05
//   beta = 2.64e-06 / 1.064e-05 = 0.2481203007...
// relu1 (no parameters: 2 passes, and beta = 1): cpu OCT = 2 * 10 * 20 / 1e9
//   = 4e-07, ODT = 3 * 80 * 20 / 1e9 = 4.8e-06; gpu ten times less.
// With `step: inference` the forward alone: one pass, activations written
// once, parameters resident (fc1 on cpu: OCT 4e-05, ODT 8.8e-06).
// The spec itself travels on the module, not its path.
// CHECK: module attributes {hps.cluster = #hps.cluster<device_types = [#hps.device_type<name = "cpu", kind = "cpu", price_per_hour = 36.0, max_count = 4, gflops = 1.0, memory_bandwidth_gbs = 1.0, network_bandwidth_gbs = 1.0, alpha = 0.5>, #hps.device_type<name = "gpu", kind = "cuda", price_per_hour = 360.0, max_count = 2, gflops = 10.0, memory_bandwidth_gbs = 10.0, network_bandwidth_gbs = 1.0, alpha = 1.0>], batch_size = 20, samples_per_epoch = 1000, epochs = 2, throughput_limit = 40.0>}
// CHECK: hps.gemm
// CHECK-SAME: hps.costs = {cpu = #hps.cost<oct = 0.00012, odt = 3.44e-05, alpha = 0.5, beta = 0.7674418604651163, b0 = 20.0>, gpu = #hps.cost<oct = 1.2e-05, odt = 1.064e-05, alpha = 1.0, beta = 0.2481203007518797, b0 = 20.0>}
// CHECK: hps.relu
// CHECK-SAME: hps.costs = {cpu = #hps.cost<oct = 4.0e-07, odt = 4.8e-06, alpha = 0.5, beta = 1.0, b0 = 20.0>, gpu = #hps.cost<oct = 4.0e-08, odt = 4.8e-07, alpha = 1.0, beta = 1.0, b0 = 20.0>}

// INFER: throughput_limit = 40.0, step = "inference">
// INFER: hps.gemm
// INFER-SAME: hps.costs = {cpu = #hps.cost<oct = 4.0e-05, odt = 8.8e-06, alpha = 0.5, beta = 1.0, b0 = 20.0>, gpu = #hps.cost<oct = 4.0e-06, odt = 8.8e-07, alpha = 1.0, beta = 1.0, b0 = 20.0>}
// INFER: hps.relu
// INFER-SAME: hps.costs = {cpu = #hps.cost<oct = 2.0e-07, odt = 1.6e-06, alpha = 0.5, beta = 1.0, b0 = 20.0>, gpu = #hps.cost<oct = 2.0e-08, odt = 1.6e-07, alpha = 1.0, beta = 1.0, b0 = 20.0>}

// The profile's measured values replace the analytic ones.
// PROFILE: hps.gemm
// PROFILE-SAME: hps.costs = {cpu = #hps.cost<oct = 0.4, odt = 0.1, alpha = 0.5, beta = 0.0, b0 = 10.0>, gpu = #hps.cost<oct = 0.1, odt = 0.2, alpha = 1.0, beta = 0.5, b0 = 10.0>}
// PROFILE: hps.relu
// PROFILE-SAME: hps.costs = {cpu = #hps.cost<oct = 0.1, odt = 0.1, alpha = 1.0, beta = 1.0, b0 = 10.0>, gpu = #hps.cost<oct = 0.01, odt = 0.05, alpha = 1.0, beta = 1.0, b0 = 10.0>}
