#!/usr/bin/env bash
# Import benchmark: exports torchvision CNNs (random weights) to ONNX, then
# times `heterps-opt MODEL.onnx` (import + verify + print), checks that the
# printed IR parses and verifies again, and prints a Markdown table.
#
# Usage: benchmarks/import/run.sh [MODEL_DIR]   (default /tmp/heterps-tv-models)
# Needs a build in build/ (scripts/build.sh) and Debian's python3-torch.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
opt="$root/build/bin/heterps-opt"
dir=${1:-/tmp/heterps-tv-models}
models=(alexnet vgg16 resnet18 resnet50 inception_v3 mobilenet_v2
        squeezenet1_0 densenet121 googlenet shufflenet_v2_x1_0)
mkdir -p "$dir"
/usr/bin/python3 "$root/benchmarks/import/export_torchvision.py" "$dir" \
  "${models[@]}" >&2

echo "| model | ONNX size (MB) | hps ops | IR size (KB) | import s (best of 3) | re-parses |"
echo "|---|---:|---:|---:|---:|---|"
for m in "${models[@]}"; do
  onnx="$dir/$m.onnx"
  ir="$dir/$m.mlir"
  best=0
  for _ in 1 2 3; do
    start=$(date +%s%N)
    "$opt" "$onnx" -o "$ir"
    ns=$(($(date +%s%N) - start))
    if ((best == 0 || ns < best)); then best=$ns; fi
  done
  reparse=no
  "$opt" "$ir" -o /dev/null && reparse=yes
  ops=$(grep -c ' = hps\.' "$ir" || true)
  awk -v m="$m" -v onnx="$(stat -c %s "$onnx")" -v ops="$ops" \
      -v ir="$(stat -c %s "$ir")" -v ns="$best" -v ok="$reparse" \
      'BEGIN { printf "| %s | %.1f | %d | %.1f | %.2f | %s |\n",
               m, onnx / 1e6, ops, ir / 1e3, ns / 1e9, ok }'
done
