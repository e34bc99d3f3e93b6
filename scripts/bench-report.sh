#!/usr/bin/env bash
# Benchmark report: runs the benchmarks that put Strata beside RocksDB
# (db_bench, write_bench, wal_bench, txn_bench), keeps each one's JSON and
# printed output, and draws PNG plots of them with gnuplot, with a markdown
# index (README.md) beside them. Every image and the index name the machine
# (CPU model, cores), the date, the git commit and the exact commands.
#
#   scripts/bench-report.sh [--full | --short | --smoke] [--out DIR]
#                           [--build DIR] [--no-build] [--note TEXT]
#
#   --full       (the default) full sizes: db_bench's defaults (1,000,000
#                keys), write_bench and wal_bench at 2 s per thread count,
#                txn_bench 2-s runs repeated 3 times (the median plotted) on a
#                bank of 1,000,000 accounts
#   --short      smaller sizes: db_bench 400,000 keys with 4 MiB memtables (so
#                that flushes and compactions happen), 0.5 s per thread count,
#                txn_bench 0.5-s runs on 100,000 accounts
#   --smoke      tiny sizes: a check that every step works; the figures mean
#                nothing
#   --out DIR    where the images, README.md, json/ (each benchmark's JSON),
#                logs/ (what each printed) and data/ (each image's gnuplot
#                script and figures) go (default docs/bench). DIR must be
#                absent, empty or an earlier report (its README.md starts
#                "# Benchmark report"), else the script refuses it
#   --build DIR  the CMake build directory (default build): configured with
#                the benchmarks on when it is not, and the four benchmarks
#                built there when missing or out of date
#   --no-build   use the binaries in --build DIR as they are; install nothing
#   --note TEXT  one more line for the index and every image's caption (what
#                else ran on the machine, say)
#
# Relative --out and --build paths are taken from the repository root (the
# script runs there), wherever it is started from.
#
# The report is made in a temporary directory and replaces the one in --out
# only when every step succeeded: then the files the script makes (README.md,
# its images, json/, logs/ and data/) are removed from --out and the new ones
# put in; other files there are kept. A run that fails leaves --out as it
# was, and keeps what it wrote (logs, JSON) in the temporary directory that
# the error message names. The benchmarks' databases go in a directory of
# their own under $STRATA_BENCH_DIR when set (choose the disk to measure
# with it), else under $TMPDIR or /tmp; it is removed at the end, whether
# the run succeeded or not.
#
# Plots: db_bench ops/s per workload, its p50/p99/p99.9 latency per workload
# (one image per compression) and its write and space amplification, both
# engines; write_bench, wal_bench and txn_bench throughput against client
# threads for every Strata and RocksDB variant. Each image's gnuplot script
# is kept in data/ and draws it again: gnuplot DIR/data/<image>.gp from the
# repository root, or gnuplot -e "report='DIR'" DIR/data/<image>.gp from
# anywhere.
#
# Needs gnuplot (gnuplot-nox) and jq: scripts/install-deps.sh installs what is
# missing (as root). Progress goes to standard error. Exit codes: 0 the report
# is written; 1 configuring or building the benchmarks failed, or a
# benchmark, its JSON, the plotting or writing the report failed (the message
# names the log to read); 2 bad arguments, an --out that is not a report
# directory, or a tool, binary or temporary directory missing.
set -euo pipefail
cd "$(dirname "$0")/.." || { echo "bench-report.sh: cannot enter the repository root" >&2; exit 2; }

mode=full
out=docs/bench
build=build
no_build=0
note=
invocation="scripts/bench-report.sh"
for a in "$@"; do
  if [[ "$a" =~ ^[A-Za-z0-9_./:=,+-]+$ ]]; then invocation+=" $a"; else invocation+=" '${a//\'/\'\\\'\'}'"; fi
done

# The comment at the top of this file.
usage() { awk 'NR == 1 { next } !/^#/ { exit } { sub(/^# ?/, ""); print }' "$0"; }
fail() {  # fail <exit code> <message...>
  local code=$1
  shift
  echo "bench-report.sh: $*" >&2
  exit "$code"
}
need() { [ $# -ge 2 ] || fail 2 "$1 needs a value"; }
while [ $# -gt 0 ]; do
  case "$1" in
    --short) mode=short; shift ;;
    --smoke) mode=smoke; shift ;;
    --full) mode=full; shift ;;
    --out) need "$@"; out=$2; shift 2 ;;
    --build) need "$@"; build=$2; shift 2 ;;
    --no-build) no_build=1; shift ;;
    --note) need "$@"; note=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) fail 2 "unknown argument '$1' (--help shows the usage)" ;;
  esac
done

step() { echo "bench-report: $*" >&2; }

# --out: absent, empty or an earlier report, so that replacing the files the
# script makes there cannot remove anything else. Checked before the
# benchmarks run, and the nearest existing parent when --out is absent.
if [ -e "$out" ] || [ -L "$out" ]; then
  [ -d "$out" ] && [ -w "$out" ] || fail 2 "--out $out is not a writable directory"
  if [ -n "$(ls -A "$out")" ] && ! head -1 "$out/README.md" 2>/dev/null | grep -qx '# Benchmark report'; then
    fail 2 "--out $out holds files but no earlier report (a README.md that starts '# Benchmark report'); use an empty or new directory"
  fi
else
  parent=$(dirname "$out")
  while [ ! -e "$parent" ]; do parent=$(dirname "$parent"); done
  [ -d "$parent" ] && [ -w "$parent" ] || fail 2 "cannot create --out $out under $parent"
fi

# ---- Tools and binaries -------------------------------------------------------------

missing_tools() {
  local t
  for t in gnuplot jq; do command -v "$t" >/dev/null || echo "$t"; done
  if [ "$no_build" = 0 ]; then
    for t in cmake ninja; do command -v "$t" >/dev/null || echo "$t"; done
  fi
}
if [ "$no_build" = 0 ]; then
  # Installs only what is missing; needs root only then.
  scripts/install-deps.sh >&2 ||
    fail 2 "scripts/install-deps.sh failed (it installs missing packages, as root)"
fi
if [ -n "$(missing_tools)" ]; then
  fail 2 "missing: $(missing_tools | tr '\n' ' ')(scripts/install-deps.sh installs them, as root)"
fi

benches=(db_bench write_bench wal_bench txn_bench)
cache="$build/CMakeCache.txt"
if [ -f "$cache" ] && grep -q '^STRATA_SANITIZE:[A-Z]*=.' "$cache"; then
  fail 2 "$build is a sanitizer build: its figures would mean nothing (use another --build)"
fi
if [ "$no_build" = 0 ]; then
  if [ ! -f "$cache" ] || ! grep -q '^STRATA_BUILD_BENCH:BOOL=ON$' "$cache"; then
    step "configuring $build (Release, benchmarks on)"
    type=Release
    if [ -f "$cache" ]; then
      type=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$cache") || fail 1 "cannot read $cache"
    fi
    cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE="${type:-Release}" \
      -DSTRATA_BUILD_BENCH=ON >&2 || fail 1 "configuring $build failed"
  fi
  step "building ${benches[*]} in $build"
  cmake --build "$build" --target "${benches[@]}" >&2 || fail 1 "building the benchmarks failed"
fi
for b in "${benches[@]}"; do
  [ -x "$build/bench/$b" ] ||
    fail 2 "no $build/bench/$b (build it: cmake --build $build --target $b)"
done
build_type=unknown
if [ -f "$cache" ]; then
  build_type=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$cache") || fail 1 "cannot read $cache"
fi
[ "$build_type" = Release ] || step "warning: $build is a $build_type build, not Release"

# ---- What each mode runs --------------------------------------------------------------

txn_systems='transfer/(strata|strata_pess|rocks_pess|rocks_occ)/keys:2/low/'
case "$mode" in
  smoke)
    db_args=(--num=2000 --passes=1 --write_buffer_mb=1)
    gb_time=(--benchmark_min_time=0.01)
    txn_args=(--txn_seconds=0.05 --accounts=2000 "--benchmark_filter=${txn_systems}sync/")
    mode_text="smoke (tiny sizes; checks that every step works, the figures mean nothing)"
    ;;
  short)
    db_args=(--num=400000 --write_buffer_mb=4)
    gb_time=(--benchmark_min_time=0.5)
    txn_args=(--txn_seconds=0.5 --accounts=100000 "--benchmark_filter=$txn_systems")
    mode_text="short (db_bench 400,000 keys, 4 MiB memtables; 0.5 s per thread count; txn_bench 0.5-s runs on 100,000 accounts)"
    ;;
  full)
    db_args=()
    gb_time=(--benchmark_min_time=2)
    txn_args=(--txn_seconds=2 --benchmark_repetitions=3 "--benchmark_filter=$txn_systems")
    mode_text="full (db_bench defaults: 1,000,000 keys; 2 s per thread count; txn_bench 2-s runs, median of 3, on 1,000,000 accounts)"
    ;;
esac

# ---- Where, when and on what ----------------------------------------------------------

# Scratch files go in $work; the report is made in $stage (its layout that of
# --out) and moved to --out at the end; the benchmarks' databases go in
# $db_root. The trap removes the databases and a half-copied report always,
# and the rest unless the run failed after a benchmark started: then the
# logs and JSON stay in $stage, which the error message names.
work=$(mktemp -d "${TMPDIR:-/tmp}/bench-report.XXXXXX") ||
  fail 2 "cannot create a temporary directory under ${TMPDIR:-/tmp}"
stage="$work/report"
data="$stage/data"  # each image's gnuplot script and the data it reads
db_root=
incoming=
made_out=
finish() {
  local rc=$?
  [ -z "$db_root" ] || rm -rf "$db_root"
  [ -z "$incoming" ] || rm -rf "$incoming"
  [ -z "$made_out" ] || [ "$rc" = 0 ] || rmdir "$out" 2>/dev/null || true
  if [ "$rc" != 0 ] && [ -n "$(ls -A "$stage/logs" 2>/dev/null)" ]; then
    echo "bench-report.sh: this run's logs and JSON are in $stage (remove $work when done)" >&2
  else
    rm -rf "$work"
  fi
}
trap finish EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
mkdir -p "$stage/json" "$stage/logs" "$data" || fail 2 "cannot create $stage"
if [ -n "${STRATA_BENCH_DIR:-}" ]; then
  db_root=$(mkdir -p "$STRATA_BENCH_DIR" && mktemp -d "$STRATA_BENCH_DIR/bench-report-db.XXXXXX") ||
    fail 2 "cannot create a directory under STRATA_BENCH_DIR=$STRATA_BENCH_DIR"
else
  db_root="$work/db"
  mkdir "$db_root" || fail 2 "cannot create $db_root"
fi

cpu=$(awk '/^model name/ { sub(/^[^:]*: */, ""); print; exit }' /proc/cpuinfo) || cpu=
cores=$(nproc) || fail 2 "nproc failed"
mem_gib=$(awk '/^MemTotal:/ { printf "%.0f", $2 / 1048576 }' /proc/meminfo) ||
  fail 2 "cannot read /proc/meminfo"
machine="${cpu:-unknown CPU}, $cores cores, $mem_gib GiB RAM"
date_utc=$(date -u '+%Y-%m-%d %H:%M UTC') || fail 2 "date failed"
if commit=$(git rev-parse --short=12 HEAD 2>/dev/null); then
  if [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then
    commit+=" (with uncommitted changes)"
  fi
else
  commit="unknown (not a git checkout)"
fi
load_start=$(cut -d' ' -f1-3 /proc/loadavg) || fail 2 "cannot read /proc/loadavg"

# The shell text of a command, quoting only the words that need it.
show() {
  local s= a
  for a in "$@"; do
    if [[ "$a" =~ ^[A-Za-z0-9_./:=,+-]+$ ]]; then s+=" $a"; else s+=" '${a//\'/\'\\\'\'}'"; fi
  done
  echo "${s# }"
}

# ---- Running the benchmarks -------------------------------------------------------------

declare -A commands
total=${#benches[@]}
n=0
# run_bench <name> <args...>: runs $build/bench/<name>, its output in
# logs/<name>.txt, its databases under $db_root (db_bench, write_bench and
# txn_bench use $STRATA_BENCH_DIR, wal_bench the temp dir, $TMPDIR); fails the
# report when it fails. In the arguments @OUT@ stands for the report
# directory: $stage when running, --out in the command the report shows.
run_bench() {
  local name=$1
  shift
  local log="$stage/logs/$name.txt"
  local cmd=("$build/bench/$name" "${@//@OUT@/"$stage"}")
  commands[$name]=$(show "$build/bench/$name" "${@//@OUT@/"$out"}")
  n=$((n + 1))
  step "[$n/$total] ${commands[$name]}"
  local t0=$SECONDS rc=0
  STRATA_BENCH_DIR="$db_root" TMPDIR="$db_root" "${cmd[@]}" >"$log" 2>&1 || rc=$?
  if [ "$rc" != 0 ]; then
    tail -n 20 "$log" | sed 's/^/  | /' >&2 || true
    fail 1 "$name failed (exit $rc); its output is in $log"
  fi
  step "[$n/$total] $name done in $((SECONDS - t0)) s"
}

# check_gb_json <name> <file>: a Google Benchmark JSON file with results
# and no benchmark that reported an error.
check_gb_json() {
  local name=$1 file=$2
  jq -e '.benchmarks | length > 0' "$file" >/dev/null 2>&1 ||
    fail 1 "$name wrote no results to $file (see $stage/logs/$name.txt)"
  local errors
  errors=$(jq -r '.benchmarks[] | select(.error_occurred == true) |
                  "\(.name): \(.error_message)"' "$file") ||
    fail 1 "cannot read $file (see $stage/logs/$name.txt)"
  [ -z "$errors" ] || fail 1 "$name reported errors (see $stage/logs/$name.txt):"$'\n'"$errors"
}

report_start=$SECONDS
run_bench db_bench "${db_args[@]}" "--json=@OUT@/json/db_bench.json"
jq -e '.program == "db_bench" and (.runs | length > 0)' "$stage/json/db_bench.json" >/dev/null ||
  fail 1 "db_bench wrote no usable $stage/json/db_bench.json"
for b in write_bench wal_bench; do
  run_bench "$b" "${gb_time[@]}" "--benchmark_out=@OUT@/json/$b.json" \
    --benchmark_out_format=json
  check_gb_json "$b" "$stage/json/$b.json"
done
run_bench txn_bench "${txn_args[@]}" "--benchmark_out=@OUT@/json/txn_bench.json" \
  --benchmark_out_format=json
check_gb_json txn_bench "$stage/json/txn_bench.json"
bench_seconds=$((SECONDS - report_start))
load_end=$(cut -d' ' -f1-3 /proc/loadavg) || fail 1 "cannot read /proc/loadavg"

# ---- Plots ----------------------------------------------------------------------------------

# join_by <separator> <words...>
join_by() {
  local IFS=$1
  shift
  echo "$*"
}

# A gnuplot single-quoted string.
gpq() { printf "'%s'" "${1//\'/\'\'}"; }

# The caption under every image: machine, date, commit, mode; the commands.
# caption <benchmark name>: gnuplot commands that set it.
caption() {
  local lines=("$machine  |  $date_utc  |  commit $commit  |  mode: $mode"
               "report: $invocation")
  # The benchmark's command, folded at spaces to fit the width.
  mapfile -t -O 2 lines < <(echo "benchmark: ${commands[$1]}" | fold -s -w 190)
  [ -z "$note" ] || lines+=("note: $note")
  local i y
  for i in "${!lines[@]}"; do
    y=$(awk -v k="$i" -v n="${#lines[@]}" 'BEGIN { printf "%.3f", 0.012 + (n - 1 - k) * 0.026 }')
    echo "set label $((100 + i)) $(gpq "${lines[$i]}") at screen 0.01, $y left font ',8' noenhanced"
  done
  echo "set bmargin $((3 + ${#lines[@]} * 2))"
}

# The common start of every plot; png <file> <title>. Paths in the script
# are relative to the gnuplot variable report: --out unless set before the
# script runs (plot_gp sets it to $stage).
png() {
  cat <<EOF
# Draws $1 of the report in $out from the figures in its data/: run
#   gnuplot $out/data/${1%.png}.gp
# from the repository root, or gnuplot -e "report='DIR'" DIR/data/${1%.png}.gp
# for a report moved to DIR.
if (!exists("report")) report = $(gpq "$out")
set terminal pngcairo size 1200,760 font 'DejaVu Sans,10' noenhanced
set output report.$(gpq "/$1")
set title $(gpq "$2") font ',13'
set grid ytics
set key outside right top
set datafile separator '\t'
set datafile missing '-'
EOF
}

# A report file's path as gnuplot reads it in the scripts: report.'/<path>'.
gp_path() { echo "report.$(gpq "/$1")"; }

# plot_gp <script> <image>: runs gnuplot on the report in $stage; fails the
# report on an error.
plot_gp() {
  local script=$1 image=$2
  if ! gnuplot -e "report = $(gpq "$stage")" "$script" >"$work/gnuplot.log" 2>&1; then
    sed 's/^/  | /' "$work/gnuplot.log" >&2 || true
    fail 1 "gnuplot failed drawing $image (its script: $script)"
  fi
  [ -s "$stage/$image" ] || fail 1 "gnuplot wrote no $stage/$image"
  step "drew $image"
}

images=()
declare -A image_heading image_text
# add_image <file> <heading> <text for the index>
add_image() { images+=("$1"); image_heading[$1]=$2; image_text[$1]=$3; }

# md_table <header> <tsv file> <markdown file>: the figures an image shows as
# a markdown table for the index; header and rows tab-separated, numbers
# rounded to three significant digits (whole numbers from 100 up: 123456,
# 12.3, 1.23, 0.0123), "-" where there is none.
md_table() {
  {
    echo "$1" | awk -F'\t' '{ s = "|"; t = "|"; for (i = 1; i <= NF; i++) { s = s " " $i " |"; t = t (i == 1 ? "---|" : "---:|") } print s; print t }'
    awk -F'\t' '{
      s = "|"
      for (i = 1; i <= NF; i++) {
        v = $i
        gsub(/\\n/, " ", v)
        if (i > 1 && v ~ /^-?[0-9.]+([eE][-+]?[0-9]+)?$/) {
          a = v < 0 ? -v : v
          # Decimals for three significant digits below 100 (below 1: 2 -
          # floor(log10)); %.3g for the tiny, where that would be over nine.
          if (a >= 100) d = 0
          else if (a >= 10) d = 1
          else if (a >= 1 || a == 0) d = 2
          else { e = log(a) / log(10); f = int(e); if (f > e) f--; d = 2 - f }
          v = d > 9 ? sprintf("%.3g", v) : sprintf("%." d "f", v)
        }
        s = s " " v " |"
      }
      print s
    }' "$2"
  } >"$3" || fail 1 "cannot write $3 from $2"
}

# Colors: Strata in blues, RocksDB in oranges.
strata_colors=('#1f4e9c' '#4f8fdc' '#9cc3ef' '#0b2a5c')
rocks_colors=('#d9620b' '#f5a04a' '#a3410a' '#fbc98f')

# A legend title for a Google Benchmark series.
series_title() {
  case "$1" in
    strata_uring) echo "Strata, log through io_uring" ;;
    strata_fallback) echo "Strata, log through pwritev+fdatasync" ;;
    rocksdb) echo "RocksDB Put, sync" ;;
    BM_WalSyncedWrite/io_uring:1) echo "Strata log alone, io_uring" ;;
    BM_WalSyncedWrite/io_uring:0) echo "Strata log alone, pwritev+fdatasync" ;;
    BM_RocksDbSyncedPut) echo "RocksDB Put, sync (whole write path)" ;;
    transfer/*)
      local s=${1#transfer/}
      local system=${s%%/*} sync=${s##*/}
      case "$system" in
        strata) system="Strata optimistic" ;;
        strata_pess) system="Strata pessimistic" ;;
        strata_fg) system="Strata, secondaries in foreground" ;;
        rocks_pess) system="RocksDB TransactionDB" ;;
        rocks_occ) system="RocksDB OptimisticTransactionDB" ;;
      esac
      echo "$system, $sync"
      ;;
    *) echo "$1" ;;
  esac
}

# threads_plot <bench> <counter> <image> <title> <y label> [log]: one line
# per series of a Google Benchmark JSON (the name without its threads and
# timing parts) through its thread counts; medians when repeated. "log": a
# logarithmic y axis.
threads_plot() {
  local bench=$1 counter=$2 image=$3 title=$4 ylabel=$5 yscale=${6:-linear}
  local json="$stage/json/$bench.json" tsv="$data/$bench.tsv"
  jq -r --arg c "$counter" '
    (.benchmarks | map(select(.run_type == "aggregate" and .aggregate_name == "median"))) as $med
    | (if ($med | length) > 0 then $med
       else .benchmarks | map(select(.run_type == "iteration")) end)[]
    | select(.[$c] != null)
    | [(.run_name // .name | split("/")
        | map(select(test("^(threads:[0-9]+|real_time|process_time|iterations:[0-9]+|repeats:[0-9]+|min_time:.*)$") | not))
        | join("/")), .threads, .[$c]] | @tsv' "$json" >"$tsv" ||
    fail 1 "cannot read $json"
  [ -s "$tsv" ] || fail 1 "$json has no '$counter' figures to plot"
  local series=() s names
  names=$(cut -f1 "$tsv" | awk '!seen[$0]++') || fail 1 "cannot read $tsv"
  mapfile -t series <<<"$names"
  local xt
  xt=$(cut -f2 "$tsv" | sort -n -u | paste -sd, -) || fail 1 "cannot read $tsv"
  local gp="$data/${image%.png}.gp" k=0 si=0 ri=0 color style base plots=()
  # One color per system (its sync and nosync runs share it), blues for
  # Strata and oranges for RocksDB; nosync lines dashed with open points.
  local -A colors=()
  for s in "${series[@]}"; do
    awk -F'\t' -v s="$s" '$1 == s { print $2 "\t" $3 }' "$tsv" | sort -n >"$data/$bench.$k.dat" ||
      fail 1 "cannot write $data/$bench.$k.dat"
    base=${s%/sync}
    base=${base%/nosync}
    if [ -z "${colors[$base]-}" ]; then
      if [[ "${s,,}" == *rocks* ]]; then
        colors[$base]=${rocks_colors[$((ri % 4))]}; ri=$((ri + 1))
      else
        colors[$base]=${strata_colors[$((si % 4))]}; si=$((si + 1))
      fi
    fi
    color=${colors[$base]}
    style="dt 1 pt 7"
    [[ "$s" != */nosync ]] || style="dt 2 pt 6"
    plots+=("$(gp_path "data/$bench.$k.dat") using 1:2 with linespoints lw 2 $style ps 1.2 lc rgb '$color' title $(gpq "$(series_title "$s")")")
    k=$((k + 1))
  done
  # The index's table: a row per series, a column per thread count.
  local header="$bench" t
  for t in ${xt//,/ }; do header+=$'\t'"$t thr."; done
  for s in "${series[@]}"; do
    printf '%s' "$(series_title "$s")"
    for t in ${xt//,/ }; do
      printf '\t%s' "$(awk -F'\t' -v s="$s" -v t="$t" '$1 == s && $2 == t { v = $3 } END { print v == "" ? "-" : v }' "$tsv")"
    done
    echo
  done >"$data/$bench.rows" || fail 1 "cannot write $data/$bench.rows"
  md_table "$header" "$data/$bench.rows" "$work/$image.md"
  # The first and last of the thread counts, sorted above.
  local xmin=${xt%%,*} xmax=${xt##*,}
  {
    png "$image" "$title"
    caption "$bench"
    echo "set logscale x 2"
    echo "set xtics ($xt)"
    echo "set xrange [$xmin / 1.25 : $xmax * 1.25]"
    echo "set xlabel 'client threads'"
    echo "set ylabel $(gpq "$ylabel")"
    if [ "$yscale" = log ]; then
      echo "set logscale y"
    else
      echo "set yrange [0:*]"
    fi
    echo "set format y '%.0f'"
    echo "plot $(join_by , "${plots[@]}")"
  } >"$gp" || fail 1 "cannot write $gp"
  plot_gp "$gp" "$image"
}

db_json="$stage/json/db_bench.json"
compression_names=$(jq -r '.runs[].compression' "$db_json") || fail 1 "cannot read $db_json"
mapfile -t compressions <<<"$compression_names"

# db_bench ops/s per workload: Strata and RocksDB for each compression.
db_throughput_plot() {
  local image=db_throughput.png gp="$data/db_throughput.gp" dat="$data/db_throughput.dat"
  jq -r '. as $d | [.runs[0].workloads[].name] | to_entries[] | .key as $i
         | [.value] + [$d.runs[] | .workloads[$i]
                       | (.strata.ops_per_sec, (.rocksdb.ops_per_sec // "-"))] | @tsv' \
    "$db_json" >"$dat" || fail 1 "cannot read $db_json"
  jq -r '. as $d | [.runs[0].workloads[].name] | to_entries[] | .key as $i
         | [.value] + ([$d.runs[] | .workloads[$i]
                        | [.strata.ops_per_sec, (.rocksdb.ops_per_sec // "-"),
                           (if .rocksdb == null then "-"
                            else .strata.ops_per_sec / .rocksdb.ops_per_sec end)]] | add)
         | @tsv' "$db_json" >"$data/db_throughput.rows" ||
    fail 1 "cannot read the throughput ratios of $db_json"
  local header=workload c
  for c in "${compressions[@]}"; do header+=$'\t'"Strata $c"$'\t'"RocksDB $c"$'\t'"ratio $c"; done
  md_table "$header" "$data/db_throughput.rows" "$work/$image.md"
  local plots=() i col=2
  for i in "${!compressions[@]}"; do
    plots+=("$(gp_path "data/$(basename "$dat")") using $col:xtic(1) lc rgb '${strata_colors[$i]}' title $(gpq "Strata, ${compressions[$i]}")")
    plots+=("'' using $((col + 1)) lc rgb '${rocks_colors[$i]}' title $(gpq "RocksDB, ${compressions[$i]}")")
    col=$((col + 2))
  done
  {
    png "$image" "db_bench: throughput per workload (higher is better)"
    caption db_bench
    echo "set style data histograms"
    echo "set style histogram clustered gap 1"
    echo "set style fill solid 0.9 border -1"
    echo "set logscale y"
    echo "set ylabel 'op/s (rows/s for readseq and scansmall, seeks/s for seekrandom and seekreuse)'"
    echo "set format y '%.0f'"
    echo "plot $(join_by , "${plots[@]}")"
  } >"$gp" || fail 1 "cannot write $gp"
  plot_gp "$gp" "$image"
  add_image "$image" "db_bench: throughput per workload" "Operations per second of every workload, Strata and RocksDB, for each compression (log scale); ratio = Strata / RocksDB, above 1 when Strata is faster"
}

# db_bench latency percentiles per workload for compression number $1.
db_latency_plot() {
  local i=$1 c=${compressions[$1]}
  local image="db_latency_$c.png" gp="$data/db_latency_$c.gp" dat="$data/db_latency_$c.dat"
  jq -r --argjson i "$i" '
    .runs[$i].workloads[] | select(.strata.latency_us != null)
    | [.name, .strata.latency_us.p50, .strata.latency_us.p99, .strata.latency_us.p99_9,
       (.rocksdb.latency_us.p50 // "-"), (.rocksdb.latency_us.p99 // "-"),
       (.rocksdb.latency_us.p99_9 // "-")] | @tsv' "$db_json" >"$dat" ||
    fail 1 "cannot read $db_json"
  [ -s "$dat" ] || fail 1 "$db_json has no latencies for compression $c"
  md_table $'workload\tStrata p50\tStrata p99\tStrata p99.9\tRocksDB p50\tRocksDB p99\tRocksDB p99.9' \
    "$dat" "$work/$image.md"
  {
    png "$image" "db_bench: latency of one operation, compression $c (lower is better)"
    caption db_bench
    echo "set style data histograms"
    echo "set style histogram clustered gap 1"
    echo "set style fill solid 0.9 border -1"
    echo "set logscale y"
    echo "set ylabel 'microseconds per call (seek + 10 Next for the seek workloads)'"
    echo "plot $(gp_path "data/$(basename "$dat")") using 2:xtic(1) lc rgb '${strata_colors[2]}' title 'Strata p50', \\"
    echo "  '' using 3 lc rgb '${strata_colors[1]}' title 'Strata p99', \\"
    echo "  '' using 4 lc rgb '${strata_colors[0]}' title 'Strata p99.9', \\"
    echo "  '' using 5 lc rgb '${rocks_colors[3]}' title 'RocksDB p50', \\"
    echo "  '' using 6 lc rgb '${rocks_colors[1]}' title 'RocksDB p99', \\"
    echo "  '' using 7 lc rgb '${rocks_colors[2]}' title 'RocksDB p99.9'"
  } >"$gp" || fail 1 "cannot write $gp"
  plot_gp "$gp" "$image"
  add_image "$image" "db_bench: latency percentiles, compression $c" "The p50, p99 and p99.9 latency per workload, Strata and RocksDB, compression $c (log scale; the scans have none)"
}

# db_bench write and space amplification, both engines, each compression.
db_amp_plot() {
  local image=db_amplification.png gp="$data/db_amplification.gp" dat="$data/db_amplification.dat"
  jq -r '
    def col(f): [.runs[] | .amplification | ((.strata | f), (.rocksdb | f))]
                | map(if . == null then "-" else . end);
    if any(.runs[]; .amplification == null) then error("a run has no amplification figures")
    else
      (["write amp, after overwrite\n(written / user bytes)"]
        + col(.write_amp_per_user_byte)),
      (["write amp, through settling\n(written / user bytes)"]
        + col(.write_amp_through_settling)),
      (["space amp, after overwrite\n(tables / live data)"]
        + col(.space_amp_after_overwrite)),
      (["space amp, after settling\n(tables / live data)"]
        + col(.space_amp_after_settling))
    end | @tsv' "$db_json" >"$dat" || fail 1 "cannot read the amplification figures of $db_json"
  # @tsv writes the line breaks as \n; gnuplot reads that back as one.
  local header=figure c
  for c in "${compressions[@]}"; do header+=$'\t'"Strata $c"$'\t'"RocksDB $c"; done
  md_table "$header" "$dat" "$work/$image.md"
  local n=$((${#compressions[@]} * 2)) plots=() labels=() i col=2 k=0
  for i in "${!compressions[@]}"; do
    plots+=("$(gp_path "data/$(basename "$dat")") using $col:xtic(1) lc rgb '${strata_colors[$i]}' title $(gpq "Strata, ${compressions[$i]}")")
    plots+=("'' using $((col + 1)) lc rgb '${rocks_colors[$i]}' title $(gpq "RocksDB, ${compressions[$i]}")")
    col=$((col + 2))
  done
  for ((k = 0; k < n; k++)); do
    labels+=("'' using (\$0 + ($k - ($n - 1) / 2.0) / ($n + 1.0)):$((k + 2)):(sprintf('%.2f', column($((k + 2))))) with labels offset 0,0.7 font ',8' notitle")
  done
  {
    png "$image" "db_bench: write and space amplification of fill + overwrite (lower is better)"
    caption db_bench
    echo "set style data histograms"
    echo "set style histogram clustered gap 1"
    echo "set style fill solid 0.9 border -1"
    echo "set yrange [0:*]"
    echo "set ylabel 'ratio'"
    echo "plot $(join_by , "${plots[@]}" "${labels[@]}")"
  } >"$gp" || fail 1 "cannot write $gp"
  plot_gp "$gp" "$image"
  add_image "$image" "db_bench: write and space amplification" "Write amplification (table bytes written by flushes and compactions per user byte) after overwrite and through settling, and space amplification (table bytes per live key+value byte) after overwrite and after settling, Strata and RocksDB, each compression"
}

step "plotting"
db_throughput_plot
for i in "${!compressions[@]}"; do db_latency_plot "$i"; done
db_amp_plot
threads_plot write_bench items_per_second write_threads.png \
  "write_bench: durable (sync) row writes against client threads (higher is better)" \
  'acknowledged writes/s'
add_image write_threads.png "write_bench: sync writes against threads" "Acknowledged sync writes per second through the whole write path against client threads, Strata (log through io_uring and through pwritev+fdatasync) and RocksDB Put with sync"
threads_plot wal_bench 'writes/s' wal_threads.png \
  "wal_bench: synced 100-byte log records against client threads (higher is better)" \
  'acknowledged writes/s'
add_image wal_threads.png "wal_bench: the log against threads" "Synced writes per second of Strata's log alone (io_uring and pwritev+fdatasync) against RocksDB's whole synced Put, against client threads"
threads_plot txn_bench 'txn/s' txn_threads.png \
  "txn_bench: 2-account transfers, low contention, against client threads (higher is better)" \
  'committed transfers/s (log scale)' log
add_image txn_threads.png "txn_bench: transactions against threads" "Committed 2-account transfers per second, low contention, sync (solid) and, outside smoke mode, no sync (dashed), Strata optimistic and pessimistic against RocksDB's TransactionDB and OptimisticTransactionDB, against client threads"

# ---- The index ----------------------------------------------------------------------------------

{
  echo "# Benchmark report"
  echo
  echo "Made by \`$invocation\` in mode $mode_text."
  echo
  echo "- machine: $machine; load average (1, 5, 15 min) $load_start at the start, $load_end at the end"
  echo "- date: $date_utc; the benchmarks took $bench_seconds s"
  echo "- commit: $commit; build: \`$build\` ($build_type)"
  [ -z "$note" ] || echo "- note: $note"
  echo
  echo "Figures depend on the machine, its disk and whatever else runs on it: compare"
  echo "Strata with RocksDB within one image, as ratios, never figures of different runs."
  echo "Each benchmark's JSON is in [json/](json/) and what it printed in [logs/](logs/);"
  echo "[data/](data/) holds each image's gnuplot script and the figures it reads (run"
  echo "\`gnuplot $out/data/<image>.gp\` from the repository root to draw one again)."
  echo
  echo "Regenerate: \`$invocation\`."
  for img in "${images[@]}"; do
    case "$img" in
      db_*) b=db_bench ;;
      write_*) b=write_bench ;;
      wal_*) b=wal_bench ;;
      txn_*) b=txn_bench ;;
    esac
    echo
    echo "## ${image_heading[$img]}"
    echo
    echo "${image_text[$img]}."
    echo
    echo "![${image_heading[$img]}]($img)"
    echo
    if [ -f "$work/$img.md" ]; then
      cat "$work/$img.md" || fail 1 "cannot read $work/$img.md"
      echo
    fi
    echo "Made by \`${commands[$b]}\`."
  done
} >"$stage/README.md" || fail 1 "cannot write $stage/README.md"

# ---- Into --out ---------------------------------------------------------------------------------

# The new report is copied next to the old one first (a full disk fails here,
# with --out as it was), then the files an earlier run made are removed
# (README.md, the images, json/, logs/, data/; other files stay) and the new
# ones renamed into place.
if [ ! -d "$out" ]; then
  mkdir -p "$out" || fail 1 "cannot create $out"
  made_out=1
fi
incoming=$(mktemp -d "$out/.bench-report-new.XXXXXX") || fail 1 "cannot write into $out"
cp -R "$stage/." "$incoming/" || fail 1 "cannot copy the report into $out (it is unchanged)"
rm -rf "$out/README.md" "$out"/db_throughput.png "$out"/db_latency_*.png \
  "$out"/db_amplification.png "$out"/{write,wal,txn}_threads.png \
  "$out/json" "$out/logs" "$out/data" || fail 1 "cannot remove the earlier report from $out"
mv "$incoming"/* "$out"/ || fail 1 "cannot move the new report into $out"
rmdir "$incoming" || fail 1 "cannot remove $incoming"
incoming=

step "done in $((SECONDS - report_start)) s: $out/README.md and ${#images[@]} images"
