#!/usr/bin/env bash
# Crash loop: runs strata-stress on one database, kills it with SIGKILL after
# a random delay, and starts it again, for a given time. Every run begins by
# verifying every row against the expected state the killed run left, so each
# kill is checked: an acknowledged write that is gone, a row half written or a
# write of several rows half applied makes the next run exit 1 and this
# script stop with its messages. A last run verifies once more.
#
#   scripts/crash-test.sh [--seconds N] [--faults] [--build DIR] [--db DIR]
#                         [--min-ms N] [--max-ms N] [-- strata-stress options]
#
#   --seconds N   how long to loop (default 60)
#   --faults      pass --faults to strata-stress: failed writes, syncs and
#                 opens and simulated power losses between the kills
#   --build DIR   the build whose tools/strata-stress runs (default build;
#                 build-asan or build-tsan for the sanitizer builds that
#                 scripts/test.sh --sanitize makes)
#   --db DIR      the database (default: a new temporary directory, removed
#                 when the loop passes and kept when it fails)
#   --min-ms N, --max-ms N  the range of the delay before each kill
#                 (default 500 to 4000 milliseconds)
#
# Exit codes: 0 every verification held; 1 one failed (or a run ended on
# its own); 2 bad arguments or no strata-stress binary.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=60
faults=()
build=build
db=
min_ms=500
max_ms=4000
extra=()
usage() { sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; }
need() { [ $# -ge 2 ] || { echo "crash-test.sh: $1 needs a value" >&2; exit 2; }; }
number() {
  [[ "$2" =~ ^[0-9]+$ ]] || { echo "crash-test.sh: bad value '$2' for $1" >&2; exit 2; }
}
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) need "$@"; number "$1" "$2"; seconds=$2; shift 2 ;;
    --faults) faults=(--faults); shift ;;
    --build) need "$@"; build=$2; shift 2 ;;
    --db) need "$@"; db=$2; shift 2 ;;
    --min-ms) need "$@"; number "$1" "$2"; min_ms=$2; shift 2 ;;
    --max-ms) need "$@"; number "$1" "$2"; max_ms=$2; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) usage; exit 0 ;;
    *) echo "crash-test.sh: unknown argument '$1' (--help shows the usage)" >&2; exit 2 ;;
  esac
done
if [ "$max_ms" -lt "$min_ms" ]; then
  echo "crash-test.sh: --max-ms is below --min-ms" >&2
  exit 2
fi
stress="$build/tools/strata-stress"
if [ ! -x "$stress" ]; then
  echo "crash-test.sh: no $stress (build it: cmake --build $build --target strata-stress)" >&2
  exit 2
fi
remove_db=0
if [ -z "$db" ]; then
  db=$(mktemp -d "${TMPDIR:-/tmp}/strata-crash.XXXXXX")
  remove_db=1
else
  mkdir -p "$db"
fi
log="$db.log"
run_args=(--db "$db/stress" ${faults[@]+"${faults[@]}"} ${extra[@]+"${extra[@]}"})

fail() {
  echo "crash-test.sh: FAILED after $kills kills: $1" >&2
  echo "crash-test.sh: the database is kept in $db; the last run's output:" >&2
  cat "$log" >&2
  exit 1
}

echo "crash-test.sh: $stress ${run_args[*]}, killed every $min_ms to $max_ms ms for $seconds s"
start=$SECONDS
kills=0
while [ $((SECONDS - start)) -lt "$seconds" ]; do
  "$stress" "${run_args[@]}" --seconds 0 >"$log" 2>&1 &
  pid=$!
  delay=$((min_ms + (RANDOM * 32768 + RANDOM) % (max_ms - min_ms + 1)))
  sleep "$((delay / 1000)).$(printf '%03d' $((delay % 1000)))"
  if ! kill -0 "$pid" 2>/dev/null; then
    rc=0
    wait "$pid" || rc=$?
    fail "a run ended on its own with exit code $rc"
  fi
  kill -9 "$pid" 2>/dev/null || true
  rc=0
  wait "$pid" 2>/dev/null || rc=$?
  if [ "$rc" -ne 137 ]; then
    fail "a run ended with exit code $rc before the kill"
  fi
  kills=$((kills + 1))
  if [ $((kills % 50)) -eq 0 ]; then
    echo "crash-test.sh: $kills kills in $((SECONDS - start)) s"
  fi
done
if ! "$stress" "${run_args[@]}" --verify-only >"$log" 2>&1; then
  fail "the last verification"
fi
echo "crash-test.sh: $kills kills in $((SECONDS - start)) s; every verification held"
grep -F 'runs on this database' "$log" || true
if [ "$remove_db" -eq 1 ]; then
  rm -rf "$db" "$log"
fi
