#!/usr/bin/env bash
# Builds and runs the whole test suite with ctest, installing what is missing first.
#   tools/test.sh              g++ build, warnings as errors
#   tools/test.sh --sanitize   clang build under AddressSanitizer + UndefinedBehaviorSanitizer
# Extra arguments after `--` go to ctest (e.g. -- -L unit).
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/deps.sh

mode=plain
ctest_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --sanitize) mode=sanitize ;;
    --) shift; ctest_args=("$@"); break ;;
    *) echo "usage: tools/test.sh [--sanitize] [-- CTEST_ARGS...]" >&2; exit 2 ;;
  esac
  shift
done

redlock_ensure_packages $REDLOCK_PACKAGES_BUILD $REDLOCK_PACKAGES_TEST

if [ "$mode" = sanitize ]; then
  dir=build/sanitize
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Debug \
    -DCMAKE_CXX_COMPILER=clang++ -DREDLOCK_SANITIZE="address;undefined" >/dev/null
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1
  export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
else
  dir=build/test
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DREDLOCK_WERROR=ON >/dev/null
fi
echo "== building ($mode) in $dir"
cmake --build "$dir" -j "$(redlock_jobs)"
echo "== testing ($mode)"
cd "$dir"
ctest --output-on-failure -j "$(redlock_jobs)" --timeout 300 "${ctest_args[@]}"
