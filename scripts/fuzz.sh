#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz) with clang in build-fuzz and runs
# each for a while, starting from the checked-in seeds and past findings plus
# seeds written fresh by fuzz_seeds; the corpus each run grows is kept in
# build-fuzz/corpus/<target> for the next run.
#   scripts/fuzz.sh                       # every target, 60 s each
#   scripts/fuzz.sh --seconds 600 wal     # one target, 10 minutes
#   scripts/fuzz.sh --seeds               # only rewrite tests/fuzz/corpus from fuzz_seeds
# Prints each target's executions and coverage. Exit status 1 when a target
# found a crash (its input is in build-fuzz/findings/<target>/: fix the bug,
# then keep the input under tests/fuzz/regressions/<target>/).
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=60
seeds_only=0
targets=()
all=(block sstable wal manifest log_record records tool_args)
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds="$2"; shift 2 ;;
    --seeds) seeds_only=1; shift ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    -*) echo "fuzz.sh: unknown option $1" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done
[ ${#targets[@]} -eq 0 ] && targets=("${all[@]}")
for t in "${targets[@]}"; do
  case " ${all[*]} " in
    *" $t "*) ;;
    *) echo "fuzz.sh: unknown target $t (one of: ${all[*]})" >&2; exit 2 ;;
  esac
done

scripts/install-deps.sh --fuzz
build=build-fuzz
CC=clang CXX=clang++ cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DSTRATA_BUILD_FUZZ=ON -DSTRATA_BUILD_TESTS=OFF -DSTRATA_BUILD_BENCH=OFF \
  -DSTRATA_BUILD_EXAMPLES=OFF >&2
cmake --build "$build" -j "$(nproc)" >&2

export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}"
rm -rf "$build/seeds"
"$build/tests/fuzz/fuzz_seeds" "$build/seeds"
if [ "$seeds_only" = 1 ]; then
  for t in "${all[@]}"; do
    rm -rf "tests/fuzz/corpus/$t"
    mkdir -p "tests/fuzz/corpus/$t"
    cp "$build/seeds/$t"/* "tests/fuzz/corpus/$t/"
  done
  echo "fuzz.sh: tests/fuzz/corpus rewritten"
  exit 0
fi

found=0
summary=()
for t in "${targets[@]}"; do
  corpus="$build/corpus/$t"
  findings="$build/findings/$t"
  mkdir -p "$corpus" "$findings"
  dirs=("$corpus" "$build/seeds/$t")
  for d in "tests/fuzz/corpus/$t" "tests/fuzz/regressions/$t"; do
    [ -d "$d" ] && dirs+=("$d")
  done
  echo "fuzz.sh: $t for ${seconds} s" >&2
  log="$build/findings/$t.log"
  # A log input is read at every byte offset past a bad spot: shorter inputs
  # keep its executions fast.
  max_len=65536
  [ "$t" = wal ] && max_len=16384
  set +e
  "$build/tests/fuzz/${t}_fuzz" -max_total_time="$seconds" -print_final_stats=1 \
    -close_fd_mask=1 -artifact_prefix="$findings/" -max_len="$max_len" -timeout=20 \
    -rss_limit_mb=4096 \
    "${dirs[@]}" >"$log" 2>&1
  rc=$?
  set -e
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  cov=$(grep -oE 'cov: [0-9]+ ft: [0-9]+' "$log" | tail -1)
  if [ $rc -ne 0 ]; then
    found=1
    summary+=("$t: FOUND A CRASH (exit $rc) after ${execs:-?} executions; see $log and $findings/")
    tail -40 "$log" >&2
  else
    summary+=("$t: ${execs:-?} executions in ${seconds} s, ${cov:-cov: ?}, corpus $(ls "$corpus" | wc -l) inputs")
  fi
done
printf '%s\n' "${summary[@]}"
exit $found
