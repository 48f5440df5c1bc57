#!/usr/bin/env bash
# Depthwise convolutions: oneDNN's kernels against the runtime's own
# (depthwise-bench.cpp). Needs a build in build/.
# Usage: benchmarks/machine/depthwise.sh [THREADS]   (default 2)
exec "$(dirname "$0")/kernel-bench.sh" depthwise-bench "$@"
