#!/usr/bin/env bash
# 3x3 convolutions' weight gradient: oneDNN's direct backward-weights
# against the runtime's own Winograd one (winograd-grad-bench.cpp). Needs a
# build in build/.
# Usage: benchmarks/machine/winograd-grad.sh [THREADS]   (default 2)
exec "$(dirname "$0")/kernel-bench.sh" winograd-grad-bench "$@"
