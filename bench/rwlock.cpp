// The read-write lock (docs/guide-rwlock.md) through the public API: AcquireRequest::shared for a
// reader, a plain acquire for a writer (a writer is a mutex holder of the same key).
//
// rw_cycle: the uncontended cycle, acquire + release one after the other on one key, as a reader
// (shared) and as a writer (exclusive), in alternating blocks so that both see the same moments
// of the machine; one JSON line per kind.
//
// rw_contention: rw_readers readers and rw_writers writers on one key for cont_duration_s, each
// with a Client of its own (like separate processes); each acquires (waiting up to cont_wait_ms),
// holds hold_us, releases, and again at once. The harness counts a holder from its acquire's
// return to its release call, and reports acquisitions per second by kind, the waits, the share
// of the window the key was held by readers, by a writer, or free, and any overlap of a writer
// with another holder that it saw (there must be none).
#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common.hpp"
#include "ours.hpp"
#include "redlock/redlock.hpp"
#include "scenarios.hpp"
#include "server_probe.hpp"

namespace bench {
namespace {

using namespace std::chrono_literals;
using Ms = std::chrono::milliseconds;

redlock::AcquireRequest request(const std::string& key, const Options& o, bool shared, Ms wait) {
  redlock::AcquireRequest req({key}, Ms(o.ttl_ms), wait);
  req.shared = shared;
  return req;
}

struct RwArena {
  std::mutex m;
  Clock::time_point t0, t_end, last_t;
  int readers = 0, writers = 0;  // holding now, as the harness sees them
  double read_us = 0, write_us = 0;
  long long overlaps = 0;
  long long reader_acq = 0, writer_acq = 0, errors = 0, release_errors = 0;
  std::map<std::string, long long> error_kinds;
  std::vector<double> reader_waits_us, writer_waits_us;
  std::vector<double> readers_at_grant;  // readers holding at each reader's grant

  void step(Clock::time_point t) {
    auto from = std::max(last_t, t0), to = std::min(t, t_end);
    if (to > from) {
      if (writers > 0) write_us += us_between(from, to);
      if (readers > 0) read_us += us_between(from, to);
    }
    last_t = std::max(last_t, t);
  }
  bool in_window(Clock::time_point t) const { return t >= t0 && t < t_end; }
};

void rw_worker(RwArena& a, redlock::Client& client, const std::string& key, const Options& o,
               bool shared) {
  const auto hold = std::chrono::microseconds(o.hold_us);
  while (Clock::now() < a.t_end) {
    const auto tw = Clock::now();
    auto left = std::chrono::duration_cast<Ms>(a.t_end + 2s - tw);
    auto r = client.acquire(request(key, o, shared, std::min(Ms(o.cont_wait_ms), left)));
    const auto ta = Clock::now();
    std::unique_lock<std::mutex> lock(a.m);
    if (!r) {
      if (r.error != redlock::Errc::not_acquired || a.in_window(ta)) {
        ++a.errors;
        ++a.error_kinds[error_name(r.error)];
      }
      continue;
    }
    a.step(ta);
    if (shared) {
      if (a.writers > 0) ++a.overlaps;
      ++a.readers;
    } else {
      if (a.writers > 0 || a.readers > 0) ++a.overlaps;
      ++a.writers;
    }
    if (a.in_window(ta)) {
      (shared ? a.reader_acq : a.writer_acq) += 1;
      (shared ? a.reader_waits_us : a.writer_waits_us).push_back(us_between(tw, ta));
      if (shared) a.readers_at_grant.push_back(a.readers);
    }
    lock.unlock();
    std::this_thread::sleep_for(hold);
    lock.lock();
    a.step(Clock::now());
    (shared ? a.readers : a.writers) -= 1;
    lock.unlock();
    auto rr = client.release(r.lock);
    if (!rr) {
      lock.lock();
      ++a.release_errors;
      ++a.error_kinds["release:" + error_name(rr.error)];
    }
  }
}

}  // namespace

void rw_cycle(const Options& o) {
  auto client = new_client(o.ports);
  const std::string key = "bench:rw:" + random_hex(8);
  std::map<bool, std::vector<double>> totals, acquires, releases;
  std::map<bool, long long> failed;
  auto cycle = [&](bool shared, bool record) {
    auto t0 = Clock::now();
    auto r = client->acquire(request(key, o, shared, 0ms));
    auto t1 = Clock::now();
    if (!r) {
      if (record) ++failed[shared];
      return;
    }
    (void)client->release(r.lock);
    auto t2 = Clock::now();
    if (!record) return;
    totals[shared].push_back(us_between(t0, t2));
    acquires[shared].push_back(us_between(t0, t1));
    releases[shared].push_back(us_between(t1, t2));
  };
  for (int i = 0; i < o.warmup; ++i) cycle(i % 2 == 0, false);
  // Blocks of 100 of each kind, alternating.
  constexpr int kBlock = 100;
  for (int done = 0; done < o.iters; done += kBlock)
    for (bool shared : {true, false})
      for (int i = 0; i < std::min(kBlock, o.iters - done); ++i) cycle(shared, true);
  for (bool shared : {true, false}) {
    auto j = head(o, "rw_cycle", o.ports.size());
    j.str("api", shared ? "client.acquire(AcquireRequest{{key}, ttl, 0ms, shared = true}) / "
                          "client.release(lock)"
                        : "client.acquire(AcquireRequest{{key}, ttl, 0ms}) / client.release(lock)")
        .str("kind", shared ? "shared" : "exclusive")
        .integer("iters", o.iters)
        .integer("failed", failed[shared])
        .stats("cycle_us", summarize(totals[shared]))
        .stats("acquire_us", summarize(acquires[shared]))
        .stats("release_us", summarize(releases[shared]))
        .emit();
  }
}

void rw_contention(const Options& o) {
  const std::string key = "bench:rw:" + random_hex(8);
  const int n = o.rw_readers + o.rw_writers;
  std::vector<std::unique_ptr<redlock::Client>> clients;
  for (int w = 0; w < n; ++w) {
    clients.push_back(new_client(o.ports));
    // Connections up and the scripts cached before the window opens.
    const std::string warm = key + ":warm:" + std::to_string(w);
    for (bool shared : {true, false}) {
      auto r = clients.back()->acquire(request(warm, o, shared, 0ms));
      if (r) (void)clients.back()->release(r.lock);
    }
  }
  RwArena a;
  const auto duration =
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.cont_duration_s));
  a.t0 = Clock::now();
  a.last_t = a.t0;
  a.t_end = a.t0 + duration;
  auto pids = server_pids(o.ports);
  double cpu0 = self_cpu_seconds(), srv0 = servers_cpu_seconds(pids);
  std::vector<std::thread> threads;
  for (int w = 0; w < n; ++w)
    threads.emplace_back(rw_worker, std::ref(a), std::ref(*clients[static_cast<std::size_t>(w)]),
                         std::cref(key), std::cref(o), w >= o.rw_writers);
  std::this_thread::sleep_until(a.t_end);
  auto t_stop = Clock::now();
  double client_cpu = self_cpu_seconds() - cpu0, srv1 = servers_cpu_seconds(pids);
  {
    std::lock_guard<std::mutex> lock(a.m);
    a.step(t_stop);
  }
  for (auto& t : threads) t.join();
  const double window_us = std::chrono::duration<double, std::micro>(duration).count();
  double mean_readers = 0;
  for (double x : a.readers_at_grant) mean_readers += x;
  if (!a.readers_at_grant.empty()) mean_readers /= static_cast<double>(a.readers_at_grant.size());
  auto j = head(o, "rw_contention", o.ports.size());
  j.str("api", "client.acquire(AcquireRequest{{key}, ttl, wait, shared}) / client.release(lock)")
      .integer("readers", o.rw_readers)
      .integer("writers", o.rw_writers)
      .num("hold_ms", o.hold_us / 1000.0)
      .num("duration_s", o.cont_duration_s)
      .integer("wait_ms", o.cont_wait_ms)
      .integer("reader_acquisitions", a.reader_acq)
      .integer("writer_acquisitions", a.writer_acq)
      .num("reader_acq_per_s", static_cast<double>(a.reader_acq) / o.cont_duration_s)
      .num("writer_acq_per_s", static_cast<double>(a.writer_acq) / o.cont_duration_s)
      .num("read_held_fraction", a.read_us / window_us)
      .num("write_held_fraction", a.write_us / window_us)
      .num("free_fraction", std::max(0.0, 1 - (a.read_us + a.write_us) / window_us))
      .num("readers_at_reader_grant_mean", a.readers_at_grant.empty() ? NAN : mean_readers)
      .integer("overlaps", a.overlaps)
      .integer("errors", a.errors + a.release_errors)
      .raw("error_kinds", errors_json(a.error_kinds))
      .stats("reader_wait_us", summarize(a.reader_waits_us))
      .stats("writer_wait_us", summarize(a.writer_waits_us))
      .num("client_cpu_util", client_cpu / std::chrono::duration<double>(t_stop - a.t0).count())
      .num("servers_cpu_util",
           srv0 >= 0 && srv1 >= 0
               ? (srv1 - srv0) / std::chrono::duration<double>(t_stop - a.t0).count()
               : NAN)
      .emit();
}

}  // namespace bench
