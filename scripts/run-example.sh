#!/usr/bin/env bash
# The main job on the bundled example: import the Fashion-MNIST CNN from ONNX
# into the hps dialect, print the IR and the per-layer figures, plan it on
# the HeterPS paper's cluster (a manual placement, then the RL placer's at a
# throughput floor that needs the V100s), print the plan reports, run the
# manual plan (its V100 stage on the emulated device: no GPU backend yet),
# and train the RL plan as a distributed job of local processes (a
# coordinator, parameter-server shards, a worker per stage replica), ending
# with the measured-versus-predicted step; then the same steps through the
# Python package.
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
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "== rl placement on examples/clusters/heterps-paper.yaml at 1.5M samples/s"
"$root/build/bin/heterps-opt" "$model" \
  --hps-annotate-costs=cluster="$root/examples/clusters/heterps-paper.yaml" \
  --hps-place="strategy=rl throughput-limit=1500000" --hps-form-stages \
  --hps-provision=throughput-limit=1500000 --hps-report \
  --hps-lower-to-runtime=output="$work/fashion_cnn.plan" -o /dev/null
echo "== train that plan as local processes (--distributed=local), V100 stage emulated"
"$root/build/bin/heterps-run" "$work/fashion_cnn.plan" --emulate-missing-devices \
  --train --data fashion-mnist:train --epochs 1 --max-steps 40 --batch 64 \
  --micro-batches 4 --threads 1 --distributed=local
echo "== the same from Python (examples/python_quickstart.py)"
PYTHONPATH="$root/build/python" /usr/bin/python3 \
  "$root/examples/python_quickstart.py" "$root/build/python-example"
