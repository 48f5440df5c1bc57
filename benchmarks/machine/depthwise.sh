#!/usr/bin/env bash
# Depthwise convolutions: oneDNN's kernels against the runtime's own
# (depthwise-bench.cpp). Needs a build in build/.
# Usage: benchmarks/machine/depthwise.sh [THREADS]   (default 2)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
threads=${1:-2}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
c++ -O2 -std=c++17 -I"$root/lib/Runtime/Backends/CPU" -I"$root/include" \
  -I/usr/lib/llvm-19/include "$here/depthwise-bench.cpp" \
  -o "$work/depthwise-bench" -L"$root/build/lib" \
  -Wl,-rpath,"$root/build/lib" -lHeterPSRuntime -lHeterPSPlanFormat \
  -L/usr/lib/llvm-19/lib -lLLVM -ldnnl
OMP_NUM_THREADS=$threads "$work/depthwise-bench"
