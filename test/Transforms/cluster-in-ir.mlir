// A module that hps-annotate-costs saved plans, reports and lowers with no
// cluster spec file: the spec travels in its `hps.cluster` attribute.
// RUN: cp %S/Inputs/two-types.yaml %t.yaml
// RUN: heterps-opt %S/Inputs/two-layers.mlir --hps-annotate-costs=cluster=%t.yaml -o %t.mlir
// RUN: cp %S/../../examples/clusters/heterps-paper.yaml %t.paper.yaml
// RUN: heterps-opt %S/../../examples/models/fashion_cnn.onnx --hps-annotate-costs=cluster=%t.paper.yaml -o %t.cnn.mlir
// RUN: rm %t.yaml %t.paper.yaml
// RUN: heterps-opt %t.mlir --hps-place=strategy=all-gpu --hps-form-stages --hps-provision --hps-report -o /dev/null 2>&1 | FileCheck %s
// RUN: heterps-opt %t.cnn.mlir --hps-place=strategy=all-v100 --hps-lower-to-runtime=output=- -o /dev/null | FileCheck %s --check-prefix=PLAN

// CHECK: plan: throughput 1661129.6 samples/s (limit 40.0, met)
// CHECK: devices: gpu x1
// CHECK: hps.gemm {{.*}} 1.200E-04    3.440E-05    1.200E-05    1.064E-05

// PLAN: device_types {
// PLAN-NEXT: name: "cpu"
// PLAN-NEXT: kind: "cpu"
// PLAN: name: "v100"
// PLAN-NEXT: kind: "cuda"
