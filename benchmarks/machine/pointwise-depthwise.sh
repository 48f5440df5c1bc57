#!/usr/bin/env bash
# A 1x1 convolution then a depthwise one: oneDNN's 1x1 kernel and our own
# depthwise kernel apart, oneDNN's fused depthwise post-op, and our own
# kernel for the pair (pointwise-depthwise-bench.cpp). Needs a build in
# build/.
# Usage: benchmarks/machine/pointwise-depthwise.sh [THREADS]   (default 2)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
threads=${1:-2}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
c++ -O2 -std=c++17 -I"$root/lib/Runtime/Backends/CPU" -I"$root/include" \
  -I/usr/lib/llvm-19/include "$here/pointwise-depthwise-bench.cpp" \
  -o "$work/pointwise-depthwise-bench" -L"$root/build/lib" \
  -Wl,-rpath,"$root/build/lib" -lHeterPSRuntime -lHeterPSPlanFormat \
  -L/usr/lib/llvm-19/lib -lLLVM -ldnnl
OMP_NUM_THREADS=$threads "$work/pointwise-depthwise-bench"
