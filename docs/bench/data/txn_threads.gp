set terminal pngcairo size 1200,760 font 'DejaVu Sans,10' noenhanced
set output 'docs/bench/txn_threads.png'
set title 'txn_bench: 2-account transfers, low contention, against client threads (higher is better)' font ',13'
set grid ytics
set key outside right top
set datafile separator '\t'
set datafile missing '-'
set label 100 'AMD EPYC, 2 cores, 24 GiB RAM  |  2026-11-29 12:55 UTC  |  commit 39b4fb68df42  |  mode: short' at screen 0.01, 0.090 left font ',8' noenhanced
set label 101 'report: scripts/bench-report.sh --short' at screen 0.01, 0.064 left font ',8' noenhanced
set label 102 'benchmark: build/bench/txn_bench --txn_seconds=0.5 --accounts=100000 ''--benchmark_filter=transfer/(strata|strata_pess|rocks_pess|rocks_occ)/keys:2/low/'' ' at screen 0.01, 0.038 left font ',8' noenhanced
set label 103 '--benchmark_out=docs/bench/json/txn_bench.json --benchmark_out_format=json' at screen 0.01, 0.012 left font ',8' noenhanced
set bmargin 11
set logscale x 2
set xtics (1,2,4,8,16)
set xrange [1 / 1.25 : 16 * 1.25]
set xlabel 'client threads'
set ylabel 'committed transfers/s (log scale)'
set logscale y
set format y '%.0f'
plot 'docs/bench/data/txn_bench.0.dat' using 1:2 with linespoints lw 2 dt 2 pt 6 ps 1.2 lc rgb '#1f4e9c' title 'Strata optimistic, nosync','docs/bench/data/txn_bench.1.dat' using 1:2 with linespoints lw 2 dt 2 pt 6 ps 1.2 lc rgb '#4f8fdc' title 'Strata pessimistic, nosync','docs/bench/data/txn_bench.2.dat' using 1:2 with linespoints lw 2 dt 2 pt 6 ps 1.2 lc rgb '#d9620b' title 'RocksDB TransactionDB, nosync','docs/bench/data/txn_bench.3.dat' using 1:2 with linespoints lw 2 dt 2 pt 6 ps 1.2 lc rgb '#f5a04a' title 'RocksDB OptimisticTransactionDB, nosync','docs/bench/data/txn_bench.4.dat' using 1:2 with linespoints lw 2 dt 1 pt 7 ps 1.2 lc rgb '#1f4e9c' title 'Strata optimistic, sync','docs/bench/data/txn_bench.5.dat' using 1:2 with linespoints lw 2 dt 1 pt 7 ps 1.2 lc rgb '#4f8fdc' title 'Strata pessimistic, sync','docs/bench/data/txn_bench.6.dat' using 1:2 with linespoints lw 2 dt 1 pt 7 ps 1.2 lc rgb '#d9620b' title 'RocksDB TransactionDB, sync','docs/bench/data/txn_bench.7.dat' using 1:2 with linespoints lw 2 dt 1 pt 7 ps 1.2 lc rgb '#f5a04a' title 'RocksDB OptimisticTransactionDB, sync'
