#!/usr/bin/env bash
# Usage: scripts/sanitizer-build.sh [MAIN_BUILD_DIR]
# Configures and builds ASan + UBSan copies of the tools the lit suite runs
# (heterps-opt, heterps-run, heterps-import-sweep) in MAIN_BUILD_DIR/asan
# (default build/asan): the whole project with g++ and
# -fsanitize=address,undefined, any UB fatal. Its test/lit.site.cfg.py
# points lit at those tools; test/sanitizer/lit-asan.sh runs the suite.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# Paths under the checkout hash relative, so that a clone in another folder
# (CI's) reuses the compiled objects.
export CCACHE_BASEDIR=$root
main=${1:-$root/build}
mkdir -p "$main"
out=$(cd "$main" && pwd)/asan
san="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
# -O1: the sanitized tools run the suite's models at a usable speed and
# build faster than at -O3. No CUDA, no nested sanitizer builds.
cmake -S "$root" -B "$out" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_FLAGS="$san" -DCMAKE_C_FLAGS="$san" \
  -DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG" -DCMAKE_C_FLAGS_RELEASE="-O1 -DNDEBUG" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
  -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined" \
  -DHETERPS_ENABLE_CUDA=OFF -DHETERPS_ENABLE_SANITIZER_TESTS=OFF \
  -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-19/build/utils/lit/lit.py >/dev/null
# At most two jobs: this machine has two cores.
if ! cmake --build "$out" -j2 --target heterps-opt heterps-run \
  heterps-import-sweep >"$out/build.log" 2>&1; then
  grep -E -A12 '^FAILED|error:' "$out/build.log" | head -60
  echo "sanitizer-build: build failed (log $out/build.log)" >&2
  exit 1
fi
echo "sanitizer-build: ASan + UBSan tools in $out/bin"
