#!/usr/bin/env bash
# scripts/bench-report.sh end to end in its smoke mode, on the benchmarks of
# this build (--no-build): checks --help, a bad argument and an --out that
# holds files but no report (exit 2); that a smoke run writes every image as a
# PNG, each benchmark's JSON, and an index that shows every image with the
# machine, commit, mode and commands, replacing an earlier report's files and
# keeping the others, with gnuplot scripts that draw again from where the
# report ends up; and that a benchmark that fails stops the report with exit
# 1, names its log, leaves --out exactly as it was and leaves no database
# behind.
#
#   tests/bench/bench_report_test.sh <source dir> <build dir>
set -euo pipefail
src=$1
build=$2
script="$src/scripts/bench-report.sh"
dir=$(mktemp -d "${TMPDIR:-/tmp}/bench_report_test.XXXXXX")
trap 'rm -rf "$dir"' EXIT
# The script's temporary directory and the benchmarks' databases go under
# $TMPDIR (or $STRATA_BENCH_DIR when set): here, where the test sees what is
# left.
export TMPDIR="$dir/tmp"
mkdir "$TMPDIR"
unset STRATA_BENCH_DIR

failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

# --help, a bad argument, an --out with files but no report.
"$script" --help | grep -q -- '--smoke' || fail "--help does not describe --smoke"
rc=0
"$script" --no-such-flag >"$dir/bad.txt" 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "a bad argument exits $rc, not 2"
grep -q "unknown argument" "$dir/bad.txt" || fail "a bad argument is not named: $(cat "$dir/bad.txt")"
mkdir "$dir/other"
echo "a user's file" >"$dir/other/notes.txt"
rc=0
"$script" --smoke --no-build --build "$build" --out "$dir/other" >"$dir/other.txt" 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "an --out with no report in it exits $rc, not 2: $(cat "$dir/other.txt")"
[ "$(ls -A "$dir/other")" = notes.txt ] || fail "the refused --out changed: $(ls -A "$dir/other")"

# The smoke run, over an earlier report that has a file of the user's
# (kept), an image of a compression no longer run and a stale gnuplot script
# (both removed).
out="$dir/report"
mkdir -p "$out/data"
printf '# Benchmark report\n\nAn earlier one.\n' >"$out/README.md"
echo "a user's file" >"$out/notes.txt"
echo stale >"$out/db_latency_lz4.png"
echo stale >"$out/data/db_latency_lz4.gp"
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
is_png() { [ "$(head -c 8 "$1" 2>/dev/null | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ]; }
index="$out/README.md"
[ -s "$index" ] || fail "no $index"
for img in "${images[@]}"; do
  is_png "$out/$img" || fail "$out/$img is not a PNG"
  grep -qF "]($img)" "$index" || fail "the index does not show $img"
done
for j in db_bench write_bench wal_bench txn_bench; do
  jq -e . "$out/json/$j.json" >/dev/null 2>&1 || fail "$out/json/$j.json is not JSON"
  [ -s "$out/logs/$j.txt" ] || fail "no $out/logs/$j.txt"
  grep -qF "\`$build/bench/$j " "$index" || fail "the index does not give the $j command"
done
cpu=$(awk '/^model name/ { sub(/^[^:]*: */, ""); print; exit }' /proc/cpuinfo)
for want in "Made by \`scripts/bench-report.sh --smoke --no-build --build $build --out $out --note 'a test run'\`" \
            "in mode smoke" "$(nproc) cores" "$cpu" "note: a test run" \
            "--json=$out/json/db_bench.json" \
            "commit: $(git -C "$src" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)"; do
  grep -qF -- "$want" "$index" || fail "the index does not say '$want'"
done
# Each image's caption is in its gnuplot script.
grep -qF "report: scripts/bench-report.sh --smoke" "$out/data/db_throughput.gp" ||
  fail "the images' captions do not give the command"
# The index and the gnuplot scripts do not name the temporary directory the
# report was made in (the logs may: the benchmarks print where their
# databases are), and nothing of it is left.
if grep -rlF "$TMPDIR" "$out/README.md" "$out/data" >"$dir/grep.txt"; then
  fail "these name the temporary directory: $(cat "$dir/grep.txt")"
fi
[ -z "$(ls -A "$TMPDIR")" ] || fail "left in \$TMPDIR: $(ls -A "$TMPDIR")"
# The earlier report's files are replaced, the user's kept.
[ "$(cat "$out/notes.txt" 2>/dev/null)" = "a user's file" ] || fail "$out/notes.txt was not kept"
[ ! -e "$out/db_latency_lz4.png" ] || fail "the earlier report's db_latency_lz4.png is still there"
[ ! -e "$out/data/db_latency_lz4.gp" ] || fail "the earlier report's data/ was not replaced"
[ -z "$(find "$out" -name '.bench-report-new.*')" ] || fail "a half-moved report is left in $out"
# A kept gnuplot script draws its image again where the report is, and, given
# report=DIR, in a copy of the report moved to DIR.
rm "$out/wal_threads.png"
(cd "$src" && gnuplot "$out/data/wal_threads.gp") >"$dir/redraw.txt" 2>&1 ||
  fail "gnuplot $out/data/wal_threads.gp failed: $(cat "$dir/redraw.txt")"
is_png "$out/wal_threads.png" || fail "gnuplot $out/data/wal_threads.gp drew no PNG"
cp -R "$out" "$dir/moved"
rm "$dir/moved/db_throughput.png"
gnuplot -e "report='$dir/moved'" "$dir/moved/data/db_throughput.gp" >"$dir/redraw.txt" 2>&1 ||
  fail "gnuplot of the moved report failed: $(cat "$dir/redraw.txt")"
is_png "$dir/moved/db_throughput.png" || fail "gnuplot drew no PNG in the moved report"

# A benchmark that fails: a db_bench that dies part way, leaving a database
# where db_bench makes its own ($STRATA_BENCH_DIR) and one where a benchmark
# that uses the temp dir would ($TMPDIR), and its JSON cut short.
fake="$dir/fake-build"
mkdir -p "$fake/bench"
for b in write_bench wal_bench txn_bench; do ln -s "$build/bench/$b" "$fake/bench/$b"; done
cat >"$fake/bench/db_bench" <<'SH'
#!/bin/sh
for d in "${STRATA_BENCH_DIR:-${TMPDIR:-/tmp}}" "${TMPDIR:-/tmp}"; do
  mkdir -p "$d/strata-db_bench-$$/strata-none" || exit 3
  echo MANIFEST-000001 >"$d/strata-db_bench-$$/strata-none/CURRENT"
done
for a in "$@"; do
  case "$a" in --json=*) printf '{"program": "db_bench", "runs": [' >"${a#--json=}" ;; esac
done
echo "db_bench: killed part way" >&2
exit 1
SH
chmod +x "$fake/bench/db_bench"
# A listing of a directory with every file's checksum.
listing() { (cd "$1" && find . | LC_ALL=C sort && find . -type f -exec sha256sum {} + | LC_ALL=C sort); }
# failed_run <name> <--out>: runs the report with the failing db_bench;
# checks the exit code, the message and its log, and that no database is
# left in $TMPDIR or $STRATA_BENCH_DIR.
failed_run() {
  local name=$1 o=$2 rc=0 log
  "$script" --smoke --no-build --build "$fake" --out "$o" >"$dir/$name.txt" 2>&1 || rc=$?
  [ "$rc" = 1 ] || fail "$name: a failing benchmark exits $rc, not 1: $(cat "$dir/$name.txt")"
  log=$(sed -n 's/^bench-report.sh: db_bench failed (exit 1); its output is in //p' "$dir/$name.txt")
  [[ "$log" == "$TMPDIR"/bench-report.*/report/logs/db_bench.txt ]] ||
    fail "$name: a failing benchmark is not reported: $(cat "$dir/$name.txt")"
  grep -q "killed part way" "$log" 2>/dev/null || fail "$name: the log it names does not hold db_bench's output"
  local left
  left=$(find "$TMPDIR" ${STRATA_BENCH_DIR:+"$STRATA_BENCH_DIR"} -name 'strata-*')
  [ -z "$left" ] || fail "$name: databases left behind: $left"
  rm -rf "$TMPDIR"/bench-report.*
}
listing "$out" >"$dir/before.txt"
failed_run failed "$out"
listing "$out" >"$dir/after.txt"
diff "$dir/before.txt" "$dir/after.txt" >"$dir/diff.txt" ||
  fail "a failed run changed $out: $(cat "$dir/diff.txt")"
# Into an --out that does not exist yet, the databases under $STRATA_BENCH_DIR.
mkdir "$dir/bench-dir"
STRATA_BENCH_DIR="$dir/bench-dir" failed_run failed-new "$dir/new"
[ ! -e "$dir/new" ] || fail "a failed run made --out $dir/new: $(ls -A "$dir/new")"
[ -z "$(ls -A "$dir/bench-dir")" ] || fail "left in \$STRATA_BENCH_DIR: $(ls -A "$dir/bench-dir")"

if [ "$failures" -gt 0 ]; then
  echo "bench_report_test: $failures checks failed; the script printed:" >&2
  cat "$dir/smoke.txt" >&2
  exit 1
fi
echo "bench_report_test: the smoke report is complete; a failed run changes nothing"
