#!/usr/bin/env bash
# SiLU after a convolution: oneDNN's swish post-op against the runtime's
# own pass (swish-postop.cpp). Needs a build in build/.
# Usage: benchmarks/machine/swish.sh [THREADS]   (default 2)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
threads=${1:-2}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
c++ -O2 -std=c++17 -I"$root/lib/Runtime/Backends/CPU" \
  "$here/swish-postop.cpp" -o "$work/swish-postop" \
  -L"$root/build/lib" -Wl,-rpath,"$root/build/lib" -lHeterPSRuntime -ldnnl
OMP_NUM_THREADS=$threads "$work/swish-postop"
