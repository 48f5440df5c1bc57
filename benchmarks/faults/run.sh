#!/usr/bin/env bash
# Failure benchmark: distributed jobs (--distributed=local) with a worker or
# a parameter-server shard killed (SIGKILL) or stopped (SIGSTOP, found by
# the heartbeats) in the middle of training. Prints how long the job took
# to see the failure and to be back, and how many steps it redid; then
# what a checkpoint costs at the default interval (each epoch).
#
# Usage: benchmarks/faults/run.sh [WORK_DIR] [--rounds N]
# Needs a build in build/ (heterps-run).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
work=${1:-/tmp/heterps-faults-bench}
shift || true
/usr/bin/python3 "$root/benchmarks/faults/faults_bench.py" "$root" "$work" "$@"
