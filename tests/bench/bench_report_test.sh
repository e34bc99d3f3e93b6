#!/usr/bin/env bash
# scripts/bench-report.sh end to end in its smoke mode, on the benchmarks of
# this build (--no-build): checks --help and a bad argument (exit 2), that a
# benchmark that fails stops the report with exit 1 and names its log, and
# that a smoke run writes every image as a PNG, each benchmark's JSON, and an
# index that shows every image with the machine, commit, mode and commands.
#
#   tests/bench/bench_report_test.sh <source dir> <build dir>
set -euo pipefail
src=$1
build=$2
script="$src/scripts/bench-report.sh"
dir=$(mktemp -d "${TMPDIR:-/tmp}/bench_report_test.XXXXXX")
trap 'rm -rf "$dir"' EXIT

failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

# --help and a bad argument.
"$script" --help | grep -q -- '--smoke' || fail "--help does not describe --smoke"
rc=0
"$script" --no-such-flag >"$dir/bad.txt" 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "a bad argument exits $rc, not 2"
grep -q "unknown argument" "$dir/bad.txt" || fail "a bad argument is not named: $(cat "$dir/bad.txt")"

# A benchmark that fails: db_bench cannot make its directory under a file.
touch "$dir/a-file"
rc=0
STRATA_BENCH_DIR="$dir/a-file/under" "$script" --smoke --no-build --build "$build" \
  --out "$dir/failed" >"$dir/failed.txt" 2>&1 || rc=$?
[ "$rc" = 1 ] || fail "a failing benchmark exits $rc, not 1: $(cat "$dir/failed.txt")"
grep -q "db_bench failed (exit 1); its output is in $dir/failed/logs/db_bench.txt" \
  "$dir/failed.txt" || fail "a failing benchmark is not reported: $(cat "$dir/failed.txt")"

# The smoke run.
out="$dir/report"
start=$SECONDS
if ! "$script" --smoke --no-build --build "$build" --out "$out" --note "a test run" \
  >"$dir/smoke.txt" 2>&1; then
  cat "$dir/smoke.txt" >&2
  echo "FAIL: bench-report.sh --smoke failed" >&2
  exit 1
fi
echo "bench-report.sh --smoke took $((SECONDS - start)) s"

images=(db_throughput.png db_latency_none.png db_latency_zstd.png db_amplification.png
        write_threads.png wal_threads.png txn_threads.png)
index="$out/README.md"
[ -s "$index" ] || fail "no $index"
for img in "${images[@]}"; do
  if [ "$(head -c 8 "$out/$img" 2>/dev/null | od -An -tx1 | tr -d ' \n')" != 89504e470d0a1a0a ]; then
    fail "$out/$img is not a PNG"
  fi
  grep -qF "]($img)" "$index" || fail "the index does not show $img"
done
for j in db_bench write_bench wal_bench txn_bench; do
  jq -e . "$out/json/$j.json" >/dev/null 2>&1 || fail "$out/json/$j.json is not JSON"
  [ -s "$out/logs/$j.txt" ] || fail "no $out/logs/$j.txt"
  grep -qF "\`$build/bench/$j " "$index" || fail "the index does not give the $j command"
done
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
for want in "Made by \`scripts/bench-report.sh --smoke --no-build --build $build --out $out --note 'a test run'\`" \
            "in mode smoke" "$(nproc) cores" "$cpu" "note: a test run" \
            "commit: $(git -C "$src" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)"; do
  grep -qF -- "$want" "$index" || fail "the index does not say '$want'"
done
# Each image's caption is in its gnuplot script.
grep -qF "report: scripts/bench-report.sh --smoke" "$out/data/db_throughput.gp" ||
  fail "the images' captions do not give the command"

if [ "$failures" -gt 0 ]; then
  echo "bench_report_test: $failures checks failed; the script printed:" >&2
  cat "$dir/smoke.txt" >&2
  exit 1
fi
echo "bench_report_test: the smoke report is complete"
