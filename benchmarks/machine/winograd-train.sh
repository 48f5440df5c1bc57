#!/usr/bin/env bash
# Grouped 3x3 convolutions trained: oneDNN's direct forward, backward-data
# and backward-weights against the runtime's own Winograd ones
# (winograd-train-bench.cpp). Needs a build in build/.
# Usage: benchmarks/machine/winograd-train.sh [THREADS]   (default 2)
exec "$(dirname "$0")/kernel-bench.sh" winograd-train-bench "$@"
