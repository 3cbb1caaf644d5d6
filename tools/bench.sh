#!/usr/bin/env bash
# Builds and runs the benchmarks (bench/) against five local Redis masters they start.
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/deps.sh
redlock_ensure_packages $REDLOCK_PACKAGES_BUILD $REDLOCK_PACKAGES_TEST
cmake -S . -B build/bench -G Ninja -DCMAKE_BUILD_TYPE=Release -DREDLOCK_BUILD_BENCH=ON \
  -DREDLOCK_BUILD_EXAMPLES=OFF >/dev/null
cmake --build build/bench --target redlock_bench -j "$(redlock_jobs)"
exec build/bench/bench/redlock_bench "$@"
