# The chart of one benchmark run: gnuplot -e "dir='OUTDIR'" bench/chart.gp
# Reads the data files that bench/report.py wrote into OUTDIR, writes OUTDIR/chart.png.
if (!exists("dir")) dir = "."
title = system("cat '" . dir . "/chart-title.txt' 2>/dev/null")
set terminal pngcairo size 1400,1000 font "sans,10"
set output dir . "/chart.png"
set datafile missing "NaN"
set datafile separator "\t"
set key outside top center horizontal
set grid ytics
set multiplot layout 2,2 title title font "sans,13"
# rows(f): data lines in a file (a panel without data says so instead of failing the chart)
rows(f) = int(system("cat '" . dir . "/" . f . "' 2>/dev/null | wc -l"))
empty = "set label 1 'not run' at graph 0.5,0.5 center; unset key; unset logscale y; plot [0:1][0:1] NaN notitle; unset label 1; set key"

# 1. uncontended latency against N
set title "Uncontended acquire+release (µs, log scale, lower is better)"
set xlabel "nodes (N)"
set ylabel "µs"
set xtics (1, 3, 5, 7, 9)
set xrange [0.5:9.5]
set logscale y
set yrange [*:*]
if (rows("latency.tsv") == 0) { eval empty } else {
plot dir . "/latency.tsv" using 1:2 with linespoints lw 2 pt 7 lc rgb "#555555" title "floor p50", \
     "" using 1:3 with linespoints lw 1 dt 2 pt 6 lc rgb "#555555" title "floor p99", \
     "" using 1:4 with linespoints lw 2 pt 5 lc rgb "#999999" title "C fan-out p50", \
     "" using 1:6 with linespoints lw 3 pt 7 lc rgb "#1f77b4" title "redlock-cpp p50", \
     "" using 1:7 with linespoints lw 1 dt 2 pt 6 lc rgb "#1f77b4" title "redlock-cpp p99", \
     "" using 1:8 with linespoints lw 2 pt 9 lc rgb "#d62728" title "node-redlock p50", \
     "" using 1:10 with linespoints lw 2 pt 11 lc rgb "#ff7f0e" title "redlock-universal p50", \
     "" using 1:12 with linespoints lw 2 pt 13 lc rgb "#2ca02c" title "redis-semaphore p50"
}

# 2. locks per second
unset logscale y
set yrange [0:*]
set key outside top center horizontal
set title "Locks per second, 64 in flight (higher is better)"
set xlabel "nodes (N)"
set ylabel "locks/s"
unset xrange
set xtics auto
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
if (rows("throughput.tsv") == 0) { eval empty } else {
plot dir . "/throughput.tsv" using 2:xtic(1) lc rgb "#555555" title "floor (hiredis)", \
     "" using 3 lc rgb "#999999" title "C fan-out", \
     "" using 4 lc rgb "#1f77b4" title "redlock-cpp", \
     "" using 5 lc rgb "#d62728" title "node-redlock", \
     "" using 6 lc rgb "#ff7f0e" title "redlock-universal", \
     "" using 7 lc rgb "#2ca02c" title "redis-semaphore"
}

# 3. contention
set title "Contention: 8 workers, one key, hold ~1 ms (acquisitions/s)"
set xlabel ""
set ylabel "acquisitions/s"
if (rows("contention.tsv") == 0) { eval empty } else {
plot dir . "/contention.tsv" using 2:xtic(1) lc rgb "#1f77b4" title "redlock-cpp", \
     "" using 3 lc rgb "#d62728" title "node-redlock (best setting)", \
     "" using 4 lc rgb "#ff7f0e" title "redlock-universal (best)", \
     "" using 5 lc rgb "#2ca02c" title "redis-semaphore (best)"
}

# 4. bad minority
set title "N = 5 with 2 nodes faulty: acquire+release (µs, log scale)"
set logscale y
set yrange [*:*]
set ylabel "µs"
if (rows("minority.tsv") == 0) { eval empty } else {
plot dir . "/minority.tsv" using 2:xtic(1) lc rgb "#1f77b4" title "p50", \
     "" using 3 lc rgb "#aec7e8" title "p99"
}

unset multiplot
