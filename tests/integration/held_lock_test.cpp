// Held locks: renewal by the watchdog, batching, the lost-lock signal, and waits.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <future>
#include <mutex>
#include <thread>

#include "redis_server.hpp"
#include "redlock/redlock.hpp"
#include "test_config.hpp"

namespace redlock {
namespace {

using namespace std::chrono_literals;
using test::eventually;
using test::RedisCluster;

Config lease_config(const RedisCluster& cluster, Milliseconds lease) {
  Config c = test::fast_config(cluster);
  c.watchdog_lease = lease;
  c.request_timeout = 100ms;
  return c;
}

// Script calls a server has run so far (EVALSHA and EVAL).
long long script_calls(const test::RedisServer& server) {
  auto info = server.command({"INFO", "commandstats"});
  long long total = 0;
  for (const char* name : {"cmdstat_evalsha:calls=", "cmdstat_eval:calls="}) {
    auto pos = info.find(name);
    if (pos != std::string::npos) total += std::stoll(info.substr(pos + std::strlen(name)));
  }
  return total;
}

TEST(HeldLock, OneSecondLeaseStaysHeldThroughFiveSecondsOfWork) {
  RedisCluster cluster(3);
  Client client(lease_config(cluster, 1000ms));
  auto r = client.hold("report");
  ASSERT_TRUE(r) << r.message();
  const auto token = r.lock.token();
  auto first_deadline = r.lock.valid_until();
  for (int i = 0; i < 50; ++i) {  // 5 s in steps of 100 ms
    ASSERT_TRUE(r.lock.valid()) << "lost after " << i * 100 << " ms";
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_GT(r.lock.valid_until(), first_deadline + 3s) << "the deadline moved with renewals";
  EXPECT_FALSE(r.lock.lost());
  EXPECT_EQ(cluster.count_holding("redlock:report", token), 3u);
  auto pttl = std::stoll(cluster[0].command({"PTTL", "redlock:report"}));
  EXPECT_LE(pttl, 1000) << "renewed with the lease, not longer";

  auto rel = r.lock.release();
  ASSERT_TRUE(rel) << rel.message();
  EXPECT_FALSE(r.lock.held());
  EXPECT_FALSE(r.lock.valid());
  EXPECT_TRUE(eventually([&] { return cluster.count_existing("redlock:report") == 0; }, 500ms));
  EXPECT_EQ(r.lock.release().error, Errc::not_held) << "second release: no round trip";
}

TEST(HeldLock, RenewalsOfManyLocksAreBatchedPerNode) {
  RedisCluster cluster(3);
  Client client(lease_config(cluster, 900ms));
  std::vector<HeldLock> locks;
  for (int i = 0; i < 20; ++i) {
    auto r = client.hold("batch-" + std::to_string(i));
    ASSERT_TRUE(r) << r.message();
    locks.push_back(std::move(r.lock));
  }
  auto before = script_calls(cluster[1]);
  std::this_thread::sleep_for(1500ms);  // about five renewal rounds of 300 ms
  auto calls = script_calls(cluster[1]) - before;
  for (auto& l : locks) EXPECT_TRUE(l.valid());
  // One call per lock per round would be ~100. Batched: a handful per round.
  EXPECT_GE(calls, 3);
  EXPECT_LE(calls, 20) << calls << " script calls for 20 locks over ~5 rounds";
}

TEST(HeldLock, DroppingTheHandleStopsRenewalAndReleases) {
  RedisCluster cluster(3);
  Client client(lease_config(cluster, 600ms));
  {
    auto r = client.hold("dropped");
    ASSERT_TRUE(r);
  }  // dropped
  EXPECT_TRUE(eventually([&] { return cluster.count_existing("redlock:dropped") == 0; }, 500ms));
  std::this_thread::sleep_for(50ms);
  auto before = script_calls(cluster[0]);
  std::this_thread::sleep_for(700ms);  // more than two renewal periods
  EXPECT_EQ(script_calls(cluster[0]), before) << "no timer outlived its lock";
}

TEST(HeldLock, MajorityKilledFiresTheLostSignalBeforeTheDeadline) {
  RedisCluster cluster(5);
  Client client(lease_config(cluster, 1000ms));
  std::promise<std::pair<std::error_code, Clock::time_point>> lost;
  auto r = client.hold(AcquireRequest({"fragile"}), [&](std::error_code why) {
    lost.set_value({why, Clock::now()});
  });
  ASSERT_TRUE(r) << r.message();
  auto flag = r.lock.lost_flag();
  EXPECT_FALSE(flag.is_set());
  for (std::size_t i : {0u, 2u, 4u}) cluster[i].kill9();
  auto future = lost.get_future();
  ASSERT_EQ(future.wait_for(3s), std::future_status::ready) << "lost signal fired";
  auto [why, at] = future.get();
  EXPECT_EQ(why, Errc::lock_lost);
  EXPECT_LT(at, r.lock.valid_until()) << "the holder hears it before the window closes";
  EXPECT_TRUE(flag.is_set());
  EXPECT_EQ(flag.reason(), Errc::lock_lost);
  EXPECT_FALSE(r.lock.valid());
}

TEST(HeldLock, QuorumReportingTheKeyGoneIsLostAtOnce) {
  RedisCluster cluster(3);
  Client client(lease_config(cluster, 3000ms));  // renewed every second, valid ~3 s
  std::promise<Clock::time_point> lost;
  auto r = client.hold(AcquireRequest({"stolen"}),
                       [&](std::error_code) { lost.set_value(Clock::now()); });
  ASSERT_TRUE(r);
  // An operator (or a restart without persistence) removes the key on two of three nodes.
  cluster[0].command({"DEL", "redlock:stolen"});
  cluster[1].command({"SET", "redlock:stolen", "someone-else"});
  auto future = lost.get_future();
  ASSERT_EQ(future.wait_for(2500ms), std::future_status::ready);
  EXPECT_GT(r.lock.valid_until() - future.get(), 500ms)
      << "lost at the first renewal that saw it, not at the deadline";
  EXPECT_EQ(r.lock.lost_flag().reason(), Errc::lock_lost);
}

TEST(HeldLock, FixedLeaseIsNotRenewedAndIsLostAtItsDeadline) {
  RedisCluster cluster(3);
  Client client(lease_config(cluster, 5000ms));
  std::atomic<bool> lost{false};
  auto r = client.hold(AcquireRequest({"fixed"}, 400ms), [&](std::error_code) { lost = true; });
  ASSERT_TRUE(r);
  EXPECT_TRUE(eventually([&] { return lost.load(); }, 1000ms));
  EXPECT_FALSE(r.lock.valid());
  // Lost a margin before the keys' own expiry; they then expire, never extended.
  EXPECT_TRUE(eventually([&] { return cluster.count_existing("redlock:fixed") == 0; }, 500ms));
}

TEST(HeldLock, MultiResourceLockIsRenewedAndReleasedTogether) {
  RedisCluster cluster(3);
  Client client(lease_config(cluster, 600ms));
  auto r = client.hold(AcquireRequest({"left", "right"}));
  ASSERT_TRUE(r) << r.message();
  std::this_thread::sleep_for(1200ms);
  EXPECT_TRUE(r.lock.valid());
  EXPECT_EQ(cluster.count_holding("redlock:left", r.lock.token()), 3u);
  EXPECT_EQ(cluster.count_holding("redlock:right", r.lock.token()), 3u);
  ASSERT_TRUE(r.lock.release());
  EXPECT_TRUE(eventually([&] {
    return cluster.count_existing("redlock:left") + cluster.count_existing("redlock:right") == 0;
  }));
}

TEST(Waiting, AWaiterIsWokenByTheReleaseNotice) {
  RedisCluster cluster(3);
  auto c = lease_config(cluster, 5000ms);
  c.retry_delay = 60s;  // the fallback back-off is far longer than this test
  c.retry_jitter = 0ms;
  Client holder(c), waiter(c);
  auto held = holder.try_acquire("queue", 60s);
  ASSERT_TRUE(held);
  auto start = Clock::now();
  auto got = std::async(std::launch::async, [&] { return waiter.acquire("queue", 5s, 20s); });
  std::this_thread::sleep_for(300ms);
  ASSERT_TRUE(holder.release(held.lock));
  ASSERT_EQ(got.wait_for(5s), std::future_status::ready) << "only a notice could wake it";
  auto r = got.get();
  ASSERT_TRUE(r) << r.message();
  EXPECT_LT(Clock::now() - start, 3s);
}

TEST(Waiting, ThousandWaitersShareOneSubscriberConnectionPerNode) {
  RedisCluster cluster(3);
  auto c = lease_config(cluster, 5000ms);
  c.retry_delay = 60s;
  // Declared before the clients: destroying `waiter` completes the remaining waits
  // (shutting_down), and their callbacks write here.
  std::mutex m;
  std::vector<AcquireResult> results;
  std::atomic<int> done{0};
  Client holder(c), waiter(c);
  auto held = holder.try_acquire("hot", 60s);
  ASSERT_TRUE(held);
  const int waiters = 1000;
  for (int i = 0; i < waiters; ++i) {
    // Half on the hot resource, half on resources of their own that someone else holds.
    std::string resource = i % 2 == 0 ? "hot" : "cold-" + std::to_string(i);
    if (i % 2 == 1) {
      ASSERT_TRUE(holder.try_acquire(resource, 60s));
    }
    waiter.acquire_async(AcquireRequest({resource}, 5s, 30s), [&](AcquireResult r) {
      std::lock_guard<std::mutex> g(m);
      results.push_back(std::move(r));
      ++done;
    });
  }
  std::this_thread::sleep_for(500ms);
  for (std::size_t i = 0; i < cluster.size(); ++i) {
    auto info = cluster[i].command({"INFO", "clients"});
    auto n = std::stoi(info.substr(info.find("connected_clients:") + 18));
    // holder: 1; waiter: 1 for commands + 1 subscriber; this INFO connection: 1.
    EXPECT_LE(n, 4) << info;
  }
  EXPECT_EQ(done.load(), 0) << "all still waiting";
  ASSERT_TRUE(holder.release(held.lock));
  EXPECT_TRUE(eventually([&] { return done.load() >= 1; }, 3s)) << "one hot waiter won";
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(done.load(), 1) << "the others keep waiting: the lock is held again";
  {
    std::lock_guard<std::mutex> g(m);
    ASSERT_FALSE(results.empty());
    EXPECT_TRUE(results[0]) << results[0].message();
  }
}

TEST(Waiting, CancelEndsAWaitAtOnce) {
  RedisCluster cluster(3);
  auto c = lease_config(cluster, 5000ms);
  c.retry_delay = 60s;
  Client holder(c), waiter(c);
  ASSERT_TRUE(holder.try_acquire("busy", 60s));
  CancelToken cancel;
  AcquireRequest request({"busy"}, 5s, forever);
  request.cancel = cancel;
  std::promise<AcquireResult> result;
  waiter.acquire_async(request, [&](AcquireResult r) { result.set_value(std::move(r)); });
  std::this_thread::sleep_for(200ms);
  auto start = Clock::now();
  cancel.cancel();
  auto future = result.get_future();
  ASSERT_EQ(future.wait_for(2s), std::future_status::ready);
  EXPECT_EQ(future.get().error, Errc::cancelled);
  EXPECT_LT(Clock::now() - start, 1s);
  // A token cancelled before the call ends it before any attempt.
  auto r = waiter.acquire(request);
  EXPECT_EQ(r.error, Errc::cancelled);
  EXPECT_EQ(r.attempts, 0);
}

TEST(Waiting, WaitDeadlineIsHonoured) {
  RedisCluster cluster(3);
  auto c = lease_config(cluster, 5000ms);
  c.retry_delay = 60s;
  Client holder(c), waiter(c);
  ASSERT_TRUE(holder.try_acquire("long", 60s));
  auto start = Clock::now();
  auto r = waiter.acquire("long", 5s, 400ms);
  auto took = Clock::now() - start;
  EXPECT_EQ(r.error, Errc::not_acquired);
  EXPECT_GE(took, 350ms);
  EXPECT_LT(took, 1500ms);
}

}  // namespace
}  // namespace redlock
