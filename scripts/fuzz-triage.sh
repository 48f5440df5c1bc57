#!/usr/bin/env bash
# Usage: scripts/fuzz-triage.sh TARGET [DIR]
# Reruns every saved input in DIR (default build/fuzz/findings/TARGET)
# through heterps-fuzz-TARGET and groups them by what went wrong: the
# sanitizer's or libFuzzer's verdict and the first frame in the project's
# own code (or the multi-line message's first line). Prints one line per
# group: count, signature, smallest reproducer.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
t=${1:?usage: fuzz-triage.sh TARGET [DIR]}
dir=${2:-$build/fuzz/findings/$t}
bin=$build/fuzz/heterps-fuzz-$t
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
declare -A count smallest size
for f in "$dir"/*; do
  [[ -f $f && $f != *.log ]] || continue
  out=$(timeout 60 "$bin" -rss_limit_mb=2048 -malloc_limit_mb=2048 "$f" 2>&1)
  what=$(grep -a -m1 -oE 'runtime error: [a-z -]+|AddressSanitizer: [A-Za-z-]+|LeakSanitizer|out-of-memory \(malloc|Assertion `[^'"'"']*|multi-line error message|deadly signal' <<<"$out")
  if [[ $what == multi-line* ]]; then
    # The message up to its first quoted (file-controlled) part.
    where=$(grep -a -A1 -m1 'multi-line error message' <<<"$out" | tail -1 |
      sed -E 's|/tmp/heterps-fuzz-[^/]*/||' | cut -d"'" -f1 | cut -c1-70)
  else
    where=$(grep -a -oE '(/work/main|'"$root"')/(lib|include)/[^ ]+:[0-9]+' <<<"$out" | head -1)
    where=${where#"$root"/}
  fi
  [[ -z $what ]] && what="no longer fails"
  key="$what @ $where"
  n=$(stat -c %s "$f")
  count[$key]=$((${count[$key]:-0} + 1))
  if [[ -z ${size[$key]:-} || $n -lt ${size[$key]} ]]; then
    size[$key]=$n smallest[$key]=$f
  fi
done
for key in "${!count[@]}"; do
  printf '%5d  %s  (%s, %s bytes)\n' "${count[$key]}" "$key" "${smallest[$key]}" "${size[$key]}"
done | sort -rn
