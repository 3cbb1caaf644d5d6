// An election's failover (issue 32, item 7): how long an office stays without a leader after its
// leader crashes, and how quickly a resignation hands it on. Each round:
//   1. A (a Client of its own, made anew each round) campaigns and leads, renewed by the
//      watchdog (lease --election-ttl-ms);
//   2. B and C, two other Clients, campaign and wait; an observer (a fourth Client) watches;
//   3. after a random part of the lease, A crashes: its Client is destroyed without resigning,
//      as a killed process leaves its keys (the nodes see its connections close, nothing else);
//   4. failover: from the crash to the moment B's or C's campaign returns with the office. Its
//      floor is what A's key had left on the nodes, which the leader's own validity bounds from
//      below: `failover_ms` minus `ttl_left_ms` is the overhead of noticing the expiry;
//   5. handover: the winner resigns, and the other, still waiting, wins: woken by the release
//      notice, never polling;
//   6. observer lag: from each new leader's grant to the moment the observer's callback names
//      its term.
// One JSON line per N, after all rounds.
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common.hpp"
#include "ours.hpp"
#include "redlock/redlock.hpp"
#include "scenarios.hpp"

namespace bench {
namespace {

using namespace std::chrono_literals;
using Ms = std::chrono::milliseconds;

// When the observer first saw each term.
class TermLog {
 public:
  void saw(std::uint64_t term) {
    std::lock_guard<std::mutex> g(m_);
    seen_.emplace(term, Clock::now());
    cv_.notify_all();
  }
  // The time the observer first named `term`, waiting up to `limit` for it.
  std::optional<Clock::time_point> when(std::uint64_t term, Ms limit) {
    std::unique_lock<std::mutex> g(m_);
    cv_.wait_for(g, limit, [&] { return seen_.count(term) > 0; });
    auto it = seen_.find(term);
    if (it == seen_.end()) return std::nullopt;
    return it->second;
  }

 private:
  std::mutex m_;
  std::condition_variable cv_;
  std::map<std::uint64_t, Clock::time_point> seen_;
};

struct Campaign {
  std::future<redlock::CampaignResult> result;
};

Campaign start_campaign(redlock::Election& e, const std::string& office, const std::string& who,
                        Ms ttl, Ms wait) {
  redlock::CampaignRequest req;
  req.office = office;
  req.value = who;
  req.ttl = ttl;
  req.wait = wait;
  return {std::async(std::launch::async, [&e, req]() mutable { return e.campaign(req); })};
}

}  // namespace

void election_failover(const Options& o) {
  const auto ttl = Ms(o.election_ttl_ms);
  const std::string office = "bench:office:" + random_hex(8);
  auto b_client = new_client(o.ports);
  auto c_client = new_client(o.ports);
  auto obs_client = new_client(o.ports);
  redlock::Election b(*b_client), c(*c_client), obs(*obs_client);
  TermLog log;
  auto watch = obs.observe(office, [&log](const redlock::LeaderResult& r) {
    if (r.ok() && r.leader) log.saw(r.leader->term);
  });
  std::mt19937_64 rng(std::random_device{}());
  std::vector<double> failover_ms, ttl_left_ms, overhead_ms, handover_us, lag_us;
  std::map<std::string, long long> errors;
  auto count_error = [&](std::error_code ec) { ++errors[error_name(ec)]; };
  for (int round = 0; round < o.election_rounds; ++round) {
    auto a_client = new_client(o.ports);
    std::optional<redlock::Office> a_office;
    {
      redlock::Election a(*a_client);
      redlock::CampaignRequest req;
      req.office = office;
      req.value = "A";
      req.ttl = ttl;
      req.wait = 5s;
      auto r = a.campaign(req);
      if (!r) {
        count_error(r.error);
        continue;
      }
      a_office = std::move(r.office);
    }
    auto wait = Ms(4 * ttl.count() + 5000);
    auto cb = start_campaign(b, office, "B", ttl, wait);
    auto cc = start_campaign(c, office, "C", ttl, wait);
    // The crash falls anywhere in the watchdog's renewal cycle (every lease/3).
    std::this_thread::sleep_for(Ms(50 + static_cast<long>(rng() % (ttl.count() / 2))));
    auto crashed = Clock::now();
    double left = us_between(crashed, a_office->valid_until()) / 1000.0;
    a_client.reset();  // the crash: connections close, nothing is released
    a_office.reset();  // its Client is gone: nothing to release through
    // The first of the two to return has the office.
    std::optional<redlock::CampaignResult> first, second;
    auto* first_f = &cb.result;
    auto* second_f = &cc.result;
    for (;;) {
      if (cb.result.wait_for(1ms) == std::future_status::ready) break;
      if (cc.result.wait_for(1ms) == std::future_status::ready) {
        std::swap(first_f, second_f);
        break;
      }
    }
    first = first_f->get();
    auto won = Clock::now();
    if (!*first) {
      count_error(first->error);
      second = second_f->get();
      if (*second) second->office.resign();
      continue;
    }
    failover_ms.push_back(us_between(crashed, won) / 1000.0);
    ttl_left_ms.push_back(left);
    overhead_ms.push_back(failover_ms.back() - left);
    if (auto seen = log.when(first->office.term(), 2s)) lag_us.push_back(us_between(won, *seen));
    // The handover: the winner resigns, the other one, waiting, wins.
    auto resigned = Clock::now();
    first->office.resign();
    second = second_f->get();
    auto took = Clock::now();
    if (!*second) {
      count_error(second->error);
      continue;
    }
    handover_us.push_back(us_between(resigned, took));
    if (auto seen = log.when(second->office.term(), 2s)) lag_us.push_back(us_between(took, *seen));
    second->office.resign();
  }
  watch.stop();
  head(o, "election_failover", o.ports.size())
      .integer("ttl_ms", ttl.count())
      .integer("rounds", o.election_rounds)
      .stats("failover_ms", summarize(failover_ms))
      .stats("ttl_left_ms", summarize(ttl_left_ms))
      .stats("overhead_ms", summarize(overhead_ms))
      .stats("handover_us", summarize(handover_us))
      .stats("observer_lag_us", summarize(lag_us))
      .raw("errors", errors_json(errors))
      .emit();
}

}  // namespace bench
