// Contention: several contenders on one key. Behaviour, not timing: no two holders overlap, every
// contender is served, a wait ends with the lock rather than at its deadline, and contenders do
// not storm the servers (one release wakes one waiter of a client; a split vote is settled by
// its contenders instead of being retried by all of them).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "intervals.hpp"
#include "redis_server.hpp"
#include "redlock/redlock.hpp"
#include "test_config.hpp"

namespace redlock {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using test::RedisCluster;

// Script calls (EVALSHA) a server has run so far: acquires, releases, clean-ups.
long long script_calls(const test::RedisServer& server) {
  auto info = server.command({"INFO", "commandstats"});
  auto at = info.find("cmdstat_evalsha:calls=");
  if (at == std::string::npos) return 0;
  return std::stoll(info.substr(at + 22));
}

long long script_calls(RedisCluster& cluster, std::size_t n) {
  long long total = 0;
  for (std::size_t i = 0; i < n; ++i) total += script_calls(cluster[i]);
  return total;
}

// Four waiters of one client on a key held by another client, with a fallback far beyond the
// test: each release (published on all three nodes) wakes one of them, which takes the lock,
// holds it briefly and releases it for the next. Every waiter is served by notices alone, and
// the servers see about one acquire per grant, not one per waiter and node for every release.
TEST(Contention, OneReleaseWakesOneWaiterOfAClient) {
  constexpr std::size_t kNodes = 3;
  constexpr int kWaiters = 4;
  RedisCluster cluster(kNodes);
  auto config = test::fast_config(cluster);
  Client holder(config);
  auto held = holder.try_acquire("k", 30000ms);
  ASSERT_TRUE(held) << held.message();

  auto slow = config;
  slow.retry_delay = 20000ms;  // the fallback never comes within the test
  slow.retry_jitter = 0ms;
  Client waiters(slow);
  std::atomic<int> served{0};
  std::vector<AcquireResult> results(kWaiters);
  std::vector<std::thread> threads;
  for (int w = 0; w < kWaiters; ++w)
    threads.emplace_back([&, w] {
      results[w] = waiters.acquire("k", 30000ms, 10000ms);
      if (!results[w]) return;
      ++served;
      std::this_thread::sleep_for(20ms);
      (void)waiters.release(results[w].lock);
    });
  // Every waiter has tried once and sleeps until a notice.
  std::this_thread::sleep_for(500ms);
  ASSERT_EQ(served.load(), 0);
  auto before = script_calls(cluster, kNodes);
  ASSERT_TRUE(holder.release(held.lock));
  for (auto& t : threads) t.join();
  auto after = script_calls(cluster, kNodes);

  for (int w = 0; w < kWaiters; ++w) EXPECT_TRUE(results[w]) << w << ": " << results[w].message();
  EXPECT_EQ(served.load(), kWaiters);
  // Per node: 5 releases and 4 grants; a little slack, per grant, for attempts that met a
  // release still on its way (a refusal there puts the waiter in that node's line, which it then
  // leaves: one more script; on a loaded machine a waiter may meet it up to three times in a row,
  // 19 script calls a node were seen). Waking every waiter on each of the three notices of a
  // release costs about 3 to 4 times as much (27 to 36).
  long long per_node = (after - before) / static_cast<long long>(kNodes);
  RecordProperty("script_calls_per_node", std::to_string(per_node));
  EXPECT_LE(per_node, 5 + kWaiters + 3 * kWaiters)
      << "script calls per node for " << kWaiters << " grants";
}

// A notice woken into a waiter that cannot use it is passed on. W1 wants {x, y} and is first in
// x's list; W2 wants x alone. x is released, y stays held: W1 is woken and refused (y), and the
// notice goes on to W2, which takes x long before any fallback (20 s here) would have woken it.
TEST(Contention, ANoticeThatAWaiterCannotUseIsPassedOn) {
  RedisCluster cluster(3);
  auto config = test::fast_config(cluster);
  Client holder(config);
  auto x = holder.try_acquire("x", 30000ms);
  auto y = holder.try_acquire("y", 30000ms);
  ASSERT_TRUE(x && y);

  auto slow = config;
  slow.retry_delay = 20000ms;
  slow.retry_jitter = 0ms;
  Client waiters(slow);
  CancelToken cancel_w1;
  AcquireRequest both({"x", "y"}, 30000ms, 30000ms);
  both.cancel = cancel_w1;
  auto w1 = std::async(std::launch::async, [&] { return waiters.acquire(both); });
  std::this_thread::sleep_for(300ms);  // W1 waits first
  auto w2 = std::async(std::launch::async, [&] { return waiters.acquire("x", 30000ms, 8000ms); });
  std::this_thread::sleep_for(300ms);  // both asked once and sleep until a notice
  ASSERT_TRUE(holder.release(x.lock));
  // Unpassed, the notice would leave W2 asleep until the last attempt its wait allows (8 s).
  EXPECT_TRUE(test::eventually([&] { return cluster.count_existing("redlock:x") >= 2; }, 3s))
      << "x stayed free: W2 was not told";
  auto r2 = w2.get();
  EXPECT_TRUE(r2) << "W2 was never told that x is free: " << r2.message();
  cancel_w1.cancel();
  EXPECT_FALSE(w1.get());
  if (r2) (void)waiters.release(r2.lock);
  (void)holder.release(y.lock);
}

// Two waiters that both want {x, y}: x is released, y stays held. Each is told once, is
// refused (y), and the notice ends there: handing it back and forth would run an attempt and its
// clean-up on every node, round after round, for as long as y is held.
TEST(Contention, ANoticeNoWaiterCanUseIsNotHandedBackAndForth) {
  constexpr std::size_t kNodes = 3;
  RedisCluster cluster(kNodes);
  auto config = test::fast_config(cluster);
  Client holder(config);
  auto x = holder.try_acquire("x", 30000ms);
  auto y = holder.try_acquire("y", 30000ms);
  ASSERT_TRUE(x && y);

  auto slow = config;
  slow.retry_delay = 20000ms;
  slow.retry_jitter = 0ms;
  Client waiters(slow);
  CancelToken cancel;
  AcquireRequest both({"x", "y"}, 30000ms, 30000ms);
  both.cancel = cancel;
  auto w1 = std::async(std::launch::async, [&] { return waiters.acquire(both); });
  auto w2 = std::async(std::launch::async, [&] { return waiters.acquire(both); });
  std::this_thread::sleep_for(500ms);  // both asked once and sleep until a notice
  auto before = script_calls(cluster, kNodes);
  ASSERT_TRUE(holder.release(x.lock));
  std::this_thread::sleep_for(1000ms);
  auto after = script_calls(cluster, kNodes);
  // Per node: the release, and at most an attempt and its clean-up for each waiter.
  long long per_node = (after - before) / static_cast<long long>(kNodes);
  RecordProperty("script_calls_per_node", std::to_string(per_node));
  EXPECT_LE(per_node, 1 + 2 * 2 + 2) << "a notice nobody can use went round in circles";
  cancel.cancel();
  EXPECT_FALSE(w1.get());
  EXPECT_FALSE(w2.get());
  (void)holder.release(y.lock);
}

// Eight clients (like eight processes) on one key, each taking the lock a few times with a wait
// far longer than the test needs. No two critical sections overlap, every client is served every
// time (a wait never ends not_acquired), and the attempts per grant stay bounded.
class EightContenders : public ::testing::TestWithParam<std::size_t> {};

TEST_P(EightContenders, AreAllServedWithoutOverlapOrStorm) {
  const std::size_t n = GetParam();
  constexpr int kClients = 8;
  constexpr int kGrants = 6;
  RedisCluster cluster(n);
  auto config = test::fast_config(cluster);
  config.retry_delay = 200ms;  // the library's defaults: the fallback, not the way to the lock
  config.retry_jitter = 100ms;
  test::SectionLog log;
  std::atomic<int> failures{0};
  std::atomic<long long> attempts{0};
  std::vector<int> per_client(kClients, 0);
  std::vector<std::thread> threads;
  for (int c = 0; c < kClients; ++c)
    threads.emplace_back([&, c] {
      Client client(config);
      for (int i = 0; i < kGrants; ++i) {
        auto r = client.acquire("k", 5000ms, 20000ms);
        attempts += r.attempts;
        if (!r) {
          ++failures;
          ADD_FAILURE() << "client " << c << ": " << r.message();
          continue;
        }
        test::Section s;
        s.entered = Clock::now();
        s.valid_until = r.lock.valid_until;
        s.holder = c;
        std::this_thread::sleep_for(1ms);
        s.left = Clock::now();
        log.add(s);
        ++per_client[c];
        (void)client.release(r.lock);
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  for (int c = 0; c < kClients; ++c) EXPECT_EQ(per_client[c], kGrants) << "client " << c;
  EXPECT_EQ(test::count_overlaps(log.sections(), /*claimed=*/true), 0u);
  double per_grant = static_cast<double>(attempts.load()) / (kClients * kGrants);
  RecordProperty("attempts_per_grant", std::to_string(per_grant));
  // Here about 7 to 8: each release wakes the seven other clients, one wins, and a split vote
  // is settled by its contenders. Before (splits retried by everyone, every notice of every node
  // waking every waiter) 9 to 12 here, 17 to 20 in the benchmark. A guard against a storm; the
  // test above is the one that tells the two apart.
  EXPECT_LE(per_grant, 11.0) << "attempts per grant";
}

INSTANTIATE_TEST_SUITE_P(Nodes, EightContenders, ::testing::Values(3, 5),
                         [](const auto& info) { return "N" + std::to_string(info.param); });

}  // namespace
}  // namespace redlock
