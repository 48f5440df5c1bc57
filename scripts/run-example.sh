#!/usr/bin/env bash
# The main job on the bundled example: import the Fashion-MNIST CNN from ONNX
# into the hps dialect, print the IR and the per-layer cost figures.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/build.sh"
model="$root/examples/models/fashion_cnn.onnx"
echo "== heterps-opt $model"
"$root/build/bin/heterps-opt" "$model"
echo "== heterps-opt $model --hps-layer-stats"
"$root/build/bin/heterps-opt" "$model" --hps-layer-stats -o /dev/null
