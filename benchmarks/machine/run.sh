#!/usr/bin/env bash
# Measures this machine's sgemm peak (oneDNN) and memory copy bandwidth, the
# figures behind examples/clusters/this-machine-cpu.yaml.
# Usage: benchmarks/machine/run.sh [THREADS]   (default 2)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
threads=${1:-2}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cc -O2 "$here/sgemm-peak.c" -o "$work/sgemm-peak" -ldnnl
echo "| measurement | result |"
echo "|---|---|"
OMP_NUM_THREADS=$threads "$work/sgemm-peak"
/usr/bin/python3 - <<'PY'
import time
import numpy as np
x = np.ones(64 * 1024 * 1024, dtype=np.float32)  # 256 MB
y = np.empty_like(x)
np.copyto(y, x)
best = min((lambda t0: (np.copyto(y, x), time.time() - t0)[1])(time.time())
           for _ in range(5))
print(f"| 256 MB copy (read + write) | {2 * x.nbytes / best / 1e9:.1f} GB/s |")
PY
