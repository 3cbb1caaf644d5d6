// Held locks: renewal by the watchdog, batching, the lost-lock signal, and waits.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <future>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "proto/watchdog.hpp"
#include "redis_server.hpp"
#include "redlock/redlock.hpp"
#include "redlock_scripts.hpp"
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

// `count` held locks "<prefix><i>" (each on `resources` resources "<prefix><i>/<j>" when above 1),
// taken by 8 threads at once; an empty handle where hold() failed (the caller checks).
std::vector<HeldLock> hold_many(Client& client, const std::string& prefix, int count,
                                int resources = 1) {
  std::vector<HeldLock> locks(static_cast<std::size_t>(count));
  std::vector<std::thread> threads;
  const int workers = 8;
  for (int w = 0; w < workers; ++w)
    threads.emplace_back([&, w] {
      for (int i = w; i < count; i += workers) {
        std::vector<std::string> names;
        if (resources == 1) names.push_back(prefix + std::to_string(i));
        for (int j = 0; resources > 1 && j < resources; ++j)
          names.push_back(prefix + std::to_string(i) + "/" + std::to_string(j));
        auto r = client.hold(AcquireRequest(std::move(names)));
        if (r) locks[static_cast<std::size_t>(i)] = std::move(r.lock);
      }
    });
  for (auto& t : threads) t.join();
  return locks;
}

std::size_t count_valid(const std::vector<HeldLock>& locks) {
  std::size_t n = 0;
  for (const auto& l : locks) n += l.valid() ? 1 : 0;
  return n;
}

// Runs `script` on the server with `keys` and `args`; its reply as text.
std::string eval(const test::RedisServer& server, const std::string& script,
                 const std::vector<std::string>& keys, const std::vector<std::string>& args) {
  std::vector<std::string> argv{"EVAL", script, std::to_string(keys.size())};
  argv.insert(argv.end(), keys.begin(), keys.end());
  argv.insert(argv.end(), args.begin(), args.end());
  return server.command(argv);
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

// The watchdog at scale: thousands of held locks cost a few script calls per node per renewal round
// (renewals falling due within lease/12 share a call, at most max_batch_keys keys each), never one
// per lock, and none is lost.
TEST(HeldLock, TwoThousandLocksStayHeldWithRenewalsBatchedPerNode) {
  RedisCluster cluster(3);
  const auto lease = 2400ms;  // renewed every 800 ms; due within 200 ms of each other: one batch
  Config c = test::fast_config(cluster);
  c.watchdog_lease = lease;
  c.request_timeout = 400ms;
  Client client(c);
  const int count = 2000;
  auto locks = hold_many(client, "many-", count);
  ASSERT_EQ(count_valid(locks), static_cast<std::size_t>(count)) << "all taken, none lost yet";

  std::vector<long long> before;
  for (std::size_t n = 0; n < cluster.size(); ++n) before.push_back(script_calls(cluster[n]));
  auto start = Clock::now();
  std::this_thread::sleep_for(2 * lease);  // six renewal rounds; an unrenewed lock expires twice
  auto elapsed = Clock::now() - start;
  EXPECT_EQ(count_valid(locks), static_cast<std::size_t>(count)) << "locks lost while held";
  for (const auto& l : locks) {
    if (!l.valid()) {
      ADD_FAILURE() << "first lost: " << l.resources()[0] << ": "
                    << l.lost_flag().reason().message();
      break;
    }
  }

  // Consecutive renewal ticks are more than lease/12 apart, and a tick sends its locks in
  // ceil(k / max_batch_keys) calls: over `elapsed`, at most elapsed / (lease/12) + 1 ticks, plus
  // one call per max_batch_keys renewals. Twice that, for renewals retried after a timeout on a
  // loaded machine; one call per lock and round would be ~12,000.
  const auto rounds = elapsed / (lease / 3) + 1;
  const auto ticks = elapsed / (lease / 12) + 1;
  const long long cap = detail::proto::WatchdogMachine::max_batch_keys;
  const long long chunks = (count + cap - 1) / cap;
  const long long bound = 2 * (ticks + rounds * chunks);
  for (std::size_t n = 0; n < cluster.size(); ++n) {
    auto calls = script_calls(cluster[n]) - before[n];
    EXPECT_LE(calls, bound) << "node " << n << ": " << calls << " script calls";
    // Every lock was renewed in every full round, at most max_batch_keys keys per call.
    EXPECT_GE(calls, (rounds - 2) * chunks) << "node " << n;
  }
}

// Releasing half of many held locks: their leases leave the watchdog and are never renewed again,
// while the other half go on being renewed.
TEST(HeldLock, ReleasedLocksAreNeverRenewedAgain) {
  RedisCluster cluster(3);
  const auto lease = 2400ms;
  Config c = test::fast_config(cluster);
  c.watchdog_lease = lease;
  c.request_timeout = 400ms;
  Client client(c);
  const int count = 2000;
  auto locks = hold_many(client, "half-", count);
  ASSERT_EQ(count_valid(locks), static_cast<std::size_t>(count));

  std::vector<std::string> released_keys, released_tokens;
  for (int i = 0; i < count; i += 2) {
    auto& l = locks[static_cast<std::size_t>(i)];
    released_keys.push_back("redlock:" + l.resources()[0]);
    released_tokens.push_back(l.token());
    l = HeldLock();  // dropped: released without blocking
  }
  const std::string count_keys =
      "local n = 0 for _, k in ipairs(KEYS) do n = "
      "n + redis.call('EXISTS', k) end return n";
  for (std::size_t n = 0; n < cluster.size(); ++n)
    EXPECT_TRUE(
        eventually([&] { return eval(cluster[n], count_keys, released_keys, {}) == "0"; }, 3s))
        << "node " << n << " still has released keys";

  // Put each released lock's token back under its key, with 5/6 of a lease to live. A watchdog
  // still renewing a released lease would find its token and raise the ttl to a full lease.
  const std::string plant =
      "for i, k in ipairs(KEYS) do redis.call('SET', k, ARGV[i], 'PX', ARGV[#ARGV]) end "
      "return #KEYS";
  auto planted_ttl = lease * 5 / 6;
  auto args = released_tokens;
  args.push_back(std::to_string(planted_ttl.count()));
  for (std::size_t n = 0; n < cluster.size(); ++n)
    ASSERT_EQ(eval(cluster[n], plant, released_keys, args), std::to_string(count / 2));
  auto planted = Clock::now();
  // More than a renewal period (lease/3, plus the lease/12 a batch may run early).
  std::this_thread::sleep_for(lease / 3 + lease / 12 + 300ms);
  auto waited = std::chrono::duration_cast<Milliseconds>(Clock::now() - planted);
  const std::string max_pttl =
      "local m = -3 for _, k in ipairs(KEYS) do local "
      "t = redis.call('PTTL', k) "
      "if t > m then m = t end end return m";
  for (std::size_t n = 0; n < cluster.size(); ++n) {
    auto ttl = std::stoll(eval(cluster[n], max_pttl, released_keys, {}));
    EXPECT_GT(ttl, 0) << "node " << n << ": the planted keys are still there";
    EXPECT_LE(ttl, (planted_ttl - waited).count() + 50)
        << "node " << n << ": a released lock's key had its ttl raised again";
  }

  // The other half is still renewed.
  std::this_thread::sleep_for(lease);
  std::size_t kept = 0;
  for (int i = 1; i < count; i += 2) {
    const auto& l = locks[static_cast<std::size_t>(i)];
    if (l.valid() && cluster.count_holding("redlock:" + l.resources()[0], l.token()) == 3) ++kept;
  }
  EXPECT_EQ(kept, static_cast<std::size_t>(count / 2));
}

// Renewals falling due together are cut into calls of at most max_batch_keys keys, each one call
// per node, so that one script never blocks a server for long. Read from the server's slow log.
TEST(HeldLock, NoRenewalCallCarriesMoreThanTheBatchCap) {
  RedisCluster cluster(3);
  const auto lease = 1500ms;  // renewed every 500 ms
  Config c = test::fast_config(cluster);
  c.watchdog_lease = lease;
  c.request_timeout = 400ms;
  Client client(c);
  const int count = 400, resources = 5;  // 2,000 keys
  auto locks = hold_many(client, "wide-", count, resources);
  ASSERT_EQ(count_valid(locks), static_cast<std::size_t>(count));
  auto& node = cluster[1];
  ASSERT_EQ(node.command({"CONFIG", "SET", "slowlog-max-len", "100000"}), "OK");
  ASSERT_EQ(node.command({"SLOWLOG", "RESET"}), "OK");
  ASSERT_EQ(node.command({"CONFIG", "SET", "slowlog-log-slower-than", "0"}), "OK");
  std::this_thread::sleep_for(2 * lease);  // six rounds
  ASSERT_EQ(node.command({"CONFIG", "SET", "slowlog-log-slower-than", "-1"}), "OK");
  // Each entry: id, time, duration, then its arguments (EVALSHA, sha, numkeys, keys...).
  auto log = node.command({"SLOWLOG", "GET", "100000"});
  const std::string sha = std::string("\n") + detail::lua::renew_sha + "\n";
  long long calls = 0, keys = 0, widest = 0;
  for (auto pos = log.find(sha); pos != std::string::npos; pos = log.find(sha, pos + 1)) {
    auto numkeys = std::stoll(log.substr(pos + sha.size()));
    ++calls;
    keys += numkeys;
    widest = std::max(widest, numkeys);
  }
  EXPECT_EQ(count_valid(locks), static_cast<std::size_t>(count));
  EXPECT_GE(calls, 2 * 5) << "2,000 keys need two calls per round";
  EXPECT_LE(widest, static_cast<long long>(detail::proto::WatchdogMachine::max_batch_keys));
  EXPECT_GE(keys, 5 * count * resources) << "every lock renewed in every full round";
  EXPECT_GT(widest, 10LL * resources) << "renewals of many locks share a call";
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
  // The grant needed two votes; the third acquire must land before the tampering, or it would
  // set our key again on the node just cleared.
  ASSERT_TRUE(
      eventually([&] { return cluster.count_holding("redlock:stolen", r.lock.token()) == 3; }));
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
    // holder: 1, and 1 for its blocking calls' lane; waiter: 1 for commands + 1 subscriber
    // (its waits are asynchronous: no lane); this INFO connection: 1.
    EXPECT_LE(n, 5) << info;
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
