#!/usr/bin/env bash
# Runs the deterministic simulator over many seeds (docs/simulation.md).
#   bash tools/sim.sh [SEEDS] [redlock_sim options...]
# SEEDS: how many, from seed 0 (default 1000000); the options go to redlock_sim as they are
# (--faults, --with, --control, --shrink). Builds redlock_sim in build/sim (Release) and runs it
# in two processes (REDLOCK_SIM_JOBS to change). Prints seeds/second, events per seed and every
# failing seed with the command that replays it; exits 1 when any seed failed. REDLOCK_SIM_DIR
# names another build directory.
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/deps.sh

seeds=1000000
if [ $# -gt 0 ] && [[ "$1" =~ ^[0-9]+$ ]]; then seeds=$1; shift; fi
[ "$seeds" -gt 0 ] || { echo "usage: tools/sim.sh [SEEDS] [redlock_sim options]" >&2; exit 2; }

redlock_ensure_packages $REDLOCK_PACKAGES_BUILD

dir=${REDLOCK_SIM_DIR:-build/sim}
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DREDLOCK_BUILD_SIM=ON >/dev/null
cmake --build "$dir" -j "$(redlock_jobs)" --target redlock_sim
exec "$dir/sim/redlock_sim" --seeds "0..$((seeds - 1))" --jobs "${REDLOCK_SIM_JOBS:-2}" "$@"
