#!/usr/bin/env bash
# The redlock-cpp demo: a stock of 1,000 items sold by several shop processes at once, four ways
# (no lock, a lock local to each process, redlock-cpp, redlock-cpp with two of its five nodes
# killed mid-run), side by side in one table. See docs/demo.md.
#   bash tools/demo.sh            the scene
#   bash tools/demo.sh --quick    the scene with 100 items and 150 requests
#   bash tools/demo.sh --tour     the scene, then a tour of the `redlock` command-line tool
# Installs what is missing (Debian 12), builds in build/release, starts five lock masters and the
# shop's storage Redis on free loopback ports, and stops exactly the processes it started.
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/deps.sh

usage() { sed -n '5,7s/^#  *//p' "$0"; }
tour=no
scene_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --tour) tour=yes ;;
    --quick) scene_args+=(--quick) ;;
    -h | --help) usage; exit 0 ;;
    *) usage >&2; exit 2 ;;
  esac
  shift
done

redlock_ensure_packages $REDLOCK_PACKAGES_BUILD redis-server redis-tools

echo "== building the scene and the redlock tool (Release, build/release)"
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release -DREDLOCK_BUILD_TESTS=OFF \
  -DREDLOCK_BUILD_EXAMPLES=ON >/dev/null
cmake --build build/release --target redlock_cli redlock_example_inventory \
  -j "$(redlock_jobs)" >/dev/null
REDLOCK="$PWD/build/release/tools/redlock/redlock"
INVENTORY="$PWD/build/release/examples/redlock_example_inventory"

state=$(mktemp -d /tmp/redlock-demo-XXXXXX)
# The lock masters run as the docs ask (appendonly yes, appendfsync always), so that the
# client's safeguards have nothing to warn about; on a RAM disk when there is one, where an
# fsync costs nothing and the demo stays fast.
durable=$state
if [ -d /dev/shm ] && [ -w /dev/shm ]; then durable=$(mktemp -d /dev/shm/redlock-demo-XXXXXX); fi
running=()  # pids of the redis-servers this script started and has not reaped yet
cleanup() {
  for pid in "${running[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${running[@]}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  rm -rf "$state"; [ "$durable" = "$state" ] || rm -rf "$durable"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# Starts a redis-server on the first free port from $1 on; sets $started_pid and $started_port.
# With "durable" as $2: a lock master, with every write in its AOF before it answers.
start_server() {
  local port=$1 dir=$state persistence=(--appendonly no)
  if [ "${2:-}" = durable ]; then dir=$durable persistence=(--appendonly yes --appendfsync always); fi
  for _ in $(seq 50); do
    if ! port_busy "$port"; then
      mkdir -p "$dir/$port"
      redis-server --port "$port" --bind 127.0.0.1 --save '' "${persistence[@]}" \
        --dir "$dir/$port" --logfile "$dir/$port/redis.log" --daemonize no &
      local pid=$!
      running+=("$pid")
      for _ in $(seq 50); do
        if [ "$(timeout 1 redis-cli -p "$port" ping 2>/dev/null)" = PONG ]; then
          started_pid=$pid started_port=$port
          return 0
        fi
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
      done
      reap "$pid"
    fi
    port=$((port + 1))
  done
  echo "no free port found" >&2
  return 1
}

# SIGKILL (if still running) and reap one of our servers; it leaves the cleanup list.
reap() {
  kill -9 "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
  local left=() pid
  for pid in "${running[@]}"; do [ "$pid" = "$1" ] || left+=("$pid"); done
  running=("${left[@]}")
}

pids=()   # the five lock masters
ports=()
base=$((20000 + RANDOM % 20000))
for i in 0 1 2 3 4; do
  start_server $((base + i * 7)) durable
  pids[i]=$started_pid ports[i]=$started_port
done
start_server $((base + 50))
storage_port=$started_port
set_nodes() {
  local p nodes=""
  for p in "${ports[@]}"; do nodes+="${nodes:+,}redis://127.0.0.1:$p"; done
  export REDLOCK_NODES="$nodes"
}
set_nodes
echo "== five lock masters on 127.0.0.1 ports ${ports[*]}; the shop's storage Redis on $storage_port"
echo

# --- the scene ------------------------------------------------------------------------------
# The scene kills lock masters 2 and 4 (by pid) in its fourth way. (Bash's own "Killed" notice
# for them is sent to /dev/null; the scene's stderr is not.)
started=$SECONDS
scene_status=0
exec 3>&2
{
  "$INVENTORY" --storage "redis://127.0.0.1:$storage_port" --kill-pids "${pids[1]},${pids[3]}" \
    "${scene_args[@]}" 2>&3 || scene_status=$?
} 2>/dev/null
exec 3>&-
echo
echo "The scene took $((SECONDS - started)) s. How to read it: docs/demo.md."
reap "${pids[1]}"
reap "${pids[3]}"

if [ "$tour" = no ]; then
  echo "The command-line tour: bash tools/demo.sh --tour"
  exit "$scene_status"
fi

# --- the command-line tour ------------------------------------------------------------------
# Masters 2 and 4 start again on their ports (or the next free ones), from their AOF.
for i in 1 3; do
  start_server "${ports[i]}" durable
  pids[i]=$started_pid ports[i]=$started_port
done
set_nodes
rcli() { timeout 5 redis-cli -p "$storage_port" "$@"; }

crash() { for pid in "$@"; do reap "$pid"; done; }
say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
redlock() { "$REDLOCK" "$@"; }
run() { printf '$ %s\n' "$*" >&2; "$@"; }

say "Five independent Redis masters"
run redlock status

# Two workers sell 20 items each from a stock of 40 by read-modify-write on a shared key.
sell() {  # $1 = with|without lock
  for _ in $(seq 20); do
    local token=""
    if [ "$1" = with ]; then token=$(redlock -q --ttl 2000 acquire stock-1001 --wait 5000); fi
    local stock
    stock=$(rcli get stock)
    sleep 0.005  # the time between read and write in which another worker can interleave
    rcli set stock $((stock - 1)) >/dev/null
    if [ "$1" = with ]; then redlock -q release stock-1001 "$token"; fi
  done
}
race() {
  rcli set stock 40 >/dev/null
  sell "$1" & local a=$!
  sell "$1" & local b=$!
  wait "$a" "$b"
  echo "stock after 40 sales $1 a lock: $(rcli get stock) (expected 0)"
}

say "The same problem in a shell script: two workers, no lock"
race without
say "The same workers, each sale inside a Redlock lock taken with the redlock tool"
race with

say "Acquire: the token on stdout, the votes of every node on stderr"
token=$(run redlock --ttl 30000 acquire invoice-42)
echo "token: $token"

say "A second client is refused while the first holds it (exit code 1)"
set +e
run redlock acquire invoice-42 --wait 0
echo "exit code: $?"
set -e

say "Release: compare-and-delete on every node"
run redlock release invoice-42 "$token"

say "Two of five masters crash: a majority of three still grants the lock"
crash "${pids[1]}" "${pids[3]}"
sleep 0.2
token=$(run redlock --ttl 30000 acquire invoice-43)
run redlock -q release invoice-43 "$token"

say "A third master crashes: no quorum, no lock (exit code 3)"
crash "${pids[4]}"
sleep 0.2
set +e
run redlock acquire invoice-44 --wait 500
echo "exit code: $?"
set -e
run redlock status || true

say "Done; stopping the redis-servers this demo started"
exit "$scene_status"
