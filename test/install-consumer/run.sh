#!/usr/bin/env bash
# Usage: run.sh BUILD_DIR WORK_DIR PYTHON
# Installs the HeterPS build into WORK_DIR/prefix, builds the consumer project
# against that prefix alone and runs it with a HeterPS pass; imports the
# installed Python package with PYTHON.
set -euo pipefail
build=$1
work=$2
python=$3
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work"
mkdir -p "$work"
cmake --install "$build" --prefix "$work/prefix" >"$work/install.log"
cmake -S "$here" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$work/prefix" >"$work/configure.log"
cmake --build "$work/build" >"$work/build.log"
out=$("$work/build/consumer-opt" "$here/input.mlir" --hps-layer-stats -o /dev/null)
echo "$out"
# fc: 2*8*16 FLOPs per sample, 8*16*4 bytes of weights.
grep -Eq '^fc +hps.gemm +fc +256 +512 ' <<<"$out"
# The installed driver finds its libraries through its RPATH.
"$work/prefix/bin/heterps-opt" "$here/input.mlir" | grep -q 'hps.gemm'
# The installed Python package, from the prefix alone.
PYTHONPATH="$work/prefix/lib/python3/dist-packages" "$python" -c "
import heterps
model = heterps.load('$here/input.mlir')
assert [l['name'] for l in model.layers] == ['fc', 'hps.relu'], model.layers
print('python package:', heterps.__file__)" | grep -q "$work/prefix"
echo "install-consumer: ok"
