// hps-plan runs the planning passes in one option; hps-report format=html
// draws the plan: a cell per layer coloured by device type in a row per
// stage, the stage times, the single-type baselines and the floor sweep,
// in one file that loads nothing.
// RUN: heterps-opt %S/Inputs/two-layers.mlir --hps-plan="cluster=%S/Inputs/two-types.yaml profile=%S/Inputs/two-types-profile.json strategy=manual placement=%S/Inputs/fc1-gpu-relu1-cpu.json" --hps-report -o /dev/null | FileCheck %s --check-prefix=TEXT
// RUN: heterps-opt %S/Inputs/two-layers.mlir --hps-plan="cluster=%S/Inputs/two-types.yaml profile=%S/Inputs/two-types-profile.json strategy=manual placement=%S/Inputs/fc1-gpu-relu1-cpu.json" --hps-report=format=html -o /dev/null | FileCheck %s --check-prefix=HTML
// RUN: heterps-opt %S/Inputs/two-layers.mlir --hps-plan="cluster=%S/Inputs/two-types.yaml profile=%S/Inputs/two-types-profile.json strategy=manual placement=%S/Inputs/fc1-gpu-relu1-cpu.json" --hps-report=format=html -o /dev/null | FileCheck %s --check-prefix=NOFETCH
// A module without a plan: the report's error, as for the other formats.
// RUN: not heterps-opt %S/Inputs/two-layers.mlir --hps-report=format=html -o /dev/null 2>&1 | FileCheck %s --check-prefix=UNPLANNED
// ... and an existing output file is left as it was.
// RUN: echo earlier > %t.html
// RUN: not heterps-opt %S/Inputs/two-layers.mlir --hps-report="format=html output=%t.html" -o /dev/null 2>/dev/null
// RUN: FileCheck %s --check-prefix=KEPT < %t.html

// The same plan as plan-report.mlir builds pass by pass.
// TEXT: plan: throughput 50.0 samples/s (limit 40.0, met), total time 40.0 s, cost $4.40
// TEXT: 0 gpu 1 1 2.000E-01 4.000E-01 4.000E-01 50.0 fc1
// TEXT: 1 cpu 1 1 2.000E-01 2.000E-01 2.000E-01 100.0 relu1

// HTML: <!DOCTYPE html>
// HTML: Throughput 50.0 samples/s against a floor of 40.0 samples/s: <span class="met">met</span>. Cost $4.40
// HTML: <h2>Layers by stage</h2>
// HTML: <g class="stage" data-stage="0">
// HTML: stage 0: gpu x1, 1 layer</text>
// HTML: compute 200.00 ms, data 400.00 ms, step 400.00 ms</text>
// HTML: <rect class="layer" data-layer="fc1" {{.*}} fill="#E69F00"><title>fc1 (fc): 2.00E+03 FLOPs, 4000 parameter bytes; on gpu compute 100.00 ms, data 200.00 ms</title></rect>
// HTML: <g class="stage" data-stage="1">
// HTML: stage 1: cpu x1, 1 layer</text>
// HTML: <rect class="layer" data-layer="relu1" {{.*}} fill="#0072B2">
// HTML: <svg id="stage-times"
// HTML: 200.00 ms / 400.00 ms, 50.0 samples/s</text>
// HTML: 200.00 ms / 200.00 ms, 100.0 samples/s</text>
// HTML: <table id="baselines">
// HTML: <td class="name">this plan</td><td>$4.40</td><td>50.0 samples/s</td><td class="met">met</td>
// HTML: <td class="name">all on cpu (cpu)</td>
// HTML: <td class="name">all on gpu (cuda)</td>
// HTML: <svg id="floor-sweep"
// HTML: <circle class="this-plan"
// HTML: </body></html>

// NOFETCH-NOT: <script
// NOFETCH-NOT: href=
// NOFETCH-NOT: src=

// UNPLANNED: error: hps-report: {{.*}}
// KEPT: earlier
