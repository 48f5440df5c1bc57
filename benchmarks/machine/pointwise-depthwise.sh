#!/usr/bin/env bash
# A 1x1 convolution then a depthwise one: apart, oneDNN's fused post-op, and our own kernel for the pair
# (pointwise-depthwise-bench.cpp). Needs a build in build/.
# Usage: benchmarks/machine/pointwise-depthwise.sh [THREADS]   (default 2)
exec "$(dirname "$0")/kernel-bench.sh" pointwise-depthwise-bench "$@"
