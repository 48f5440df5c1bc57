#!/usr/bin/env bash
# Usage: scripts/fuzz-build.sh [MAIN_BUILD_DIR]
# Builds the libFuzzer targets (fuzz/, clang++ with ASan + UBSan) into
# MAIN_BUILD_DIR/fuzz and writes their seed corpus to
# MAIN_BUILD_DIR/fuzz/corpus.
# The main build (default build/) must have been built first: the targets
# use its generated headers and heterps-run writes a seed checkpoint.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# Paths under the checkout hash relative, so that a clone in another folder
# (CI's) reuses the compiled objects.
export CCACHE_BASEDIR=$root
main=${1:-$root/build}
main=$(cd "$main" && pwd)
out=$main/fuzz
if ! command -v clang++ >/dev/null; then
  echo "fuzz-build: clang++ not found (scripts/install-deps.sh installs it)" >&2
  exit 1
fi
cmake -S "$root/fuzz" -B "$out" -G Ninja -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_C_COMPILER=clang -DHETERPS_MAIN_BUILD_DIR="$main" >/dev/null
# At most two jobs: this machine has two cores and the main build may run.
if ! cmake --build "$out" -j2 >"$out/build.log" 2>&1; then
  grep -E -A12 '^FAILED|error:' "$out/build.log" | head -60
  echo "fuzz-build: build failed (log $out/build.log)" >&2
  exit 1
fi
rm -rf "$out/corpus"
/usr/bin/python3 "$root/fuzz/make-corpus.py" "$root" "$main" "$out" \
  "$out/corpus" >/dev/null
echo "fuzz-build: targets and seed corpus in $out"
