// A counting semaphore under load, in the shape of shared/peerbench's `semaphore` scenario
// (node/bench.mjs, redis-semaphore's RedlockSemaphore): W workers share k permits of one key for
// a fixed time; each acquires a permit (a waiting acquire), holds it hold_ms, releases it, and
// again. Each worker has a Client of its own, as each of the peer's workers has its own ioredis
// connections (like W processes). The harness counts holders from an acquire's return to the
// release call, as the peer's does, and adds the hand-off gap and a coarse time series of the
// permits in use.
#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
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

// The width of one bucket of the "permits in use" time series.
constexpr auto kBucket = 100ms;
// How long the waits still open at the window's end may run before they are cancelled.
constexpr auto kDrainGrace = 3s;

struct SemArena {
  std::mutex m;
  std::condition_variable cv;
  Clock::time_point t0, t_end;
  int permits = 0;
  // The semaphore as the harness sees it.
  int holders = 0, waiting = 0;
  Clock::time_point last_t;  // the last change of `holders`
  // Release calls made while some worker was inside acquire, not yet paired with a grant.
  std::deque<Clock::time_point> open_handoffs;
  // Figures.
  int max_holders = 0;
  long long violations = 0, acquisitions = 0, errors = 0, release_errors = 0;
  long long releases_none_waiting = 0;
  std::map<std::string, long long> error_kinds;
  std::string first_error;
  double area_us = 0, all_busy_us = 0;  // integrals over the window: holders, holders >= k
  std::vector<double> bucket_area_us;   // the same per kBucket
  std::vector<double> waits_us, gaps_us, attempts;
  std::vector<long long> per_permit;

  // Adds the holders since the last change up to `t` (both clipped to the window).
  void step(Clock::time_point t) {
    auto from = std::max(last_t, t0), to = std::min(t, t_end);
    if (to > from && holders > 0) {
      double span = us_between(from, to);
      area_us += holders * span;
      if (holders >= permits) all_busy_us += span;
      const double width = std::chrono::duration<double, std::micro>(kBucket).count();
      double a = us_between(t0, from), b = us_between(t0, to);
      for (auto i = static_cast<std::size_t>(a / width);
           i < bucket_area_us.size() && static_cast<double>(i) * width < b; ++i) {
        double lo = std::max(a, static_cast<double>(i) * width);
        double hi = std::min(b, static_cast<double>(i + 1) * width);
        if (hi > lo) bucket_area_us[i] += holders * (hi - lo);
      }
    }
    last_t = std::max(last_t, t);
  }
  bool in_window(Clock::time_point t) const { return t >= t0 && t < t_end; }
};

void semaphore_worker(SemArena& a, redlock::Client& client, const std::string& key,
                      const Options& o, const redlock::CancelToken& cancel) {
  const auto hold = std::chrono::microseconds(o.hold_us);
  while (Clock::now() < a.t_end && !cancel.cancelled()) {
    redlock::AcquireRequest req({key}, Ms(o.ttl_ms), Ms(o.sem_wait_ms));
    req.permits = static_cast<unsigned>(o.permits);
    req.cancel = cancel;
    {
      std::lock_guard<std::mutex> lock(a.m);
      ++a.waiting;
    }
    auto tw = Clock::now();
    auto r = client.acquire(std::move(req));
    auto ta = Clock::now();
    std::unique_lock<std::mutex> lock(a.m);
    --a.waiting;
    if (!r) {
      if (r.error != redlock::Errc::cancelled) {
        ++a.errors;
        ++a.error_kinds[error_name(r.error)];
        if (a.first_error.empty()) a.first_error = r.error.message();
      }
      continue;
    }
    a.step(ta);
    ++a.holders;
    a.max_holders = std::max(a.max_holders, a.holders);
    if (a.holders > a.permits) ++a.violations;
    // The oldest release call still waiting for its grant is this grant's hand-off.
    std::optional<Clock::time_point> released_at;
    if (!a.open_handoffs.empty()) {
      released_at = a.open_handoffs.front();
      a.open_handoffs.pop_front();
    }
    if (a.in_window(ta)) {
      ++a.acquisitions;
      a.waits_us.push_back(us_between(tw, ta));
      a.attempts.push_back(r.attempts);
      if (r.lock.permit >= 0 && r.lock.permit < static_cast<int>(a.per_permit.size()))
        ++a.per_permit[static_cast<std::size_t>(r.lock.permit)];
      if (released_at && *released_at >= a.t0) a.gaps_us.push_back(us_between(*released_at, ta));
    }
    lock.unlock();

    std::this_thread::sleep_for(hold);

    auto tr = Clock::now();
    lock.lock();
    a.step(tr);
    --a.holders;
    if (a.waiting > 0)
      a.open_handoffs.push_back(tr);
    else if (a.in_window(tr))
      ++a.releases_none_waiting;
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

void semaphore(const Options& o) {
  const int workers = o.sem_workers;
  const std::string key = "bench:sem:" + random_hex(8);
  // A Client per worker by default (--sem-clients W), as the peer gives each worker its own
  // connections; fewer Clients are shared round-robin (1: one Client for every worker).
  const int n_clients = std::min(o.sem_clients > 0 ? o.sem_clients : workers, workers);
  std::vector<std::unique_ptr<redlock::Client>> clients;
  for (int w = 0; w < n_clients; ++w) {
    clients.push_back(new_client(o.ports));
    // Connections up and the scripts cached before the window opens (a semaphore of its own).
    redlock::AcquireRequest warm({key + ":warm:" + std::to_string(w)}, Ms(o.ttl_ms), 0ms);
    warm.permits = static_cast<unsigned>(o.permits);
    auto r = clients.back()->acquire(std::move(warm));
    if (r) (void)clients.back()->release(r.lock);
  }
  SemArena a;
  a.permits = o.permits;
  a.per_permit.assign(static_cast<std::size_t>(o.permits), 0);
  const auto duration =
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.cont_duration_s));
  a.bucket_area_us.assign(
      static_cast<std::size_t>(std::ceil(std::chrono::duration<double>(duration) / kBucket)), 0.0);
  a.t0 = Clock::now();
  a.last_t = a.t0;
  a.t_end = a.t0 + duration;
  auto pids = server_pids(o.ports);
  double cpu0 = self_cpu_seconds(), srv0 = servers_cpu_seconds(pids);
  redlock::CancelToken cancel;
  std::vector<std::thread> threads;
  for (int w = 0; w < workers; ++w)
    threads.emplace_back(semaphore_worker, std::ref(a),
                         std::ref(*clients[static_cast<std::size_t>(w % n_clients)]),
                         std::cref(key), std::cref(o), std::cref(cancel));
  std::this_thread::sleep_until(a.t_end);
  auto t_stop = Clock::now();
  double client_cpu = self_cpu_seconds() - cpu0, srv1 = servers_cpu_seconds(pids);
  double servers_cpu = srv0 >= 0 && srv1 >= 0 ? srv1 - srv0 : -1;
  long long open_at_end = 0;
  {
    std::lock_guard<std::mutex> lock(a.m);
    a.step(t_stop);
    for (auto t : a.open_handoffs) open_at_end += a.in_window(t) ? 1 : 0;
  }
  // The waits still open end by themselves (a grant or the wait); whatever is left after a grace
  // period is cancelled, so that the drain is bounded whatever the library does.
  bool done = false;
  std::thread canceller([&] {
    std::unique_lock<std::mutex> lock(a.m);
    a.cv.wait_until(lock, t_stop + kDrainGrace, [&] { return done; });
    cancel.cancel();
  });
  for (auto& t : threads) t.join();
  {
    std::lock_guard<std::mutex> lock(a.m);
    done = true;
    a.cv.notify_all();
  }
  canceller.join();
  double drain_ms = us_between(t_stop, Clock::now()) / 1000.0;

  const double window_us = std::chrono::duration<double, std::micro>(duration).count();
  const double width_us = std::chrono::duration<double, std::micro>(kBucket).count();
  std::vector<double> per_bucket;
  for (std::size_t i = 0; i < a.bucket_area_us.size(); ++i) {
    double span = std::min(width_us, window_us - static_cast<double>(i) * width_us);
    per_bucket.push_back(span > 0 ? a.bucket_area_us[i] / span : 0);
  }
  double mean_attempts = 0;
  for (double x : a.attempts) mean_attempts += x;
  if (!a.attempts.empty()) mean_attempts /= static_cast<double>(a.attempts.size());
  std::vector<double> per_permit(a.per_permit.begin(), a.per_permit.end());

  auto j = head(o, "semaphore", o.ports.size());
  j.str("api",
        "client.acquire(AcquireRequest{{key}, ttl, wait, permits = k}) / client.release(lock)")
      .str("clients", n_clients == workers ? "one per worker" : std::to_string(n_clients))
      .str("waiting", "release notices")
      .integer("permits", o.permits)
      .integer("workers", workers)
      .num("hold_ms", o.hold_us / 1000.0)
      .num("duration_s", o.cont_duration_s)
      .integer("wait_ms", o.sem_wait_ms)
      .integer("acquisitions", a.acquisitions)
      .num("acq_per_s", static_cast<double>(a.acquisitions) / o.cont_duration_s)
      .num("permits_in_use_mean", a.area_us / window_us)
      .num("all_permits_busy_fraction", a.all_busy_us / window_us)
      .integer("max_holders", a.max_holders)
      .integer("violations", a.violations)
      .integer("errors", a.errors + a.release_errors)
      .integer("release_errors", a.release_errors)
      .raw("error_kinds", errors_json(a.error_kinds));
  if (a.first_error.empty())
    j.null("first_error");
  else
    j.str("first_error", a.first_error);
  j.stats("wait_us", summarize(a.waits_us))
      .stats("handoff_gap_us", summarize(a.gaps_us))
      .integer("handoffs_open_at_end", open_at_end)
      .integer("releases_none_waiting", a.releases_none_waiting)
      .num("mean_attempts_per_acquire", a.attempts.empty() ? NAN : mean_attempts)
      .numbers("per_permit", per_permit)
      .integer("in_use_bucket_ms", std::chrono::duration_cast<Ms>(kBucket).count())
      .numbers("in_use_per_bucket", per_bucket)
      .num("client_cpu_util", client_cpu / std::chrono::duration<double>(t_stop - a.t0).count())
      .num("servers_cpu_util",
           servers_cpu < 0 ? NAN
                           : servers_cpu / std::chrono::duration<double>(t_stop - a.t0).count())
      .num("drain_ms", drain_ms)
      .emit();
}

}  // namespace bench
