#!/usr/bin/env bash
# Placement benchmark: every strategy against the exact optimum, on real
# CNNs (torchvision, exported to ONNX), a CTR model with large sparse
# embedding tables (make_ctr.py) and synthetic chains of 10-1000 layers.
# The real models are costed analytically on the clusters in clusters/
# (2 and 4 device types) by heterps-opt (hps-annotate-costs, then
# hps-report format=json), and heterps-placement-bench reads those reports.
#
# Usage: benchmarks/placement/run.sh [--quick] [MODEL_DIR]
#   --quick: rl gets 2 s instead of 10 and the chains stop at 50 layers.
#   MODEL_DIR (default /tmp/heterps-tv-models) caches the ONNX files.
# Needs a build in build/ and Debian's python3-torch and python3-onnx.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
opt="$root/build/bin/heterps-opt"
bench="$root/build/bin/heterps-placement-bench"
quick=()
if [[ ${1:-} == --quick ]]; then
  quick=(--quick --rl-seconds 2)
  shift
fi
dir=${1:-/tmp/heterps-tv-models}
models=(alexnet vgg16 inception_v3 resnet50)
mkdir -p "$dir"
/usr/bin/python3 "$root/benchmarks/import/export_torchvision.py" "$dir" \
  "${models[@]}" >&2
[[ -f $dir/ctr.onnx ]] ||
  /usr/bin/python3 "$root/benchmarks/placement/make_ctr.py" "$dir/ctr.onnx"

reports=()
for m in "${models[@]}" ctr; do
  for types in 2 4; do
    json="$dir/$m.$types-types.costs.json"
    "$opt" "$dir/$m.onnx" \
      --hps-annotate-costs="cluster=$root/benchmarks/placement/clusters/$types-types.yaml" \
      --hps-place=strategy=all-cpu --hps-form-stages \
      --hps-report="format=json output=$json" -o /dev/null
    reports+=(--report "$m=$json")
  done
done
"$bench" "${quick[@]}" "${reports[@]}"
