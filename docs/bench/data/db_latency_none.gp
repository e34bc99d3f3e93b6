set terminal pngcairo size 1200,760 font 'DejaVu Sans,10' noenhanced
set output 'docs/bench/db_latency_none.png'
set title 'db_bench: latency of one operation, compression none (lower is better)' font ',13'
set grid ytics
set key outside right top
set datafile separator '\t'
set datafile missing '-'
set label 100 'AMD EPYC, 2 cores, 24 GiB RAM  |  2026-11-29 12:55 UTC  |  commit 39b4fb68df42  |  mode: short' at screen 0.01, 0.064 left font ',8' noenhanced
set label 101 'report: scripts/bench-report.sh --short' at screen 0.01, 0.038 left font ',8' noenhanced
set label 102 'benchmark: build/bench/db_bench --num=400000 --write_buffer_mb=4 --json=docs/bench/json/db_bench.json' at screen 0.01, 0.012 left font ',8' noenhanced
set bmargin 9
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.9 border -1
set logscale y
set ylabel 'microseconds per call (seek + 10 Next for the seek workloads)'
plot 'docs/bench/data/db_latency_none.dat' using 2:xtic(1) lc rgb '#9cc3ef' title 'Strata p50', \
  '' using 3 lc rgb '#4f8fdc' title 'Strata p99', \
  '' using 4 lc rgb '#1f4e9c' title 'Strata p99.9', \
  '' using 5 lc rgb '#fbc98f' title 'RocksDB p50', \
  '' using 6 lc rgb '#f5a04a' title 'RocksDB p99', \
  '' using 7 lc rgb '#a3410a' title 'RocksDB p99.9'
