#!/usr/bin/env bash
# Builds HeterPS-MLIR and runs the whole test suite through ctest: lit tests
# (incl. the ONNX backend test-data import sweep), unit tests, the installed
# package consumer and the sanitizer build of the importer.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/build.sh"
cd "$root/build"
ctest --output-on-failure -j2
