#!/usr/bin/env bash
# Usage: run.sh BUILD_DIR PYTHON MAKE_MODEL_PY WORK_DIR
# Builds the ASan/UBSan importer and runs it on every generated test model
# (valid and broken), their truncations and random corruptions.
set -euo pipefail
build=$1 python=$2 make_model=$3 work=$4
cmake --build "$build" --target heterps-import-fuzz-asan >/dev/null
rm -rf "$work" && mkdir -p "$work"
"$python" "$make_model" --all "$work" >/dev/null
# allow_user_poisoning=0: see lit-asan.sh (LLVM's allocator poisoning
# across instrumented and uninstrumented code).
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:allow_user_poisoning=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
"$build/bin/heterps-import-fuzz-asan" "$work"/*.onnx "$work/does-not-exist.onnx"
