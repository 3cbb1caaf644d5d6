// redlock::Mutex with the standard lock utilities.
#include <gtest/gtest.h>

#include <atomic>
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

Config mutex_config(const RedisCluster& cluster) {
  Config c = test::fast_config(cluster);
  c.watchdog_lease = 2000ms;
  c.retry_delay = 50ms;
  return c;
}

TEST(Mutex, ReentryCostsNoRoundTripAndOnlyTheLastUnlockReleases) {
  RedisCluster cluster(3);
  Client client(mutex_config(cluster));
  Mutex m(client, "account:7");
  m.lock();
  EXPECT_TRUE(m.owns());
  EXPECT_TRUE(m.valid());
  // The lock was granted by a quorum; the last node's key may still be on its way.
  ASSERT_TRUE(eventually([&] { return cluster.count_existing("redlock:account:7") == 3; }));
  // With every node frozen, only a lock that needs no round trip can succeed.
  for (std::size_t i = 0; i < cluster.size(); ++i) cluster[i].pause();
  auto start = Clock::now();
  m.lock();
  {
    std::lock_guard<Mutex> again(m);
    EXPECT_EQ(m.depth(), 3);
  }
  EXPECT_LT(Clock::now() - start, 100ms);
  for (std::size_t i = 0; i < cluster.size(); ++i) cluster[i].resume();
  EXPECT_EQ(m.depth(), 2);
  m.unlock();
  EXPECT_TRUE(m.owns());
  EXPECT_EQ(cluster.count_existing("redlock:account:7"), 3u) << "still held after an inner unlock";
  m.unlock();
  EXPECT_FALSE(m.owns());
  EXPECT_TRUE(eventually([&] { return cluster.count_existing("redlock:account:7") == 0; }));
}

TEST(Mutex, UnlockByAThreadThatDoesNotOwnItIsReportedNotObeyed) {
  RedisCluster cluster(3);
  Client client(mutex_config(cluster));
  std::atomic<int> reports{0};
  MutexOptions options;
  options.on_error = [&](std::error_code ec, const std::string&) {
    if (ec == Errc::not_owner) ++reports;
  };
  Mutex m(client, "owned", options);
  m.lock();
  std::thread other([&] {
    m.unlock();  // must not throw, must not release
    EXPECT_FALSE(m.owns());
    EXPECT_EQ(m.last_error(), Errc::not_owner);
  });
  other.join();
  EXPECT_EQ(reports.load(), 1);
  EXPECT_TRUE(m.owns());
  // Granted at the quorum: the last node's key may come a moment later.
  EXPECT_TRUE(test::eventually([&] { return cluster.count_existing("redlock:owned") == 3u; }));
  m.unlock();
  m.unlock();  // one too many: reported, harmless
  EXPECT_EQ(reports.load(), 2);
}

TEST(Mutex, UniqueLockAndTryLockForOverAContendedMutex) {
  RedisCluster cluster(3);
  Client a(mutex_config(cluster)), b(mutex_config(cluster));
  Mutex ma(a, "printer"), mb(b, "printer");
  std::unique_lock<Mutex> held(ma);
  EXPECT_FALSE(mb.try_lock());
  auto start = Clock::now();
  EXPECT_FALSE(mb.try_lock_for(300ms));
  EXPECT_GE(Clock::now() - start, 250ms);
  EXPECT_FALSE(mb.try_lock_until(std::chrono::steady_clock::now() + 100ms));

  auto waiter = std::async(std::launch::async, [&] {
    std::unique_lock<Mutex> lock(mb, std::defer_lock);
    bool got = lock.try_lock_for(5s);
    return got && mb.valid();
  });
  std::this_thread::sleep_for(200ms);
  held.unlock();  // the release notice wakes b's waiter
  EXPECT_TRUE(waiter.get());
}

TEST(Mutex, ScopedLockTakesTwoMutexes) {
  RedisCluster cluster(3);
  Client client(mutex_config(cluster));
  Mutex from(client, "acct:1"), to(client, "acct:2");
  {
    std::scoped_lock both(from, to);
    EXPECT_TRUE(from.owns());
    EXPECT_TRUE(to.owns());
  }
  EXPECT_FALSE(from.owns());
  EXPECT_FALSE(to.owns());
}

TEST(Mutex, ThreadsOfOneClientExcludeEachOther) {
  RedisCluster cluster(3);
  Client client(mutex_config(cluster));
  Mutex m(client, "shared");
  std::atomic<int> inside{0}, overlap{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 5; ++i) {
        std::lock_guard<Mutex> guard(m);
        if (++inside > 1) ++overlap;
        std::this_thread::sleep_for(5ms);
        --inside;
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(overlap.load(), 0);
}

TEST(Mutex, LockThrowsATypedErrorWhenNoQuorumIsReachable) {
  RedisCluster cluster(3);
  Client client(mutex_config(cluster));
  Mutex m(client, "down");
  for (std::size_t i = 0; i < cluster.size(); ++i) cluster[i].kill9();
  try {
    m.lock();
    FAIL() << "expected redlock::Error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::no_quorum);
  }
  EXPECT_FALSE(m.try_lock());
  EXPECT_EQ(m.last_error(), Errc::no_quorum);
}

}  // namespace
}  // namespace redlock
