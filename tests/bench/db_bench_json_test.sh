#!/usr/bin/env bash
# db_bench --json: runs db_bench on 2,000 keys with two passes, both
# compressions and every workload, then checks the JSON document it wrote:
# its fields and their shape, figures that must hold whatever the machine
# (keys found, rows read, bytes written, percentiles in order, write
# amplification = table MB written / user MB), and that every figure of the
# printed tables (ops/s, MB/s, p50/p99, per-pass ratios, amplification and
# scansmall rows) is the JSON's figure rounded as the table rounds it.
#
#   tests/bench/db_bench_json_test.sh <path of db_bench>
set -euo pipefail
db_bench=$1
export LC_ALL=C
dir=$(mktemp -d "${TMPDIR:-/tmp}/db_bench_json_test.XXXXXX")
trap 'rm -rf "$dir"' EXIT

failures=0
checks=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}
# expect <what> <expected> <actual>
expect() {
  checks=$((checks + 1))
  [ "$2" = "$3" ] || fail "$1: expected '$2', got '$3'"
}
# The JSON's value of a jq filter.
q() { jq -r "$1" "$json"; }

num=2000
json="$dir/db_bench.json"
rc=0
"$db_bench" --num=$num --passes=2 --db="$dir/db" --json="$json" >"$dir/table.txt" 2>"$dir/err.txt" ||
  rc=$?
if [ "$rc" != 0 ]; then
  cat "$dir/err.txt" >&2
  echo "FAIL: db_bench exited $rc" >&2
  exit 1
fi
jq -e . "$json" >/dev/null || { echo "FAIL: $json is not JSON" >&2; exit 1; }

# ---- Shape ----------------------------------------------------------------------------
expect program db_bench "$(q .program)"
expect format_version 1 "$(q .format_version)"
expect config.num $num "$(q .config.num)"
expect config.passes 2 "$(q .config.passes)"
expect compressions "none zstd" "$(q '[.runs[].compression] | join(" ")')"
expect benchmarks "$(q '.config.benchmarks | join(" ")')" \
  "$(q '[.runs[0].workloads[].name] | join(" ")')"
rocksdb=$(q .rocksdb)
if grep -q "RocksDB was not found at build time" "$dir/table.txt"; then
  expect "rocksdb (the table says it was not built in)" false "$rocksdb"
else
  expect "rocksdb (the table compares with it)" true "$rocksdb"
fi
engines=(strata)
[ "$rocksdb" = false ] || engines+=(rocksdb)
q '.total_seconds > 0' | grep -qx true || fail "total_seconds is not positive"
# The loops below read rows from jq through a pipe, which hides jq's exit
# status: each counts its rows, so that a jq that stops part way fails the
# test instead of skipping the rest.
workloads=$(q '.config.benchmarks | length') || { echo "FAIL: no config.benchmarks in $json" >&2; exit 1; }
[ "$workloads" -gt 0 ] || fail "config.benchmarks is empty"

for ((r = 0; r < 2; r++)); do
  run=".runs[$r]"
  c=$(q "$run.compression")
  with_passes=0  # the workloads that report passes: the pass-ratio rows
  for e in "${engines[@]}"; do
    # Figures that hold on any machine.
    seen=0
    while IFS=$'\t' read -r name ops found rows bytes passes lat ok; do
      seen=$((seen + 1))
      [ "$e" != strata ] || [ "$passes" = 0 ] || with_passes=$((with_passes + 1))
      [ "$ok" = true ] || fail "$c $e $name: a phase field is missing or not positive"
      case "$name" in
        fillseq|fillrandom|overwrite)
          expect "$c $e $name ops" $num "$ops"
          expect "$c $e $name bytes" $((num * 116)) "$bytes"
          expect "$c $e $name passes" 0 "$passes" ;;
        readrandom) expect "$c $e $name found" "$ops" "$found"; expect "$c $e $name passes" 2 "$passes" ;;
        readmissing) expect "$c $e $name found" 0 "$found"; expect "$c $e $name passes" 2 "$passes" ;;
        readseq|scansmall)
          expect "$c $e $name rows" $num "$rows"
          expect "$c $e $name latency" null "$lat"
          expect "$c $e $name passes" 2 "$passes" ;;
        seekrandom|seekreuse) expect "$c $e $name found" "$ops" "$found"; expect "$c $e $name passes" 2 "$passes" ;;
      esac
    done < <(q "$run.workloads[] | [.name, .$e.ops, .$e.found, .$e.rows, .$e.bytes,
                (.$e.passes | length), (.$e.latency_us | if . == null then \"null\" else \"set\" end),
                (.$e.ops_per_sec > 0 and .$e.mb_per_sec >= 0 and .$e.seconds > 0
                 and (.$e.passes | all(.ops_per_sec > 0 and .seconds > 0))
                 and (.$e.latency_us == null or (.$e.latency_us as \$l
                      | \$l.count > 0 and \$l.p50 <= \$l.p99 and \$l.p99 <= \$l.p99_9
                        and \$l.p99_9 <= \$l.max)))] | @tsv")
    expect "$c $e workload rows read" "$workloads" "$seen"
    a="$run.amplification.$e"
    expect "$c $e user_mb" "$(awk -v n=$num 'BEGIN { printf "%.6f", 2 * n * 116 / 1048576 }')" \
      "$(q "$a.user_mb * 1000000 | round / 1000000" | awk '{ printf "%.6f", $1 }')"
    q "$a | ((.flush_mb + .compaction_mb) / .user_mb - .write_amp_per_user_byte | fabs) < 1e-9
            and .settled and .space_amp_after_settling > 0 and .table_mb_after_overwrite >= 0" |
      grep -qx true || fail "$c $e: amplification figures disagree: $(q "$a")"
    q "$run.scansmall.$e | .table_mb > 0 and .table_files > 0 and .small_rows_per_sec > 0
       and .big_rows_per_sec > 0" | grep -qx true || fail "$c $e: scansmall figures: $(q "$run.scansmall.$e")"
    q "$run.settle.$e.seconds >= 0" | grep -qx true || fail "$c $e: no settle figures"
  done

  # ---- The printed table agrees ----------------------------------------------------------
  # This compression's part of the output: from its "compression=" line to
  # the next one.
  awk -v c="compression=$c " 'index($0, "compression=") == 1 { on = index($0, c) == 1 } on' \
    "$dir/table.txt" >"$dir/part.txt"
  [ -s "$dir/part.txt" ] || fail "no table for compression $c"
  # printf as db_bench does, on the double the JSON's text reads back to
  # (awk's numbers are doubles; bash's printf would round a long double).
  fmt() {
    if [ "$2" = null ] || [ -z "$2" ]; then echo n/a; else awk -v f="$1" -v v="$2" 'BEGIN { printf f "\n", v + 0 }'; fi
  }
  lat() { if [ "$1" = null ]; then echo n/a; else echo "$(fmt %.1f "$1") / $(fmt %.1f "$2")"; fi; }
  seen=0
  while IFS=$'\t' read -r name sops rops smb rmb sp50 sp99 rp50 rp99; do
    seen=$((seen + 1))
    line=$(grep -E "^$name +\|" "$dir/part.txt" | head -1)
    [ -n "$line" ] || { fail "$c: no table row for $name"; continue; }
    IFS='|' read -r _ f_ops f_mb f_lat _ <<<"$line"
    read -r t_sops t_rops _ <<<"$f_ops"
    read -r t_smb t_rmb <<<"$f_mb"
    expect "$c $name Strata op/s" "$(fmt %.0f "$sops")" "$t_sops"
    expect "$c $name RocksDB op/s" "$(fmt %.0f "$rops")" "$t_rops"
    expect "$c $name Strata MB/s" "$(fmt %.1f "$smb")" "$t_smb"
    expect "$c $name RocksDB MB/s" "$(fmt %.1f "$rmb")" "$t_rmb"
    want="$(lat "$sp50" "$sp99") $(lat "$rp50" "$rp99")"
    expect "$c $name latency" "$want" "$(echo $f_lat)"
  done < <(q "$run.workloads[] | [.name, .strata.ops_per_sec, .rocksdb.ops_per_sec,
              .strata.mb_per_sec, .rocksdb.mb_per_sec, .strata.latency_us.p50,
              .strata.latency_us.p99, .rocksdb.latency_us.p50, .rocksdb.latency_us.p99]
              | map(if . == null then \"null\" else . end) | @tsv")
  expect "$c table rows read" "$workloads" "$seen"

  # Table rows "<label> | <Strata> <RocksDB> <ratio>" of the amplification
  # and scansmall tables.
  row() { awk -v l="$1" 'index($0, l) == 1' "$dir/part.txt" | head -1 | cut -d'|' -f2 | awk '{ print $1, $2 }'; }
  pair() { echo "$(fmt "$1" "$(q "$2.strata$3")") $(fmt "$1" "$(q "$2.rocksdb$3")")"; }
  if [ "$rocksdb" = true ]; then
    a="$run.amplification"
    expect "$c log MB" "$(pair %.1f "$a" .log_mb)" "$(row 'log MB written')"
    expect "$c flush MB" "$(pair %.1f "$a" .flush_mb)" "$(row 'flush MB written')"
    expect "$c compaction MB" "$(pair %.1f "$a" .compaction_mb)" "$(row 'compaction MB written')"
    expect "$c write amp / user" "$(pair %.2f "$a" .write_amp_per_user_byte)" \
      "$(row 'write amp (flush+compaction) / user bytes')"
    expect "$c write amp / log" "$(pair %.2f "$a" .write_amp_per_log_byte)" \
      "$(row 'write amp (flush+compaction) / log bytes')"
    expect "$c table MB" "$(pair %.1f "$a" .table_mb_after_overwrite)" \
      "$(row 'table MB on disk after overwrite')"
    expect "$c space amp" "$(pair %.2f "$a" .space_amp_after_overwrite)" \
      "$(row 'space amp after overwrite')"
    expect "$c space amp settled" "$(pair %.2f "$a" .space_amp_after_settling)" \
      "$(row 'space amp after settling')"
    expect "$c write amp settled" "$(pair %.2f "$a" .write_amp_through_settling)" \
      "$(row 'write amp through settling')"
    g="$run.scansmall"
    expect "$c scansmall table MB" "$(pair %.2f "$g" .table_mb)" \
      "$(row 'table MB on disk (both families)')"
    expect "$c scansmall small rows/s" "$(pair %.0f "$g" .small_rows_per_sec)" \
      "$(row 'small-family scan rows/s')"
    expect "$c scansmall big rows/s" "$(pair %.0f "$g" .big_rows_per_sec)" \
      "$(row 'big-family scan rows/s')"
    # Per-pass ratios: "  <workload> 1.02x 0.97x".
    seen=0
    while IFS=$'\t' read -r name ratios; do
      seen=$((seen + 1))
      expect "$c $name pass ratios" "$ratios" \
        "$(grep -E "^  $name( |$)" "$dir/part.txt" | head -1 | awk '{ $1 = ""; print substr($0, 2) }')"
    done < <(q "$run.workloads[] | select(.strata.passes | length > 0)
                | [.name, ([.strata.passes, .rocksdb.passes] | transpose
                           | map(.[0].ops_per_sec / .[1].ops_per_sec) | map(tostring) | join(\" \"))]
                | @tsv" | while IFS=$'\t' read -r name rs; do
                  printf '%s\t' "$name"; for x in $rs; do printf '%sx ' "$(fmt %.2f "$x")"; done; echo
                done | sed 's/ $//')
    expect "$c pass-ratio rows read" "$with_passes" "$seen"
  fi
done

if [ "$failures" -gt 0 ]; then
  echo "db_bench_json_test: $failures checks failed; db_bench printed:" >&2
  cat "$dir/table.txt" >&2
  exit 1
fi
echo "db_bench_json_test: $checks checks: the document's fields and the printed tables agree"
