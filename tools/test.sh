#!/usr/bin/env bash
# Builds and runs the whole test suite with ctest, installing what is missing first.
#   tools/test.sh              g++ build, warnings as errors
#   tools/test.sh --sanitize   clang build under AddressSanitizer + UndefinedBehaviorSanitizer,
#                              with a short run of each fuzz target (docs/fuzzing.md)
#   tools/test.sh --tsan       clang build under ThreadSanitizer (build/tsan)
# Both sanitizer builds run a tenth of the simulator's smoke (the same code, 5-20x slower) and
# leave out the optional Prometheus component: Debian's prometheus-cpp is not instrumented, and
# its exposer's threads would be reported through it.
# Extra arguments after `--` go to ctest (e.g. -- -L unit).
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/deps.sh

mode=plain
ctest_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --sanitize) mode=sanitize ;;
    --tsan) mode=tsan ;;
    --) shift; ctest_args=("$@"); break ;;
    *) echo "usage: tools/test.sh [--sanitize | --tsan] [-- CTEST_ARGS...]" >&2; exit 2 ;;
  esac
  shift
done

redlock_ensure_packages $REDLOCK_PACKAGES_BUILD $REDLOCK_PACKAGES_TEST
redlock_ensure_peers

if [ "$mode" = sanitize ]; then
  dir=build/sanitize
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Debug \
    -DCMAKE_CXX_COMPILER=clang++ -DREDLOCK_SANITIZE="address;undefined" \
    -DREDLOCK_FUZZ=ON -DREDLOCK_SIM_SMOKE_SEEDS=1000 -DREDLOCK_BUILD_PROMETHEUS=OFF \
    >/dev/null  # and the fuzz.* tests: each target fuzzes for 20 s; a tenth of the sim's smoke
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1
  export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
elif [ "$mode" = tsan ]; then
  # Optimised: ThreadSanitizer slows code 5-15x and the suite has deadlines. Any report fails
  # the test that printed it (exit code 66), after all its reports were printed.
  dir=build/tsan
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_COMPILER=clang++ -DREDLOCK_SANITIZE=thread -DREDLOCK_SIM_SMOKE_SEEDS=1000 \
    -DREDLOCK_BUILD_PROMETHEUS=OFF >/dev/null
  export TSAN_OPTIONS=second_deadlock_stack=1:history_size=4
else
  dir=build/test
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DREDLOCK_WERROR=ON >/dev/null
fi
echo "== building ($mode) in $dir"
cmake --build "$dir" -j "$(redlock_jobs)"
echo "== testing ($mode)"
cd "$dir"
ctest --output-on-failure -j "$(redlock_jobs)" --timeout 300 "${ctest_args[@]}"
