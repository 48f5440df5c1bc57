#!/usr/bin/env bash
# Inference benchmark: heterps-run against ONNX Runtime (CPU, from npm) on
# torchvision CNNs at batch 1 and 16, 2 threads each, side by side.
#
# Usage: benchmarks/inference/run.sh [MODEL_DIR]
#            [--zoo | --variants | --others] [bench.py options]
#   MODEL_DIR (default /tmp/heterps-tv-models) caches the ONNX exports;
#   onnxruntime-node is installed once into /tmp/heterps-ort. --zoo: every
#   model of export_torchvision.py's zoo instead of the eight the kernels
#   were first tuned on; --variants: its variants (other sizes of the same
#   families, MaxViT), models no kernel was tuned on; --others: models
#   outside torchvision's classifiers (benchmarks/import/other_models.py).
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
export_py=$root/benchmarks/import/export_torchvision.py
models=(alexnet vgg16 resnet18 resnet50 inception_v3 mobilenet_v2
        squeezenet1_0 googlenet)
args=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --zoo)
      read -ra models <<<"$(/usr/bin/python3 "$export_py" --help |
        sed -n 's/^Models: //p')" ;;
    --variants)
      read -ra models <<<"$(/usr/bin/python3 "$export_py" --help |
        sed -n 's/^Variants: //p')" ;;
    --others)
      read -ra models <<<"$(/usr/bin/python3 "$export_py" --help |
        sed -n 's/^Others: //p')" ;;
    --models) IFS=, read -ra models <<<"$2"; shift ;;
    --models=*) IFS=, read -ra models <<<"${1#--models=}" ;;
    *) args+=("$1") ;;
  esac
  shift
done
/usr/bin/python3 "$export_py" "$dir" "${models[@]}" >&2
if [[ ! -d $ort/node_modules/onnxruntime-node ]]; then
  mkdir -p "$ort"
  # --ignore-scripts: the package's install step would try a download.
  (cd "$ort" && npm install --ignore-scripts --no-audit --no-fund \
    onnxruntime-node >&2)
fi
models_csv=$(IFS=,; echo "${models[*]}")
/usr/bin/python3 "$root/benchmarks/inference/bench.py" "$root" "$dir" "$ort" \
  --models "$models_csv" "${args[@]}"
