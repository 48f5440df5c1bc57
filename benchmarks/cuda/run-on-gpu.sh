#!/bin/bash
# On the GPU machine, in the folder make-bundle.sh wrote: unpacks the
# bundle, gives the models random weights, runs the GPU test suite and the
# benchmark (and PyTorch's timings of the same models, when torch is
# there), writing the logs to RESULTS_DIR.
#
# Usage: run-on-gpu.sh RESULTS_DIR [bench options...]
set -uo pipefail
here=$(dirname "$(realpath "$0")")
results=$(realpath -m "$1")
shift
mkdir -p "$results" /tmp/heterps-gpu
tar -C /tmp/heterps-gpu -xJf "$here/bundle.tar.xz"
# CUDA's libraries where the machine keeps them (cuDNN may come with torch).
cudnn=$(dirname "$(find / -name 'libcudnn.so.9' -not -path '/proc/*' \
  2>/dev/null | sort -r | head -1)")
export LD_LIBRARY_PATH=/tmp/heterps-gpu/lib:$cudnn:/usr/local/cuda/lib64
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv \
  | tee "$results/gpu.txt"
for m in "$here"/models/*.onnx; do python3 "$here/weights.py" fill "$m"; done
/tmp/heterps-gpu/bin/HeterPSCUDATests 2>&1 | tee "$results/tests.txt"
/tmp/heterps-gpu/bin/heterps-cuda-bench "$@" "$here"/models/*.pb 2>&1 \
  | tee "$results/bench.txt"
