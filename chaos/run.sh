#!/usr/bin/env bash
# The chaos suite in one command: installs what is missing (Debian 12 packages), builds the
# runner in build/chaos, and runs it inside a private network namespace (unshare -n), where the
# nftables rules of the partition scenarios cannot touch the host and vanish with it.
#
#   chaos/run.sh                  the whole suite (~6 minutes on 2 cores, plus the build)
#   chaos/run.sh --smoke          the smoke subset, short phases (~1.5 minutes)
#   chaos/run.sh NAME...          the named scenarios (chaos/run.sh --list names them)
#   chaos/run.sh ... -v           every fault and check as it happens, on stderr
#
# Records and logs of each scenario go to build/chaos/logs/<scenario>/ (or --out DIR). The
# exit status is the runner's: 0 when every scenario showed what it must, 1 otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/deps.sh

# The test packages include redis-server, and nftables and iproute2 for the partitions.
redlock_ensure_packages $REDLOCK_PACKAGES_BUILD $REDLOCK_PACKAGES_TEST

args=("$@")
[ ${#args[@]} -eq 0 ] && args=(--all)
case " ${args[*]} " in
  *" --out "* | *" --list "*) ;;
  *) args+=(--out build/chaos/logs) ;;
esac

dir=build/chaos
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
echo "== building the chaos suite in $dir"
cmake --build "$dir" -j "$(redlock_jobs)" --target redlock_chaos redlock_chaos_worker redlock_cli
runner="$dir/chaos/redlock_chaos"

if unshare -n true 2>/dev/null; then
  exec unshare -n -- sh -c 'ip link set lo up 2>/dev/null; exec "$0" "$@"' "$runner" "${args[@]}"
fi
echo "== cannot create a private network namespace (unshare -n needs root or CAP_SYS_ADMIN):" \
  "running without one; nftables scenarios will be skipped" >&2
exec "$runner" "${args[@]}"
