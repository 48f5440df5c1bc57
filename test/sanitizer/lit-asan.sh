#!/usr/bin/env bash
# Usage: lit-asan.sh ASAN_BUILD_DIR LIT_PY [FILTER_OUT_REGEX [LIT_ARGS...]]
# Runs the lit suite against the ASan + UBSan tools built by
# scripts/sanitizer-build.sh, less the tests FILTER_OUT_REGEX matches and
# those that cap the address space with `ulimit -v` (ASan reserves terabytes
# of shadow memory at start-up, so they cannot run under it). Sanitizer
# reports go to files, not stderr, so that a test expecting failure
# (`not heterps-run ...`) cannot pass on a sanitizer's exit; any report file
# fails this script, with its first lines. Leaks inside the libraries we link
# (MLIR, ONNX, Protobuf, oneDNN) are suppressed by lsan.supp; the project's
# own are reported.
set -uo pipefail
asan=$1 lit=$2 filter=${3:-}
shift $(($# < 3 ? $# : 3))
here=$(cd "$(dirname "$0")" && pwd)
tests=$(cd "$here/.." && pwd)
limited=$(cd "$tests" && grep -rl --include='*.test' --include='*.mlir' \
  'ulimit -v' . | sed 's|^\./||' | paste -sd'|')
if [[ -n $limited ]]; then
  echo "lit-asan: not run under ASan (ulimit -v): ${limited//|/ }"
  filter=${filter:+$filter|}$limited
fi
reports=$asan/sanitizer-reports
rm -rf "$reports" && mkdir -p "$reports"
# allow_user_poisoning=0: LLVM's BumpPtrAllocator poisons the unused rest
# of each new slab when the code allocating it is instrumented, and only
# instrumented code unpoisons what it hands out. Our instrumented dialect
# code and the uninstrumented libMLIR share the context's allocator, so
# libMLIR writing into a slab our code started reads as use-after-poison.
export ASAN_OPTIONS="detect_leaks=1:allow_user_poisoning=0:log_path=$reports/asan:log_exe_name=1"
export LSAN_OPTIONS="suppressions=$here/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:log_path=$reports/ubsan:log_exe_name=1"
/usr/bin/python3 "$lit" -sv ${filter:+"--filter-out=$filter"} "$@" "$asan/test"
rc=$?
found=$(find "$reports" -type f | sort)
if [[ -n $found ]]; then
  echo "lit-asan: sanitizer reports:"
  for f in $found; do
    echo "== $f"
    grep -m1 -E 'ERROR|runtime error' "$f"
    grep -m6 -E '^ +#[0-9]+ .*(/work|heterps)' "$f"
  done
  exit 1
fi
exit $rc
