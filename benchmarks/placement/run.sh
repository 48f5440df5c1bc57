#!/usr/bin/env bash
# Placement benchmark: every strategy against the exact optimum, on real
# CNNs (torchvision, exported to ONNX), a CTR model with large sparse
# embedding tables (make_ctr.py), two transformers (a BERT-base-sized
# encoder and a GPT-2-small-sized decoder, benchmarks/transformers/models.py,
# costed per sample at sequence length 128) and synthetic chains of 10-1000
# layers.
# The real models are costed analytically on the clusters in clusters/
# (2 and 4 device types) by heterps-opt (hps-annotate-costs, then
# hps-report format=json), and heterps-placement-bench reads those reports.
#
# Usage: benchmarks/placement/run.sh [--quick] [--models a,b,...] [MODEL_DIR]
#   --quick: rl gets 2 s instead of 10 and the chains stop at 50 layers.
#   --models: a subset of alexnet,vgg16,inception_v3,resnet50,
#   resnext50_32x4d,convnext_tiny,ctr,encoder,decoder (default all).
#   MODEL_DIR (default /tmp/heterps-tv-models) caches the ONNX files.
# Needs a build in build/ and Debian's python3-torch and python3-onnx.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
opt="$root/build/bin/heterps-opt"
bench="$root/build/bin/heterps-placement-bench"
quick=()
models=(alexnet vgg16 inception_v3 resnet50 resnext50_32x4d convnext_tiny ctr
  encoder decoder)
while [[ ${1:-} == --* ]]; do
  case $1 in
  --quick) quick=(--quick --rl-seconds 2) ;;
  --models) IFS=, read -ra models <<<"$2"; shift ;;
  *) echo "run.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
dir=${1:-/tmp/heterps-tv-models}
mkdir -p "$dir"
for m in "${models[@]}"; do
  case $m in
  ctr) [[ -f $dir/ctr.onnx ]] ||
    /usr/bin/python3 "$root/benchmarks/placement/make_ctr.py" "$dir/ctr.onnx" ;;
  encoder | decoder)
    /usr/bin/python3 "$root/benchmarks/transformers/models.py" "$dir" "$m" \
      --size base >&2
    ln -sf "$dir/$m-base.onnx" "$dir/$m.onnx" ;;
  *) /usr/bin/python3 "$root/benchmarks/import/export_torchvision.py" \
    "$dir" "$m" >&2 ;;
  esac
done

reports=()
for m in "${models[@]}"; do
  # Transformers: per sample at sequence length 128 (every shape static).
  dims=()
  [[ $m == encoder || $m == decoder ]] &&
    dims=(--onnx-dim batch=1 --onnx-dim seq=128)
  for types in 2 4; do
    json="$dir/$m.$types-types.costs.json"
    "$opt" "$dir/$m.onnx" "${dims[@]}" \
      --hps-annotate-costs="cluster=$root/benchmarks/placement/clusters/$types-types.yaml" \
      --hps-place=strategy=all-cpu --hps-form-stages \
      --hps-report="format=json output=$json" -o /dev/null
    reports+=(--report "$m=$json")
  done
done
"$bench" "${quick[@]}" "${reports[@]}"
