#!/usr/bin/env bash
# The redlock-cpp demo: five local Redis masters, the problem, and the lock solving it.
# Installs what is missing (Debian 12), builds the `redlock` tool, starts five redis-server
# processes on free loopback ports, and stops exactly those processes when it ends.
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/deps.sh

redlock_ensure_packages $REDLOCK_PACKAGES_BUILD redis-server redis-tools

echo "== building the redlock tool"
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release -DREDLOCK_BUILD_TESTS=OFF \
  -DREDLOCK_BUILD_EXAMPLES=OFF >/dev/null
cmake --build build/release --target redlock_cli -j "$(redlock_jobs)" >/dev/null
REDLOCK="$PWD/build/release/tools/redlock/redlock"

state=$(mktemp -d /tmp/redlock-demo-XXXXXX)
pids=()
ports=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  done
  rm -rf "$state"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# Starts one master on the first free port from $1 on; appends its pid and port.
start_node() {
  local port=$1
  for _ in $(seq 50); do
    if ! port_busy "$port"; then
      mkdir -p "$state/$port"
      redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
        --dir "$state/$port" --logfile "$state/$port/redis.log" --daemonize no &
      local pid=$!
      for _ in $(seq 50); do
        if [ "$(timeout 1 redis-cli -p "$port" ping 2>/dev/null)" = PONG ]; then
          pids+=("$pid"); ports+=("$port"); return 0
        fi
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
      done
      kill "$pid" 2>/dev/null || true
    fi
    port=$((port + 1))
  done
  echo "no free port found" >&2
  return 1
}

base=$((20000 + RANDOM % 20000))
for i in 0 1 2 3 4; do start_node $((base + i * 7)); done
nodes=""
for p in "${ports[@]}"; do nodes+="${nodes:+,}redis://127.0.0.1:$p"; done
export REDLOCK_NODES="$nodes"
rcli() { timeout 5 redis-cli -p "${ports[0]}" "$@"; }

crash() { for pid in "$@"; do kill -9 "$pid"; wait "$pid" 2>/dev/null || true; done; }
say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
redlock() { "$REDLOCK" "$@"; }
run() { printf '$ %s\n' "$*" >&2; "$@"; }

say "Five independent Redis masters"
run redlock status

# --- the problem -------------------------------------------------------------------------
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

say "The problem: two workers, no lock"
race without
say "The same workers, each sale inside a Redlock lock"
race with

# --- the lock, step by step ---------------------------------------------------------------
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

say "Done; stopping the five masters this demo started"
