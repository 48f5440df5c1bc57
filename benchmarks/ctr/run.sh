#!/usr/bin/env bash
# CTR benchmark: 4 x 10M x 16 sparse embedding tables + MLP, trained by
# heterps-run through the parameter server, 1 stage against 2 stages; see
# bench.py for the table.
#
# Usage: benchmarks/ctr/run.sh [WORK_DIR]   (default /tmp/heterps-ctr-bench)
# Needs a build in build/.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
exec /usr/bin/python3 "$root/benchmarks/ctr/bench.py" "$root" \
  "${1:-/tmp/heterps-ctr-bench}"
