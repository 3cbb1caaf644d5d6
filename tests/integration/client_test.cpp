// The lock operations against five real, independent Redis masters.
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <thread>

#include "redis_server.hpp"
#include "redlock/redlock.hpp"
#include "test_config.hpp"

namespace redlock {
namespace {

using namespace std::chrono_literals;
using test::RedisCluster;

Config config_for(const RedisCluster& cluster, Milliseconds request_timeout = 500ms) {
  Config c = test::fast_config(cluster);
  c.request_timeout = request_timeout;
  c.connect_timeout = 1000ms;
  return c;
}

class FiveNodes : public ::testing::Test {
 protected:
  RedisCluster cluster{5};
};

TEST_F(FiveNodes, AcquirePutsOurTokenOnAQuorumAndReleaseRemovesIt) {
  Client client(config_for(cluster));
  auto r = client.try_acquire("orders", 5000ms);
  ASSERT_TRUE(r) << r.message();
  EXPECT_EQ(r.lock.token.size(), 33u);
  EXPECT_GE(r.votes.yes(), 3u);
  EXPECT_EQ(r.votes.quorum, 3u);
  EXPECT_TRUE(r.lock.valid());
  EXPECT_GE(cluster.count_holding("redlock:orders", r.lock.token), 3u);
  // The validity window never exceeds ttl minus the drift allowance.
  EXPECT_LE(r.lock.validity_left(), 5000ms - 50ms);

  auto rel = client.release(r.lock);
  ASSERT_TRUE(rel) << rel.message();
  EXPECT_GE(rel.released, 3u);
  // Release goes to every node, also those not needed for the verdict.
  EXPECT_TRUE(test::eventually([&] { return cluster.count_existing("redlock:orders") == 0; }));
}

TEST_F(FiveNodes, SecondClientIsRefusedWhileTheFirstHolds) {
  Client a(config_for(cluster)), b(config_for(cluster));
  auto held = a.try_acquire("stock", 5000ms);
  ASSERT_TRUE(held) << held.message();
  // The grant needed three votes: let the other two land, or b could take a node first.
  ASSERT_TRUE(test::eventually(
      [&] { return cluster.count_holding("redlock:stock", held.lock.token) == 5u; }));
  auto refused = b.try_acquire("stock", 5000ms);
  EXPECT_FALSE(refused);
  EXPECT_EQ(refused.error, Errc::not_acquired) << refused.message();
  EXPECT_GE(refused.votes.no(), 3u);
  EXPECT_EQ(refused.attempts, 1);
  // The refused attempt did not disturb the holder.
  EXPECT_TRUE(test::eventually(
      [&] { return cluster.count_holding("redlock:stock", held.lock.token) == 5u; }));
  // With a wait, b gets it once a releases.
  auto waiter = std::async(std::launch::async, [&] { return b.acquire("stock", 5000ms, 3000ms); });
  std::this_thread::sleep_for(100ms);
  ASSERT_TRUE(a.release(held.lock));
  auto got = waiter.get();
  ASSERT_TRUE(got) << got.message();
  EXPECT_GT(got.attempts, 1);
  EXPECT_NE(got.lock.token, held.lock.token);
}

TEST_F(FiveNodes, ReleaseNeverRemovesAnotherHoldersToken) {
  Client a(config_for(cluster)), b(config_for(cluster));
  auto held = a.try_acquire("doc", 5000ms);
  ASSERT_TRUE(held);
  // A forged or stale token cannot release it.
  auto forged = b.release(Lock("doc", "00000000000000000000000000000000"));
  EXPECT_EQ(forged.error, Errc::not_held) << forged.message();
  EXPECT_EQ(forged.released, 0u);
  EXPECT_TRUE(test::eventually(
      [&] { return cluster.count_holding("redlock:doc", held.lock.token) == 5u; }));

  // The classic bug: a's lock expires, b takes it, then a releases late.
  auto short_lock = a.try_acquire("page", 300ms);
  ASSERT_TRUE(short_lock);
  std::this_thread::sleep_for(400ms);
  auto taken = b.try_acquire("page", 5000ms);
  ASSERT_TRUE(taken) << taken.message();
  auto late = a.release(short_lock.lock);
  EXPECT_EQ(late.error, Errc::not_held);
  EXPECT_TRUE(test::eventually(
      [&] { return cluster.count_holding("redlock:page", taken.lock.token) == 5u; }));
}

TEST_F(FiveNodes, GrantedWithTwoOfFiveNodesDown) {
  Client client(config_for(cluster));
  ASSERT_TRUE(client.try_acquire("warmup", 1000ms));
  cluster[1].kill9();
  cluster[3].kill9();
  auto r = client.try_acquire("orders", 5000ms);
  ASSERT_TRUE(r) << r.message();
  EXPECT_EQ(r.votes.yes(), 3u);
  // The verdict came at the quorum: the dead nodes are failed, or not heard from yet.
  for (std::size_t i : {1u, 3u}) {
    EXPECT_NE(r.votes.nodes[i].vote, Vote::yes);
    if (r.votes.nodes[i].vote == Vote::failed) {
      EXPECT_TRUE(r.votes.nodes[i].error) << "a failed vote carries its cause";
    }
  }
  EXPECT_TRUE(client.release(r.lock));
}

TEST_F(FiveNodes, ThreeOfFiveDownIsNoQuorumWithinTheDeadlineAndLeavesNoKey) {
  Client client(config_for(cluster));
  ASSERT_TRUE(client.try_acquire("warmup", 1000ms));
  cluster[0].kill9();
  cluster[2].kill9();
  cluster[4].kill9();
  auto start = Clock::now();
  auto r = client.acquire("orders", 5000ms, 800ms);
  auto took = Clock::now() - start;
  EXPECT_FALSE(r);
  EXPECT_EQ(r.error, Errc::no_quorum) << r.message();
  EXPECT_GE(r.votes.failed(), 3u);
  EXPECT_GE(r.attempts, 2) << "retried while the wait lasted";
  // Gives up at its wait deadline (plus one attempt that started before it).
  EXPECT_LT(took, 800ms + 600ms);
  EXPECT_TRUE(test::eventually([&] { return cluster.count_existing("redlock:orders") == 0u; }))
      << "failed attempts release everywhere";
}

TEST_F(FiveNodes, MinorityHeldByAForeignTokenStillGrants) {
  cluster[0].command({"SET", "redlock:res", "foreign", "PX", "10000"});
  cluster[4].command({"SET", "redlock:res", "foreign", "PX", "10000"});
  Client client(config_for(cluster));
  auto r = client.try_acquire("res", 5000ms);
  ASSERT_TRUE(r) << r.message();
  EXPECT_EQ(r.votes.yes(), 3u);
  EXPECT_NE(r.votes.nodes[0].vote, Vote::yes);
  EXPECT_NE(r.votes.nodes[4].vote, Vote::yes);
  EXPECT_EQ(cluster[0].command({"GET", "redlock:res"}), "foreign");
  ASSERT_TRUE(client.release(r.lock));
  EXPECT_EQ(cluster[4].command({"GET", "redlock:res"}), "foreign") << "never deletes others' keys";
}

TEST_F(FiveNodes, MajorityHeldByAForeignTokenRefusesAndCleansUp) {
  for (std::size_t i : {0u, 2u, 3u})
    cluster[i].command({"SET", "redlock:res", "foreign", "PX", "10000"});
  Client client(config_for(cluster));
  auto r = client.try_acquire("res", 5000ms);
  EXPECT_EQ(r.error, Errc::not_acquired) << r.message();
  std::this_thread::sleep_for(50ms);
  EXPECT_TRUE(test::eventually([&] { return cluster.count_existing("redlock:res") == 3u; }))
      << "our partial grants were released";
  EXPECT_EQ(cluster.count_holding("redlock:res", "foreign"), 3u);
}

TEST_F(FiveNodes, CleanUpOfAFailedAttemptSurvivesTheClientsDestruction) {
  for (std::size_t i : {0u, 1u, 2u})
    cluster[i].command({"SET", "redlock:res", "foreign", "PX", "60000"});
  {
    Client client(config_for(cluster));
    auto r = client.try_acquire("res", 60000ms);
    EXPECT_EQ(r.error, Errc::not_acquired);
  }  // destroyed at once: the releases queued by the failed attempt must still go out
  EXPECT_EQ(cluster.count_existing("redlock:res"), 3u) << "no partial grant left for 60 s";
}

TEST_F(FiveNodes, PausedMinorityDoesNotDelayTheGrant) {
  const auto request_timeout = 1500ms;
  Client client(config_for(cluster, request_timeout));
  ASSERT_TRUE(client.try_acquire("warmup", 1000ms));
  cluster[1].pause();
  cluster[2].pause();
  auto start = Clock::now();
  auto r = client.try_acquire("orders", 5000ms);
  auto took = Clock::now() - start;
  ASSERT_TRUE(r) << r.message();
  EXPECT_LT(took, request_timeout) << "the verdict came at the quorum, not at the timeout";
  EXPECT_EQ(r.votes.nodes[1].vote, Vote::pending);
  EXPECT_EQ(r.votes.nodes[2].vote, Vote::pending);
  // Release is queued behind the acquire on the paused nodes' connections: once they resume,
  // the acquire runs and then the release, so no ghost lock is left behind.
  ASSERT_TRUE(client.release(r.lock));
  cluster[1].resume();
  cluster[2].resume();
  EXPECT_TRUE(test::eventually([&] { return cluster.count_existing("redlock:orders") == 0; }));
}

TEST_F(FiveNodes, ExtendProlongsAHeldLockAndFailsOnAnExpiredOne) {
  Client client(config_for(cluster));
  auto r = client.try_acquire("job", 1000ms);
  ASSERT_TRUE(r);
  auto before = r.lock.valid_until;
  auto e = client.extend(r.lock, 10000ms);
  ASSERT_TRUE(e) << e.message();
  EXPECT_GT(r.lock.valid_until, before);
  EXPECT_EQ(r.lock.ttl, 10000ms);
  // Every node gets the new ttl (the verdict needed only three of them).
  EXPECT_TRUE(test::eventually([&] {
    for (std::size_t i = 0; i < cluster.size(); ++i)
      if (std::stoll(cluster[i].command({"PTTL", "redlock:job"})) <= 5000) return false;
    return true;
  }));

  auto short_lock = client.try_acquire("brief", 300ms);
  ASSERT_TRUE(short_lock);
  std::this_thread::sleep_for(450ms);
  auto deadline = short_lock.lock.valid_until;
  auto late = client.extend(short_lock.lock, 5000ms);
  EXPECT_EQ(late.error, Errc::not_held) << late.message();
  EXPECT_EQ(short_lock.lock.valid_until, deadline) << "a failed extend changes nothing";
  EXPECT_FALSE(short_lock.lock.valid());
  EXPECT_EQ(cluster.count_existing("redlock:brief"), 0u);
}

TEST_F(FiveNodes, ScriptCacheFlushIsRecovered) {
  Client client(config_for(cluster));
  auto first = client.try_acquire("a", 5000ms);
  ASSERT_TRUE(first) << first.message();
  for (std::size_t i = 0; i < cluster.size(); ++i)
    ASSERT_EQ(cluster[i].command({"SCRIPT", "FLUSH"}), "OK");
  auto second = client.try_acquire("b", 5000ms);
  ASSERT_TRUE(second) << second.message();
  EXPECT_GE(second.votes.yes(), 3u);
  EXPECT_EQ(second.votes.failed(), 0u) << second.message();
  ASSERT_TRUE(client.release(first.lock));
  ASSERT_TRUE(client.release(second.lock));
}

TEST_F(FiveNodes, MultiResourceLockIsAllOrNothingPerNode) {
  Client client(config_for(cluster));
  AcquireRequest both{{"left", "right"}, 5000ms, 0ms};
  auto r = client.acquire(both);
  ASSERT_TRUE(r) << r.message();
  EXPECT_TRUE(
      test::eventually([&] { return cluster.count_holding("redlock:left", r.lock.token) == 5u; }));
  EXPECT_TRUE(
      test::eventually([&] { return cluster.count_holding("redlock:right", r.lock.token) == 5u; }));
  ASSERT_TRUE(client.release(r.lock));
  ASSERT_TRUE(test::eventually([&] {
    return cluster.count_existing("redlock:left") + cluster.count_existing("redlock:right") == 0;
  }));

  // One of the two resources is taken everywhere: nothing is acquired, nothing is left.
  Client other(config_for(cluster));
  auto right = other.try_acquire("right", 5000ms);
  ASSERT_TRUE(right);
  ASSERT_TRUE(test::eventually(
      [&] { return cluster.count_holding("redlock:right", right.lock.token) == 5u; }));
  auto refused = client.acquire(both);
  EXPECT_EQ(refused.error, Errc::not_acquired);
  EXPECT_TRUE(test::eventually([&] { return cluster.count_existing("redlock:left") == 0u; }));
  EXPECT_TRUE(test::eventually(
      [&] { return cluster.count_holding("redlock:right", right.lock.token) == 5u; }));
}

TEST_F(FiveNodes, KeyPrefixIsConfigurable) {
  auto c = config_for(cluster);
  c.key_prefix = "app1:locks:";
  Client client(c);
  EXPECT_EQ(client.key_of("x"), "app1:locks:x");
  auto r = client.try_acquire("x", 5000ms);
  ASSERT_TRUE(r);
  EXPECT_TRUE(
      test::eventually([&] { return cluster.count_holding("app1:locks:x", r.lock.token) == 5u; }));
}

TEST_F(FiveNodes, AsyncCallbacksRunOnceOnTheLoopThreadAndBlockingCallsThereAreRefused) {
  Client client(config_for(cluster));
  std::promise<std::pair<AcquireResult, AcquireResult>> done;
  std::atomic<int> calls{0};
  auto caller = std::this_thread::get_id();
  client.acquire_async(AcquireRequest{{"async"}, 5000ms, 0ms}, [&](AcquireResult r) {
    ++calls;
    EXPECT_NE(std::this_thread::get_id(), caller);
    // A blocking call from the loop thread would deadlock: it is refused instead.
    auto nested = client.try_acquire("other", 1000ms);
    done.set_value({std::move(r), std::move(nested)});
  });
  auto [r, nested] = done.get_future().get();
  ASSERT_TRUE(r) << r.message();
  EXPECT_EQ(nested.error, Errc::would_deadlock);
  std::promise<ReleaseResult> released;
  client.release_async(r.lock, [&](ReleaseResult rr) { released.set_value(std::move(rr)); });
  EXPECT_TRUE(released.get_future().get());
  EXPECT_EQ(calls.load(), 1);
}

TEST_F(FiveNodes, ManyThreadsContendAndExactlyOneHoldsAtATime) {
  Client client(config_for(cluster));
  std::atomic<int> inside{0}, max_inside{0}, grants{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10; ++i) {
        auto r = client.acquire("counter", 2000ms, 3000ms);
        if (!r) continue;
        int now = ++inside;
        int prev = max_inside.load();
        while (now > prev && !max_inside.compare_exchange_weak(prev, now)) {
        }
        ++grants;
        --inside;
        (void)client.release(r.lock);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(max_inside.load(), 1);
  EXPECT_EQ(grants.load(), 40);
}

TEST_F(FiveNodes, DestroyingTheClientCompletesPendingOperations) {
  Client holder(config_for(cluster));
  auto held = holder.try_acquire("busy", 10000ms);
  ASSERT_TRUE(held);
  std::promise<AcquireResult> result;
  {
    Client waiter(config_for(cluster));
    waiter.acquire_async(AcquireRequest{{"busy"}, 1000ms, 60000ms},
                         [&](AcquireResult r) { result.set_value(std::move(r)); });
    std::this_thread::sleep_for(100ms);
  }  // destroyed while waiting
  auto future = result.get_future();
  ASSERT_EQ(future.wait_for(0s), std::future_status::ready) << "callback ran before ~Client ended";
  EXPECT_EQ(future.get().error, Errc::shutting_down);
}

TEST(SingleNode, QuorumOfOneWorks) {
  RedisCluster one(1);
  Client client(config_for(one));
  auto r = client.try_acquire("solo", 1000ms);
  ASSERT_TRUE(r) << r.message();
  EXPECT_EQ(r.votes.quorum, 1u);
  EXPECT_TRUE(client.release(r.lock));
}

}  // namespace
}  // namespace redlock
