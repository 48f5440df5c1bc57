// A two-stage plan with the profile's round numbers (B = 20, b0 = 10, so
// every time is scaled by B/b0 = 2). fc1 on gpu (stage 0), relu1 on cpu
// (stage 1).
// RUN: heterps-opt %S/Inputs/two-layers.mlir --hps-annotate-costs="cluster=%S/Inputs/two-types.yaml profile=%S/Inputs/two-types-profile.json" --hps-place="strategy=manual placement=%S/Inputs/fc1-gpu-relu1-cpu.json" --hps-form-stages --hps-provision | FileCheck %s --check-prefix=IR
// RUN: heterps-opt %S/Inputs/two-layers.mlir --hps-annotate-costs="cluster=%S/Inputs/two-types.yaml profile=%S/Inputs/two-types-profile.json" --hps-place="strategy=manual placement=%S/Inputs/fc1-gpu-relu1-cpu.json" --hps-form-stages --hps-provision --hps-report -o /dev/null | FileCheck %s --check-prefix=TEXT
// RUN: heterps-opt %S/Inputs/two-layers.mlir --hps-annotate-costs="cluster=%S/Inputs/two-types.yaml profile=%S/Inputs/two-types-profile.json" --hps-place="strategy=manual placement=%S/Inputs/fc1-gpu-relu1-cpu.json" --hps-form-stages --hps-provision=throughput-limit=60 --hps-report=format=json -o /dev/null | FileCheck %s --check-prefix=JSON60

// Stage 0, gpu, fc1: CT = 0.1*2*(1 - 1 + 1/k) = 0.2/k,
//   DT = 0.2*2*(1 - 0.5 + 0.5/k) = 0.2 + 0.2/k, ET = DT.
// Stage 1, cpu, relu1: CT = 0.1*2/k, DT = 0.1*2/k, ET = 0.2/k.
// Limit 40 (the job's): k = 1 gives 20/0.4 = 50 and 20/0.2 = 100: both 1.
// Throughput = min(50, 100) = 50; total = L*M/50 = 2*1000/50 = 40 s;
// cost = 40 s * ($0.1/s * 1 + $0.01/s * 1) = $4.40.
// IR: module attributes {{{.*}}hps.replicas = array<i64: 1, 1>, hps.throughput_limit = 4.000000e+01 : f64}
// IR: hps.gemm {{.*}}hps.device = #hps.device<"gpu">, hps.stage = 0 : i64
// IR: hps.relu {{.*}}hps.device = #hps.device<"cpu">, hps.stage = 1 : i64

// TEXT: plan: throughput 50.0 samples/s (limit 40.0, met), total time 40.0 s, cost $4.40
// TEXT-NEXT: devices: cpu x1 gpu x1
// TEXT: stage device layers replicas ct_s dt_s et_s samples/s layers
// TEXT-NEXT: 0 gpu 1 1 2.000E-01 4.000E-01 4.000E-01 50.0 fc1
// TEXT-NEXT: 1 cpu 1 1 2.000E-01 2.000E-01 2.000E-01 100.0 relu1
// TEXT: layer kind flops param_bytes stage device oct_s@cpu odt_s@cpu oct_s@gpu odt_s@gpu
// TEXT-NEXT: fc1 fc 2000 4000 0 gpu 4.000E-01 1.000E-01 1.000E-01 2.000E-01
// TEXT-NEXT: relu1 activation 10 0 1 cpu 1.000E-01 1.000E-01 1.000E-02 5.000E-02

// Limit 60: stage 0 needs 20/(0.2 + 0.2/k) >= 60, i.e. k >= 1.5, so k = 2
// (ET 0.3, 66.67 samples/s); stage 1 keeps k = 1 (100). Throughput 66.67;
// total = 2000/66.67 = 30 s; cost = 30 * (0.1*2 + 0.01*1) = $6.30.
// The whole JSON document, keys in order (llvm::json sorts them and prints
// doubles with 17 significant digits, hence the regexes).
// JSON60: {
// JSON60-NEXT:   "cost": 6.3{{[0-9]*}},
// JSON60-NEXT:   "device_types": [
// JSON60-NEXT:     {
// JSON60-NEXT:       "kind": "cpu",
// JSON60-NEXT:       "max_count": 4,
// JSON60-NEXT:       "name": "cpu",
// JSON60-NEXT:       "price_per_hour": 36
// JSON60-NEXT:     },
// JSON60-NEXT:     {
// JSON60-NEXT:       "kind": "cuda",
// JSON60-NEXT:       "max_count": 2,
// JSON60-NEXT:       "name": "gpu",
// JSON60-NEXT:       "price_per_hour": 360
// JSON60-NEXT:     }
// JSON60-NEXT:   ],
// JSON60-NEXT:   "devices": {
// JSON60-NEXT:     "cpu": 1,
// JSON60-NEXT:     "gpu": 2
// JSON60-NEXT:   },
// JSON60-NEXT:   "feasible": true,
// JSON60-NEXT:   "job": {
// JSON60-NEXT:     "batch_size": 20,
// JSON60-NEXT:     "epochs": 2,
// JSON60-NEXT:     "samples_per_epoch": 1000,
// JSON60-NEXT:     "step": "training",
// JSON60-NEXT:     "throughput_limit": 60
// JSON60-NEXT:   },
// JSON60-NEXT:   "layers": [
// JSON60-NEXT:     {
// JSON60-NEXT:       "activation_bytes": 440,
// JSON60-NEXT:       "costs": {
// JSON60-NEXT:         "cpu": {
// JSON60-NEXT:           "alpha": 0.5,
// JSON60-NEXT:           "b0": 10,
// JSON60-NEXT:           "beta": 0,
// JSON60-NEXT:           "oct_s": 0.4{{0*[0-9]*}},
// JSON60-NEXT:           "odt_s": 0.1{{0*[0-9]*}}
// JSON60-NEXT:         },
// JSON60-NEXT:         "gpu": {
// JSON60-NEXT:           "alpha": 1,
// JSON60-NEXT:           "b0": 10,
// JSON60-NEXT:           "beta": 0.5,
// JSON60-NEXT:           "oct_s": 0.1{{0*[0-9]*}},
// JSON60-NEXT:           "odt_s": 0.2{{0*[0-9]*}}
// JSON60-NEXT:         }
// JSON60-NEXT:       },
// JSON60-NEXT:       "flops": 2000,
// JSON60-NEXT:       "kind": "fc",
// JSON60-NEXT:       "name": "fc1",
// JSON60-NEXT:       "param_bytes": 4000
// JSON60-NEXT:     },
// JSON60:       "name": "relu1",
// JSON60:   "stages": [
// JSON60-NEXT:     {
// JSON60-NEXT:       "ct_s": 0.1{{0*[0-9]*}},
// JSON60-NEXT:       "device_type": "gpu",
// JSON60-NEXT:       "dt_s": {{0.3[0-9]*|0.29999[0-9]*}},
// JSON60-NEXT:       "et_s": {{0.3[0-9]*|0.29999[0-9]*}},
// JSON60-NEXT:       "index": 0,
// JSON60-NEXT:       "layers": [
// JSON60-NEXT:         "fc1"
// JSON60-NEXT:       ],
// JSON60-NEXT:       "replicas": 2,
// JSON60-NEXT:       "throughput": 66.66{{[0-9]*}}
// JSON60-NEXT:     },
// JSON60-NEXT:     {
// JSON60-NEXT:       "ct_s": 0.2{{0*[0-9]*}},
// JSON60-NEXT:       "device_type": "cpu",
// JSON60-NEXT:       "dt_s": 0.2{{0*[0-9]*}},
// JSON60-NEXT:       "et_s": 0.2{{0*[0-9]*}},
// JSON60-NEXT:       "index": 1,
// JSON60-NEXT:       "layers": [
// JSON60-NEXT:         "relu1"
// JSON60-NEXT:       ],
// JSON60-NEXT:       "replicas": 1,
// JSON60-NEXT:       "throughput": 100
// JSON60-NEXT:     }
// JSON60-NEXT:   ],
// JSON60-NEXT:   "throughput": 66.66{{[0-9]*}},
// JSON60-NEXT:   "total_time_s": {{30|29.99[0-9]*|30.0[0-9]*}}
// JSON60-NEXT: }
