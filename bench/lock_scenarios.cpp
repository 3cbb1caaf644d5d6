// Our figures: every lock operation here goes through redlock-cpp's public API, used the way
// the README shows (Config::from_node_list, try_acquire/acquire/release, the asynchronous forms,
// hold()). Server-side counters are read out of band (server_probe.hpp).
#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>

#include "common.hpp"
#include "ours.hpp"
#include "redlock/redlock.hpp"
#include "scenarios.hpp"
#include "server_probe.hpp"

namespace bench {
namespace {

using namespace std::chrono_literals;
using Ms = std::chrono::milliseconds;

std::string g_tls_ca_file;  // set once, before any scenario runs

}  // namespace

std::unique_ptr<redlock::Client> new_client(const std::vector<std::uint16_t>& ports,
                                            const std::function<void(redlock::Config&)>& tune) {
  auto config = redlock::Config::from_node_list(node_list(ports));
  if (!g_tls_ca_file.empty()) {
    config.tls.ca_file = g_tls_ca_file;
    for (auto& node : config.nodes) node.tls = true;
  }
  if (tune) tune(config);
  return std::make_unique<redlock::Client>(config);
}

JsonLine head(const Options& o, const std::string& scenario, std::size_t nodes) {
  JsonLine j;
  j.str("impl", o.impl)
      .str("label", o.label)
      .str("scenario", scenario)
      .integer("nodes", static_cast<long long>(nodes))
      .integer("quorum", static_cast<long long>(nodes / 2 + 1));
  return j;
}

std::string errors_json(const std::map<std::string, long long>& errors) {
  JsonLine j;
  for (const auto& [name, count] : errors) j.integer(name, count);
  return j.text();
}

std::string error_name(std::error_code ec) {
  if (ec.category() == redlock::error_category())
    return redlock::errc_name(static_cast<redlock::Errc>(ec.value()));
  return ec.message();
}

namespace {

// Sequential try_acquire + release of one reused key.
struct Cycles {
  std::vector<double> total, acquire, release;
  long long failed_acquires = 0, failed_releases = 0;
  std::map<std::string, long long> errors;
};

// Appends the cycles to `c`.
// With `wait`, each acquire is the waiting `acquire(key, ttl, wait)`, else `try_acquire`.
void run_cycles_into(Cycles& c, redlock::Client& client, const std::string& key, int warmup,
                     int iters, Ms ttl, Clock::time_point limit,
                     std::optional<Ms> wait = std::nullopt) {
  for (auto* v : {&c.total, &c.acquire, &c.release})
    v->reserve(v->size() + static_cast<std::size_t>(iters));
  for (int i = 0; i < warmup + iters && Clock::now() < limit; ++i) {
    bool record = i >= warmup;
    auto t0 = Clock::now();
    auto r = wait ? client.acquire(key, ttl, *wait) : client.try_acquire(key, ttl);
    auto t1 = Clock::now();
    if (!r) {
      if (record) {
        ++c.failed_acquires;
        ++c.errors[error_name(r.error)];
      }
      continue;
    }
    auto rr = client.release(r.lock);
    auto t2 = Clock::now();
    if (!record) continue;
    if (!rr) {
      ++c.failed_releases;
      ++c.errors["release:" + error_name(rr.error)];
    }
    c.total.push_back(us_between(t0, t2));
    c.acquire.push_back(us_between(t0, t1));
    c.release.push_back(us_between(t1, t2));
  }
}

Cycles run_cycles(redlock::Client& client, const std::string& key, int warmup, int iters, Ms ttl,
                  Clock::time_point limit) {
  Cycles c;
  run_cycles_into(c, client, key, warmup, iters, ttl, limit);
  return c;
}

void add_cycles(JsonLine& j, const Cycles& c) {
  j.stats("total_us", summarize(c.total))
      .stats("acquire_us", summarize(c.acquire))
      .stats("release_us", summarize(c.release))
      .integer("failed_acquires", c.failed_acquires)
      .integer("failed_releases", c.failed_releases)
      .raw("errors", errors_json(c.errors));
}

// The same cycles through the asynchronous forms: each callback starts the next call on the
// loop thread, so no thread hand-off is measured (the blocking forms make two per cycle).
void run_async_cycles_into(Cycles& c, redlock::Client& client, const std::string& key, int warmup,
                           int iters, Ms ttl) {
  std::mutex m;
  std::condition_variable cv;
  bool done = false;
  int n = 0;
  std::function<void()> cycle = [&] {
    auto t0 = Clock::now();
    client.acquire_async(
        redlock::AcquireRequest({key}, ttl, 0ms), [&, t0](redlock::AcquireResult r) {
          auto next = [&, t0](bool ok) {
            if (n++ >= warmup && ok) c.total.push_back(us_between(t0, Clock::now()));
            if (!ok) ++c.failed_acquires;
            if (n < warmup + iters) return cycle();
            std::lock_guard<std::mutex> lock(m);
            done = true;
            cv.notify_all();
          };
          if (!r) return next(false);
          client.release_async(std::move(r.lock), [next](redlock::ReleaseResult) { next(true); });
        });
  };
  cycle();
  std::unique_lock<std::mutex> lock(m);
  cv.wait(lock, [&] { return done; });
}

}  // namespace

void use_tls(const std::string& ca_file) { g_tls_ca_file = ca_file; }

void uncontended_latency(const Options& o) {
  auto client = new_client(o.ports);
  const std::string key = "bench:lat:" + random_hex(8);
  // Blocking and asynchronous forms in alternating blocks, so that both see the same machine;
  // with --alternate-floor, the floor's own cycles (floor.cpp, on connections of their own) too:
  // a floor measured in a step of its own, seconds away, moves the ratio with the machine's
  // drift. The floor speaks plain TCP only: over TLS ports it is left out.
  constexpr int kBlock = 250;
  Cycles blocking, callbacks;
  std::vector<double> floor_total, floor_warm;
  long long floor_failed = 0, floor_warm_failed = 0;
  std::optional<FloorCycles> floor;
  if (o.alternate_floor && g_tls_ca_file.empty()) floor.emplace(o);
  auto limit = Clock::now() + 60s;
  run_cycles_into(blocking, *client, key, o.warmup, 0, Ms(o.ttl_ms), limit);
  run_async_cycles_into(callbacks, *client, key, o.warmup, 0, Ms(o.ttl_ms));
  if (floor) floor->run(o.warmup, floor_warm, floor_warm_failed, limit);
  for (int done = 0; done < o.iters && Clock::now() < limit; done += kBlock) {
    int block = std::min(kBlock, o.iters - done);
    run_cycles_into(blocking, *client, key, 0, block, Ms(o.ttl_ms), limit);
    run_async_cycles_into(callbacks, *client, key, 0, block, Ms(o.ttl_ms));
    if (floor) floor->run(block, floor_total, floor_failed, limit);
  }
  auto j = head(o, "uncontended_latency", o.ports.size());
  j.str("key", "one key reused").integer("iters", o.iters).integer("warmup", o.warmup);
  add_cycles(j, blocking);
  j.stats("callbacks_total_us", summarize(callbacks.total))
      .integer("callbacks_failed_acquires", callbacks.failed_acquires);
  if (floor)
    j.stats("floor_alternating_total_us", summarize(floor_total))
        .integer("floor_alternating_failed_acquires", floor_failed);
  j.emit();
}

// The README's call and nothing else in the process: `client.acquire(key, 10s, 2s)` then
// `client.release(lock)`, blocking, from one caller thread, one key reused. This is the figure a
// user compares with another library's call in a process of its own (bench/run.sh puts it beside
// peerbench's floor and its npm peers).
void readme_call(const Options& o) {
  auto client = new_client(o.ports);
  const std::string key = "bench:readme:" + random_hex(8);
  Cycles c;
  run_cycles_into(c, *client, key, o.warmup, o.iters, 10s, Clock::now() + 60s, 2s);
  auto j = head(o, "readme_call", o.ports.size());
  j.str("key", "one key reused")
      .str("call", "acquire(key, 10s, 2s) + release(lock)")
      .integer("iters", o.iters)
      .integer("warmup", o.warmup);
  add_cycles(j, c);
  j.emit();
}

// ---------------------------------------------------------------------------------------------
// Many locks in flight on distinct keys: acquire_async -> release_async -> next, from callbacks.

namespace {

// One window of our throughput: every slot a chain of acquire_async -> release_async -> next on
// its own keys, `warmup_s` unmeasured, `seconds` measured, then what is in flight ends.
struct TputWindow {
  long long locks = 0;
  double elapsed_s = 0, client_cpu_s = 0;
  double servers_cpu_s = -1;  // -1: the servers' CPU could not be read
  std::vector<double> latencies;
  std::map<std::string, long long> errors;
};

TputWindow throughput_window(redlock::Client& client, const Options& o,
                             const std::vector<pid_t>& pids, const std::string& tag,
                             double warmup_s, double seconds) {
  const int slots = o.tput_workers;
  // Touched on the client's loop thread only (callbacks), read after `finished` reached `slots`.
  TputWindow w;
  w.latencies.reserve(1 << 20);
  std::vector<std::uint64_t> seq(static_cast<std::size_t>(slots), 0);

  std::atomic<bool> measuring{false}, stopping{false};
  std::mutex m;
  std::condition_variable cv;
  int finished = 0;

  std::function<void(int)> cycle = [&](int slot) {
    if (stopping.load()) {
      std::lock_guard<std::mutex> lock(m);
      if (++finished == slots) cv.notify_all();
      return;
    }
    auto t0 = Clock::now();
    std::string key = "bench:tput:" + tag + ":" + std::to_string(slot) + ":" +
                      std::to_string(seq[static_cast<std::size_t>(slot)]++);
    client.acquire_async(redlock::AcquireRequest({std::move(key)}, Ms(o.ttl_ms), 0ms),
                         [&, slot, t0](redlock::AcquireResult r) {
                           if (!r) {
                             if (measuring.load()) ++w.errors[error_name(r.error)];
                             cycle(slot);
                             return;
                           }
                           client.release_async(
                               std::move(r.lock), [&, slot, t0](redlock::ReleaseResult rr) {
                                 if (measuring.load()) {
                                   if (!rr) ++w.errors["release:" + error_name(rr.error)];
                                   ++w.locks;
                                   w.latencies.push_back(us_between(t0, Clock::now()));
                                 }
                                 cycle(slot);
                               });
                         });
  };
  for (int s = 0; s < slots; ++s) cycle(s);
  std::this_thread::sleep_for(std::chrono::duration<double>(warmup_s));
  double cpu0 = self_cpu_seconds(), srv0 = servers_cpu_seconds(pids);
  auto t0 = Clock::now();
  measuring = true;
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  measuring = false;
  w.elapsed_s = std::chrono::duration<double>(Clock::now() - t0).count();
  w.client_cpu_s = self_cpu_seconds() - cpu0;
  double srv1 = servers_cpu_seconds(pids);
  if (srv0 >= 0 && srv1 >= 0) w.servers_cpu_s = srv1 - srv0;
  stopping = true;
  {
    std::unique_lock<std::mutex> lock(m);
    if (!cv.wait_for(lock, 10s, [&] { return finished == slots; }))
      throw std::runtime_error("throughput: operations still in flight 10 s after the window");
  }
  // `locks` stopped moving before `measuring` was read false by the callbacks; the mutex above
  // orders everything the loop thread wrote before its last `finished` increment.
  return w;
}

// Per-lock figures of a throughput measurement, ours or the floor's.
void add_rates(JsonLine& j, const std::string& prefix, long long locks, double elapsed_s,
               double client_cpu_s, double servers_cpu_s) {
  j.num(prefix + "ops_per_s", static_cast<double>(locks) / elapsed_s);
  if (locks <= 0) return;
  auto n = static_cast<double>(locks);
  j.num(prefix + "client_cpu_us_per_lock", client_cpu_s * 1e6 / n)
      .num(prefix + "client_cpu_util", client_cpu_s / elapsed_s);
  if (servers_cpu_s >= 0)
    j.num(prefix + "servers_cpu_us_per_lock", servers_cpu_s * 1e6 / n)
        .num(prefix + "servers_cpu_util", servers_cpu_s / elapsed_s);
}

}  // namespace

void throughput(const Options& o) {
  auto client = new_client(o.ports);
  auto pids = server_pids(o.ports);
  const std::string tag = random_hex(8);
  // With --alternate-floor, three windows of ours alternate with three of the floor's own load
  // (floor.cpp, on connections of its own), so that the ratios compare the same moments of the
  // machine; each window has a short warm-up of its own.
  TputWindow ours;
  FloorLoad::Window floor_sum;
  std::optional<FloorLoad> floor;
  if (o.alternate_floor && g_tls_ca_file.empty()) floor.emplace(o);
  const int windows = floor ? 3 : 1;
  const double warmup = floor ? 0.2 : 0.5, seconds = o.tput_duration_s / windows;
  bool servers_read = true, floor_servers_read = true;
  for (int i = 0; i < windows; ++i) {
    auto w = throughput_window(*client, o, pids, tag + std::to_string(i), warmup, seconds);
    ours.locks += w.locks;
    ours.elapsed_s += w.elapsed_s;
    ours.client_cpu_s += w.client_cpu_s;
    servers_read = servers_read && w.servers_cpu_s >= 0;
    ours.servers_cpu_s = (i == 0 ? 0 : ours.servers_cpu_s) + w.servers_cpu_s;
    ours.latencies.insert(ours.latencies.end(), w.latencies.begin(), w.latencies.end());
    for (const auto& [k, v] : w.errors) ours.errors[k] += v;
    if (!floor) continue;
    auto f = floor->run(warmup, seconds);
    floor_sum.locks += f.locks;
    floor_sum.failed += f.failed;
    floor_sum.elapsed_s += f.elapsed_s;
    floor_sum.client_cpu_s += f.client_cpu_s;
    floor_servers_read = floor_servers_read && f.servers_cpu_s >= 0;
    floor_sum.servers_cpu_s = (i == 0 ? 0 : floor_sum.servers_cpu_s) + f.servers_cpu_s;
  }
  if (!servers_read) ours.servers_cpu_s = -1;
  if (!floor_servers_read) floor_sum.servers_cpu_s = -1;

  auto j = head(o, "throughput", o.ports.size());
  j.integer("workers", o.tput_workers)
      .integer("connections_per_node", 1)
      .num("duration_s", ours.elapsed_s)
      .integer("locks", ours.locks)
      .raw("errors", errors_json(ours.errors))
      .stats("total_us", summarize(ours.latencies));
  add_rates(j, "", ours.locks, ours.elapsed_s, ours.client_cpu_s, ours.servers_cpu_s);
  if (floor) {
    j.integer("floor_alternating_windows", windows)
        .integer("floor_alternating_locks", floor_sum.locks)
        .integer("floor_alternating_failed_acquires", floor_sum.failed);
    add_rates(j, "floor_alternating_", floor_sum.locks, floor_sum.elapsed_s, floor_sum.client_cpu_s,
              floor_sum.servers_cpu_s);
  }
  j.emit();
}

// ---------------------------------------------------------------------------------------------
// Contention: W workers, each with its own Client (like W processes), on ONE key; each holds it
// about hold_us and releases. rotate: after releasing, a worker waits until another one took
// the lock; ffa: the releaser competes again at once.

namespace {

struct Arena {
  std::mutex m;
  std::condition_variable cv;
  Clock::time_point t0, t_end;
  // The lock as the harness sees it.
  int holder = -1;
  int releasing = 0;
  Clock::time_point free_since;
  std::uint64_t acq_seq = 0;
  Clock::time_point last_acq_at;
  std::optional<Clock::time_point> last_rel_start, last_rel_end;
  int last_releaser = -1;
  // Figures.
  std::vector<long long> per_worker;
  std::vector<double> gaps_all, gaps_cross, gaps_from_rel_end, holds;
  std::vector<double> attempts;
  double held_us = 0;
  long long acquisitions = 0, self_handoffs = 0, cross_handoffs = 0, violations = 0;
  long long attempts_total = 0, not_acquired = 0, not_acquired_while_free = 0;
  long long release_errors = 0, rotate_timeouts = 0;
  std::map<std::string, long long> other_errors;

  bool in_window(Clock::time_point t) const { return t >= t0 && t < t_end; }
};

// A wait that ends in not_acquired counts as "while free" when the harness saw nobody holding
// or releasing the lock for at least this long: no handoff takes that long on loopback.
constexpr auto kFreeThreshold = 2ms;

void contention_worker(Arena& a, redlock::Client& client, int w, const std::string& key,
                       const Options& o, bool rotate, const redlock::CancelToken& cancel) {
  const auto hold = std::chrono::microseconds(o.hold_us);
  while (Clock::now() < a.t_end && !cancel.cancelled()) {
    redlock::AcquireRequest req({key}, Ms(o.ttl_ms), Ms(o.cont_wait_ms));
    req.cancel = cancel;
    auto r = client.acquire(std::move(req));
    auto ta = Clock::now();
    std::unique_lock<std::mutex> lock(a.m);
    a.attempts_total += r.attempts;
    if (!r) {
      if (r.error == redlock::Errc::not_acquired) {
        ++a.not_acquired;
        if (a.holder == -1 && a.releasing == 0 && ta - a.free_since >= kFreeThreshold)
          ++a.not_acquired_while_free;
      } else if (r.error != redlock::Errc::cancelled) {
        ++a.other_errors[error_name(r.error)];
      }
      continue;
    }
    if (a.holder != -1) ++a.violations;
    a.holder = w;
    ++a.acq_seq;
    a.last_acq_at = ta;
    if (a.in_window(ta)) {
      ++a.acquisitions;
      ++a.per_worker[static_cast<std::size_t>(w)];
      a.attempts.push_back(r.attempts);
      if (a.last_rel_start && *a.last_rel_start >= a.t0) {
        double g = us_between(*a.last_rel_start, ta);
        a.gaps_all.push_back(g);
        if (a.last_rel_end) a.gaps_from_rel_end.push_back(us_between(*a.last_rel_end, ta));
        if (a.last_releaser == w) {
          ++a.self_handoffs;
        } else {
          ++a.cross_handoffs;
          a.gaps_cross.push_back(g);
        }
      }
    }
    a.cv.notify_all();
    lock.unlock();

    std::this_thread::sleep_for(hold);

    auto tr = Clock::now();
    lock.lock();
    a.holds.push_back(us_between(ta, tr));
    auto from = std::max(ta, a.t0), to = std::min(tr, a.t_end);
    if (to > from) a.held_us += us_between(from, to);
    a.holder = -1;
    ++a.releasing;
    a.last_rel_start = tr;
    a.last_rel_end.reset();
    a.last_releaser = w;
    std::uint64_t seq_at_release = a.acq_seq;
    lock.unlock();

    auto rr = client.release(r.lock);
    auto te = Clock::now();

    lock.lock();
    --a.releasing;
    if (!rr) ++a.release_errors;
    if (a.last_releaser == w && a.last_rel_start == tr) a.last_rel_end = te;
    if (a.holder == -1 && a.releasing == 0) a.free_since = te;
    if (rotate && Clock::now() < a.t_end) {
      auto deadline = std::min(Clock::now() + 2s, a.t_end + 2s);
      if (!a.cv.wait_until(lock, deadline, [&] { return a.acq_seq != seq_at_release; }))
        ++a.rotate_timeouts;
    }
  }
}

void contention_run(const Options& o, const std::string& mode) {
  const int workers = o.cont_workers;
  const bool rotate = mode == "rotate";
  const std::string key = "bench:cont:" + random_hex(8) + ":" + mode;
  std::vector<std::unique_ptr<redlock::Client>> clients;
  for (int w = 0; w < workers; ++w) {
    clients.push_back(new_client(o.ports));
    // Connections up and the script cached before the window opens.
    auto r = clients.back()->try_acquire(key + ":warm:" + std::to_string(w), Ms(o.ttl_ms));
    if (r) (void)clients.back()->release(r.lock);
  }
  Arena a;
  a.per_worker.assign(static_cast<std::size_t>(workers), 0);
  a.t0 = Clock::now();
  a.free_since = a.t0;
  a.t_end = a.t0 + std::chrono::duration_cast<Clock::duration>(
                       std::chrono::duration<double>(o.cont_duration_s));
  redlock::CancelToken cancel;
  std::vector<std::thread> threads;
  for (int w = 0; w < workers; ++w)
    threads.emplace_back(contention_worker, std::ref(a),
                         std::ref(*clients[static_cast<std::size_t>(w)]), w, std::cref(key),
                         std::cref(o), rotate, std::cref(cancel));
  std::this_thread::sleep_until(a.t_end);
  auto t_stop = Clock::now();
  double elapsed = std::chrono::duration<double>(t_stop - a.t0).count();
  double open_gap_ms = 0;
  {
    std::lock_guard<std::mutex> lock(a.m);
    if (a.holder == -1 && a.last_rel_start)
      open_gap_ms = us_between(std::max(*a.last_rel_start, a.t0), t_stop) / 1000.0;
  }
  // Waits end by themselves (each is bounded by cont_wait_ms); cancel whatever is left after
  // a grace period so that the drain is bounded whatever the library does.
  std::thread canceller([&] {
    std::unique_lock<std::mutex> lock(a.m);
    a.cv.wait_until(lock, t_stop + Ms(o.cont_wait_ms) + 1s, [&] { return cancel.cancelled(); });
    cancel.cancel();
  });
  for (auto& t : threads) t.join();
  {
    std::lock_guard<std::mutex> lock(a.m);
    if (!cancel.cancelled()) cancel.cancel();
    a.cv.notify_all();
  }
  canceller.join();
  double drain_ms = us_between(t_stop, Clock::now()) / 1000.0;

  const auto& cfg = clients.front()->config();
  double stall_ms = 5.0 * static_cast<double>((cfg.retry_delay + cfg.retry_jitter).count());
  long long stalls = 0;
  double stalled = 0;
  for (double g : a.gaps_all)
    if (g / 1000.0 > stall_ms) ++stalls, stalled += g / 1000.0;
  if (open_gap_ms > stall_ms) ++stalls, stalled += open_gap_ms;
  double mean_attempts = 0;
  for (double x : a.attempts) mean_attempts += x;
  if (!a.attempts.empty()) mean_attempts /= static_cast<double>(a.attempts.size());
  std::vector<double> per_worker(a.per_worker.begin(), a.per_worker.end());

  auto j = head(o, "contention", o.ports.size());
  j.str("mode", mode)
      .str("setting", "default")
      .str("waiting", "release notices")
      .integer("retryDelay", cfg.retry_delay.count())
      .integer("retryJitter", cfg.retry_jitter.count())
      .integer("retryCount", cfg.retry_count)
      .integer("wait_ms", o.cont_wait_ms)
      .integer("workers", workers)
      .num("hold_ms_target", o.hold_us / 1000.0)
      .num("duration_s", elapsed)
      .integer("acquisitions", a.acquisitions)
      .num("acq_per_s", static_cast<double>(a.acquisitions) / elapsed)
      .stats("handoff_gap_us", summarize(a.gaps_all))
      .stats("cross_handoff_gap_us", summarize(a.gaps_cross))
      .stats("gap_from_release_resolved_us", summarize(a.gaps_from_rel_end))
      .integer("self_handoffs", a.self_handoffs)
      .integer("cross_handoffs", a.cross_handoffs)
      .integer("per_worker_min", *std::min_element(a.per_worker.begin(), a.per_worker.end()))
      .integer("per_worker_max", *std::max_element(a.per_worker.begin(), a.per_worker.end()))
      .numbers("per_worker", per_worker)
      .num("mean_attempts_per_acquire", a.attempts.empty() ? NAN : mean_attempts)
      .stats("hold_actual_us", summarize(a.holds))
      .integer("attempts_total", a.attempts_total)
      .null("split_vote_attempts")  // not visible through the public API
      .num("stall_threshold_ms", stall_ms)
      .integer("stalls", stalls)
      .num("stalled_ms_total", stalled)
      .num("open_gap_at_end_ms", open_gap_ms)
      .num("lock_held_fraction", a.held_us / (elapsed * 1e6))
      .integer("retry_exhausted_errors", a.not_acquired)
      .integer("not_acquired_while_free", a.not_acquired_while_free)
      .num("free_threshold_ms", std::chrono::duration<double, std::milli>(kFreeThreshold).count())
      .raw("other_errors", errors_json(a.other_errors))
      .integer("release_errors", a.release_errors)
      .integer("mutual_exclusion_violations", a.violations)
      .integer("rotate_timeouts", a.rotate_timeouts)
      .num("drain_ms", drain_ms)
      .emit();
}

}  // namespace

void contention(const Options& o) {
  for (const auto& mode : o.cont_modes) {
    if (mode != "rotate" && mode != "ffa")
      throw std::invalid_argument("bad contention mode " + mode);
    contention_run(o, mode);
  }
}

// ---------------------------------------------------------------------------------------------
// A bad minority: uncontended latency with `faulty` of the nodes SIGSTOPped, or behind a delay
// (their ports replaced by --delayed-ports, fault proxies started by the driver), against the
// healthy run, one after the other in this process.

void bad_minority(const Options& o) {
  const auto n = o.ports.size();
  const auto f = static_cast<std::size_t>(o.faulty);
  if (f == 0 || 2 * f >= n)
    throw std::invalid_argument("bad_minority: need a minority of faulty nodes");
  const auto ttl = Ms(o.ttl_ms);
  auto emit = [&](const std::string& fault, const Cycles& c, const std::string& note) {
    auto j = head(o, "bad_minority", n);
    j.str("fault", fault).integer("faulty_nodes", static_cast<long long>(f)).str("note", note);
    j.integer("iters", o.iters).integer("warmup", o.warmup);
    add_cycles(j, c);
    j.emit();
  };
  const std::string tag = random_hex(8);

  {
    auto client = new_client(o.ports);
    emit("none",
         run_cycles(*client, "bench:bad:" + tag + ":none", o.warmup, o.iters, ttl,
                    Clock::now() + 60s),
         "healthy");
  }
  if (o.delayed_ports.size() == f) {
    auto ports = o.ports;
    std::copy(o.delayed_ports.begin(), o.delayed_ports.end(), ports.end() - static_cast<long>(f));
    auto client = new_client(ports);
    emit("delay",
         run_cycles(*client, "bench:bad:" + tag + ":delay", o.warmup, o.iters, ttl,
                    Clock::now() + 60s),
         "last nodes behind a delaying proxy");
  } else if (!o.delayed_ports.empty()) {
    throw std::invalid_argument("bad_minority: --delayed-ports must list --faulty ports");
  }
  {
    std::vector<std::uint16_t> faulty(o.ports.end() - static_cast<long>(f), o.ports.end());
    auto pids = server_pids(faulty);
    for (auto pid : pids)
      if (pid <= 0) throw std::runtime_error("bad_minority: cannot find the pid of a node");
    auto client = new_client(o.ports);
    auto key = "bench:bad:" + tag + ":paused";
    run_cycles(*client, key, o.warmup, 0, ttl, Clock::now() + 20s);  // connected and warm
    for (auto pid : pids) pause_server(pid);
    auto c = run_cycles(*client, key, 0, o.iters, ttl, Clock::now() + 60s);
    resume_paused();
    emit("paused", c, "last nodes SIGSTOPped after warm-up, resumed after the run");
  }
}

// ---------------------------------------------------------------------------------------------
// The watchdog at scale: `held` locks taken with hold() (renewed every lease/3), then a window
// in which nothing but renewals runs: requests per node, client CPU, memory per held lock.

void watchdog_scale(const Options& o) {
  auto client = new_client(o.ports, [&](redlock::Config& c) { c.watchdog_lease = Ms(o.lease_ms); });
  std::vector<std::unique_ptr<ServerProbe>> probes;
  for (auto p : o.ports) probes.push_back(std::make_unique<ServerProbe>(p));
  const std::string tag = random_hex(8);
  {
    auto r = client->try_acquire("bench:wd:" + tag + ":warm", Ms(o.ttl_ms));
    if (r) (void)client->release(r.lock);
  }
  std::vector<redlock::HeldLock> held;
  held.reserve(static_cast<std::size_t>(o.held));
  long long rss0 = self_rss_bytes(), heap0 = heap_in_use_bytes();
  const double hold_cpu0 = self_cpu_seconds();
  auto t_hold = Clock::now();
  long long hold_failures = 0;
  // A minute, and a minute more for each 100,000 locks past the first: taking a million one by
  // one from one thread would take minutes, so --hold-threads callers take them side by side.
  auto limit = t_hold + 60s + std::chrono::seconds(60LL * o.held / 100'000);
  {
    std::mutex m;
    std::atomic<int> next{0};
    std::vector<std::thread> takers;
    for (int t = 0; t < o.hold_threads; ++t)
      takers.emplace_back([&] {
        for (int i = next++; i < o.held && Clock::now() < limit; i = next++) {
          auto r = client->hold("bench:wd:" + tag + ":" + std::to_string(i));
          std::lock_guard<std::mutex> lock(m);
          if (r) {
            held.push_back(std::move(r.lock));
          } else if (++hold_failures <= 3) {
            std::fprintf(stderr, "watchdog_scale: hold %d failed: %s (%s), %d attempts\n", i,
                         r.error.message().c_str(), r.detail.c_str(), r.attempts);
          }
        }
      });
    for (auto& t : takers) t.join();
  }
  double hold_s = std::chrono::duration<double>(Clock::now() - t_hold).count();
  const double hold_cpu = self_cpu_seconds() - hold_cpu0;
  // Settle: let the renewals that fell due while locks were being taken go out.
  std::this_thread::sleep_for(Ms(o.lease_ms / 3));

  auto count_lost = [&] {
    long long lost = 0;
    for (const auto& h : held)
      if (h.lost()) ++lost;
    return lost;
  };
  const long long lost_before = count_lost();
  // PEXPIRE runs only in renew.lua, once per key it extends: the renewals the servers did.
  std::vector<long long> cmd0, eval0, pexpire0;
  std::vector<double> server_cpu0;
  for (auto& p : probes) {
    cmd0.push_back(p->commands_processed());
    eval0.push_back(p->command_calls("evalsha") + p->command_calls("eval"));
    pexpire0.push_back(p->command_calls("pexpire"));
    server_cpu0.push_back(p->cpu_seconds());
  }
  double cpu0 = self_cpu_seconds();
  auto t0 = Clock::now();
  // A lock call on the same client every 50 ms: what a caller waits while the loop renews (a
  // burst of due renewals holds the loop thread up, and a request timer of 200 ms with it).
  std::vector<double> call_us;
  long long call_failures = 0;
  {
    const auto end =
        t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.window_s));
    const std::string key = "bench:wd:" + tag + ":caller";
    while (Clock::now() < end && call_us.size() < 100'000) {
      auto a = Clock::now();
      auto r = client->try_acquire(key, Ms(o.ttl_ms));
      if (r)
        (void)client->release(r.lock);
      else
        ++call_failures;
      call_us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - a).count());
      std::this_thread::sleep_until(std::min(end, a + 50ms));
    }
  }
  double elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
  double cpu = self_cpu_seconds() - cpu0;
  std::vector<double> req_per_s, eval_per_s, pexpire_per_s, server_cpu;
  for (std::size_t i = 0; i < probes.size(); ++i) {
    // This probe's own commands in between: INFO commandstats three times and INFO stats once.
    long long cmds = probes[i]->commands_processed() - cmd0[i] - 4;
    long long evals =
        probes[i]->command_calls("evalsha") + probes[i]->command_calls("eval") - eval0[i];
    long long pexpires = probes[i]->command_calls("pexpire") - pexpire0[i];
    req_per_s.push_back(static_cast<double>(cmds) / elapsed);
    eval_per_s.push_back(static_cast<double>(evals) / elapsed);
    pexpire_per_s.push_back(static_cast<double>(pexpires) / elapsed);
    server_cpu.push_back((probes[i]->cpu_seconds() - server_cpu0[i]) / elapsed);
  }
  long long rss1 = self_rss_bytes(), heap1 = heap_in_use_bytes();
  const long long lost = count_lost();
  const double count = static_cast<double>(held.size());
  // Lock renewals in the window: every live lock once per lease/3 (lost ones are not renewed).
  const double alive = count - static_cast<double>(lost_before + lost) / 2.0;
  const double renewals = alive * elapsed / (o.lease_ms / 3000.0);
  // The renewals the nodes did (keys extended, averaged over the nodes; one key per lock here),
  // where every probe could read them: the CPU per renewal is judged on these.
  double done = 0;
  for (auto v : pexpire_per_s) done = v < 0 || done < 0 ? -1 : done + v * elapsed;
  const double renewed = done >= 0 ? done / static_cast<double>(probes.size()) : renewals;

  auto t_release = Clock::now();
  held.clear();  // each HeldLock releases itself without blocking
  client.reset();
  double release_s = std::chrono::duration<double>(Clock::now() - t_release).count();

  auto j = head(o, "watchdog_scale", o.ports.size());
  j.integer("held", static_cast<long long>(count))
      .integer("hold_failures", hold_failures)
      .integer("hold_threads", o.hold_threads)
      .integer("lease_ms", o.lease_ms)
      .num("renew_every_ms", o.lease_ms / 3.0)
      .num("hold_s", hold_s)
      .num("hold_client_cpu_util", hold_s > 0 ? hold_cpu / hold_s : NAN)
      .num("hold_client_cpu_us_per_lock", count > 0 ? hold_cpu * 1e6 / count : NAN)
      .num("window_s", elapsed)
      .numbers("requests_per_s_per_node", req_per_s)
      .numbers("scripts_per_s_per_node", eval_per_s)
      .numbers("keys_extended_per_s_per_node", pexpire_per_s)
      .numbers("server_cpu_util_per_node", server_cpu)
      .num("lock_renewals_per_s", renewals / elapsed)
      .num("client_cpu_util", cpu / elapsed)
      .num("renewals_done_per_s", renewed / elapsed)
      .num("client_cpu_us_per_renewal", renewed > 0 ? cpu * 1e6 / renewed : NAN)
      .num("rss_bytes_per_lock", count > 0 ? static_cast<double>(rss1 - rss0) / count : NAN)
      .num("heap_bytes_per_lock",
           count > 0 && heap0 >= 0 ? static_cast<double>(heap1 - heap0) / count : NAN)
      .stats("caller_cycle_us", summarize(call_us))
      .integer("caller_failures", call_failures)
      .integer("lost_before_window", lost_before)
      .integer("lost_during_window", lost - lost_before)
      .num("release_and_shutdown_s", release_s)
      .emit();
}

}  // namespace bench
