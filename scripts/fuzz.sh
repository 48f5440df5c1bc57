#!/usr/bin/env bash
# Usage: scripts/fuzz.sh TARGET|all [LIMIT] [--smoke] [--keep-going]
# Runs libFuzzer targets built by scripts/fuzz-build.sh (built first if
# missing). LIMIT is seconds (e.g. 600, the default) or executions with an
# "r" suffix (e.g. 1000000r). Each target grows its corpus in
# build/fuzz/work/TARGET (seeded from build/fuzz/corpus/TARGET) and saves
# crashing inputs to build/fuzz/findings/TARGET/. Prints one summary line
# per target and exits non-zero if any target crashed.
#   --smoke       a fresh corpus, a fixed seed, all under build/fuzz/smoke
#                 (what ctest runs)
#   --keep-going  fork mode: record crashes, timeouts and OOMs, go on
# BUILD_DIR (default build) picks the main build; HETERPS_FUZZ_JOBS, the
# number of targets run at once for "all" (default 1).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
fuzz=$build/fuzz
targets=(onnx-import npy tensor-pb idx cluster-spec profile placement checkpoint
  ps-request)

which=${1:?usage: fuzz.sh TARGET|all [LIMIT] [--smoke] [--keep-going]}
limit=${2:-600}
smoke=0 keep=0
for arg in "${@:3}"; do
  case $arg in
  --smoke) smoke=1 ;;
  --keep-going) keep=1 ;;
  *) echo "fuzz.sh: unknown option $arg" >&2; exit 2 ;;
  esac
done
if [[ $which == all ]]; then
  list=("${targets[@]}")
else
  list=("$which")
fi
if [[ ! -x $fuzz/heterps-fuzz-${list[0]} || ! -d $fuzz/corpus ]]; then
  "$root/scripts/fuzz-build.sh" "$build"
fi

# Memory: 2 GiB of RSS or one allocation is a finding (a size the readers
# should have refused). Leaks are findings too.
flags=(-rss_limit_mb=2048 -malloc_limit_mb=2048 -timeout=30 -print_final_stats=1)
if [[ $limit == *r ]]; then
  flags+=(-runs="${limit%r}")
else
  flags+=(-max_total_time="$limit")
fi
((smoke)) && flags+=(-seed=1)
((keep)) && flags+=(-fork=1 -ignore_crashes=1 -ignore_ooms=1 -ignore_timeouts=1)
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:symbolize=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

run_one() {
  local t=$1 work findings log
  if ((smoke)); then
    work=$fuzz/smoke/work/$t
    findings=$fuzz/smoke/findings/$t
    log=$fuzz/smoke/logs/$t.log
    rm -rf "$work"
  else
    work=$fuzz/work/$t
    findings=$fuzz/findings/$t
    log=$fuzz/logs/$t.log
  fi
  mkdir -p "$work" "$findings" "$(dirname "$log")"
  local start=$SECONDS rc=0 before
  before=$(find "$findings" -type f | wc -l)
  # The first folder collects new inputs; the seeds are read only.
  "$fuzz/heterps-fuzz-$t" "${flags[@]}" -artifact_prefix="$findings/" \
    "$work" "$fuzz/corpus/$t" >"$log" 2>&1 || rc=$?
  local stats execs rate cov ft corp crashes
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
  rate=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
  stats=$(grep -E '^#[0-9]+' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' <<<"$stats" | tail -1 | grep -o '[0-9]*' || true)
  ft=$(grep -o 'ft: [0-9]*' <<<"$stats" | tail -1 | grep -o '[0-9]*' || true)
  corp=$(grep -o 'corp: [0-9]*/[0-9]*[a-zA-Z]*' <<<"$stats" | tail -1 | cut -d' ' -f2 || true)
  crashes=$(($(find "$findings" -type f | wc -l) - before))
  echo "fuzz: $t: rc $rc, ${execs:-?} executions in $((SECONDS - start)) s" \
    "(${rate:-?}/s), coverage ${cov:-?} edges, ${ft:-?} features," \
    "corpus ${corp:-?}, new findings $crashes (log $log)"
  if ((rc != 0)); then
    grep -E 'ERROR|runtime error|multi-line|SUMMARY' "$log" | head -5 >&2
  fi
  ((rc == 0 && crashes == 0))
}

status=0
jobs_max=${HETERPS_FUZZ_JOBS:-1}
for t in "${list[@]}"; do
  if ((jobs_max <= 1)); then
    run_one "$t" || status=1
    continue
  fi
  while (($(jobs -rp | wc -l) >= jobs_max)); do wait -n || status=1; done
  run_one "$t" &
done
while (($(jobs -rp | wc -l) > 0)); do wait -n || status=1; done
exit $status
