#!/usr/bin/env bash
# SiLU after a convolution: oneDNN's swish post-op against the runtime's own pass
# (swish-postop.cpp). Needs a build in build/.
# Usage: benchmarks/machine/swish.sh [THREADS]   (default 2)
exec "$(dirname "$0")/kernel-bench.sh" swish-postop "$@"
