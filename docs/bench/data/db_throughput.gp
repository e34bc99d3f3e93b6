set terminal pngcairo size 1200,760 font 'DejaVu Sans,10' noenhanced
set output 'docs/bench/db_throughput.png'
set title 'db_bench: throughput per workload (higher is better)' font ',13'
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
set ylabel 'op/s (rows/s for readseq and scansmall, seeks/s for seekrandom and seekreuse)'
set format y '%.0f'
plot 'docs/bench/data/db_throughput.dat' using 2:xtic(1) lc rgb '#1f4e9c' title 'Strata, none','' using 3 lc rgb '#d9620b' title 'RocksDB, none','docs/bench/data/db_throughput.dat' using 4:xtic(1) lc rgb '#4f8fdc' title 'Strata, zstd','' using 5 lc rgb '#f5a04a' title 'RocksDB, zstd'
