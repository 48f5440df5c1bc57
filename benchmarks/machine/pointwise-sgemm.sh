#!/usr/bin/env bash
# 1x1 convolutions at batch 1 with weights from memory: oneDNN's primitive
# against dnnl_sgemm (pointwise-sgemm-bench.cpp). Needs a build in build/.
# Usage: benchmarks/machine/pointwise-sgemm.sh [THREADS]   (default 2)
exec "$(dirname "$0")/kernel-bench.sh" pointwise-sgemm-bench "$@"
