#!/usr/bin/env bash
# Pipeline and parameter-server benchmark: the parameter server in process
# (dense pull/push GB/s beside memcpy, sparse rows/s on a 10M x 16 embedding
# table; see ps-bench.cpp), then pipelined training's measured step time
# and bubble fraction against the cost model and the simulated schedule
# (see schedules.py).
#
# Usage: benchmarks/pipeline/run.sh [--seconds S]   (per PS measurement)
# Needs a build in build/ (targets heterps-ps-bench and heterps-run).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
"$root/build/bin/heterps-ps-bench" "$@"
echo
/usr/bin/python3 "$root/benchmarks/pipeline/schedules.py" "$root"
