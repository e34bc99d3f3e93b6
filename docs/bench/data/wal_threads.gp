set terminal pngcairo size 1200,760 font 'DejaVu Sans,10' noenhanced
set output 'docs/bench/wal_threads.png'
set title 'wal_bench: synced 100-byte log records against client threads (higher is better)' font ',13'
set grid ytics
set key outside right top
set datafile separator '\t'
set datafile missing '-'
set label 100 'AMD EPYC, 2 cores, 24 GiB RAM  |  2026-11-29 12:55 UTC  |  commit 39b4fb68df42  |  mode: short' at screen 0.01, 0.064 left font ',8' noenhanced
set label 101 'report: scripts/bench-report.sh --short' at screen 0.01, 0.038 left font ',8' noenhanced
set label 102 'benchmark: build/bench/wal_bench --benchmark_min_time=0.5 --benchmark_out=docs/bench/json/wal_bench.json --benchmark_out_format=json' at screen 0.01, 0.012 left font ',8' noenhanced
set bmargin 9
set logscale x 2
set xtics (1,4,16,64)
set xrange [1 / 1.25 : 64 * 1.25]
set xlabel 'client threads'
set ylabel 'acknowledged writes/s'
set yrange [0:*]
set format y '%.0f'
plot 'docs/bench/data/wal_bench.0.dat' using 1:2 with linespoints lw 2 dt 1 pt 7 ps 1.2 lc rgb '#1f4e9c' title 'Strata log alone, io_uring','docs/bench/data/wal_bench.1.dat' using 1:2 with linespoints lw 2 dt 1 pt 7 ps 1.2 lc rgb '#4f8fdc' title 'Strata log alone, pwritev+fdatasync','docs/bench/data/wal_bench.2.dat' using 1:2 with linespoints lw 2 dt 1 pt 7 ps 1.2 lc rgb '#d9620b' title 'RocksDB Put, sync (whole write path)'
