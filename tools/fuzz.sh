#!/usr/bin/env bash
# Fuzzes each libFuzzer target for longer than CI does (docs/fuzzing.md).
#   bash tools/fuzz.sh [SECONDS] [TARGET...]
# SECONDS per target (default 600), one target after the other; TARGET among node_list, replies,
# protocol (default: all). Builds build/fuzz with clang (ASan + UBSan + libFuzzer). Each run
# starts from the seed corpus (tests/fuzz/corpus/<target>, never written) and what earlier runs
# found (build/fuzz/corpus/<target>, where new inputs go). A broken property or a sanitizer
# report saves the input in build/fuzz/crashes/ and makes this script exit 1. REDLOCK_FUZZ_DIR
# names another build directory.
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/deps.sh

seconds=600
if [ $# -gt 0 ] && [[ "$1" =~ ^[0-9]+$ ]]; then seconds=$1; shift; fi
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(node_list replies protocol)
for t in "${targets[@]}"; do
  case "$t" in
    node_list|replies|protocol) ;;
    *) echo "usage: tools/fuzz.sh [SECONDS] [node_list|replies|protocol ...]" >&2; exit 2 ;;
  esac
done

redlock_ensure_packages $REDLOCK_PACKAGES_BUILD $REDLOCK_PACKAGES_TEST

dir=${REDLOCK_FUZZ_DIR:-build/fuzz}
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
  -DREDLOCK_FUZZ=ON >/dev/null
cmake --build "$dir" -j "$(redlock_jobs)" --target "${targets[@]/#/fuzz_}"
mkdir -p "$dir/crashes" "$dir/logs"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

failed=()
for t in "${targets[@]}"; do
  dict=tests/fuzz/resp.dict
  [ "$t" = node_list ] && dict=tests/fuzz/node_list.dict
  mkdir -p "$dir/corpus/$t"
  before=$(ls "$dir/corpus/$t" | wc -l)
  log="$dir/logs/$t.log"
  echo "== fuzzing $t for ${seconds}s (log: $log)"
  status=0
  "$dir/tests/fuzz/fuzz_$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=1024 \
    -dict="$dict" -print_final_stats=1 -artifact_prefix="$dir/crashes/$t-" \
    "$dir/corpus/$t" "tests/fuzz/corpus/$t" >"$log" 2>&1 || status=$?
  after=$(ls "$dir/corpus/$t" | wc -l)
  runs=$(grep -o 'Done [0-9]* runs' "$log" | grep -o '[0-9]*' || echo "?")
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 || true)
  echo "   $runs runs, $cov, $((after - before)) new corpus entries in $dir/corpus/$t"
  if [ "$status" -ne 0 ]; then
    failed+=("$t")
    grep -E 'property broken|ERROR: |SUMMARY: ' "$log" | head -5 | sed 's/^/   /' || true
    grep -o "Test unit written to .*" "$log" | sed 's/^/   /' || true
  fi
done

if [ ${#failed[@]} -gt 0 ]; then
  echo "== FAILED: ${failed[*]}: reproduce with $dir/tests/fuzz/fuzz_<target> <saved input>," \
       "then make it a unit test (docs/fuzzing.md)"
  exit 1
fi
echo "== no crash, no broken property"
