#!/usr/bin/env bash
# Builds one of this folder's kernel microbenchmarks (NAME.cpp, against the
# runtime's CPU kernels in build/) and runs it on THREADS threads.
# Usage: benchmarks/machine/kernel-bench.sh NAME [THREADS]   (default 2)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
name=${1:?usage: kernel-bench.sh NAME [THREADS]}
threads=${2:-2}
[[ -f "$here/$name.cpp" ]] || { echo "kernel-bench.sh: no $here/$name.cpp" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
c++ -O2 -std=c++17 -I"$root/lib/Runtime/Backends/CPU" -I"$root/include" \
  -I/usr/lib/llvm-19/include "$here/$name.cpp" -o "$work/$name" \
  -L"$root/build/lib" -Wl,-rpath,"$root/build/lib" -lHeterPSRuntime \
  -lHeterPSPlanFormat -L/usr/lib/llvm-19/lib -lLLVM -ldnnl
OMP_NUM_THREADS=$threads "$work/$name"
