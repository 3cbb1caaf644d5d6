#!/usr/bin/env bash
# The benchmark suite: installs what is missing, then runs bench/run.sh (builds, starts its own
# local masters, runs the floor, the node peers from ../shared/peerbench when present
# (node-redlock, redlock-universal, redis-semaphore), and ours, prints the Markdown tables, the
# README's call against the floor and the peers first, and writes the PNG chart). See
# bench/README.md and docs/performance.md.
#   bash tools/bench.sh [OUTDIR]            the whole suite, five to seven minutes
#   BENCH_ONLY=readme bash tools/bench.sh   only the first table (the README's call), a minute
#   BENCH_ONLY=semaphore bash tools/bench.sh   a counting semaphore against redis-semaphore's
#   BENCH_ONLY=election bash tools/bench.sh    an election's failover after its leader crashes
#   BENCH_ONLY=rwlock bash tools/bench.sh   the read-write lock: its cycles, 8 readers + 1 writer
#   bash tools/bench.sh --micro [ARGS...]   the Google Benchmark micro-benchmarks (redlock_bench)
#   bash tools/bench.sh --compare [BEFORE_REF] [AFTER_REF] [OUTDIR]   two commits side by side
#                                           (bench/compare.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/deps.sh
redlock_ensure_packages $REDLOCK_PACKAGES_BUILD $REDLOCK_PACKAGES_TEST \
  ${REDLOCK_PACKAGES_BENCH:-gnuplot-nox python3 iproute2}
if [ "${1:-}" = "--micro" ]; then
  shift
  cmake -S . -B build/bench -G Ninja -DCMAKE_BUILD_TYPE=Release -DREDLOCK_BUILD_BENCH=ON \
    -DREDLOCK_BUILD_EXAMPLES=OFF >/dev/null
  cmake --build build/bench --target redlock_bench -j "$(redlock_jobs)"
  exec build/bench/bench/redlock_bench "$@"
fi
if [ "${1:-}" = "--compare" ]; then
  shift
  exec bash bench/compare.sh "$@"
fi
exec bash bench/run.sh "$@"
