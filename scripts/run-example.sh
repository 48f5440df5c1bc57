#!/usr/bin/env bash
# The main job on the bundled example: import the Fashion-MNIST CNN from ONNX
# into the hps dialect, print the IR and the per-layer figures, then plan it
# on the HeterPS paper's cluster (convolutions on V100s, the classifier on CPU
# servers), print the plan report, and run the plan: its V100 stage on the
# emulated device (no GPU backend yet), with copies between the two.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/build.sh"
model="$root/examples/models/fashion_cnn.onnx"
echo "== heterps-opt $model"
"$root/build/bin/heterps-opt" "$model"
echo "== heterps-opt $model --hps-layer-stats"
"$root/build/bin/heterps-opt" "$model" --hps-layer-stats -o /dev/null
echo "== plan on examples/clusters/heterps-paper.yaml"
"$root/build/bin/heterps-opt" "$model" \
  --hps-annotate-costs=cluster="$root/examples/clusters/heterps-paper.yaml" \
  --hps-place="strategy=manual placement=$root/examples/placements/fashion_cnn-v100-cpu.json" \
  --hps-form-stages --hps-provision=throughput-limit=200000 \
  --hps-report -o /dev/null
echo "== run the plan, the V100 stage on the emulated device"
"$root/build/bin/heterps-run" "$model" \
  --cluster "$root/examples/clusters/heterps-paper.yaml" \
  --placement "$root/examples/placements/fashion_cnn-v100-cpu.json" \
  --emulate-missing-devices --stream 20 --batch 8
