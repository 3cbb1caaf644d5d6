#!/usr/bin/env bash
# bench/compare.sh [BEFORE_REF] [AFTER_REF] [OUTDIR] — two commits of the library side by side,
# in one run: uncontended acquire+release (p50, p99) and locks/s with 64 in flight, N = 5.
#
# Made for the sans-IO restructure (lib/proto): BEFORE_REF defaults to 7dd605e^, the last commit
# whose lib/net took the protocol's decisions itself, AFTER_REF to HEAD. Any two refs work.
#
# Each ref is exported with `git archive` into build/compare/<commit>/src (the working tree is
# never touched) and built there (Release, build/compare/<commit>/build, only redlock_scenarios):
# each binary loads the libredlock.so of its own tree (RUNPATH; checked with ldd before the
# runs). One set of five local masters serves both, started once on free loopback ports, pinned
# like bench/run.sh (servers on CPU 1, clients on CPU 0), stopped by pid on every exit path.
# Rounds alternate before, after, before, after... so that slow and quick moments of a shared
# machine fall on both sides; each run also measures the floor (bench/floor.cpp, the same code
# in both builds) in blocks alternating with the library, which gives a second, machine-free
# view: the library's figure as a multiple of the floor's of the same seconds.
#
# Output (OUTDIR, default build/compare/results/<UTC>): summary.md (per metric the median of
# the rounds before and after, after/before, the rounds' min..max on each side and the ratios
# of adjacent runs), raw.jsonl (every measurement, with "side", "round" and "commit" added),
# runs/*.jsonl (each run as printed), stderr.log; with BENCH_PERF=1 also perf-before.txt and
# perf-after.txt (flat profiles), perf-*.stacks.gz and perf-diff.md (the client's CPU per lock
# by layer and the functions whose share moved most).
#
# Environment: BENCH_ROUNDS=6 (rounds per side, at least 5 are asked for), BENCH_BUDGET=420
# (seconds for the runs: no round pair is started that might not end within it),
# BENCH_ITERS=5000, BENCH_WARMUP=300, BENCH_TPUT_DURATION=3, BENCH_PIN=split|same|none,
# BENCH_BASEPORT=7521 (the first of five free ports looked for from here), BENCH_JOBS=2,
# BENCH_FLOOR=1 (0: no alternating floor; the runs are shorter, the "× floor" rows go),
# BENCH_PERF=0 (1: after the rounds, one throughput run per side of at least 6 s under
# `perf record`, user space only, call stacks from DWARF).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"

BEFORE_REF=${1:-7dd605e^}
AFTER_REF=${2:-HEAD}
ROUNDS=${BENCH_ROUNDS:-6}
BUDGET=${BENCH_BUDGET:-420}
ITERS=${BENCH_ITERS:-5000}
WARMUP=${BENCH_WARMUP:-300}
TPUT_DURATION=${BENCH_TPUT_DURATION:-3}
PIN=${BENCH_PIN:-split}
BASE=${BENCH_BASEPORT:-7521}
JOBS=${BENCH_JOBS:-2}
FLOOR=${BENCH_FLOOR:-1}
PERF=${BENCH_PERF:-0}
N=5
COMPARE=$ROOT/build/compare

for b in git tar cmake ninja redis-server redis-cli taskset timeout python3 ss ldd; do
  command -v "$b" >/dev/null || { echo "bench/compare.sh: missing $b (bash tools/bench.sh installs most)" >&2; exit 1; }
done
for v in ROUNDS BUDGET ITERS WARMUP TPUT_DURATION BASE JOBS FLOOR PERF; do
  [[ ${!v} =~ ^[0-9]+$ ]] || { echo "bench/compare.sh: $v must be a whole number" >&2; exit 2; }
done
if ((PERF)) && ! command -v perf >/dev/null; then
  echo "bench/compare.sh: BENCH_PERF=1 needs perf (apt-get install linux-perf); left out" >&2
  PERF=0
fi
((ROUNDS >= 1 && ROUNDS <= 50)) || { echo "bench/compare.sh: BENCH_ROUNDS must be 1..50" >&2; exit 2; }

resolve() { # REF -> full commit hash
  git rev-parse --verify --quiet "$1^{commit}" || { echo "bench/compare.sh: no commit $1" >&2; exit 2; }
}
BEFORE=$(resolve "$BEFORE_REF")
AFTER=$(resolve "$AFTER_REF")
B_SHORT=$(git rev-parse --short=10 "$BEFORE")
A_SHORT=$(git rev-parse --short=10 "$AFTER")

OUT=${3:-$COMPARE/results/$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$OUT/runs"
OUT=$(cd "$OUT" && pwd)
ERR=$OUT/stderr.log
: >"$ERR"
T_START=$(date +%s)
log() { echo "[compare +$(($(date +%s) - T_START))s] $*" | tee -a "$ERR" >&2; }

# ---- builds: one tree per commit, exported, never the working tree ----
# A commit's files never change, so an exported tree is reused; its build is incremental.
build_commit() { # COMMIT -> sets SCEN_PATH
  local c=$1 dir=$COMPARE/$1
  if [[ ! -f $dir/src.done ]]; then
    rm -rf "$dir/src"
    mkdir -p "$dir/src"
    git archive --format=tar "$c" | tar -x -C "$dir/src"
    touch "$dir/src.done"
  fi
  log "building redlock_scenarios of ${c:0:10} (Release) in ${dir#"$ROOT"/}/build"
  # Only what the scenarios need: the library and the bench program.
  cmake -S "$dir/src" -B "$dir/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DREDLOCK_BUILD_BENCH=ON \
    -DREDLOCK_BUILD_TESTS=OFF -DREDLOCK_BUILD_TOOLS=OFF -DREDLOCK_BUILD_EXAMPLES=OFF \
    -DREDLOCK_BUILD_SIM=OFF -DREDLOCK_BUILD_PROMETHEUS=OFF >>"$ERR" 2>&1 ||
    { log "configure of ${c:0:10} failed (see $ERR)"; exit 1; }
  cmake --build "$dir/build" --target redlock_scenarios -j "$JOBS" >>"$ERR" 2>&1 ||
    { log "build of ${c:0:10} failed (see $ERR)"; exit 1; }
  SCEN_PATH=$dir/build/bench/redlock_scenarios
  # The binary must run the library of its own tree, not another build's or an installed one.
  local lib
  lib=$(ldd "$SCEN_PATH" | awk '/libredlock/ {print $3}')
  if [[ -n $lib && $lib != "$dir/build/"* ]]; then
    log "${SCEN_PATH#"$ROOT"/} loads $lib, not the library of its own tree"
    exit 1
  fi
  echo "${c:0:10}: $SCEN_PATH -> ${lib:-libredlock linked statically}" >>"$ERR"
}
build_commit "$BEFORE"
SCEN_BEFORE=$SCEN_PATH
build_commit "$AFTER"
SCEN_AFTER=$SCEN_PATH

# ---- CPU placement, as bench/run.sh ----
if [[ $PIN != none && $(nproc) -lt 2 ]]; then
  log "only $(nproc) CPU: placement $PIN impossible, using none"
  PIN=none
fi
case $PIN in
  split) SV=(taskset -c 1) CL=(taskset -c 0) ;;
  same) SV=(taskset -c 0) CL=(taskset -c 0) ;;
  none) SV=() CL=() ;;
  *) echo "bench/compare.sh: BENCH_PIN must be split, same or none" >&2; exit 2 ;;
esac

# ---- five masters of our own, known by pid, stopped by pid ----
STATE=$(mktemp -d "${TMPDIR:-/tmp}/redlock-compare.XXXXXX")
PIDS=()
PORTS=()
STEP_PID=
is_our_redis() { # PID PORT
  [[ -r /proc/$1/cmdline ]] && tr '\0' ' ' <"/proc/$1/cmdline" | grep -q "redis-server.*:$2"
}
cleanup() {
  local -
  set +e
  [[ -n $STEP_PID ]] && kill -TERM "$STEP_PID" 2>/dev/null
  local i
  for i in "${!PIDS[@]}"; do
    is_our_redis "${PIDS[$i]}" "${PORTS[$i]}" && kill -TERM "${PIDS[$i]}" 2>/dev/null
  done
  for _ in $(seq 1 50); do
    local alive=0
    for i in "${!PIDS[@]}"; do kill -0 "${PIDS[$i]}" 2>/dev/null && alive=1; done
    ((alive == 0)) && break
    sleep 0.1
  done
  for i in "${!PIDS[@]}"; do
    is_our_redis "${PIDS[$i]}" "${PORTS[$i]}" && kill -KILL "${PIDS[$i]}" 2>/dev/null
  done
  rm -rf "$STATE"
  PIDS=()
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Five free ports in a row, looked for from BASE on in steps of 10 (bounded).
port_free() { ! ss -Hltn "sport = :$1" | grep -q .; }
for ((try = 0; try < 20; try++)); do
  PORTS=()
  for ((i = 0; i < N; i++)); do
    p=$((BASE + 10 * try + i))
    port_free "$p" && PORTS+=("$p")
  done
  ((${#PORTS[@]} == N)) && break
done
((${#PORTS[@]} == N)) || { log "no $N free ports in a row from $BASE on"; exit 1; }
for p in "${PORTS[@]}"; do
  mkdir -p "$STATE/data-$p"
  # env execs taskset, which execs redis-server: $! is the server's own pid.
  env ${SV[@]+"${SV[@]}"} redis-server --bind 127.0.0.1 --port "$p" --save '' --appendonly no \
    --dir "$STATE/data-$p" --logfile "$STATE/$p.log" --databases 1 >/dev/null 2>&1 &
  PIDS+=($!)
done
for i in "${!PORTS[@]}"; do
  p=${PORTS[$i]}
  for _ in $(seq 1 100); do
    [[ $(redis-cli -p "$p" PING 2>/dev/null) == PONG ]] && break
    sleep 0.05
  done
  # The server that answers must be the one we started (another could have taken the port).
  served_by=$(redis-cli -p "$p" INFO server 2>/dev/null | tr -d '\r' | awk -F: '/^process_id:/ {print $2}')
  [[ $served_by == "${PIDS[$i]}" ]] || { log "port $p is not served by our redis-server (pid ${PIDS[$i]})"; exit 1; }
done
PORT_LIST=$(IFS=,; echo "${PORTS[*]}")
flush() { local p; for p in "${PORTS[@]}"; do redis-cli -p "$p" FLUSHALL >/dev/null 2>&1 || true; done; }

# ---- the run's record ----
cpu_busy() { awk '/^cpu /{print $2+$3+$4+$7+$8+$9, $2+$3+$4+$5+$6+$7+$8+$9}' /proc/stat; }
read -r BUSY0 TOT0 < <(cpu_busy)
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
BUSIEST=$(ps -eo pcpu=,comm= --sort=-pcpu | head -5 | awk '{printf "%s%s %s%%", (NR > 1 ? ", " : ""), $2, $1}')
BENCH_SAME=yes
# The sources of the two scenarios measured here (the floor included), and how they are built.
git diff --quiet "$BEFORE" "$AFTER" -- bench/main.cpp bench/lock_scenarios.cpp bench/floor.cpp \
  bench/common.cpp bench/common.hpp bench/scenarios.hpp bench/server_probe.cpp \
  bench/server_probe.hpp bench/CMakeLists.txt || BENCH_SAME=no
log "placement $PIN; nodes on ports $PORT_LIST; before ${B_SHORT} ($BEFORE_REF), after ${A_SHORT} ($AFTER_REF); output $OUT"

# ---- rounds: before, after, before, after... ----
T_MEASURE=$(date +%s)
LONGEST=0
DONE=0
run_side() { # SIDE ROUND BINARY
  local side=$1 round=$2 bin=$3 t0 rc=0 limit
  limit=$((BUDGET - ($(date +%s) - T_MEASURE)))
  ((limit > 120)) && limit=120
  t0=$(date +%s)
  timeout "$limit" env ${CL[@]+"${CL[@]}"} "$bin" --ports "$PORT_LIST" \
    --scenarios uncontended_latency,throughput --iters "$ITERS" --warmup "$WARMUP" \
    --tput-duration "$TPUT_DURATION" --alternate-floor "$FLOOR" --label "$side" \
    --max-seconds "$limit" >"$OUT/runs/$(printf 'r%02d' "$round")-$side.jsonl" 2>>"$ERR" &
  STEP_PID=$!
  wait "$STEP_PID" || rc=$?
  STEP_PID=
  flush
  local took=$(($(date +%s) - t0))
  ((took > LONGEST)) && LONGEST=$took
  ((rc == 0)) || { log "round $round $side failed or timed out (exit $rc)"; return 1; }
  log "round $round $side: ${took} s"
}
for ((r = 1; r <= ROUNDS; r++)); do
  # A pair is started only if two of the longest runs so far still fit: a missing "after"
  # would leave the sides unequal.
  left=$((BUDGET - ($(date +%s) - T_MEASURE)))
  if ((r > 1 && left < 2 * LONGEST + 5)); then
    log "budget: $left s left, a round pair takes up to $((2 * LONGEST)) s; stopping after $((r - 1)) rounds"
    break
  fi
  run_side before "$r" "$SCEN_BEFORE" || break
  run_side after "$r" "$SCEN_AFTER" || break
  DONE=$r
done
# ---- where the client's CPU goes (BENCH_PERF=1): one throughput run per side under perf ----
# Not part of the rounds (perf's sampling costs CPU too). Stacks are unwound from DWARF (a
# Release build keeps no frame pointers), so that malloc, free and clock reads are charged to
# the library function that called them.
if ((PERF)) && ((DONE > 0)); then
  PERF_DURATION=$((TPUT_DURATION > 6 ? TPUT_DURATION : 6))
  for side in before after; do
    bin=$SCEN_BEFORE
    [[ $side == after ]] && bin=$SCEN_AFTER
    log "perf: throughput of $side, $PERF_DURATION s"
    # User space only (cpu-clock:u): an unprivileged perf_event_paranoid of 2 allows that.
    timeout 90 env ${CL[@]+"${CL[@]}"} perf record -q -e cpu-clock:u -F 1999 --call-graph dwarf,4096 \
      -o "$OUT/perf-$side.data" -- "$bin" --ports "$PORT_LIST" --scenarios throughput \
      --tput-duration "$PERF_DURATION" --label "perf-$side" --max-seconds 60 \
      >"$OUT/runs/perf-$side.jsonl" 2>>"$ERR" &
    STEP_PID=$!
    wait "$STEP_PID" || log "perf run of $side failed (exit $?)"
    STEP_PID=
    flush
    perf report -i "$OUT/perf-$side.data" --stdio --no-children --sort dso,sym -F overhead,dso,sym \
      -g none --percent-limit 0.1 2>/dev/null | sed 's/ *$//' | grep -v '^$' |
      awk '/^#/ {print; next} {print | "sort -rn"}' >"$OUT/perf-$side.txt" || true
    perf script -i "$OUT/perf-$side.data" -F ip,sym,dso 2>/dev/null | gzip >"$OUT/perf-$side.stacks.gz" || true
  done
  python3 - "$OUT" >"$OUT/perf-diff.md" <<'PY' || log "perf-diff failed"
import collections, gzip, json, os, re, sys
out = sys.argv[1]

def stacks(path):  # perf script: frames "  addr symbol (dso)", a blank line after each sample
    cur = []
    for line in gzip.open(path, "rt", errors="replace"):
        if not line.strip():
            if cur:
                yield cur
            cur = []
            continue
        m = re.match(r"\s+[0-9a-f]+\s+(.*?)\s+\((.*)\)$", line.rstrip())
        if m:
            cur.append((re.sub(r"\+0x[0-9a-f]+$", "", m.group(1)), m.group(2)))
    if cur:
        yield cur

def kind(sym):
    if "clock_gettime" in sym:
        return "clock"
    if re.search(r"malloc|free|calloc|realloc|operator new|operator delete|^_int_|tcache", sym):
        return "alloc"
    return "code"

LAYERS = [  # (pattern, name), first match; the owner is a demangled name without arguments
    (r"::proto::", "lib/proto (the machines, their requests and tallies)"),
    (r"Coordinator::", "lib/net Coordinator (its jobs, or its drivers of lib/proto's machines)"),
    (r"FanOut::", "lib/net FanOut"),
    (r"Node::|Transport::|EventLoop::|ReplyReader::|Argv::|append_command", "lib/net nodes and wire"),
    (r"^redlock::", "the rest of redlock:: (Client, tokens, core)"),
    (r"", "templates instantiated in the library (std::vector, std::function, shared_ptr...)"),
]

def layer_of(owner):
    return next(name for pat, name in LAYERS if re.search(pat, owner))

prof, layer, cpu, total = {}, {}, {}, {}
for side in ("before", "after"):
    c, l, n = collections.Counter(), collections.Counter(), 0
    for st in stacks(os.path.join(out, f"perf-{side}.stacks.gz")):
        n += 1
        owner = next((re.sub(r"\(.*", "", s)[:100] for s, d in st if "libredlock" in d), None)
        k = kind(st[0][0])
        if owner is None:
            c[("(outside the library: " + os.path.basename(st[0][1]) + ")", k)] += 1
            l["outside the library"] += 1
        else:
            c[(owner, k)] += 1
            l[layer_of(owner)] += 1
    prof[side], layer[side], total[side] = c, l, n
    for line in open(os.path.join(out, "runs", f"perf-{side}.jsonl")):
        if line.startswith("{") and '"throughput"' in line:
            cpu[side] = json.loads(line).get("client_cpu_us_per_lock")
if not all(total.values()) or len(cpu) < 2:
    sys.exit("no samples or no throughput figure")

def us(side, counter, key):  # that share of the run's measured client CPU per lock
    return counter[side][key] / total[side] * cpu[side]

print(f"Client CPU per lock in the perf runs (sampling included): before {cpu['before']:.2f}, "
      f"after {cpu['after']:.2f} µs; {total['before']} and {total['after']} samples.\n")
print("Each sample is charged to the innermost library function on its stack (what it called, "
      "malloc and clock reads included); µs/lock = its share of the samples × the run's client "
      "CPU per lock, an estimate.\n")
print("| where | before µs/lock | after µs/lock |\n| --- | ---: | ---: |")
for k in sorted(set(layer["before"]) | set(layer["after"])):
    print(f"| {k} | {us('before', layer, k):.2f} | {us('after', layer, k):.2f} |")
print("\nThe 30 functions whose µs per lock moved most (kind: code, alloc = malloc/free below it, "
      "clock = clock reads below it):\n")
print("| function | kind | before µs/lock | after µs/lock |\n| --- | --- | ---: | ---: |")
keys = set(prof["before"]) | set(prof["after"])
for k in sorted(keys, key=lambda k: -abs(us("after", prof, k) - us("before", prof, k)))[:30]:
    print(f"| `{k[0]}` | {k[1]} | {us('before', prof, k):.2f} | {us('after', prof, k):.2f} |")
PY
  rm -f "$OUT"/perf-*.data  # tens of MB each; the reports and the stacks stay
fi
read -r BUSY1 TOT1 < <(cpu_busy)
LOAD1=$(cut -d' ' -f1-3 /proc/loadavg)
ELAPSED=$(($(date +%s) - T_MEASURE))
cleanup
trap - EXIT
((DONE > 0)) || { log "no complete round"; exit 1; }

# ---- summary ----
python3 - "$OUT" <<EOF >"$OUT/summary.md"
import glob, json, math, os, re, statistics as st
out = "$OUT"
meta = dict(before="$B_SHORT", before_ref="$BEFORE_REF", after="$A_SHORT", after_ref="$AFTER_REF",
            rounds=$DONE, asked=$ROUNDS, pin="$PIN", ports="$PORT_LIST", iters=$ITERS,
            warmup=$WARMUP, tput=$TPUT_DURATION, floor=$FLOOR, load0="$LOAD0", load1="$LOAD1",
            busiest="""$BUSIEST""", elapsed=$ELAPSED, bench_same="$BENCH_SAME",
            busy=round(($BUSY1 - $BUSY0) / max(1, $TOT1 - $TOT0), 2))
runs = {}  # (side, round) -> {scenario: record}
with open(os.path.join(out, "raw.jsonl"), "w") as raw:
    for path in sorted(glob.glob(os.path.join(out, "runs", "r*-*.jsonl"))):
        m = re.match(r"r(\d+)-(before|after)\.jsonl", os.path.basename(path))
        rnd, side = int(m.group(1)), m.group(2)
        if rnd > meta["rounds"]:
            continue
        for line in open(path):
            if not line.strip().startswith("{"):
                continue
            rec = json.loads(line)
            rec.update(side=side, round=rnd, commit=meta[side])
            raw.write(json.dumps(rec) + "\n")
            runs.setdefault((side, rnd), {})[rec.get("scenario")] = rec

def get(rec, path):
    for k in path:
        if not isinstance(rec, dict) or k not in rec:
            return None
        rec = rec[k]
    return rec

def ratio_of(num, den):
    return lambda rec: (num(rec) / den(rec)) if num(rec) is not None and den(rec) else None

U, T = "uncontended_latency", "throughput"
f = lambda scen, *path: (lambda run: get(run.get(scen, {}), path))
metrics = [  # name, which is better, the value of one run
    ("uncontended p50, blocking (µs)", "lower", f(U, "total_us", "p50")),
    ("uncontended p99, blocking (µs)", "lower", f(U, "total_us", "p99")),
    ("uncontended p50, callbacks (µs)", "lower", f(U, "callbacks_total_us", "p50")),
    ("locks/s, 64 in flight", "higher", f(T, "ops_per_s")),
    ("client CPU per lock (µs)", "lower", f(T, "client_cpu_us_per_lock")),
    ("servers' CPU per lock (µs)", "lower", f(T, "servers_cpu_us_per_lock")),
]
if meta["floor"]:
    # A control: the floor is the same code on both sides, so its rows should not move.
    metrics += [("the floor's client CPU per lock (µs), control", "lower",
                 f(T, "floor_alternating_client_cpu_us_per_lock"))]
if meta["floor"]:
    metrics += [
        ("uncontended p50 × floor", "lower",
         ratio_of(f(U, "total_us", "p50"), f(U, "floor_alternating_total_us", "p50"))),
        ("locks/s × floor", "higher",
         ratio_of(f(T, "ops_per_s"), f(T, "floor_alternating_ops_per_s"))),
    ]

def fmt(x):
    if x is None:
        return "–"
    return f"{x:.0f}" if abs(x) >= 100 else f"{x:.2f}" if abs(x) < 10 else f"{x:.1f}"

rounds = range(1, meta["rounds"] + 1)
print(f"# {meta['before']} ({meta['before_ref']}) against {meta['after']} ({meta['after_ref']}), N = 5\n")
print(f"{meta['rounds']} rounds per side (asked {meta['asked']}), alternating before, after, ...; "
      f"placement {meta['pin']}; {meta['iters']} uncontended cycles per run, {meta['tput']} s of "
      f"64 in flight per run; machine CPU busy {meta['busy']} over {meta['elapsed']} s "
      f"(load {meta['load0']} at the start, {meta['load1']} at the end; busiest at the start: "
      f"{meta['busiest']}). the scenarios' sources (bench/) the same in both commits: {meta['bench_same']}.\n")
if meta["rounds"] < 5:
    print(f"**Only {meta['rounds']} round(s) per side: too few to tell noise from a difference.**\n")
print("after/before: the medians' ratio. Spread: min..max of the rounds. Adjacent: after / before "
      "of the same round (two runs seconds apart), median and min..max; *after better* counts the "
      "rounds in which after beat its adjacent before, and p is the two-sided sign test of that "
      "count (are the rounds' wins a coin's?). Verdict: *within noise* when the two sides' spreads "
      "overlap and the pairs split both ways; *after better/worse in every round* when the spreads "
      "do not overlap; *after better/worse in every pair* when they overlap but every pair leans "
      "the same way (a shift smaller than the spread, seen because adjacent runs share the "
      "machine's moment).\n")
print("| metric | before (median) | after (median) | after/before | before min..max | "
      "after min..max | adjacent after/before | after better | verdict |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
for name, better, val in metrics:
    b = [val(runs.get(("before", r), {})) for r in rounds]
    a = [val(runs.get(("after", r), {})) for r in rounds]
    bv, av = [x for x in b if x is not None], [x for x in a if x is not None]
    if not bv or not av:
        print(f"| {name} | – | – | – | – | – | – | – | not measured |")
        continue
    mb, ma = st.median(bv), st.median(av)
    pairs = [y / x for x, y in zip(b, a) if x and y is not None]
    wins = sum(1 for q in pairs if (q > 1) == (better == "higher") and q != 1)
    losses = sum(1 for q in pairs if q != 1) - wins
    n = wins + losses
    k = max(wins, losses)
    pval = min(1.0, 2 * sum(math.comb(n, i) for i in range(k, n + 1)) / 2**n) if n else 1.0
    if min(len(bv), len(av)) < 3:
        verdict = "too few rounds"
    elif max(bv) < min(av) or max(av) < min(bv):
        good = (min(av) > max(bv)) == (better == "higher")
        verdict = "**after better in every round**" if good else "**after worse in every round**"
    elif n >= 5 and (wins == 0 or losses == 0):
        verdict = ("spreads overlap; **after better in every pair**" if losses == 0 else
                   "spreads overlap; **after worse in every pair**")
    else:
        verdict = "within noise"
    adj = (f"{st.median(pairs):.3f} ({min(pairs):.3f}..{max(pairs):.3f})" if pairs else "–")
    print(f"| {name} | {fmt(mb)} | {fmt(ma)} | {ma / mb:.3f} | {fmt(min(bv))}..{fmt(max(bv))} | "
          f"{fmt(min(av))}..{fmt(max(av))} | {adj} | {wins} of {n} (p {pval:.2f}) | {verdict} |")

print("\n### Rounds\n")
print("| round | side | p50 µs | p99 µs | callbacks p50 µs | locks/s | client CPU µs/lock | failed acquires |")
print("| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
for r in rounds:
    for side in ("before", "after"):
        run = runs.get((side, r), {})
        fails = (f(U, "failed_acquires")(run) or 0) + (f(U, "callbacks_failed_acquires")(run) or 0)
        fails += sum((f(T, "errors")(run) or {}).values())
        print(f"| {r} | {side} | {fmt(f(U, 'total_us', 'p50')(run))} | {fmt(f(U, 'total_us', 'p99')(run))} | "
              f"{fmt(f(U, 'callbacks_total_us', 'p50')(run))} | {fmt(f(T, 'ops_per_s')(run))} | "
              f"{fmt(f(T, 'client_cpu_us_per_lock')(run))} | {fails} |")
EOF
cat "$OUT/summary.md"
log "done in $(($(date +%s) - T_START)) s; raw figures: $OUT/raw.jsonl"
