set terminal pngcairo size 1200,760 font 'DejaVu Sans,10' noenhanced
set output 'docs/bench/db_amplification.png'
set title 'db_bench: write and space amplification of fill + overwrite (lower is better)' font ',13'
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
set yrange [0:*]
set ylabel 'ratio'
plot 'docs/bench/data/db_amplification.dat' using 2:xtic(1) lc rgb '#1f4e9c' title 'Strata, none','' using 3 lc rgb '#d9620b' title 'RocksDB, none','docs/bench/data/db_amplification.dat' using 4:xtic(1) lc rgb '#4f8fdc' title 'Strata, zstd','' using 5 lc rgb '#f5a04a' title 'RocksDB, zstd','' using ($0 + (0 - (4 - 1) / 2.0) / (4 + 1.0)):2:(sprintf('%.2f', column(2))) with labels offset 0,0.7 font ',8' notitle,'' using ($0 + (1 - (4 - 1) / 2.0) / (4 + 1.0)):3:(sprintf('%.2f', column(3))) with labels offset 0,0.7 font ',8' notitle,'' using ($0 + (2 - (4 - 1) / 2.0) / (4 + 1.0)):4:(sprintf('%.2f', column(4))) with labels offset 0,0.7 font ',8' notitle,'' using ($0 + (3 - (4 - 1) / 2.0) / (4 + 1.0)):5:(sprintf('%.2f', column(5))) with labels offset 0,0.7 font ',8' notitle
