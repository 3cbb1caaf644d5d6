// Fencing tokens across the quorum: every fenced grant of a resource carries a number greater
// than every earlier one, as long as the nodes keep their data.
#include <gtest/gtest.h>

#include <thread>

#include "core/keys.hpp"
#include "redis_server.hpp"
#include "redlock/redlock.hpp"
#include "test_config.hpp"

namespace redlock {
namespace {

using namespace std::chrono_literals;
using test::eventually;
using test::RedisCluster;

AcquireRequest fenced(std::string resource, Milliseconds ttl = 5000ms, Milliseconds wait = 3000ms) {
  AcquireRequest r({std::move(resource)}, ttl, wait);
  r.fencing = true;
  return r;
}

std::uint64_t counter(const test::RedisServer& server, const std::string& key) {
  auto v = server.command({"GET", detail::aux_key(key, detail::kFence)});
  return v == "(nil)" ? 0 : std::stoull(v);
}

TEST(Fencing, TokensStrictlyIncreaseAcrossGrantsAndClients) {
  RedisCluster cluster(5);
  Client a(test::fast_config(cluster)), b(test::fast_config(cluster));
  std::uint64_t last = 0;
  for (int i = 0; i < 10; ++i) {
    Client& c = i % 2 ? a : b;
    auto r = c.acquire(fenced("stock"));
    ASSERT_TRUE(r) << r.message();
    EXPECT_GT(r.lock.fencing_token, last) << "grant " << i;
    last = r.lock.fencing_token;
    ASSERT_TRUE(c.release(r.lock));
  }
}

TEST(Fencing, TheTokenIsWrittenBackToAQuorumBeforeItIsHandedOut) {
  RedisCluster cluster(5);
  // Counters differ between nodes: the token must be the highest among the granting quorum.
  // Every quorum of five meets {0, 1, 2}, where the counters run ahead.
  for (std::size_t i : {0u, 1u, 2u}) cluster[i].command({"SET", "redlock:doc:fence", "41"});
  cluster[3].command({"SET", "redlock:doc:fence", "7"});
  Client a(test::fast_config(cluster));
  auto r = a.acquire(fenced("doc"));
  ASSERT_TRUE(r) << r.message();
  EXPECT_GE(r.lock.fencing_token, 42u);
  std::size_t raised = 0;
  for (std::size_t i = 0; i < cluster.size(); ++i)
    raised += counter(cluster[i], "redlock:doc") >= r.lock.fencing_token;
  EXPECT_GE(raised, 3u) << "a quorum holds the token as its counter";
}

TEST(Fencing, PlainLocksPayNothingAndCarryNoToken) {
  RedisCluster cluster(3);
  Client a(test::fast_config(cluster));
  auto r = a.try_acquire("plain", 5000ms);
  ASSERT_TRUE(r) << r.message();
  EXPECT_EQ(r.lock.fencing_token, 0u);
  EXPECT_EQ(cluster.count_existing(detail::aux_key("redlock:plain", detail::kFence)), 0u);
}

// Between two grants a minority restarts empty. The write-back raised every node's counter, so
// the majority that kept its data carries the last token into the next grant's quorum.
TEST(Fencing, MonotonicWhileAMinorityCrashesAndRestartsEmptyBetweenGrants) {
  RedisCluster cluster(5);
  Client a(test::fast_config(cluster));
  std::uint64_t last = 0;
  for (std::size_t round = 0; round < 5; ++round) {
    // The client is connected to every node again (restarted ones included).
    ASSERT_TRUE(eventually(
        [&] {
          auto w = a.try_acquire("warm-" + std::to_string(round), 1000ms);
          return w && w.votes.yes() + w.votes.count(Vote::pending) == 5u && a.release(w.lock);
        },
        5s));
    auto r = a.acquire(fenced("job"));
    ASSERT_TRUE(r) << r.message();
    EXPECT_GT(r.lock.fencing_token, last) << "round " << round;
    last = r.lock.fencing_token;
    ASSERT_TRUE(eventually([&] {
      for (std::size_t i = 0; i < cluster.size(); ++i)
        if (counter(cluster[i], "redlock:job") < last) return false;
      return true;
    })) << "the write-back reaches every node";
    ASSERT_TRUE(a.release(r.lock));
    cluster[round % 5].restart();  // two nodes lose everything, counters included
    cluster[(round + 2) % 5].restart();
  }
}

// The bare quorum of DESIGN.md. A's quorum is {0, 1, 2} (3 and 4 are held elsewhere), and node
// 0's counter runs far ahead, so A's token is high. B's quorum is {2, 3, 4}: it shares only node
// 2 with A's, and B's token can beat A's only because A's write-back raised node 2's counter.
TEST(Fencing, ALaterGrantOnAnotherQuorumGetsAHigherTokenThroughTheWriteBack) {
  RedisCluster cluster(5);
  auto config = test::fast_config(cluster);
  Client a(config), b(config);
  cluster[0].command({"SET", "redlock:res:fence", "1000"});
  for (std::size_t i : {3u, 4u}) cluster[i].command({"SET", "redlock:res", "other", "PX", "60000"});
  auto first = a.acquire(fenced("res", 2000ms, 0ms));
  ASSERT_TRUE(first) << first.message();
  EXPECT_EQ(first.lock.fencing_token, 1001u);
  ASSERT_TRUE(a.release(first.lock));
  for (std::size_t i : {3u, 4u}) cluster[i].command({"DEL", "redlock:res"});
  for (std::size_t i : {0u, 1u}) cluster[i].command({"SET", "redlock:res", "other", "PX", "60000"});
  auto second = b.acquire(fenced("res", 2000ms, 0ms));
  ASSERT_TRUE(second) << second.message();
  EXPECT_GT(second.lock.fencing_token, first.lock.fencing_token);
}

TEST(Fencing, HeldLocksAndMutexesCarryTheTokenAndExtendsKeepIt) {
  RedisCluster cluster(3);
  auto config = test::fast_config(cluster);
  config.watchdog_lease = 900ms;
  Client c(config);
  AcquireRequest req({"held"});
  req.fencing = true;
  auto h = c.hold(req);
  ASSERT_TRUE(h) << h.message();
  auto token = h.lock.fencing_token();
  EXPECT_GT(token, 0u);
  std::this_thread::sleep_for(700ms);  // renewed at least once
  EXPECT_TRUE(h.lock.valid());
  EXPECT_EQ(h.lock.fencing_token(), token);
  ASSERT_TRUE(h.lock.release());

  MutexOptions options;
  options.fencing = true;
  Mutex m(c, "held", options);
  {
    std::lock_guard<Mutex> guard(m);
    EXPECT_GT(m.fencing_token(), token);
  }
  EXPECT_EQ(m.fencing_token(), 0u);

  auto r = c.acquire(fenced("plain-extend"));
  ASSERT_TRUE(r);
  auto before = r.lock.fencing_token;
  ASSERT_TRUE(c.extend(r.lock, 10000ms));
  EXPECT_EQ(r.lock.fencing_token, before);
}

// A fence counter of another type is a typed error, never a grant, and leaves no lock behind.
TEST(Fencing, ACounterOfTheWrongTypeIsAnErrorNeverAGrant) {
  RedisCluster cluster(3);
  for (std::size_t i = 0; i < cluster.size(); ++i)
    cluster[i].command({"HSET", detail::aux_key("redlock:odd", detail::kFence), "f", "v"});
  Client a(test::fast_config(cluster));
  auto r = a.acquire(fenced("odd", 5000ms, 0ms));
  EXPECT_FALSE(r);
  EXPECT_EQ(r.error, Errc::no_quorum) << r.message();
  for (const auto& v : r.votes.nodes) {
    if (v.vote != Vote::failed) continue;
    EXPECT_EQ(v.error, Errc::redis_wrongtype) << r.message();
  }
  EXPECT_TRUE(eventually([&] { return cluster.count_existing("redlock:odd") == 0u; }));
}

}  // namespace
}  // namespace redlock
