#!/usr/bin/env python3
"""report.py RAW.jsonl [--out DIR]: the Markdown table of one benchmark run, and the data files
of its chart (DIR/*.tsv, drawn by bench/chart.gp).

First the README's call (scenario readme_call) against peerbench's C fan-out floor and the three
node peers, each in its own process, round by round (part 0 of run.sh, whose lines carry the
round in their label). Then every figure of ours (impl redlock-cpp) with its ratio to the floor
of the same run (impl hiredis-floor: raw round trips with hiredis) and, when the peers ran, to
node-redlock, redlock-universal and redis-semaphore; peerbench's C fan-out probe (c-fanout) is
shown beside the floor as a cross-check. Standard library only.
"""
import json
import math
import os
import re
import sys

OURS, FLOOR, CFAN, NODE = "redlock-cpp", "hiredis-floor", "c-fanout", "node-redlock"
RU, RS = "redlock-universal", "redis-semaphore"
PEER_IMPLS = (NODE, RU, RS)
SHORT = {NODE: "node", RU: "universal", RS: "semaphore"}  # in "× node" and the like


def load(path):
    recs = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line.startswith("{"):
                continue
            try:
                recs.append(json.loads(line))
            except json.JSONDecodeError:
                pass
    return recs


def round_of(r):
    """The round of a line of part 0 (label "<pin> readme round K"); None for the other parts."""
    m = re.search(r"readme round (\d+)", str(r.get("label") or ""))
    return int(m.group(1)) if m else None


def find(recs, impl, scenario, nodes=None, rnd=None, **fields):
    """The last line of impl and scenario (of part 0's round rnd, or outside part 0)."""
    for r in reversed(recs):
        if r.get("impl") != impl or r.get("scenario") != scenario or round_of(r) != rnd:
            continue
        if nodes is not None and r.get("nodes") != nodes:
            continue
        if impl == CFAN and (r.get("wait", "quorum") != "quorum" or r.get("spin")):
            continue
        if all(r.get(k) == v for k, v in fields.items()):
            return r
    return None


def get(r, path):
    for k in path.split("."):
        if not isinstance(r, dict):
            return None
        r = r.get(k)
    return r if isinstance(r, (int, float)) and not isinstance(r, bool) else None


def div(a, b):
    return a / b if a is not None and b not in (None, 0) else None


def fmt(v, unit=""):
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    if abs(v) >= 10000:
        return f"{v / 1000:.1f}k{unit}" if abs(v) < 1e6 else f"{v / 1e6:.2f}M{unit}"
    if abs(v) >= 100 or float(v).is_integer():
        return f"{v:.0f}{unit}"
    if abs(v) >= 10:
        return f"{v:.1f}{unit}"
    return f"{v:.2f}{unit}"


def ratio(v):
    return "–" if v is None else f"{v:.2f}×"


def pct(v):
    if v is None:
        return "–"
    return f"{100 * v:.0f} %" if abs(v) >= 0.1 else f"{100 * v:.1f} %"


def peer_mean(r):
    """A peer's acquisitions per worker (it reports the min and max only)."""
    return div(r.get("acquisitions"), r.get("workers"))


def retaken(r):
    """The share of a peer's hand-offs that went back to the worker that had just released."""
    own, other = r.get("self_handoffs"), r.get("cross_handoffs")
    return None if own is None or other is None or own + other == 0 else own / (own + other)


def serves_all(r):
    """The issue's "no waiter starved": every worker got at least half the mean (None: unknown)."""
    m = peer_mean(r)
    return None if r.get("per_worker_min") is None or m is None else r["per_worker_min"] >= m / 2


def table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" if i == 0 else "---:" for i in range(len(header))) + "|"]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


def verdict(ok):
    return "–" if ok is None else ("met" if ok else "**missed**")


def readme_section(recs, env):
    """Part 0: the README's blocking acquire(key, 10s, 2s) + release (ours, readme_call) against
    the floor (c-fanout) and the node peers (uncontended_latency), each in its own process; every
    cell is "round 1 / round 2"."""
    rounds = sorted({round_of(r) for r in recs if round_of(r) is not None})
    cols = [("floor (C fan-out)", CFAN, "uncontended_latency"), ("**ours** (README call)", OURS, "readme_call")]
    cols += [(impl, impl, "uncontended_latency") for impl in PEER_IMPLS]
    md = ["### The README's call against the floor and the peers (each in its own process)", ""]
    if not rounds:
        return md + ["(not run)", ""]
    ns = sorted({r["nodes"] for r in recs if round_of(r) is not None and isinstance(r.get("nodes"), int)})

    def cells(values, bold=False):
        text = " / ".join(v for v in values)
        return f"**{text}**" if bold and any(v != "–" for v in values) else text

    rows, failures = [], []
    for n in ns:
        got = {(impl, k): find(recs, impl, scen, n, rnd=k) for _, impl, scen in cols for k in rounds}
        floor = {k: get(got[(CFAN, k)], "total_us.p50") for k in rounds}
        for what, key in (("p50", "total_us.p50"), ("p99", "total_us.p99")):
            rows.append([n if what == "p50" else "", what] +
                        [cells([fmt(get(got[(impl, k)], key)) for k in rounds], impl == OURS) for _, impl, _ in cols])
        rows.append(["", "p50 ÷ floor p50"] +
                    ["–" if impl == CFAN else
                     cells([ratio(div(get(got[(impl, k)], "total_us.p50"), floor[k])) for k in rounds], impl == OURS)
                     for _, impl, _ in cols])
        for (impl, k), r in got.items():
            bad = (r or {}).get("failed_acquires", 0) + (r or {}).get("failed_releases", 0)
            if bad:
                failures.append(f"{impl} N={n} round {k}: {bad}")
    md.append(table(["N", "whole cycle, µs"] + [c[0] for c in cols], rows))
    md.append("")
    iters, warmup = env.get("iters", "?"), env.get("warmup", "?")
    md.append(f"One acquire + release of one key, sequentially, {iters} cycles after {warmup} of warm-up, "
              "each implementation a process of its own on the client CPU, one after the other per N in the "
              "order of the columns, then again: each cell is round " + " / round ".join(str(k) for k in rounds)
              + ", and “p50 ÷ floor p50” divides by the floor of the same round. Ours: the README's blocking "
              "`client.acquire(key, 10s, 2s)` then `client.release(lock)` (scenario `readme_call`; a waiting "
              "acquire, unlike the `try_acquire` of table 1). The floor: peerbench's C fan-out probe "
              "(`fanout -m lat`: SET NX PX to all nodes, then EVALSHA compare-and-delete to all, each done "
              "at the quorum, hand-written RESP over `poll()`, no lock library). The peers: peerbench's "
              "`node/bench.mjs --scenarios latency` (`acquire` then `release` through each library's "
              "multi-node API over ioredis, TTL 10 s).")
    if not env.get("peers"):
        md.append("")
        md.append(f"No floor and no peers: {env.get('peer_note', 'peerbench not found')}.")
    md.append("")
    md.append("Failed cycles: " + (", ".join(failures) if failures else "none") + ".")
    md.append("")
    return md


def readme_tsv(recs):
    """The chart's data of part 0 (bench/chart_readme.gp): per N, the p50 and then the p99 of the
    floor, ours and each peer, each the mean of its rounds (NaN where it did not run)."""
    rounds = sorted({round_of(r) for r in recs if round_of(r) is not None})
    ns = sorted({r["nodes"] for r in recs if round_of(r) is not None and isinstance(r.get("nodes"), int)})
    cols = [(CFAN, "uncontended_latency"), (OURS, "readme_call")]
    cols += [(impl, "uncontended_latency") for impl in PEER_IMPLS]
    rows = []
    for n in ns:
        row = [n]
        for key in ("total_us.p50", "total_us.p99"):
            for impl, scen in cols:
                vals = [get(find(recs, impl, scen, n, rnd=k), key) for k in rounds]
                vals = [v for v in vals if isinstance(v, (int, float))]
                row.append(sum(vals) / len(vals) if vals else None)
        rows.append(row)
    return rows


def sem_round_of(r):
    """The round of a line of BENCH_ONLY=semaphore (label "<pin> semaphore round K"), else None."""
    m = re.search(r"semaphore round (\d+)", str(r.get("label") or ""))
    return int(m.group(1)) if m else None


def semaphore_section(recs, env):
    """BENCH_ONLY=semaphore: ours (scenario semaphore) against redis-semaphore's RedlockSemaphore
    (peerbench's scenario semaphore, and the same through bench/peer_semaphore.mjs with the
    hand-off gap and the time series), per N and round."""
    lines = [r for r in recs if r.get("scenario") == "semaphore" and sem_round_of(r) is not None]
    md = ["### A counting semaphore against redis-semaphore", ""]
    if not lines:
        return md + ["(not run)", ""]
    ns = sorted({r["nodes"] for r in lines if isinstance(r.get("nodes"), int)})
    rounds = sorted({sem_round_of(r) for r in lines})

    def ms(r, key):
        v = get(r, key)
        return fmt(None if v is None else v / 1000)

    def buckets(r):
        b = [x for x in (r or {}).get("in_use_per_bucket") or [] if isinstance(x, (int, float))]
        return f"{fmt(min(b))} / {fmt(sum(b) / len(b))}" if b else "–"

    rows, notes = [], []
    for n in ns:
        for k in rounds:
            for impl, harness, name in ((OURS, None, "**ours**"), (RS, None, RS),
                                        (RS, "bench/peer_semaphore.mjs", RS + " (with the gap)")):
                r = next((x for x in reversed(lines) if x.get("impl") == impl and x.get("nodes") == n
                          and sem_round_of(x) == k and x.get("harness") == harness), None)
                if r is None and harness:
                    continue
                if r is None:
                    rows.append([n, k, name] + ["–"] * 11)
                    continue
                rows.append([n, k, name, fmt(get(r, "acq_per_s")), fmt(get(r, "permits_in_use_mean")),
                             buckets(r), pct(get(r, "all_permits_busy_fraction")), fmt(get(r, "max_holders")),
                             fmt(get(r, "violations")), fmt(get(r, "errors")), ms(r, "wait_us.p50"),
                             ms(r, "wait_us.p99"), ms(r, "handoff_gap_us.p50"), ms(r, "handoff_gap_us.p99")])
                if r.get("first_error"):
                    notes.append(f"{name} N={n} round {k}: first error “{r['first_error']}”")
    permits = env.get("permits", "?")
    md.append(table(["N", "round", "", "acq/s", "permits in use (mean)", "per 100 ms: min / mean", "all busy",
                     "max holders", "violations", "errors", "wait p50 ms", "wait p99 ms", "hand-off gap p50 ms",
                     "gap p99 ms"], rows))
    md.append("")
    ours = next((r for r in lines if r.get("impl") == OURS), {})
    md.append(f"{env.get('sem_workers', ours.get('workers', '?'))} workers share {permits} permits of one key for "
              f"{env.get('cont_duration_s', '?')} s, each acquiring a permit (a waiting acquire), holding it "
              f"{ours.get('hold_ms', '?')} ms, releasing it, and again; each implementation a process of its own on "
              "the client CPU, ours then the peer per N, then again. Ours: `client.acquire(AcquireRequest{{key}, "
              "10 s, wait 10 s, permits = k})` and `client.release(lock)`, "
              + ("a Client per worker" if ours.get("clients") in (None, "one per worker")
                 else f"the workers sharing {ours.get('clients')} Client(s)")
              + " (scenario `semaphore`). The peer: peerbench's `node/bench.mjs --scenarios semaphore` (redis-semaphore's "
              "`RedlockSemaphore` over each worker's own ioredis connections, `retryInterval` 10 ms, "
              "`acquireTimeout` 10 s); “(with the gap)”: the same scenario, options and bookkeeping through "
              "`bench/peer_semaphore.mjs`, which adds the hand-off gap, the time series and “all busy”. Holders count from an acquire's return to the release call; “permits in "
              "use” is their integral over the window divided by its length, “per 100 ms” the min and mean of "
              "that mean per 100 ms bucket, “all busy” the share of the window with every permit held; a violation is a grant that made the holders more than k; wait is the acquire call. The "
              "hand-off gap (peerbench's harness does not measure it): a release call made while some "
              "worker is inside acquire opens a hand-off, and each grant closes the oldest open one (first in, "
              "first out); the gap is the time between the two.")
    md.append("")
    if notes:
        md.append("Errors: " + "; ".join(notes) + ".")
        md.append("")
    return md


def election_section(recs, env):
    """BENCH_ONLY=election: an office's failover after its leader crashes (scenario
    election_failover), per N."""
    lines = sorted((r for r in recs if r.get("scenario") == "election_failover"),
                   key=lambda r: r["nodes"])
    md = ["An election's failover after its leader crashes (scenario `election_failover`): per "
          "round the leader's Client is destroyed without resigning while two others campaign; "
          "“failover” runs from the crash to the next leader's grant, “lease left” is what the "
          "dead leader's own validity had left at the crash (a lower bound of its key's ttl on "
          "the nodes), “overhead” the first minus the second; “handover” runs from a leader's "
          "resignation to the waiting campaigner's grant; “observer lag” from a grant to the "
          "moment an observer names the new term (negative: before the campaign returned).", ""]
    rows = []
    for r in lines:
        rows.append([f"N = {r['nodes']}", r.get("ttl_ms"), r.get("rounds"),
                     fmt(get(r, "failover_ms.p50")) + " / " + fmt(get(r, "failover_ms.max")),
                     fmt(get(r, "ttl_left_ms.p50")),
                     fmt(get(r, "overhead_ms.p50")) + " / " + fmt(get(r, "overhead_ms.max")),
                     fmt(get(r, "handover_us.p50")) + " / " + fmt(get(r, "handover_us.p99")),
                     fmt(get(r, "observer_lag_us.p50")) + " / " + fmt(get(r, "observer_lag_us.p99")),
                     r.get("errors") or "–"])
    md.append(table(["nodes", "lease ms", "crashes", "failover ms p50 / max", "lease left ms p50",
                     "overhead ms p50 / max", "handover µs p50 / p99", "observer lag µs p50 / p99",
                     "errors"], rows))
    md.append("")
    return md


def watchdog_section(w, wd):
    """Part 5 (and BENCH_ONLY=million): held locks renewing themselves, CPU and memory per lock."""
    if not wd:
        w("(not run)")
        w("")
        return
    req = wd.get("scripts_per_s_per_node") or []
    cmds = wd.get("requests_per_s_per_node") or []
    renew = get(wd, "renewals_done_per_s") or get(wd, "lock_renewals_per_s")
    per_req = div(renew, max(req) if req else None)
    w(table(["held locks", "taking them (s)", "client CPU meanwhile", "lease (renewed every)", "renewals/s",
             "requests/s per node", "lock renewals per request", "Redis commands/s per node", "client CPU",
             "client CPU µs per renewal", "a lock call meanwhile, p50 / p99 / max µs", "heap per held lock",
             "RSS per held lock", "locks lost"],
            [[wd.get("held"), fmt(get(wd, "hold_s")), pct(get(wd, "hold_client_cpu_util")),
              f"{wd.get('lease_ms')} ms ({get(wd, 'renew_every_ms') or 0:.0f} ms)", fmt(renew),
              f"{fmt(min(req))}–{fmt(max(req))}" if req else "–", fmt(per_req),
              f"{fmt(min(cmds))}–{fmt(max(cmds))}" if cmds else "–", pct(get(wd, "client_cpu_util")),
              fmt(get(wd, "client_cpu_us_per_renewal")),
              " / ".join(fmt(get(wd, f"caller_cycle_us.{k}")) for k in ("p50", "p99", "max"))
              + (f" ({wd['caller_failures']} failed)" if wd.get("caller_failures") else ""),
              fmt(get(wd, "heap_bytes_per_lock"), " B"),
              fmt(get(wd, "rss_bytes_per_lock"), " B"),
              f"{wd.get('lost_before_window', 0)} while taking them, {wd.get('lost_during_window')} in the window"]]))
    w("")
    fails = wd.get("hold_failures") or 0
    w(f"`hold()` of {wd.get('held')} resources from {wd.get('hold_threads', 1)} thread(s) with `watchdog_lease` = "
      f"{wd.get('lease_ms')} ms (renewal every lease/3){f', {fails} hold() calls failed' if fails else ''}, "
      f"then a {fmt(get(wd, 'window_s'))} s window with nothing else running but a `try_acquire` + `release` "
      "on the same client every 50 ms (“a lock call meanwhile”). Renewals/s: keys the nodes "
      "extended (PEXPIRE in renew.lua, INFO commandstats), on which the CPU per renewal is judged; "
      "requests = scripts the client sent; Redis commands include those run inside the scripts. "
      "Client CPU = getrusage of the whole process over the window, in cores. Memory = growth of "
      "heap in use (mallinfo2) and of RSS while the locks are held, divided by their number.")
    w("")


def million_section(w, recs):
    """BENCH_ONLY=million: client CPU per lock against the floor's (locks/s, the floor alternating
    in the same process), then a million held locks renewing themselves on one node."""
    w("### Client CPU per lock against the floor's (64 in flight, the floor alternating)")
    w("")
    rows, targets = [], []
    for n in sorted({r["nodes"] for r in recs if r.get("scenario") == "throughput" and r.get("impl") == OURS}):
        o = find(recs, OURS, "throughput", n)
        r = div(get(o, "client_cpu_us_per_lock"), get(o, "floor_alternating_client_cpu_us_per_lock"))
        rows.append([n, fmt(get(o, "ops_per_s")), fmt(get(o, "floor_alternating_ops_per_s")),
                     fmt(get(o, "client_cpu_us_per_lock")), fmt(get(o, "floor_alternating_client_cpu_us_per_lock")),
                     f"**{ratio(r)}**"])
        # Judged at N = 5 as in the whole run; N = 1 shows the client's own cost per lock bare.
        if n == 5:
            targets.append(["client CPU per lock N=5: ≤ 1.5× floor's", ratio(r), verdict(None if r is None else r <= 1.5)])
        else:
            targets.append([f"(not a target) client CPU per lock N={n} against the floor's", ratio(r), "—"])
    w(table(["N", "ours locks/s", "floor locks/s", "ours client CPU µs/lock", "floor's", "**× floor**"], rows)
      if rows else "(not run)")
    w("")
    wd = find(recs, OURS, "watchdog_scale")
    w(f"### {fmt(get(wd, 'held'))} held locks on {wd.get('nodes') if wd else '?'} node(s)")
    w("")
    watchdog_section(w, wd)
    if wd:
        cpu = get(wd, "client_cpu_util")
        lost = (wd.get("lost_before_window") or 0) + (wd.get("lost_during_window") or 0)
        asked = (wd.get("held") or 0) + (wd.get("hold_failures") or 0)
        targets.append([f"{asked:,} hold() calls: every lock taken, renewed on less than one core, none lost",
                        f"{wd.get('held'):,} taken, {pct(cpu)} of a core, {lost} lost",
                        verdict(None if cpu is None else cpu < 1 and lost == 0 and not wd.get("hold_failures"))])
        targets.append(["memory per held lock (stated)",
                        f"{fmt(get(wd, 'heap_bytes_per_lock'), ' B')} heap, {fmt(get(wd, 'rss_bytes_per_lock'), ' B')} RSS", "—"])
    w("### Targets")
    w("")
    w(table(["target", "measured", ""], targets))


def rw_round_of(r):
    """The round of a line of BENCH_ONLY=rwlock (label "<pin> rwlock round K"), else None."""
    m = re.search(r"rwlock round (\d+)", str(r.get("label") or ""))
    return int(m.group(1)) if m else None


def rwlock_section(recs, env):
    """BENCH_ONLY=rwlock: the read-write lock's uncontended cycles (rw_cycle, one line per kind)
    and readers with a writer on one key (rw_contention), per N and round."""
    cycles = [r for r in recs if r.get("scenario") == "rw_cycle" and rw_round_of(r) is not None]
    cont = [r for r in recs if r.get("scenario") == "rw_contention" and rw_round_of(r) is not None]
    md = ["### The read-write lock", ""]
    if not cycles and not cont:
        return md + ["(not run)", ""]

    def ms(r, key):
        v = get(r, key)
        return fmt(None if v is None else v / 1000)

    rows = [[r.get("nodes"), rw_round_of(r), r.get("kind"), ms(r, "cycle_us.p50"), ms(r, "cycle_us.p99"),
             ms(r, "acquire_us.p50"), ms(r, "release_us.p50"), fmt(get(r, "failed"))] for r in cycles]
    md.append(table(["N", "round", "kind", "cycle p50 ms", "cycle p99 ms", "acquire p50 ms", "release p50 ms",
                     "failed"], rows))
    md.append("")
    md.append("The uncontended cycle: `client.acquire(AcquireRequest{{key}, 10 s, 0 ms})` (with `shared = true` "
              "for a reader) then `client.release(lock)`, one after the other on one key, blocks of 100 of "
              "each kind alternating (scenario `rw_cycle`).")
    md.append("")
    rows = [[r.get("nodes"), rw_round_of(r), fmt(get(r, "reader_acq_per_s")), fmt(get(r, "writer_acq_per_s")),
             ms(r, "reader_wait_us.p50"), ms(r, "reader_wait_us.p99"), ms(r, "writer_wait_us.p50"),
             ms(r, "writer_wait_us.p99"), pct(get(r, "read_held_fraction")), pct(get(r, "write_held_fraction")),
             pct(get(r, "free_fraction")), fmt(get(r, "readers_at_reader_grant_mean")), fmt(get(r, "overlaps")),
             fmt(get(r, "errors"))] for r in cont]
    md.append(table(["N", "round", "reader acq/s", "writer acq/s", "reader wait p50 ms", "p99", "writer wait p50 ms",
                     "p99", "read-held", "write-held", "free", "readers at a grant", "overlaps", "errors"], rows))
    md.append("")
    first = cont[0] if cont else {}
    md.append(f"{first.get('readers', '?')} readers and {first.get('writers', '?')} writer(s) on one key for "
              f"{first.get('duration_s', '?')} s, each with a Client of its own, each acquiring (a waiting acquire), "
              f"holding {first.get('hold_ms', '?')} ms, releasing, and again at once (scenario `rw_contention`). "
              "Holders count from an acquire's return to the release call; read-held and write-held are the "
              "shares of the window with a reader or a writer holding; an overlap is a grant that the harness "
              "saw beside a holder it excludes (there must be none).")
    md.append("")
    return md


def main():
    args = sys.argv[1:]
    out_dir = None
    if "--out" in args:
        i = args.index("--out")
        out_dir = args[i + 1]
        del args[i : i + 2]
    if len(args) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    recs = load(args[0])
    env = next((r for r in recs if r.get("impl") == "env"), {})
    end = next((r for r in recs if r.get("impl") == "env_end"), {})
    peers = bool(env.get("peers"))
    if env.get("only") == "semaphore":
        md = semaphore_section(recs, env)
    elif env.get("only") == "election":
        md = election_section(recs, env)
    elif env.get("only") == "rwlock":
        md = rwlock_section(recs, env)
    else:
        md = readme_section(recs, env) if env.get("only") != "million" else []
    w = md.append

    w(f"Run of {env.get('date', '?')}, placement `{env.get('pin', '?')}` (servers on CPU "
      f"{env.get('server_cpus', '?')}, clients on CPU {env.get('client_cpus', '?')}), "
      f"{env.get('nproc', '?')} CPUs, redis {env.get('redis', '?')}, commit {env.get('commit', '?')}"
      f"{' with local changes in lib/ or include/' if env.get('dirty') else ''}; machine CPU busy "
      f"{end.get('machine_cpu_busy_fraction', '?')} over {end.get('elapsed_s', '?')} s of measurements.")
    w("")
    if out_dir:
        write_tsv(out_dir, "readme.tsv", readme_tsv(recs))
        with open(os.path.join(out_dir, "chart-title.txt"), "w", encoding="utf-8") as f:
            f.write(f"redlock-cpp, {env.get('date', '?')[:10]}, placement {env.get('pin', '?')}"
                    + ("" if peers else " (no peer)"))
    if env.get("only") in ("readme", "semaphore", "election", "rwlock"):
        w(f"Only the table above was measured (`BENCH_ONLY={env['only']}`).")
        print("\n".join(md))
        return 0
    if env.get("only") == "million":
        million_section(w, recs)
        print("\n".join(md))
        return 0
    w(f"Floor: raw round trips with hiredis (`{FLOOR}`), no lock library"
      + (f"; peerbench's C fan-out probe (`{CFAN}`) beside it." if peers else "."))
    # The peers that ran outside part 0, with the version bench.mjs reports.
    ran = [impl for impl in PEER_IMPLS if any(r.get("impl") == impl and round_of(r) is None for r in recs)]
    version = {impl: next((r.get("lib_version") for r in recs if r.get("impl") == impl and r.get("lib_version")), "?")
               for impl in PEER_IMPLS}
    w("Peers: " + ", ".join(f"{impl} {version[impl]}" for impl in ran) + " via peerbench, each in a process of its own."
      if peers and ran else f"Peers: none. {env.get('peer_note', 'peerbench not found')}.")
    w("Latencies in µs; “× floor”, “× node” (node-redlock), “× universal” (redlock-universal) and "
      "“× semaphore” (redis-semaphore) are ours divided by theirs, from this run.")
    w("")

    # ---------------------------------------------------------------- 1. uncontended latency
    lat_ns = sorted({r["nodes"] for r in recs if r.get("scenario") == "uncontended_latency" and r.get("impl") == OURS})
    header = ["N", "floor p50", "p99", "p999"]
    if peers:
        header += ["C fan-out p50", "p99"]
    header += ["**ours p50**", "p99", "p999", "p50 × floor", "p99 × floor",
               "ours, callbacks p50", "× floor", "floor alternating p50", "p99",
               "**ours p50 × alternating**", "p99 × alternating", "callbacks × alternating"]
    lat_peers = [impl for impl in ran if any(r.get("impl") == impl and r.get("scenario") == "uncontended_latency"
                                             and round_of(r) is None for r in recs)]
    for impl in lat_peers:
        header += [f"{impl} p50", "p99", f"p50 × {SHORT[impl]}", f"p99 × {SHORT[impl]}"]
    rows, lat_tsv = [], []
    for n in lat_ns:
        o, f_, c, nd, ru, rs = (find(recs, i, "uncontended_latency", n) for i in (OURS, FLOOR, CFAN) + PEER_IMPLS)
        peer_rec = dict(zip(PEER_IMPLS, (nd, ru, rs)))
        row = [n, fmt(get(f_, "total_us.p50")), fmt(get(f_, "total_us.p99")), fmt(get(f_, "total_us.p999"))]
        if peers:
            row += [fmt(get(c, "total_us.p50")), fmt(get(c, "total_us.p99"))]
        row += [f"**{fmt(get(o, 'total_us.p50'))}**", fmt(get(o, "total_us.p99")), fmt(get(o, "total_us.p999")),
                ratio(div(get(o, "total_us.p50"), get(f_, "total_us.p50"))),
                ratio(div(get(o, "total_us.p99"), get(f_, "total_us.p99"))),
                fmt(get(o, "callbacks_total_us.p50")),
                ratio(div(get(o, "callbacks_total_us.p50"), get(f_, "total_us.p50"))),
                fmt(get(o, "floor_alternating_total_us.p50")), fmt(get(o, "floor_alternating_total_us.p99")),
                f"**{ratio(div(get(o, 'total_us.p50'), get(o, 'floor_alternating_total_us.p50')))}**",
                ratio(div(get(o, "total_us.p99"), get(o, "floor_alternating_total_us.p99"))),
                ratio(div(get(o, "callbacks_total_us.p50"), get(o, "floor_alternating_total_us.p50")))]
        for impl in lat_peers:
            p_ = peer_rec[impl]
            row += [fmt(get(p_, "total_us.p50")), fmt(get(p_, "total_us.p99")),
                    ratio(div(get(o, "total_us.p50"), get(p_, "total_us.p50"))),
                    ratio(div(get(o, "total_us.p99"), get(p_, "total_us.p99")))]
        rows.append(row)
        lat_tsv.append([n] + [get(x, k) for x in (f_, c, o, nd, ru, rs) for k in ("total_us.p50", "total_us.p99")])
    w("### 1. Uncontended acquire+release (one caller, sequential)")
    w("")
    w(table(header, rows))
    w("")
    w(f"Ours: `try_acquire` + `release` of one key, {env.get('iters', '?')} cycles after "
      f"{env.get('warmup', '?')} of warm-up; the floor: SET NX PX then EVALSHA compare-and-delete, "
      "each done at the quorum. p999 of a few thousand samples is the few slowest cycles. "
      "“Callbacks”: the same cycles through `acquire_async` + `release_async`, each started from "
      "the previous one's callback, in blocks of 250 alternating with the blocking ones; the "
      "difference is the two thread hand-offs a blocking cycle makes (caller to loop and back, "
      "twice). “Floor alternating”: the floor's own cycles (the same code as the floor column, on "
      "connections of their own) run by the same process in blocks of 250 alternating with ours, "
      "so that both see the same moments of the machine; the floor column is a step of its own, "
      "seconds away. The targets are judged against the alternating floor where it was measured.")
    w("")

    # ---------------------------------------------------------------- 2. throughput
    tput_ns = sorted({r["nodes"] for r in recs if r.get("scenario") == "throughput" and r.get("impl") == OURS})
    header = ["N", "floor locks/s"]
    if peers:
        header += ["C fan-out"]
    header += ["**ours locks/s**", "× floor"]
    tput_peers = [impl for impl in ran if any(r.get("impl") == impl and r.get("scenario") == "throughput"
                                              and round_of(r) is None for r in recs)]
    for impl in tput_peers:
        header += [impl, f"× {SHORT[impl]}"]
    header += ["ours client CPU µs/lock", "floor's", "× floor", "ours servers CPU µs/lock", "floor's",
               "floor alternating locks/s", "**ours × alternating**", "its client CPU µs/lock",
               "ours × alternating", "its servers CPU µs/lock"]
    rows, tput_tsv = [], []
    for n in tput_ns:
        o, f_, c, nd, ru, rs = (find(recs, i, "throughput", n) for i in (OURS, FLOOR, CFAN) + PEER_IMPLS)
        peer_rec = dict(zip(PEER_IMPLS, (nd, ru, rs)))
        row = [n, fmt(get(f_, "ops_per_s"))]
        if peers:
            row += [fmt(get(c, "ops_per_s"))]
        row += [f"**{fmt(get(o, 'ops_per_s'))}**", ratio(div(get(o, "ops_per_s"), get(f_, "ops_per_s")))]
        for impl in tput_peers:
            p_ = peer_rec[impl]
            row += [fmt(get(p_, "ops_per_s")), ratio(div(get(o, "ops_per_s"), get(p_, "ops_per_s")))]
        row += [fmt(get(o, "client_cpu_us_per_lock")), fmt(get(f_, "client_cpu_us_per_lock")),
                ratio(div(get(o, "client_cpu_us_per_lock"), get(f_, "client_cpu_us_per_lock"))),
                fmt(get(o, "servers_cpu_us_per_lock")), fmt(get(f_, "servers_cpu_us_per_lock")),
                fmt(get(o, "floor_alternating_ops_per_s")),
                f"**{ratio(div(get(o, 'ops_per_s'), get(o, 'floor_alternating_ops_per_s')))}**",
                fmt(get(o, "floor_alternating_client_cpu_us_per_lock")),
                ratio(div(get(o, "client_cpu_us_per_lock"), get(o, "floor_alternating_client_cpu_us_per_lock"))),
                fmt(get(o, "floor_alternating_servers_cpu_us_per_lock"))]
        rows.append(row)
        tput_tsv.append([n] + [get(x, "ops_per_s") for x in (f_, c, o, nd, ru, rs)])
    w("### 2. Locks per second, 64 in flight on distinct keys")
    w("")
    w(table(header, rows))
    w("")
    w(f"Ours: 64 chains of `acquire_async` → `release_async` → next, {env.get('tput_duration_s', '?')} s "
      "after 0.5 s of warm-up, one client. CPU per lock from getrusage (client) and /proc (servers). "
      "“Floor alternating”: three windows of ours (0.2 s of warm-up each, the same time in all) "
      "alternating with three of the floor's own load (the same `floor.cpp` code, on connections of "
      "their own) in one process, so that both see the same moments of the machine; the floor "
      "column is a step of its own. The targets are judged against the alternating floor where it "
      "was measured.")
    w("")

    # ---------------------------------------------------------------- 3. contention
    cont = [r for r in recs if r.get("scenario") == "contention" and r.get("impl") == OURS]
    # node-redlock whenever the peers ran (the targets judge against it), the two others where
    # they ran contention (BENCH_CONT_PEERS).
    cont_peers = [impl for impl in ran if impl == NODE or any(
        r.get("impl") == impl and r.get("scenario") == "contention" for r in recs)]
    header = ["N", "mode", "**ours acq/s**"]
    for impl in cont_peers:
        header += [f"{impl} best acq/s", f"× {SHORT[impl]} best"]
    header += ["gap p50", "gap p99", "hand-off floor p50, hot: line, direct",
               "after the hold: line, direct", "gap p50 × line floor after the hold", "held",
               "attempts/acq", "per worker min–max (mean)", "not_acquired (while free)", "other errors"]
    for impl in cont_peers:
        header += [f"{impl} best: gap p50, held, per worker min–max (mean), re-taken by its releaser"]
    rows, cont_tsv, cont_checks = [], [], []
    for n in sorted({r["nodes"] for r in cont}):
        for mode in ("rotate", "ffa"):
            o = find(recs, OURS, "contention", n, mode=mode)
            if not o:
                continue
            runs = {impl: [r for r in recs if r.get("impl") == impl and r.get("scenario") == "contention"
                           and r.get("nodes") == n and r.get("mode") == mode] for impl in PEER_IMPLS}
            bests = {impl: max(runs[impl], key=lambda r: r.get("acq_per_s") or 0, default=None) for impl in PEER_IMPLS}
            nodes_runs, best = runs[NODE], bests[NODE]
            per = o.get("per_worker") or []
            mean = sum(per) / len(per) if per else None
            errs = sum((o.get("other_errors") or {}).values()) + (o.get("release_errors") or 0)
            row = [n, mode, f"**{fmt(get(o, 'acq_per_s'))}**"]
            for impl in cont_peers:
                b = bests[impl]
                row += [f"{fmt(get(b, 'acq_per_s'))} ({b.get('setting')} {b.get('retryDelay')}±{b.get('retryJitter')} ms"
                        f"{', jitter emulated' if b.get('jitter_emulated') else ''})" if b else "–",
                        ratio(div(get(o, "acq_per_s"), get(b, "acq_per_s")))]
            hf = find(recs, FLOOR, "handoff_floor", n)
            row += [fmt(get(o, "handoff_gap_us.p50")), fmt(get(o, "handoff_gap_us.p99")),
                    f"{fmt(get(hf, 'line_us.p50'))}, {fmt(get(hf, 'direct_us.p50'))}" if hf else "–",
                    f"{fmt(get(hf, 'line_after_hold_us.p50'))}, {fmt(get(hf, 'direct_after_hold_us.p50'))}"
                    if hf and get(hf, "line_after_hold_us.p50") is not None else "–",
                    ratio(div(get(o, "handoff_gap_us.p50"), get(hf, "line_after_hold_us.p50"))),
                    pct(get(o, "lock_held_fraction")),
                    fmt(get(o, "mean_attempts_per_acquire")),
                    f"{o.get('per_worker_min')}–{o.get('per_worker_max')} ({fmt(mean)})",
                    f"{o.get('retry_exhausted_errors')} ({o.get('not_acquired_while_free')})", errs]
            for impl in cont_peers:
                b = bests[impl]
                row += [f"{fmt(get(b, 'handoff_gap_us.p50'))} µs, {pct(get(b, 'lock_held_fraction'))}, "
                        f"{b.get('per_worker_min')}–{b.get('per_worker_max')} ({fmt(peer_mean(b))}), "
                        f"{pct(retaken(b))}" if b else "–"]
            rows.append(row)
            cont_tsv.append([f"N={n} {mode}", get(o, "acq_per_s")] + [get(bests[impl], "acq_per_s") for impl in PEER_IMPLS])
            fair = max((r for r in nodes_runs if serves_all(r) is True), key=lambda r: r.get("acq_per_s") or 0, default=None)
            cont_checks.append((n, mode, o, best, mean, fair))
    w("### 3. Contention: 8 workers on one key, hold ~1 ms")
    w("")
    if rows:
        w(table(header, rows))
        w("")
        w("Each worker has its own client (like 8 processes) and calls `acquire(key, 10 s, wait 2 s)`, "
          "holds ~1 ms, releases. rotate: a releaser waits until another worker took the lock; ffa: it "
          "competes again at once. gap = `release()` called → next `acquire()` returned; held = share "
          "of the window the lock was held; not_acquired = waits that ended without the lock, in "
          "brackets those that ended while the lock had been free for ≥ 2 ms. The peers poll "
          "(node-redlock: default 200±100 ms and tuned 10±5 ms, both run; redlock-universal and "
          "redis-semaphore: the settings `BENCH_PEER_CONT_SETTINGS` names, by default tuned alone, 10±5 ms "
          "with the jitter added by peerbench); each one's best setting run is shown. Hand-off floor "
          "(`handoff_floor`, one bare hiredis client, no library): release → the waiter's quorum with "
          "the library's scripts on the wire (line: turn, then an attempt on every node), and with a "
          "release that writes the waiter's token itself (direct: not a protocol the library runs); "
          "hot: the release sent right after the cycle's set-up; after the hold: sent once the probe "
          "has slept as long as a worker holds the lock, so that the machine has been quiet as in "
          "the scenario (a hand-off after a quiet millisecond is slower). Our gap is compared with "
          "the latter.")
    else:
        w("(not run)")
    w("")

    # ---------------------------------------------------------------- 4. bad minority
    bad = {r.get("fault"): r for r in recs if r.get("scenario") == "bad_minority" and r.get("impl") == OURS}
    healthy = bad.get("none")
    rows, bad_tsv = [], []
    labels = {"none": "healthy", "delay": f"2 behind a {env.get('delay_ms', 50)} ms delay (fault proxy)",
              "paused": "2 SIGSTOPped"}
    for fault in ("none", "delay", "paused"):
        r = bad.get(fault)
        if not r:
            continue
        rows.append([labels[fault], fmt(get(r, "total_us.p50")), fmt(get(r, "total_us.p99")), fmt(get(r, "total_us.p999")),
                     ratio(div(get(r, "total_us.p50"), get(healthy, "total_us.p50"))),
                     ratio(div(get(r, "total_us.p99"), get(healthy, "total_us.p99"))),
                     (r.get("failed_acquires") or 0) + (r.get("failed_releases") or 0)])
        bad_tsv.append([labels[fault].split(" (")[0], get(r, "total_us.p50"), get(r, "total_us.p99")])
    w("### 4. A bad minority: 2 of 5 nodes paused or slow (uncontended acquire+release)")
    w("")
    if rows:
        w(table(["N = 5", "p50", "p99", "p999", "p50 × healthy", "p99 × healthy", "failed"], rows))
        if "delay" not in bad:
            w("")
            w("The delay case needs the chaos suite's fault proxy (`redlock-fault-proxy`); it was not built.")
    else:
        w("(not run)")
    w("")

    # ---------------------------------------------------------------- 5. watchdog
    wd = find(recs, OURS, "watchdog_scale")
    w("### 5. The watchdog at scale")
    w("")
    watchdog_section(w, wd)

    # ---------------------------------------------------------------- targets
    o5 = find(recs, OURS, "uncontended_latency", 5)
    f5 = find(recs, FLOOR, "uncontended_latency", 5)
    t5, tf5, tn5 = (find(recs, i, "throughput", 5) for i in (OURS, FLOOR, NODE))
    o3, o9 = find(recs, OURS, "uncontended_latency", 3), find(recs, OURS, "uncontended_latency", 9)

    def le(a, b):
        return None if a is None or b is None else a <= b

    def ge(a, b):
        return None if a is None or b is None else a >= b

    targets = []

    def t(name, measured, ok):
        targets.append([name, measured, verdict(ok)])

    # Against the floor measured alternating with ours (fields floor_alternating_* of our own
    # record) where there is one; the floor of a step of its own is shown beside it.
    def against(ours, floor_step, key, floor_key):
        own = div(get(ours, key), get(floor_step, floor_key))
        alt = div(get(ours, key), get(ours, f"floor_alternating_{floor_key}"))
        if alt is None:
            return own, ratio(own)
        return alt, f"{ratio(alt)} (against the floor's own step: {ratio(own)})"

    def against_floor(key, pct):
        return against(o5, f5, f"{key}.{pct}", f"total_us.{pct}")

    r, shown = against_floor("total_us", "p50")
    t("uncontended N=5: p50 ≤ 1.1× floor", shown, le(r, 1.1))
    r, shown = against_floor("total_us", "p99")
    t("uncontended N=5: p99 ≤ 1.5× floor's p99", shown, le(r, 1.5))
    r, shown = against_floor("callbacks_total_us", "p50")
    targets.append(["(not a target) the same p50 through the callbacks", shown, "—"])
    def against_tput_floor(key):
        return against(t5, tf5, key, key)

    r, shown = against_tput_floor("ops_per_s")
    t("locks/s N=5: ≥ 0.8× floor", shown, ge(r, 0.8))
    r = div(get(t5, "ops_per_s"), get(tn5, "ops_per_s"))
    # Where the servers' core is the limit, the floor itself may not reach 4×: say so.
    rf = div(get(t5, "floor_alternating_ops_per_s") or get(tf5, "ops_per_s"), get(tn5, "ops_per_s"))
    shown = "no peer" if not peers else ratio(r) if rf is None else f"{ratio(r)} (the floor's own: {ratio(rf)})"
    t("locks/s N=5: ≥ 4× node-redlock", shown, ge(r, 4))
    r, shown = against_tput_floor("client_cpu_us_per_lock")
    t("client CPU per lock N=5: ≤ 1.5× floor's", shown, le(r, 1.5))
    checks = {}  # name -> [(case, shown, ok)]
    fair_cases = []
    for n, mode, o, best, mean, fair in cont_checks:
        case = f"{n} {mode}"
        if peers and best is not None and serves_all(best) is False:
            fair_cases.append(f"{case}: {ratio(div(get(o, 'acq_per_s'), get(fair, 'acq_per_s')))} "
                              f"({fair.get('setting')})" if fair else f"{case}: no setting served all")
        gap = get(o, "handoff_gap_us.p50")
        if peers:
            checks.setdefault("acquisitions/s ≥ node-redlock's best setting", []).append(
                (case, ratio(div(get(o, "acq_per_s"), get(best, "acq_per_s"))), ge(get(o, "acq_per_s"), get(best, "acq_per_s"))))
        checks.setdefault("lock held ≥ 75 % of the time", []).append(
            (case, pct(get(o, "lock_held_fraction")), ge(get(o, "lock_held_fraction"), 0.75)))
        hfr = find(recs, FLOOR, "handoff_floor", n)
        hf, hf_held = get(hfr, "line_us.p50"), get(hfr, "line_after_hold_us.p50")
        shown = fmt(gap)
        if hf is not None and hf_held is not None:
            shown += f" (line floor {fmt(hf)} hot, {fmt(hf_held)} after the hold)"
        elif hf is not None:
            shown += f" (line floor {fmt(hf)})"
        checks.setdefault("gap p50 < 300 µs", []).append((case, shown, None if gap is None else gap < 300))
        checks.setdefault("no waiter starved (per-worker min ≥ half the mean)", []).append(
            (case, f"{o.get('per_worker_min')}/{fmt(mean)}", ge(o.get("per_worker_min"), None if mean is None else mean / 2)))
        checks.setdefault("no wait ends in not_acquired while the lock was free", []).append(
            (case, str(o.get("not_acquired_while_free")), (o.get("not_acquired_while_free") or 0) == 0))
    for name, cases in checks.items():
        oks = [c[2] for c in cases]
        ok = None if None in oks and False not in oks else False not in oks
        t(f"contention N = 1, 3, 5 (rotate, ffa): {name}", ", ".join(f"{c[0]}: {c[1]}" for c in cases), ok)
    if fair_cases:
        targets.append(["(not a target) where node-redlock's best setting starved a waiter: acquisitions/s "
                        "against its best setting that served every waiter", ", ".join(fair_cases), "—"])
    for fault in ("paused", "delay"):
        r = div(get(bad.get(fault), "total_us.p50"), get(healthy, "total_us.p50"))
        t(f"2 of 5 {'paused' if fault == 'paused' else 'slow'}: p50 ≤ 1.2× healthy", ratio(r), le(r, 1.2))
    r = div(get(o9, "total_us.p50"), get(o3, "total_us.p50"))
    rf = div(get(o9, "floor_alternating_total_us.p50"), get(o3, "floor_alternating_total_us.p50"))
    if rf is None:
        rf = div(get(find(recs, FLOOR, "uncontended_latency", 9), "total_us.p50"),
                 get(find(recs, FLOOR, "uncontended_latency", 3), "total_us.p50"))
    t("uncontended N=9 against N=3: p50 ≤ 1.3×", f"{ratio(r)} (the floor's own: {ratio(rf)})", le(r, 1.3))
    if wd:
        req = wd.get("scripts_per_s_per_node") or []
        per_req = div(get(wd, "renewals_done_per_s") or get(wd, "lock_renewals_per_s"), max(req) if req else None)
        t("10,000 held locks: renewals batched per node (≥ 100 renewals per request)", fmt(per_req), ge(per_req, 100))
        mem = get(wd, "rss_bytes_per_lock")
        heap = get(wd, "heap_bytes_per_lock")
        t("10,000 held locks: client memory < 1 KiB per held lock (heap in use)",
          f"{fmt(heap, ' B')} heap ({fmt(mem, ' B')} RSS)", None if heap is None else heap < 1024)
    w("### Targets (ratios within this run)")
    w("")
    w(table(["target", "measured", ""], targets))
    met = sum(1 for x in targets if x[2] == "met")
    w("")
    w(f"{met} of {sum(1 for x in targets if x[2] != '—')} met.")
    print("\n".join(md))

    if out_dir:
        write_tsv(out_dir, "latency.tsv", lat_tsv)
        write_tsv(out_dir, "throughput.tsv", tput_tsv)
        write_tsv(out_dir, "contention.tsv", cont_tsv)
        write_tsv(out_dir, "minority.tsv", bad_tsv)
    return 0


def write_tsv(out_dir, name, rows):
    with open(os.path.join(out_dir, name), "w", encoding="utf-8") as f:
        for row in rows:
            f.write("\t".join("NaN" if v is None else (f'"{v}"' if isinstance(v, str) else str(v)) for v in row) + "\n")


if __name__ == "__main__":
    sys.exit(main())
