#!/usr/bin/env bash
# Training benchmark: heterps-run --train against PyTorch 1.13 (Debian's
# python3-torch, torchvision) on the Fashion CNN, ResNet-18, AlexNet and
# SqueezeNet, 2 threads each, side by side; see bench.py for the tables.
#
# Usage: benchmarks/training/run.sh [WORK_DIR] [bench.py options]
#   WORK_DIR (default /tmp/heterps-train-bench) caches models and data.
# Needs a build in build/ and dataset-fashion-mnist.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
# A first argument that starts with '-' is an option for bench.py.
work=/tmp/heterps-train-bench
if [[ $# -gt 0 && $1 != -* ]]; then
  work=$1
  shift
fi
exec /usr/bin/python3 "$root/benchmarks/training/bench.py" "$root" "$work" \
  "$@"
