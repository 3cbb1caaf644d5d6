#!/usr/bin/env node
// peer_semaphore.mjs: shared/peerbench's `semaphore` scenario (node/bench.mjs, scenarioSemaphore:
// redis-semaphore's RedlockSemaphore, W workers with their own ioredis connections sharing k
// permits of one key) with the same options and the same bookkeeping, plus what its harness does
// not measure and ours does (bench/semaphore.cpp): the hand-off gap (a release call made while
// some worker is inside acquire opens a hand-off, each grant closes the oldest open one, first in
// first out), permits in use per 100 ms, and the share of the window with every permit held.
// bench/run.sh copies it beside peerbench's bench.mjs (its node_modules: ioredis, redis-semaphore)
// and runs it after peerbench's own scenario; its lines say "harness": "bench/peer_semaphore.mjs".
//   node peer_semaphore.mjs --ports 7101,7102,7103 [--permits 4 --sem-workers 16 --hold-ms 1
//     --cont-duration 2 --ttl 10000 --label TEXT --max-seconds 60]
import Redis from "ioredis";
import { createRequire } from "node:module";
import { performance } from "node:perf_hooks";

const require = createRequire(import.meta.url);
const args = {};
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i += 2) {
  if (!argv[i].startsWith("--") || argv[i + 1] === undefined) throw new Error(`bad arg ${argv[i]}`);
  args[argv[i].slice(2)] = argv[i + 1];
}
const num = (k, d, lo, hi) => {
  const v = args[k] === undefined ? d : Number(args[k]);
  if (!Number.isFinite(v) || v < lo || v > hi) throw new Error(`--${k} must be in [${lo}, ${hi}]`);
  return v;
};
const PORTS = (args.ports || "7101").split(",").map(Number);
const PERMITS = num("permits", 4, 1, 1000);
const SEM_WORKERS = num("sem-workers", 16, 1, 1024);
const HOLD_MS = num("hold-ms", 1, 0, 1000);
const DURATION = num("cont-duration", 2, 0.1, 60);
const TTL = num("ttl", 10000, 100, 600000);
const MAX_SECONDS = num("max-seconds", 60, 1, 3600);
const LABEL = args.label || "";
const BUCKET_MS = 100;
setTimeout(() => {
  console.error(`peer_semaphore.mjs: exceeded ${MAX_SECONDS}s, exiting`);
  process.exit(3);
}, MAX_SECONDS * 1000).unref();

const now = () => performance.now();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
function stats(arr) { // ms in, µs out, nearest rank as bench.mjs
  if (arr.length === 0) return { n: 0 };
  const s = Float64Array.from(arr).sort();
  const q = (p) => s[Math.min(s.length - 1, Math.round((p / 100) * (s.length - 1)))];
  const r = (x) => Math.round(x * 1000 * 10) / 10;
  let sum = 0;
  for (const x of s) sum += x;
  return { n: s.length, p50: r(q(50)), p90: r(q(90)), p99: r(q(99)), mean: r(sum / s.length), min: r(s[0]), max: r(s[s.length - 1]) };
}
async function connectAll() {
  const cs = PORTS.map((port) => new Redis({ host: "127.0.0.1", port, lazyConnect: true, maxRetriesPerRequest: 1, enableOfflineQueue: true }));
  await Promise.all(cs.map((c) => c.connect()));
  return cs;
}

const sem = require("redis-semaphore");
const version = require("redis-semaphore/package.json").version;
const key = `pb:semgap:${process.pid}.${Date.now().toString(36)}`;
const conns = [];
for (let w = 0; w < SEM_WORKERS; w++) conns.push(await connectAll());
const opts = { lockTimeout: TTL, retryInterval: 10, acquireTimeout: 10000, refreshInterval: 0 };
let holders = 0, waiting = 0, maxHolders = 0, violations = 0, acquisitions = 0, errors = 0, firstError = null;
let area = 0, allBusy = 0, lastT = 0;
const buckets = new Array(Math.ceil((DURATION * 1000) / BUCKET_MS)).fill(0);
const waits = [], gaps = [], open = [];
const t0 = now(), tEnd = t0 + DURATION * 1000;
lastT = t0;
const step = (t) => {
  const from = Math.max(lastT, t0), to = Math.min(t, tEnd);
  if (to > from && holders > 0) {
    area += holders * (to - from);
    if (holders >= PERMITS) allBusy += to - from;
    for (let i = Math.floor((from - t0) / BUCKET_MS); i < buckets.length && i * BUCKET_MS < to - t0; i++) {
      const lo = Math.max(from - t0, i * BUCKET_MS), hi = Math.min(to - t0, (i + 1) * BUCKET_MS);
      if (hi > lo) buckets[i] += holders * (hi - lo);
    }
  }
  lastT = Math.max(lastT, t);
};
async function worker(w) {
  while (now() < tEnd) {
    const s0 = new sem.RedlockSemaphore(conns[w], key, PERMITS, opts);
    waiting++;
    const tw = now();
    try { await s0.acquire(); } catch (e) { waiting--; errors++; firstError ??= String(e && e.message ? e.message : e); continue; }
    waiting--;
    const ta = now();
    step(ta); holders++; if (holders > maxHolders) maxHolders = holders; if (holders > PERMITS) violations++;
    const releasedAt = open.shift();
    if (ta < tEnd) {
      acquisitions++; waits.push(ta - tw);
      if (releasedAt !== undefined) gaps.push(ta - releasedAt);
    }
    await sleep(HOLD_MS);
    const tr = now();
    step(tr); holders--;
    if (waiting > 0) open.push(tr);
    try { await s0.release(); } catch (e) { errors++; firstError ??= String(e && e.message ? e.message : e); }
  }
}
await Promise.all(Array.from({ length: SEM_WORKERS }, (_, w) => worker(w)));
step(now());
for (const cs of conns) await Promise.all(cs.map((c) => c.quit().catch(() => c.disconnect())));
const inUse = buckets.map((a, i) => Math.round((a / Math.min(BUCKET_MS, DURATION * 1000 - i * BUCKET_MS)) * 1000) / 1000);
process.stdout.write(JSON.stringify({
  impl: "redis-semaphore", lib: "redis-semaphore", lib_version: version, node: process.version, nodes: PORTS.length,
  label: LABEL, scenario: "semaphore", harness: "bench/peer_semaphore.mjs",
  api: "new RedlockSemaphore([ioredis...], key, permits, {lockTimeout, retryInterval 10}).acquire() / .release()",
  permits: PERMITS, workers: SEM_WORKERS, hold_ms: HOLD_MS, duration_s: DURATION,
  acq_per_s: acquisitions / DURATION, permits_in_use_mean: area / (DURATION * 1000),
  all_permits_busy_fraction: allBusy / (DURATION * 1000), max_holders: maxHolders, violations, errors,
  first_error: firstError, wait_us: stats(waits), handoff_gap_us: stats(gaps), in_use_bucket_ms: BUCKET_MS,
  in_use_per_bucket: inUse,
}) + "\n");
