#!/usr/bin/env bash
# bench/tls.sh [OUTDIR] — TLS next to plain TCP, N = 5: uncontended acquire+release latency and
# locks/s (64 in flight), through the public API (redlock_scenarios), against the same five
# redis-servers, each listening on a plain port and a TLS port. Rounds alternate TCP and TLS so
# that both see the same machine. Prints a Markdown table with the ratios (summary.md).
#
# Builds redlock_scenarios (Release, in BENCH_BUILD, default build/bench), makes a CA and a
# server certificate with `openssl` in a temporary directory, starts its own servers (known by
# pid, stopped by pid on every exit path), pinned like bench/run.sh.
#
# Environment: BENCH_BUILD=DIR, BENCH_PIN=split|same|none (default split), BENCH_BASEPORT=7421
# (plain ports BASE..BASE+4, TLS ports BASE+10..BASE+14), BENCH_ITERS=5000, BENCH_WARMUP=300,
# BENCH_TPUT_DURATION=3, BENCH_ROUNDS=2, BENCH_JOBS=2.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"

PIN=${BENCH_PIN:-split}
BASE=${BENCH_BASEPORT:-7421}
ITERS=${BENCH_ITERS:-5000}
WARMUP=${BENCH_WARMUP:-300}
TPUT_DURATION=${BENCH_TPUT_DURATION:-3}
ROUNDS=${BENCH_ROUNDS:-2}
JOBS=${BENCH_JOBS:-2}
BUILD=${BENCH_BUILD:-$ROOT/build/bench}
N=5

for b in cmake ninja redis-server redis-cli openssl taskset timeout python3; do
  command -v "$b" >/dev/null || { echo "bench/tls.sh: missing $b (bash tools/bench.sh installs most)" >&2; exit 1; }
done

OUT=${1:-$BUILD/results/$(date -u +%Y%m%dT%H%M%SZ)-tls-$PIN}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
RAW=$OUT/raw.jsonl
ERR=$OUT/stderr.log
: >"$RAW"
: >"$ERR"
log() { echo "[bench-tls] $*" | tee -a "$ERR" >&2; }

log "building redlock_scenarios (Release) in $BUILD"
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DREDLOCK_BUILD_BENCH=ON \
  -DREDLOCK_BUILD_EXAMPLES=OFF >>"$ERR" 2>&1 || { log "configure failed (see $ERR)"; exit 1; }
cmake --build "$BUILD" --target redlock_scenarios -j "$JOBS" >>"$ERR" 2>&1 ||
  { log "build failed (see $ERR)"; exit 1; }
SCEN=$BUILD/bench/redlock_scenarios

case $PIN in
  split) [[ $(nproc) -ge 2 ]] && { SV=(taskset -c 1); CL=(taskset -c 0); } || { SV=(); CL=(); } ;;
  same) SV=(taskset -c 0) CL=(taskset -c 0) ;;
  none) SV=() CL=() ;;
  *) echo "bench/tls.sh: BENCH_PIN must be split, same or none" >&2; exit 2 ;;
esac

STATE=$(mktemp -d "${TMPDIR:-/tmp}/redlock-bench-tls.XXXXXX")
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do
    for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$p" 2>/dev/null || true
  done
  rm -rf "$STATE"
}
trap cleanup EXIT INT TERM

# A CA and a server certificate for 127.0.0.1 (EC P-256, as most deployments).
(
  cd "$STATE"
  openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out ca.key
  openssl req -x509 -new -key ca.key -out ca.crt -days 2 -subj "/CN=redlock bench CA"
  openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out server.key
  openssl req -new -key server.key -out server.csr -subj "/CN=redlock bench server"
  printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' >server.ext
  openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 \
    -extfile server.ext -out server.crt
) >>"$ERR" 2>&1 || { log "openssl failed (see $ERR)"; exit 1; }

PLAIN=() TLS=()
for i in $(seq 0 $((N - 1))); do
  p=$((BASE + i)) t=$((BASE + 10 + i))
  mkdir -p "$STATE/n$i"
  "${SV[@]}" redis-server --port "$p" --tls-port "$t" --bind 127.0.0.1 --save "" \
    --appendonly no --dir "$STATE/n$i" --logfile "$STATE/n$i/redis.log" \
    --tls-cert-file "$STATE/server.crt" --tls-key-file "$STATE/server.key" \
    --tls-ca-cert-file "$STATE/ca.crt" --tls-auth-clients no >/dev/null 2>&1 &
  PIDS+=($!)
  PLAIN+=("$p") TLS+=("$t")
done
for p in "${PLAIN[@]}"; do
  for _ in $(seq 100); do [[ $(redis-cli -p "$p" ping 2>/dev/null) == PONG ]] && break; sleep 0.05; done
  [[ $(redis-cli -p "$p" ping 2>/dev/null) == PONG ]] || { log "node on $p did not start"; exit 1; }
done
join() { local IFS=,; echo "$*"; }
log "5 nodes: plain ports $(join "${PLAIN[@]}"), TLS ports $(join "${TLS[@]}"); pin $PIN"

run() {  # label ports [extra...]
  local label=$1 ports=$2
  shift 2
  timeout 300 "${CL[@]}" "$SCEN" --ports "$ports" --scenarios uncontended_latency,throughput \
    --iters "$ITERS" --warmup "$WARMUP" --tput-duration "$TPUT_DURATION" --label "$label" \
    --max-seconds 240 "$@" >>"$RAW" 2>>"$ERR"
}
for r in $(seq "$ROUNDS"); do
  log "round $r: tcp"
  run tcp "$(join "${PLAIN[@]}")"
  log "round $r: tls"
  run tls "$(join "${TLS[@]}")" --tls-cacert "$STATE/ca.crt"
done

python3 - "$RAW" "$PIN" >"$OUT/summary.md" <<'EOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip().startswith("{")]
def pick(label, scenario, f):
    return [f(r) for r in rows if r.get("label") == label and r.get("scenario") == scenario]
out = {}
for label in ("tcp", "tls"):
    lat = pick(label, "uncontended_latency", lambda r: r["total_us"])
    tput = pick(label, "throughput", lambda r: r["ops_per_s"])
    out[label] = dict(
        p50=statistics.median(x["p50"] for x in lat), p99=statistics.median(x["p99"] for x in lat),
        ops=statistics.median(tput), fails=sum(r.get("failed_acquires", 0) for r in rows
                                               if r.get("label") == label))
print(f"TLS vs plain TCP, N = 5 (uncontended acquire+release; locks/s with 64 in flight); "
      f"median of {len(pick('tcp', 'throughput', lambda r: 1))} round(s), pin {sys.argv[2]}\n")
print("| transport | p50 µs | p99 µs | locks/s | failed acquires |")
print("| --- | ---: | ---: | ---: | ---: |")
for label in ("tcp", "tls"):
    o = out[label]
    print(f"| {label} | {o['p50']:.0f} | {o['p99']:.0f} | {o['ops']:.0f} | {o['fails']} |")
t, s = out["tcp"], out["tls"]
print(f"\nTLS / TCP: p50 latency x{s['p50'] / t['p50']:.2f}, p99 x{s['p99'] / t['p99']:.2f}, "
      f"locks/s x{s['ops'] / t['ops']:.2f}")
EOF
cat "$OUT/summary.md"
log "raw figures: $RAW"
