#!/usr/bin/env bash
# Inference benchmark: heterps-run against ONNX Runtime (CPU, from npm) on
# torchvision CNNs at batch 1 and 16, 2 threads each, side by side.
#
# Usage: benchmarks/inference/run.sh [MODEL_DIR] [bench.py options]
#   MODEL_DIR (default /tmp/heterps-tv-models) caches the ONNX exports;
#   onnxruntime-node is installed once into /tmp/heterps-ort.
# Needs a build in build/, node and npm, and Debian's python3-torch.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
# A first argument that starts with '-' is an option for bench.py.
dir=/tmp/heterps-tv-models
if [[ $# -gt 0 && $1 != -* ]]; then
  dir=$1
  shift
fi
ort=/tmp/heterps-ort
models=(alexnet vgg16 resnet18 resnet50 inception_v3 mobilenet_v2
        squeezenet1_0 googlenet)
/usr/bin/python3 "$root/benchmarks/import/export_torchvision.py" "$dir" \
  "${models[@]}" >&2
if [[ ! -d $ort/node_modules/onnxruntime-node ]]; then
  mkdir -p "$ort"
  # --ignore-scripts: the package's install step would try a download.
  (cd "$ort" && npm install --ignore-scripts --no-audit --no-fund \
    onnxruntime-node >&2)
fi
/usr/bin/python3 "$root/benchmarks/inference/bench.py" "$root" "$dir" "$ort" \
  "$@"
