# The chart of the README's call against the floor and the peers (part 0 of a run, or
# BENCH_ONLY=readme): gnuplot -e "dir='OUTDIR'" bench/chart_readme.gp
# Reads OUTDIR/readme.tsv (bench/report.py: per N, the p50 then the p99 of the floor, ours and
# each peer, the mean of the run's rounds), writes OUTDIR/chart-readme.png.
if (!exists("dir")) dir = "."
title = system("cat '" . dir . "/chart-title.txt' 2>/dev/null")
set terminal pngcairo size 1400,560 font "sans,10"
set output dir . "/chart-readme.png"
set datafile missing "NaN"
set datafile separator "\t"
set style data histogram
set style histogram clustered gap 1
set style fill solid 0.85 border rgb "#333333"
set boxwidth 0.9
set key outside top center horizontal
set grid ytics
set xlabel "nodes (N)"
set multiplot layout 1,2 title "The README's call: acquire(key, 10s, 2s) + release, each library a process of its own\n" . title font "sans,12"

set title "p50, µs (lower is better)"
set ylabel "µs"
set yrange [0:*]
plot dir . "/readme.tsv" using 2:xtic(1) lc rgb "#555555" title "floor (C fan-out)", \
     "" using 3 lc rgb "#1f77b4" title "redlock-cpp", \
     "" using 4 lc rgb "#d62728" title "node-redlock", \
     "" using 5 lc rgb "#ff7f0e" title "redlock-universal", \
     "" using 6 lc rgb "#2ca02c" title "redis-semaphore"

set title "p99, µs (log scale, lower is better)"
set logscale y
set yrange [*:*]
plot dir . "/readme.tsv" using 7:xtic(1) lc rgb "#555555" title "floor (C fan-out)", \
     "" using 8 lc rgb "#1f77b4" title "redlock-cpp", \
     "" using 9 lc rgb "#d62728" title "node-redlock", \
     "" using 10 lc rgb "#ff7f0e" title "redlock-universal", \
     "" using 11 lc rgb "#2ca02c" title "redis-semaphore"
unset multiplot
