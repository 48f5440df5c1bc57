#!/usr/bin/env bash
# 3x3 convolutions: oneDNN's direct kernel against the runtime's own
# Winograd (winograd-bench.cpp). Needs a build in build/.
# Usage: benchmarks/machine/winograd.sh [THREADS]   (default 2)
exec "$(dirname "$0")/kernel-bench.sh" winograd-bench "$@"
