#!/usr/bin/env bash
# Plan-report benchmark: real CNNs on the HeterPS paper's cluster. For each
# model, times the whole pipeline (ONNX import, hps-annotate-costs, hps-place,
# hps-form-stages, hps-provision, hps-report) best of 3, and prints the plan
# figures as a Markdown table, for two placements: every layer on V100s, and
# a two-stage split (the first half of the layers on V100s, the rest on CPU
# servers).
#
# Usage: benchmarks/plan/run.sh [MODEL_DIR]   (default /tmp/heterps-tv-models)
# Needs a build in build/ and Debian's python3-torch (for the exports).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
opt="$root/build/bin/heterps-opt"
dir=${1:-/tmp/heterps-tv-models}
spec="$root/examples/clusters/heterps-paper.yaml"
models=(resnet50 inception_v3)
mkdir -p "$dir"
/usr/bin/python3 "$root/benchmarks/import/export_torchvision.py" "$dir" \
  "${models[@]}" >&2

echo "| model | placement | stages | devices | throughput (samples/s) | total time (s) | cost (\$) | pipeline s (best of 3) |"
echo "|---|---|---:|---|---:|---:|---:|---:|"
for m in "${models[@]}"; do
  onnx="$dir/$m.onnx"
  # The two-stage placement: layer names from hps-layer-stats.
  "$opt" "$onnx" --hps-layer-stats="format=json output=$dir/$m.stats.json" \
    -o /dev/null
  /usr/bin/python3 - "$dir/$m.stats.json" "$dir/$m.split.json" <<'PY'
import json, sys
layers = [l["name"] for l in json.load(open(sys.argv[1]))["layers"]]
half = len(layers) // 2
json.dump({n: ("v100" if i < half else "cpu") for i, n in enumerate(layers)},
          open(sys.argv[2], "w"))
PY
  for placement in all-v100 split; do
    if [[ $placement == all-v100 ]]; then
      place=(--hps-place=strategy=all-v100)
    else
      place=(--hps-place="strategy=manual placement=$dir/$m.split.json")
    fi
    best=0
    for _ in 1 2 3; do
      start=$(date +%s%N)
      "$opt" "$onnx" --hps-annotate-costs=cluster="$spec" "${place[@]}" \
        --hps-form-stages --hps-provision \
        --hps-report="format=json output=$dir/$m.$placement.report.json" \
        -o /dev/null
      ns=$(($(date +%s%N) - start))
      if ((best == 0 || ns < best)); then best=$ns; fi
    done
    /usr/bin/python3 - "$dir/$m.$placement.report.json" "$m" "$placement" \
      "$best" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
devices = " ".join(f"{t}x{n}" for t, n in sorted(r["devices"].items()))
print(f"| {sys.argv[2]} | {sys.argv[3]} | {len(r['stages'])} | {devices} | "
      f"{r['throughput']:.1f} | {r['total_time_s']:.0f} | {r['cost']:.2f} | "
      f"{int(sys.argv[4]) / 1e9:.2f} |")
PY
  done
done
