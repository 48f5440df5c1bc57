#!/usr/bin/env bash
# Distributed benchmark: the parameter server over loopback gRPC against the
# in-process transport and memcpy (ps-grpc-bench.cpp), then training as
# local processes against one process, with the schedule-aware prediction
# of the multi-process step (train_bench.py). Prints two tables.
#
# Usage: benchmarks/distributed/run.sh [WORK_DIR] [--rounds N]
# Needs a build in build/ (targets heterps-ps-grpc-bench and heterps-run).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
work=${1:-/tmp/heterps-distributed-bench}
shift || true
"$root/build/bin/heterps-ps-grpc-bench"
echo
/usr/bin/python3 "$root/benchmarks/distributed/train_bench.py" "$root" "$work" "$@"
