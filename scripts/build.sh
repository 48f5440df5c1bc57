#!/usr/bin/env bash
# Installs the dependencies, then configures and builds HeterPS-MLIR in
# build/ (Ninja, ccache, Release). Reruns rebuild only what changed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# Paths under the checkout hash relative, so that a clone in another folder
# (CI's) reuses the compiled objects.
export CCACHE_BASEDIR=$root
"$root/scripts/install-deps.sh"
cmake -S "$root" -B "$root/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-19/build/utils/lit/lit.py >/dev/null
cmake --build "$root/build"
