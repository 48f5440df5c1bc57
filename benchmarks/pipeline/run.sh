#!/usr/bin/env bash
# Pipeline and parameter-server benchmark. Today: the parameter server in
# process (dense pull/push GB/s beside memcpy, sparse rows/s on a 10M x 16
# embedding table); see ps-bench.cpp for what each column counts.
#
# Usage: benchmarks/pipeline/run.sh [--seconds S]   (per measurement)
# Needs a build in build/ (target heterps-ps-bench).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
exec "$root/build/bin/heterps-ps-bench" "$@"
