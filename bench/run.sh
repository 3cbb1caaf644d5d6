#!/usr/bin/env bash
# bench/run.sh [OUTDIR] — the whole benchmark suite in one run (five to seven minutes).
#
# Builds redlock_scenarios (Release, in build/bench), starts 9 local redis masters of its own
# (servers pinned to one CPU, every client to the other), then runs, N by N so that figures of
# one N are taken close together:
#   the floor:        raw round trips with hiredis (hiredis-floor, always) and, with peerbench,
#                     its C fan-out probe (c-fanout)
#   the peers:        node-redlock, redlock-universal and redis-semaphore through peerbench's
#                     node/bench.mjs (when peerbench is there), each in a process of its own
#   ours:             redlock-cpp through its public API (redlock_scenarios)
#   0. the README's call, N = 1 3 5: the floor (c-fanout), ours (readme_call: the blocking
#      acquire(key, 10s, 2s) + release) and the three peers, one process each, in that order,
#      two rounds
#   1. uncontended acquire+release, N = 1 3 5 7 9
#   2. locks/s with 64 in flight on distinct keys, N = 1 3 5
#   3. contention: 8 workers on one key, hold ~1 ms, rotate and ffa, N = 1 3 5
#   4. a bad minority at N = 5: 2 nodes SIGSTOPped; 2 behind a 50 ms delay (chaos fault proxy)
#   5. the watchdog at scale: 10,000 held locks renewing themselves on 5 nodes
# then stops exactly what it started, prints the Markdown table (bench/report.py) and writes
# the PNG chart (bench/chart.gp, gnuplot).
#
# Output (OUTDIR, default build/bench/results/<UTC>-<pin>): raw.jsonl (one JSON object per
# measurement), summary.md, chart.png, stderr.log.
#
# Environment:
#   REDLOCK_PEERBENCH=DIR   shared/peerbench (default: ../shared/peerbench next to the repo);
#                           without it the peer columns are left out and the output says so
#   BENCH_PIN=split|same|none   CPU placement (default split: servers on CPU 1, clients on 0)
#   BENCH_BASEPORT=7321     the nodes listen on BASEPORT .. BASEPORT+8 (must be free)
#   BENCH_BUDGET=540        hard limit for the measurements in seconds; later steps are skipped
#   BENCH_ITERS=5000 BENCH_WARMUP=200 BENCH_TPUT_DURATION=3 BENCH_CONT_DURATION=3
#   BENCH_HELD=10000 BENCH_LEASE_MS=3000 BENCH_WINDOW=6 BENCH_HOLD_THREADS=1 BENCH_DELAY_MS=50
#   BENCH_SKIP="readme peers floor contention minority watchdog chart"   steps to leave out
#   BENCH_ONLY=readme       part 0 alone (the README's call against the floor and the peers,
#                           5 masters, no chart): a minute or so
#   BENCH_ONLY=million      cost at scale: locks/s with the floor alternating at N = 1 and 5
#                           (client CPU per lock against the floor's), then the watchdog with
#                           1,000,000 held locks on one master, lease 30 s, a 20 s window
#                           (BENCH_HELD, BENCH_LEASE_MS, BENCH_WINDOW, BENCH_HOLD_THREADS=32)
#   BENCH_ONLY=semaphore    a counting semaphore against redis-semaphore's RedlockSemaphore:
#                           at N = 3 and 5 (BENCH_SEM_NODES), ours (redlock_scenarios
#                           --scenarios semaphore) then peerbench's `semaphore` scenario, 16
#                           workers (BENCH_SEM_WORKERS) sharing 4 permits (BENCH_PERMITS) of one
#                           key, holds of 1 ms, 2 s each (BENCH_CONT_DURATION), then the same
#                           through bench/peer_semaphore.mjs (the peer's scenario with the
#                           hand-off gap added), two rounds alternating (BENCH_SEM_ROUNDS):
#                           under a minute. BENCH_SEM_CLIENTS=1: our workers share one Client
#                           (default 0: a Client per worker, as the peer's have their own
#                           connections)
#   BENCH_ONLY=election     an election's failover after its leader crashes (redlock_scenarios
#                           --scenarios election_failover) at N = 3 and 5 (BENCH_ELECTION_NODES):
#                           per round a leader's Client is destroyed without resigning while two
#                           others campaign; the time to the next leader, against what the dead
#                           leader's lease had left; then a resignation's handover and the
#                           observer's lag. BENCH_ELECTION_TTL_MS=1000, BENCH_ELECTION_ROUNDS=10:
#                           about 15 s per N. No peer has an election over a quorum.
#   BENCH_ONLY=rwlock       the read-write lock (docs/guide-rwlock.md), no peer (none has one
#                           over a quorum): at N = 3 (BENCH_RW_NODES), the uncontended shared and
#                           exclusive cycles (rw_cycle, BENCH_ITERS of each, alternating blocks),
#                           then 8 readers (BENCH_RW_READERS) and 1 writer (BENCH_RW_WRITERS) on
#                           one key, holds of 1 ms, 2 s (BENCH_CONT_DURATION): reader and writer
#                           acquisitions/s, their waits, the share of time held by each kind
#                           (rw_contention), two rounds (BENCH_RW_ROUNDS): under a minute
#   BENCH_NODE_PEERS="node-redlock redlock-universal redis-semaphore"   the peers (bench.mjs --impl)
#   BENCH_CONT_PEERS="node-redlock redlock-universal redis-semaphore"   the peers that also run
#                           contention (latency and locks/s run for every peer)
#   BENCH_PEER_CONT_SETTINGS=tuned   the retry settings (bench.mjs --cont-settings) of
#                           redlock-universal and redis-semaphore in contention, about 8 s per
#                           setting, peer and N; "default,nr-default,tuned" for all three.
#                           node-redlock always runs both of its own (default, tuned)
#   BENCH_JOBS=2            build parallelism
#   BENCH_FAULT_PROXY=PATH  a redlock-fault-proxy binary (default: built from chaos/support)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"

PIN=${BENCH_PIN:-split}
BASE=${BENCH_BASEPORT:-7321}
BUDGET=${BENCH_BUDGET:-540}
ITERS=${BENCH_ITERS:-5000}
WARMUP=${BENCH_WARMUP:-200}
TPUT_WORKERS=64
TPUT_DURATION=${BENCH_TPUT_DURATION:-3}
CONT_WORKERS=8
CONT_DURATION=${BENCH_CONT_DURATION:-3}
HOLD_MS=1
HELD=${BENCH_HELD:-10000}
LEASE_MS=${BENCH_LEASE_MS:-3000}
WINDOW=${BENCH_WINDOW:-6}
HOLD_THREADS=${BENCH_HOLD_THREADS:-1}
DELAY_MS=${BENCH_DELAY_MS:-50}
SKIP=" ${BENCH_SKIP:-} "
ONLY=${BENCH_ONLY:-}
JOBS=${BENCH_JOBS:-2}
NODE_PEERS=${BENCH_NODE_PEERS:-node-redlock redlock-universal redis-semaphore}
CONT_PEERS=" ${BENCH_CONT_PEERS:-node-redlock redlock-universal redis-semaphore} "
PEER_CONT_SETTINGS=${BENCH_PEER_CONT_SETTINGS:-tuned}
README_NODES="1 3 5"
README_ROUNDS=2
SEM_NODES=
ELECTION_NODES=
ELECTION_TTL_MS=${BENCH_ELECTION_TTL_MS:-1000}
ELECTION_ROUNDS=${BENCH_ELECTION_ROUNDS:-10}
SEM_ROUNDS=${BENCH_SEM_ROUNDS:-2}
PERMITS=${BENCH_PERMITS:-4}
SEM_WORKERS=${BENCH_SEM_WORKERS:-16}
SEM_CLIENTS=${BENCH_SEM_CLIENTS:-0}
RW_NODES=
RW_ROUNDS=${BENCH_RW_ROUNDS:-2}
RW_READERS=${BENCH_RW_READERS:-8}
RW_WRITERS=${BENCH_RW_WRITERS:-1}
LAT_NODES="1 3 5 7 9"
TPUT_NODES="1 3 5"
MAXN=9
case $ONLY in
  "") ;;
  readme) LAT_NODES= TPUT_NODES= MAXN=5 SKIP="$SKIP minority watchdog chart " ;;
  # Cost at scale: a million held locks on one node (the servers' one core is the limit at
  # N = 5), lease 30 s, and the client CPU per lock against the floor's at N = 1 and 5.
  million)
    LAT_NODES= TPUT_NODES= MAXN=5 SKIP="$SKIP readme peers contention minority chart "
    HELD=${BENCH_HELD:-1000000} LEASE_MS=${BENCH_LEASE_MS:-30000} WINDOW=${BENCH_WINDOW:-20}
    HOLD_THREADS=${BENCH_HOLD_THREADS:-32} BUDGET=${BENCH_BUDGET:-600}
    ;;
  # A counting semaphore against redis-semaphore's, in peerbench's `semaphore` shape.
  semaphore)
    LAT_NODES= TPUT_NODES= MAXN=5 SKIP="$SKIP readme minority watchdog chart "
    SEM_NODES=${BENCH_SEM_NODES:-3 5} CONT_DURATION=${BENCH_CONT_DURATION:-2}
    NODE_PEERS=${BENCH_NODE_PEERS:-redis-semaphore}
    ;;
  # An election's failover after its leader crashes; no peer has one.
  election)
    LAT_NODES= TPUT_NODES= MAXN=5 SKIP="$SKIP readme peers contention minority watchdog chart "
    ELECTION_NODES=${BENCH_ELECTION_NODES:-3 5}
    ;;
  # The read-write lock: ours alone (no peer runs one over a quorum).
  rwlock)
    LAT_NODES= TPUT_NODES= MAXN=3 SKIP="$SKIP readme peers minority watchdog chart "
    RW_NODES=${BENCH_RW_NODES:-3} CONT_DURATION=${BENCH_CONT_DURATION:-2}
    ITERS=${BENCH_ITERS:-2000}
    ;;
  *) echo "bench/run.sh: BENCH_ONLY must be readme, million, semaphore, election or rwlock (or unset)" >&2; exit 2 ;;
esac
BUILD=$ROOT/build/bench
PEERBENCH=${REDLOCK_PEERBENCH:-$ROOT/../shared/peerbench}
skipped() { [[ $SKIP == *" $1 "* ]]; }

OUT=${1:-$BUILD/results/$(date -u +%Y%m%dT%H%M%SZ)-$PIN}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
RAW=$OUT/raw.jsonl
ERR=$OUT/stderr.log
: >"$RAW"
: >"$ERR"
log() { echo "[bench +$(($(date +%s) - T_START))s] $*" | tee -a "$ERR" >&2; }
T_START=$(date +%s)

for b in cmake ninja redis-server redis-cli taskset timeout python3 ss; do
  command -v "$b" >/dev/null || { echo "bench/run.sh: missing $b (bash tools/bench.sh installs it)" >&2; exit 1; }
done

# ---- build ----
log "building redlock_scenarios (Release) in ${BUILD#"$ROOT"/}"
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DREDLOCK_BUILD_BENCH=ON \
  -DREDLOCK_BUILD_EXAMPLES=OFF >>"$ERR" 2>&1 || { log "cmake configure failed (see $ERR)"; exit 1; }
cmake --build "$BUILD" --target redlock_scenarios -j "$JOBS" >>"$ERR" 2>&1 ||
  { log "build failed (see $ERR)"; exit 1; }
SCEN=$BUILD/bench/redlock_scenarios
# The chaos suite's fault proxy (chaos/support) for the delay case, when it can be built.
PROXY=${BENCH_FAULT_PROXY:-}
if [[ -z $PROXY && -z $ONLY ]] && cmake --build "$BUILD" --target redlock_fault_proxy -j "$JOBS" >>"$ERR" 2>&1; then
  PROXY=$(find "$BUILD" -type f -name redlock-fault-proxy -perm -u+x | head -1)
fi

# ---- peerbench (the C fan-out floor and the node peers), when present ----
PEERS=0
PEER_NOTE=
PB_WORK=$BUILD/peerbench
if skipped peers; then
  PEER_NOTE="peer columns left out: BENCH_SKIP has peers"
elif [[ ! -f $PEERBENCH/node/bench.mjs || ! -f $PEERBENCH/fanout/fanout.c ]]; then
  PEER_NOTE="peer columns left out: no peerbench at $PEERBENCH (set REDLOCK_PEERBENCH)"
elif ! command -v node >/dev/null || ! command -v npm >/dev/null || ! command -v cc >/dev/null; then
  PEER_NOTE="peer columns left out: peerbench needs node, npm and cc"
else
  PEERBENCH=$(cd "$PEERBENCH" && pwd)
  # Run from a working copy in the build tree: peerbench's own folder is left untouched.
  mkdir -p "$PB_WORK/node"
  for f in bench.mjs package.json package-lock.json; do
    cmp -s "$PEERBENCH/node/$f" "$PB_WORK/node/$f" || cp "$PEERBENCH/node/$f" "$PB_WORK/node/$f"
  done
  # The npm package of each peer (bench.mjs --impl), to tell whether `npm ci` installed it.
  package_of() { case $1 in node-redlock) echo redlock ;; *) echo "$1" ;; esac; }
  missing=0
  for impl in $NODE_PEERS; do [[ -d $PB_WORK/node/node_modules/$(package_of "$impl") ]] || missing=1; done
  if ((missing)) || [[ $PB_WORK/node/package-lock.json -nt $PB_WORK/node/node_modules ]]; then
    log "peerbench: npm ci (the node peers and ioredis, pinned by its package-lock.json)"
    (cd "$PB_WORK/node" && timeout 300 npm ci --no-audit --no-fund >>"$ERR" 2>&1) || true
  fi
  if [[ ! -x $PB_WORK/fanout || $PEERBENCH/fanout/fanout.c -nt $PB_WORK/fanout ]]; then
    cc -O2 -Wall -o "$PB_WORK/fanout" "$PEERBENCH/fanout/fanout.c" >>"$ERR" 2>&1 || true
  fi
  ready=
  for impl in $NODE_PEERS; do
    if [[ -d $PB_WORK/node/node_modules/$(package_of "$impl") ]]; then
      ready+="$impl "
    else
      log "peerbench: $impl is not installed (see stderr.log): its column is left out"
    fi
  done
  NODE_PEERS=${ready% }
  if [[ -n $NODE_PEERS && -x $PB_WORK/fanout ]]; then
    PEERS=1
    PEER_NOTE="peers from $PEERBENCH: $NODE_PEERS"
  else
    PEER_NOTE="peer columns left out: peerbench could not be prepared (see stderr.log)"
  fi
fi
log "$PEER_NOTE"

# ---- CPU placement ----
NCPU=$(nproc)
if [[ $PIN != none && $NCPU -lt 2 ]]; then
  log "only $NCPU CPU: placement $PIN impossible, using none"
  PIN=none
fi
case $PIN in
  split) SERVER_CPUS=1 CLIENT_CPUS=0 ;;
  same) SERVER_CPUS=0 CLIENT_CPUS=0 ;;
  none) SERVER_CPUS= CLIENT_CPUS= ;;
  *) echo "bench/run.sh: BENCH_PIN must be split, same or none" >&2; exit 2 ;;
esac
CL=()
SV=()
[[ -n $CLIENT_CPUS ]] && CL=(taskset -c "$CLIENT_CPUS")
[[ -n $SERVER_CPUS ]] && SV=(taskset -c "$SERVER_CPUS")

# ---- nodes: our own redis-servers, known by pid, stopped by pid ----
STATE=$(mktemp -d "${TMPDIR:-/tmp}/redlock-bench.XXXXXX")
SERVER_PIDS=()
PROXY_PIDS=()
STEP_PID=
is_our_redis() { # pid port
  [[ -r /proc/$1/cmdline ]] && tr '\0' ' ' <"/proc/$1/cmdline" | grep -q "redis-server.*:$2"
}
cleanup() {
  local -
  set +e
  [[ -n $STEP_PID ]] && kill -TERM "$STEP_PID" 2>/dev/null
  for pid in "${PROXY_PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null; done
  local i pid port
  for i in "${!SERVER_PIDS[@]}"; do
    pid=${SERVER_PIDS[$i]} port=$((BASE + i))
    if is_our_redis "$pid" "$port"; then
      kill -CONT "$pid" 2>/dev/null
      kill -TERM "$pid" 2>/dev/null
    fi
  done
  for _ in $(seq 1 50); do
    local alive=0
    for pid in "${SERVER_PIDS[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    ((alive == 0)) && break
    sleep 0.1
  done
  for i in "${!SERVER_PIDS[@]}"; do
    pid=${SERVER_PIDS[$i]} port=$((BASE + i))
    is_our_redis "$pid" "$port" && kill -KILL "$pid" 2>/dev/null
  done
  for i in $(seq 0 $((MAXN - 1))); do
    rm -f "$STATE/$((BASE + i)).pid" "$STATE/$((BASE + i)).log" "$STATE/proxy-$((BASE + i)).out"
    rm -rf "$STATE/data-$((BASE + i))"
  done
  rmdir "$STATE" 2>/dev/null
  SERVER_PIDS=()
  PROXY_PIDS=()
}
trap cleanup EXIT
trap 'exit 130' INT TERM

for ((i = 0; i < MAXN; i++)); do
  p=$((BASE + i))
  if ss -Hltn "sport = :$p" | grep -q .; then
    log "port $p is in use: choose another BENCH_BASEPORT"
    exit 1
  fi
done
for ((i = 0; i < MAXN; i++)); do
  p=$((BASE + i))
  mkdir -p "$STATE/data-$p"
  env ${SV[@]+"${SV[@]}"} redis-server --bind 127.0.0.1 --port "$p" --save '' --appendonly no \
    --daemonize yes --pidfile "$STATE/$p.pid" --logfile "$STATE/$p.log" --dir "$STATE/data-$p" \
    --databases 1 >/dev/null
done
for ((i = 0; i < MAXN; i++)); do
  p=$((BASE + i))
  for _ in $(seq 1 50); do
    [[ -s $STATE/$p.pid && "$(redis-cli -p "$p" PING 2>/dev/null)" == PONG ]] && break
    sleep 0.1
  done
  [[ -s $STATE/$p.pid ]] || { log "node on port $p did not start (see $STATE/$p.log)"; exit 1; }
  SERVER_PIDS[i]=$(cat "$STATE/$p.pid")
done
ports_for() { seq -s, "$BASE" $((BASE + $1 - 1)); }
flush() { # N
  local i
  for ((i = 0; i < $1; i++)); do redis-cli -p $((BASE + i)) FLUSHALL >/dev/null 2>&1 || true; done
}

# ---- the run's own record ----
cpu_busy() { awk '/^cpu /{print $2+$3+$4+$7+$8+$9, $2+$3+$4+$5+$6+$7+$8+$9}' /proc/stat; }
read -r BUSY0 TOT0 < <(cpu_busy)
T_MEASURE=$(date +%s)
python3 - "$RAW" <<EOF
import json, os, subprocess, sys
def sh(c):
    try: return subprocess.run(c, shell=True, capture_output=True, text=True, timeout=10).stdout.strip()
    except Exception: return ""
rec = {"impl": "env", "date": sh("date -u +%FT%TZ"), "kernel": os.uname().release,
       "cpu": sh("grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-").strip(),
       "nproc": os.cpu_count(), "pin": "$PIN", "server_cpus": "${SERVER_CPUS:-any}",
       "client_cpus": "${CLIENT_CPUS:-any}", "loadavg_start": open("/proc/loadavg").read().split()[:3],
       "redis": sh("redis-server --version").split("v=")[-1].split()[0],
       "node": sh("node --version") if $PEERS else None, "peers": bool($PEERS),
       "node_peers": "${NODE_PEERS}".split() if $PEERS else [], "only": "$ONLY",
       "readme_rounds": $README_ROUNDS, "sem_rounds": $SEM_ROUNDS, "permits": $PERMITS,
       "sem_workers": $SEM_WORKERS, "sem_clients": $SEM_CLIENTS,
       "peer_note": """$PEER_NOTE""", "commit": sh("git rev-parse --short HEAD"),
       "dirty": bool(sh("git status --porcelain -- lib include")),
       "busiest_procs_start": sh("ps -eo pcpu=,comm= --sort=-pcpu | head -4"),
       "iters": $ITERS, "warmup": $WARMUP, "tput_duration_s": $TPUT_DURATION,
       "cont_duration_s": $CONT_DURATION, "delay_ms": $DELAY_MS, "proxy": bool("$PROXY")}
open(sys.argv[1], "a").write(json.dumps(rec) + "\n")
EOF
log "placement $PIN: servers on CPU ${SERVER_CPUS:-any}, clients on CPU ${CLIENT_CPUS:-any}; nodes on ports $BASE-$((BASE + MAXN - 1)); output $OUT"

remaining() { echo $((BUDGET - ($(date +%s) - T_MEASURE))); }
# step SECONDS NAME CMD...: CMD on the client CPU under `timeout`, JSON lines to raw.jsonl.
# In the background so that an INT/TERM to this script is handled at once.
step() {
  local want=$1 name=$2 t rc=0
  shift 2
  t=$(remaining)
  ((t > want)) && t=$want
  if ((t < 3)); then
    log "budget exhausted: skipping $name"
    return 0
  fi
  log "$name"
  timeout "$t" env ${CL[@]+"${CL[@]}"} "$@" >>"$RAW" 2>>"$ERR" &
  STEP_PID=$!
  wait "$STEP_PID" || rc=$?
  STEP_PID=
  ((rc == 0)) || log "$name failed or timed out (exit $rc)"
}
# Every line carries LABEL: the placement, and in part 0 the round ("split readme round 2"),
# which is how report.py tells part 0's lines from those of the same scenario in part 1.
LABEL=$PIN
ours() { # SECONDS NAME N ARGS...
  local t=$1 name=$2 n=$3
  shift 3
  step "$t" "$name" "$SCEN" --ports "$(ports_for "$n")" --label "$LABEL" --max-seconds "$t" "$@"
  flush "$n"
}
node_peer() { # SECONDS IMPL N SCENARIOS [ARGS...]
  local t=$1 impl=$2 n=$3 scen=$4
  shift 4
  step "$t" "$impl N=$n ($scen)" node "$PB_WORK/node/bench.mjs" --impl "$impl" \
    --ports "$(ports_for "$n")" --scenarios "$scen" --iters "$ITERS" --warmup "$WARMUP" \
    --tput-workers "$TPUT_WORKERS" --tput-duration "$TPUT_DURATION" \
    --cont-workers "$CONT_WORKERS" --cont-duration "$CONT_DURATION" --hold-ms "$HOLD_MS" \
    --max-seconds "$t" --label "$LABEL" "$@"
  flush "$n"
}
c_fanout_lat() { # N NAME
  step 30 "$2" "$PB_WORK/fanout" -p "$(ports_for "$1")" -m lat -n "$ITERS" -w "$WARMUP" -l "$LABEL"
  flush "$1"
}

# ---- 0. the README's call against the floor and the peers, each in its own process ----
# The floor (c-fanout), ours (the README's blocking acquire(key, 10s, 2s) + release) and each
# peer, one process after the other, then the same again: each round's ratio to the floor
# compares processes seconds apart, and the second round shows how far one round is from the
# next.
if ! skipped readme; then
  for n in $README_NODES; do
    for ((round = 1; round <= README_ROUNDS; round++)); do
      LABEL="$PIN readme round $round"
      ((PEERS)) && ! skipped floor && c_fanout_lat "$n" "readme N=$n round $round: c-fanout (the floor)"
      ours 70 "readme N=$n round $round: redlock-cpp acquire(key, 10s, 2s) + release" "$n" \
        --scenarios readme_call --iters "$ITERS" --warmup "$WARMUP"
      if ((PEERS)); then
        for impl in $NODE_PEERS; do node_peer $((ITERS / 500 + 10)) "$impl" "$n" latency; done
      fi
    done
  done
  LABEL=$PIN
fi

# ---- BENCH_ONLY=semaphore: ours against redis-semaphore's RedlockSemaphore ----
# Per N, ours (a Client per worker, a waiting acquire of one of PERMITS permits) and then the
# peer (peerbench's `semaphore` scenario: a RedlockSemaphore over each worker's own ioredis
# connections), each a process of its own, then the same again; the lines carry
# "<pin> semaphore round K".
for n in $SEM_NODES; do
  for ((round = 1; round <= SEM_ROUNDS; round++)); do
    LABEL="$PIN semaphore round $round"
    ours $((CONT_DURATION + 25)) "semaphore N=$n round $round: redlock-cpp, $PERMITS permits, $SEM_WORKERS workers" \
      "$n" --scenarios semaphore --permits "$PERMITS" --sem-workers "$SEM_WORKERS" \
      --hold-ms "$HOLD_MS" --cont-duration "$CONT_DURATION" --sem-clients "$SEM_CLIENTS"
    if ((PEERS)) && [[ " $NODE_PEERS " == *" redis-semaphore "* ]]; then
      node_peer $((CONT_DURATION + 25)) redis-semaphore "$n" semaphore --permits "$PERMITS" \
        --sem-workers "$SEM_WORKERS"
      # The same scenario again through bench/peer_semaphore.mjs, which adds the hand-off gap and
      # the time series that peerbench's harness does not measure.
      cp bench/peer_semaphore.mjs "$PB_WORK/node/peer_semaphore.mjs"
      step $((CONT_DURATION + 25)) "redis-semaphore N=$n (semaphore, with the hand-off gap)" \
        node "$PB_WORK/node/peer_semaphore.mjs" --ports "$(ports_for "$n")" --permits "$PERMITS" \
        --sem-workers "$SEM_WORKERS" --hold-ms "$HOLD_MS" --cont-duration "$CONT_DURATION" \
        --max-seconds $((CONT_DURATION + 25)) --label "$LABEL"
      flush "$n"
    fi
  done
done
LABEL=$PIN

# ---- BENCH_ONLY=election: an office's failover after its leader crashes ----
for n in $ELECTION_NODES; do
  ours $((ELECTION_ROUNDS * (ELECTION_TTL_MS * 5 / 1000 + 3) + 20)) \
    "election N=$n: failover after $ELECTION_ROUNDS leader crashes, lease $ELECTION_TTL_MS ms" "$n" \
    --scenarios election_failover --election-ttl-ms "$ELECTION_TTL_MS" \
    --election-rounds "$ELECTION_ROUNDS"
done
# ---- BENCH_ONLY=rwlock: the read-write lock ----
# Per N and round: the uncontended shared and exclusive cycles, then readers with writers on one
# key; the lines carry "<pin> rwlock round K".
for n in $RW_NODES; do
  for ((round = 1; round <= RW_ROUNDS; round++)); do
    LABEL="$PIN rwlock round $round"
    ours $((ITERS / 200 + 30)) "rwlock N=$n round $round: shared and exclusive cycles" \
      "$n" --scenarios rw_cycle --iters "$ITERS" --warmup "$WARMUP"
    ours $((CONT_DURATION + 25)) "rwlock N=$n round $round: $RW_READERS readers, $RW_WRITERS writer(s)" \
      "$n" --scenarios rw_contention --rw-readers "$RW_READERS" --rw-writers "$RW_WRITERS" \
      --hold-ms "$HOLD_MS" --cont-duration "$CONT_DURATION"
  done
done
LABEL=$PIN

# ---- 1-3: per N ----
for n in $LAT_NODES; do
  tput=0
  [[ " $TPUT_NODES " == *" $n "* ]] && tput=1
  if ((PEERS)) && ! skipped floor; then
    c_fanout_lat "$n" "c-fanout N=$n latency"
    ((tput)) && step $((TPUT_DURATION + 10)) "c-fanout N=$n throughput" \
      "$PB_WORK/fanout" -p "$(ports_for "$n")" -m tput -c "$TPUT_WORKERS" -d "$TPUT_DURATION" -l "$PIN"
    flush "$n"
  fi
  if ! skipped floor; then
    ours 60 "hiredis-floor N=$n latency" "$n" --scenarios floor_latency --iters "$ITERS" --warmup "$WARMUP"
    ((tput)) && ours $((TPUT_DURATION + 15)) "hiredis-floor N=$n throughput" "$n" \
      --scenarios floor_throughput --tput-workers "$TPUT_WORKERS" --tput-duration "$TPUT_DURATION"
  fi
  # Ours with the floor's own cycles alternating in the same process (--alternate-floor): the
  # ratios the targets judge compare the same moments of the machine.
  # The peers' steps of each part run right after ours, so that they are seconds apart (a peer
  # cannot run inside our process as the floor does).
  ours 90 "redlock-cpp N=$n latency" "$n" --scenarios uncontended_latency --iters "$ITERS" \
    --warmup "$WARMUP" --alternate-floor 1
  if ((PEERS)); then
    for impl in $NODE_PEERS; do node_peer $((ITERS / 500 + 10)) "$impl" "$n" latency; done
  fi
  if ((tput)); then
    ours $((2 * TPUT_DURATION + 25)) "redlock-cpp N=$n throughput" "$n" --scenarios throughput \
      --tput-workers "$TPUT_WORKERS" --tput-duration "$TPUT_DURATION" --alternate-floor 1
    if ((PEERS)); then
      for impl in $NODE_PEERS; do node_peer $((TPUT_DURATION + 12)) "$impl" "$n" throughput; done
    fi
    if ! skipped contention; then
      ours $((2 * CONT_DURATION + 20)) "redlock-cpp N=$n contention" "$n" --scenarios contention \
        --cont-workers "$CONT_WORKERS" --cont-duration "$CONT_DURATION" --hold-ms "$HOLD_MS"
      # The hand-off floor right after our contention, so that the gap and its floor see the
      # same machine; hot and after the workers' hold (bench/handoff_floor.cpp).
      skipped floor || ours 45 "hiredis-floor N=$n hand-off" "$n" \
        --scenarios handoff_floor --iters 1500 --warmup 100 --hold-ms "$HOLD_MS"
      # node-redlock with both of its retry settings (its best is shown against ours), the two
      # others with PEER_CONT_SETTINGS: two modes each.
      if ((PEERS)); then
        for impl in $NODE_PEERS; do
          [[ $CONT_PEERS == *" $impl "* ]] || continue
          if [[ $impl == node-redlock ]]; then
            node_peer $((4 * (CONT_DURATION + 4) + 10)) "$impl" "$n" contention
          else
            settings=${PEER_CONT_SETTINGS//[^,]/}
            node_peer $((2 * (${#settings} + 1) * (CONT_DURATION + 4) + 10)) "$impl" "$n" contention \
              --cont-settings "$PEER_CONT_SETTINGS"
          fi
        done
      fi
    fi
  fi
done

# ---- 4. a bad minority at N = 5 ----
if ! skipped minority; then
  delayed=()
  if [[ -n $PROXY ]]; then
    for i in 3 4; do
      target=$((BASE + i))
      env ${SV[@]+"${SV[@]}"} "$PROXY" --target "$target" --mode delay --delay-ms "$DELAY_MS" \
        >"$STATE/proxy-$target.out" 2>>"$ERR" &
      PROXY_PIDS+=($!)
      port=
      for _ in $(seq 1 50); do
        port=$(head -1 "$STATE/proxy-$target.out" 2>/dev/null | grep -x '[0-9]\+' || true)
        [[ -n $port ]] && break
        sleep 0.1
      done
      [[ -n $port ]] && delayed+=("$port")
    done
  fi
  args=()
  if ((${#delayed[@]} == 2)); then
    args=(--delayed-ports "${delayed[0]},${delayed[1]}")
  else
    log "no fault proxy (redlock-fault-proxy): the ${DELAY_MS} ms delay case is left out"
  fi
  ours 90 "redlock-cpp N=5 bad minority (healthy, ${DELAY_MS} ms delay, paused)" 5 \
    --scenarios bad_minority --faulty 2 --iters "$ITERS" --warmup "$WARMUP" ${args[@]+"${args[@]}"}
  for pid in "${PROXY_PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${PROXY_PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  PROXY_PIDS=()
  for i in 3 4; do kill -CONT "${SERVER_PIDS[$i]}" 2>/dev/null || true; done
  sleep 0.5
  flush 5
fi

# ---- 5. the watchdog at scale ----
if [[ $ONLY == million ]]; then
  # Client CPU per lock against the floor's, alternating in one process, then the million.
  for n in 1 5; do
    ours $((2 * TPUT_DURATION + 25)) "redlock-cpp N=$n throughput" "$n" --scenarios throughput \
      --tput-workers "$TPUT_WORKERS" --tput-duration "$TPUT_DURATION" --alternate-floor 1
  done
  ours $((HELD / 2500 + 2 * LEASE_MS / 3000 + WINDOW + 60)) \
    "redlock-cpp N=1 watchdog: $HELD held locks, lease $LEASE_MS ms, $HOLD_THREADS hold threads" 1 \
    --scenarios watchdog_scale --held "$HELD" --lease-ms "$LEASE_MS" --window "$WINDOW" \
    --hold-threads "$HOLD_THREADS"
elif ! skipped watchdog; then
  ours 90 "redlock-cpp N=5 watchdog: $HELD held locks, lease $LEASE_MS ms" 5 --scenarios watchdog_scale \
    --held "$HELD" --lease-ms "$LEASE_MS" --window "$WINDOW" --hold-threads "$HOLD_THREADS"
fi

read -r BUSY1 TOT1 < <(cpu_busy)
python3 - "$RAW" "$((BUSY1 - BUSY0))" "$((TOT1 - TOT0))" "$(($(date +%s) - T_MEASURE))" <<'EOF'
import json, sys
raw, busy, tot, el = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
rec = {"impl": "env_end", "loadavg_end": open("/proc/loadavg").read().split()[:3], "elapsed_s": el,
       "machine_cpu_busy_fraction": round(busy / tot, 3) if tot else None}
open(raw, "a").write(json.dumps(rec) + "\n")
EOF
cleanup
trap - EXIT
log "measurements done in $(($(date +%s) - T_MEASURE)) s"

# ---- the table and the chart ----
python3 bench/report.py "$RAW" --out "$OUT" >"$OUT/summary.md" 2>>"$ERR" || log "report.py failed (see $ERR)"
if skipped chart; then
  :
elif command -v gnuplot >/dev/null; then
  gnuplot -e "dir='$OUT'" bench/chart.gp 2>>"$ERR" || log "gnuplot failed (see $ERR)"
else
  log "no gnuplot: chart left out (apt-get install gnuplot-nox)"
fi
# The README's call against the floor and the peers, whenever part 0 ran (BENCH_ONLY=readme too).
if [[ -s $OUT/readme.tsv ]] && command -v gnuplot >/dev/null; then
  gnuplot -e "dir='$OUT'" bench/chart_readme.gp 2>>"$ERR" || log "gnuplot failed (see $ERR)"
fi
cat "$OUT/summary.md"
[[ -f $OUT/chart-readme.png ]] && echo && echo "chart of the README's call: $OUT/chart-readme.png"
[[ -f $OUT/chart.png ]] && echo && echo "chart: $OUT/chart.png"
echo "raw: $RAW"
