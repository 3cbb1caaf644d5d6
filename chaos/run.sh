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
# On your own deployment (docs/chaos.md, "Your own deployment"; it KILLS nodes: staging only):
#   chaos/run.sh --driver compose --nodes redis://...,...   [--smoke | NAME...]
#   chaos/run.sh --driver PROGRAM                            (nodes from REDLOCK_NODES)
# A driver named without a slash is one of chaos/drivers/ (compose, local) if there is one.
# That mode runs outside any network namespace: the nodes are elsewhere.
#
# Records and logs of each scenario go to build/chaos/logs/<scenario>/ (or --out DIR). The
# exit status is the runner's: 0 when every scenario showed what it must, 1 otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/deps.sh

# The test packages include redis-server, and nftables and iproute2 for the partitions.
redlock_ensure_packages $REDLOCK_PACKAGES_BUILD $REDLOCK_PACKAGES_TEST

args=("$@")
deployment=0
for ((i = 0; i < ${#args[@]}; i++)); do
  if [ "${args[i]}" = --driver ] && [ $((i + 1)) -lt ${#args[@]} ]; then
    deployment=1
    name=${args[i + 1]}
    [[ $name != */* && -x chaos/drivers/$name ]] && args[i + 1]=$PWD/chaos/drivers/$name
  fi
done
[ ${#args[@]} -eq 0 ] && args=(--all)
# Only options (a deployment run): every scenario that can run there.
case " ${args[*]} " in
  *" --smoke "* | *" --all "* | *" --list "*) ;;
  *)
    named=0
    for ((i = 0; i < ${#args[@]}; i++)); do
      case ${args[i]} in
        --driver | --nodes | --out | --driver-timeout | --worker | --redlock) i=$((i + 1)) ;;
        -*) ;;
        *) named=1 ;;
      esac
    done
    [ $named -eq 1 ] || args+=(--all)
    ;;
esac
case " ${args[*]} " in
  *" --out "* | *" --list "*) ;;
  *) args+=(--out build/chaos/logs) ;;
esac

dir=build/chaos
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
echo "== building the chaos suite in $dir"
cmake --build "$dir" -j "$(redlock_jobs)" --target redlock_chaos redlock_chaos_worker redlock_cli
runner="$dir/chaos/redlock_chaos"

if [ $deployment -eq 1 ]; then
  exec "$runner" "${args[@]}"
fi

if unshare -n true 2>/dev/null; then
  exec unshare -n -- sh -c 'ip link set lo up 2>/dev/null; exec "$0" "$@"' "$runner" "${args[@]}"
fi
echo "== cannot create a private network namespace (unshare -n needs root or CAP_SYS_ADMIN):" \
  "running without one; nftables scenarios will be skipped" >&2
exec "$runner" "${args[@]}"
