// Waiting in line (docs/guide-waiting.md): waiters for one key stand in a queue on every node,
// in the order they began to wait, and a release names the one whose turn it is. Behaviour, not
// timing: the order of service, nobody jumping the line, a waiter gone without a word holding it
// up only for its turn, and nothing of the line left behind.
#include <gtest/gtest.h>
#include <hiredis/hiredis.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/keys.hpp"
#include "fault_proxy.hpp"
#include "redis_server.hpp"
#include "redlock/redlock.hpp"
#include "redlock_scripts.hpp"
#include "test_config.hpp"

namespace redlock {
namespace {

using namespace std::chrono_literals;
using test::RedisCluster;

// A waiter's config whose fallback never comes within a test: only notices wake it.
Config notices_only(const RedisCluster& cluster) {
  auto c = test::fast_config(cluster);
  c.retry_delay = 20000ms;
  c.retry_jitter = 0ms;
  return c;
}

// A lock's auxiliary key on the nodes (core/keys.hpp).
std::string aux(const std::string& resource, std::string_view kind) {
  return detail::aux_key("redlock:" + resource, kind);
}

std::string queue_length(RedisCluster& cluster, std::size_t node, const std::string& key) {
  return cluster[node].command({"ZCARD", aux(key, detail::kQueue)});
}

// Every node's line for `key`, for messages.
std::string lines(RedisCluster& cluster, std::size_t nodes, const std::string& key) {
  std::string text;
  for (std::size_t i = 0; i < nodes; ++i)
    text += "\nnode " + std::to_string(i) + ": " +
            cluster[i].command({"ZRANGE", aux(key, detail::kQueue), "0", "-1", "WITHSCORES"});
  return text;
}

bool line_is(RedisCluster& cluster, std::size_t nodes, const std::string& key,
             const std::string& length) {
  for (std::size_t i = 0; i < nodes; ++i)
    if (queue_length(cluster, i, key) != length) return false;
  return true;
}

// Every node has a client listening for turns (a waiter's client subscribes as it begins to
// wait; a turn published before its subscription is confirmed is heard by nobody, and passes).
bool turns_heard_everywhere(RedisCluster& cluster, std::size_t nodes) {
  for (std::size_t i = 0; i < nodes; ++i)
    if (cluster[i].command({"PUBSUB", "CHANNELS", "redlock:turn:*"}).empty()) return false;
  return true;
}

// Once every waiter is served, nothing of the line (nor any lock) is left on any node.
void expect_nothing_left(RedisCluster& cluster, std::size_t nodes) {
  for (std::size_t i = 0; i < nodes; ++i)
    EXPECT_TRUE(test::eventually([&] { return cluster[i].command({"DBSIZE"}) == "0"; }))
        << "node " << i << " keeps " << cluster[i].command({"KEYS", "*"}) << " turns "
        << cluster[i].command({"HGETALL", aux("k", detail::kTurns)}) << " pttl "
        << cluster[i].command({"PTTL", aux("k", detail::kTurns)});
}

// Five waiters, each a client of its own (like five processes), begin to wait one after the
// other while the key is held. Every release wakes only the first in line: they are served in
// the order they came, and when all are served nothing of the line is left on the nodes.
// Without the line, each release wakes one waiter of every client and the fastest wins.
TEST(Queue, WaitersOfDifferentClientsAreServedInTheOrderTheyCame) {
  constexpr std::size_t kNodes = 3;
  constexpr int kWaiters = 5;
  RedisCluster cluster(kNodes);
  Client holder(test::fast_config(cluster));
  auto held = holder.try_acquire("k", 30000ms);
  ASSERT_TRUE(held) << held.message();

  std::vector<std::unique_ptr<Client>> clients;
  for (int w = 0; w < kWaiters; ++w)
    clients.push_back(std::make_unique<Client>(notices_only(cluster)));
  std::mutex m;
  std::vector<int> order;
  std::vector<std::future<AcquireResult>> waits;
  for (int w = 0; w < kWaiters; ++w) {
    waits.push_back(std::async(std::launch::async, [&, w] {
      auto r = clients[w]->acquire("k", 30000ms, 20000ms);
      if (!r) return r;
      {
        std::lock_guard<std::mutex> lock(m);
        order.push_back(w);
      }
      std::this_thread::sleep_for(10ms);
      (void)clients[w]->release(r.lock);
      return r;
    }));
    // In line on every node before the next one comes.
    ASSERT_TRUE(
        test::eventually([&] { return line_is(cluster, kNodes, "k", std::to_string(w + 1)); }, 5s))
        << "waiter " << w << " is not in line";
  }
  ASSERT_TRUE(holder.release(held.lock));
  for (int w = 0; w < kWaiters; ++w) {
    auto r = waits[w].get();
    EXPECT_TRUE(r) << w << ": " << r.message();
  }
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4}));
  expect_nothing_left(cluster, kNodes);
}

// Each node gives the waiter its turn as the holder's release arrives there. Here the release
// reaches node 0 at once and nodes 1 and 2 some 300 ms later: the attempt that node 0's turn
// starts is refused by the other two, and so are the waiter's quick retries. When the release
// arrives there, their turns (the same words as node 0's) must bring the waiter back: its
// fallback timer would not, within its wait. (Found under load, where one node lagged behind the
// others: the copies were taken for repeats of node 0's turn, and the line stood still.)
TEST(Queue, ATurnFromANodeWhoseReleaseCameLateBringsTheWaiterBack) {
  RedisCluster cluster(3);
  chaos::FaultProxy late1(cluster[1].port()), late2(cluster[2].port());
  auto holder_config = test::fast_config("redis://127.0.0.1:" + std::to_string(cluster[0].port()) +
                                         ",redis://127.0.0.1:" + std::to_string(late1.port()) +
                                         ",redis://127.0.0.1:" + std::to_string(late2.port()));
  holder_config.request_timeout = 3000ms;  // late is not lost
  Client holder(holder_config);
  ASSERT_TRUE(test::eventually([&] { return test::connected_to_all(holder); }, 5s));
  auto held = holder.try_acquire("k", 30000ms);
  ASSERT_TRUE(held) << held.message();

  Client waiter(notices_only(cluster));
  auto waiting =
      std::async(std::launch::async, [&] { return waiter.acquire("k", 30000ms, 10000ms); });
  ASSERT_TRUE(test::eventually([&] { return line_is(cluster, 3, "k", "1"); }, 5s))
      << "the waiter is not in line";
  ASSERT_TRUE(test::eventually([&] { return turns_heard_everywhere(cluster, 3); }, 5s));

  late1.set_mode(chaos::ProxyMode::delay, 150ms);
  late2.set_mode(chaos::ProxyMode::delay, 150ms);
  ASSERT_TRUE(holder.release(held.lock));
  // Its wait ends with a last attempt at 10 s, which would take the key: the turns must bring it
  // back long before.
  ASSERT_EQ(waiting.wait_for(5s), std::future_status::ready)
      << "the late nodes' turns did not bring the waiter back";
  auto got = waiting.get();
  ASSERT_TRUE(got) << got.message();
  EXPECT_GE(got.attempts, 3) << "node 0's turn alone did not start a refused attempt: no test";
  EXPECT_TRUE(waiter.release(got.lock));
}

// A holder that releases and at once asks again, waiting, comes after the waiter that was
// already in line: its release gave the waiter the turn on every node before its own request
// arrived there (one connection per node keeps them in order). Without the line it wins every
// time: its request is on its way before the waiter has even heard of the release.
TEST(Queue, AReleaserThatAsksAgainAtOnceDoesNotJumpTheLine) {
  constexpr std::size_t kNodes = 5;
  RedisCluster cluster(kNodes);
  Client a(test::fast_config(cluster));
  Client b(notices_only(cluster));
  for (int round = 0; round < 5; ++round) {
    auto held = a.try_acquire("k", 30000ms);
    ASSERT_TRUE(held) << held.message();
    std::atomic<bool> b_served{false};
    auto wait = std::async(std::launch::async, [&] {
      auto r = b.acquire("k", 30000ms, 20000ms);
      if (r) {
        b_served = true;
        std::this_thread::sleep_for(50ms);
        (void)b.release(r.lock);
      }
      return r;
    });
    ASSERT_TRUE(test::eventually([&] { return line_is(cluster, kNodes, "k", "1"); }, 5s))
        << "round " << round << lines(cluster, kNodes, "k");
    ASSERT_TRUE(test::eventually([&] { return turns_heard_everywhere(cluster, kNodes); }, 5s));
    ASSERT_TRUE(a.release(held.lock));
    auto again = a.acquire("k", 30000ms, 20000ms);
    ASSERT_TRUE(again) << again.message();
    // B was served before A had the lock again.
    EXPECT_TRUE(b_served.load()) << "round " << round << ": the releaser jumped the line";
    EXPECT_TRUE(wait.get());
    ASSERT_TRUE(a.release(again.lock));
  }
}

// A waiter that stands in line marks the holder's token on every node: its last character, '.',
// becomes '!' (lib/core/token.hpp), and the key's ttl stays as it was. That mark is what tells the
// holder's release to announce itself, so the waiter, whose fallback never comes within the test,
// is woken by the release. The holder still extends the marked lock (an extend keeps the mark).
// Node 0's ACL denies SETRANGE (the ACL list of earlier versions did not have it): no matter.
TEST(Queue, AWaiterMarksTheHoldersTokenWhichTheHolderStillExtendsAndReleases) {
  constexpr std::size_t kNodes = 3;
  RedisCluster cluster(kNodes);
  ASSERT_EQ(cluster[0].command({"ACL", "SETUSER", "default", "-setrange"}), "OK");
  // Every node must take the grant and the waiter's first attempt: a request that times out on
  // a loaded machine is a node left out (the lock stands on its quorum, and the waiter asks that
  // node again only at its fallback), which this test is not about.
  auto patient = [](Config c) {
    c.request_timeout = 3000ms;
    return c;
  };
  Client a(patient(test::fast_config(cluster))), b(patient(notices_only(cluster)));
  ASSERT_TRUE(test::eventually([&] { return test::connected_to_all(a); }));
  ASSERT_TRUE(test::eventually([&] { return test::connected_to_all(b); }));
  auto held = a.try_acquire("k", 10000ms);
  ASSERT_TRUE(held) << held.message();
  ASSERT_TRUE(test::eventually([&] {
    return cluster.count_holding("redlock:k", held.lock.token) == kNodes;
  })) << held.message();
  ASSERT_EQ(held.lock.token.back(), '.');
  std::string marked = held.lock.token;
  marked.back() = '!';
  auto waiting = std::async(std::launch::async, [&] { return b.acquire("k", 10000ms, 5000ms); });
  for (std::size_t i = 0; i < kNodes; ++i) {
    EXPECT_TRUE(test::eventually([&] {
      return cluster[i].command({"GET", "redlock:k"}) == marked;
    })) << "node "
        << i << ": " << cluster[i].command({"GET", "redlock:k"});
    auto left = std::stoll(cluster[i].command({"PTTL", "redlock:k"}));
    EXPECT_GT(left, 0) << "node " << i << ": the mark took the key's ttl";
    EXPECT_LE(left, 10000) << "node " << i;
  }
  auto extended = a.extend(held.lock, 20000ms);
  ASSERT_TRUE(extended) << extended.message();
  for (std::size_t i = 0; i < kNodes; ++i) {
    EXPECT_GT(std::stoll(cluster[i].command({"PTTL", "redlock:k"})), 10000) << "node " << i;
    EXPECT_EQ(cluster[i].command({"GET", "redlock:k"}), marked) << "node " << i;
  }
  ASSERT_TRUE(a.release(held.lock));
  auto got = waiting.get();
  ASSERT_TRUE(got) << got.message();
  EXPECT_TRUE(b.release(got.lock));
  expect_nothing_left(cluster, kNodes);
}

// A holder that nobody in line was refused by (here, a quick acquire that took the key while the
// first in line, a client gone without a word, had its turn) is marked when that waiter leaves
// the line: its release then starts the next one's turn, whose fallback never comes here.
TEST(Queue, AWaiterThatLeavesTheLineMarksAHolderNobodyInItHadMet) {
  RedisCluster cluster(1);
  Client b(notices_only(cluster)), c(test::fast_config(cluster));
  // The quick acquire's grant is written by hand, over the old holder's key in one command: a key
  // left free for a moment would go to b if its look after subscribing came late.
  const Lock taken("k", "fedcba9876543210fedcba9876543210.");
  ASSERT_EQ(
      cluster[0].command({"SET", "redlock:k", "0123456789abcdef0123456789abcdef.", "PX", "10000"}),
      "OK");
  auto waiting = std::async(std::launch::async, [&] { return b.acquire("k", 10000ms, 5000ms); });
  ASSERT_TRUE(test::eventually([&] { return line_is(cluster, 1, "k", "1"); }));
  ASSERT_TRUE(test::eventually([&] { return turns_heard_everywhere(cluster, 1); }));
  ASSERT_EQ(cluster[0].command({"ZADD", aux("k", detail::kQueue), "1", "redlock:turn:gone#1"}),
            "1");
  // The key is freed without a word and taken by a quick acquire (a SET NX), which reads no line.
  ASSERT_EQ(cluster[0].command({"SET", "redlock:k", taken.token, "PX", "10000"}), "OK");
  // The gone waiter leaves the line, as its client would (Coordinator::leave_line).
  cluster[0].command({"EVAL", detail::lua::release_body, "1", "redlock:k", "-", "0",
                      "redlock:turn:gone#1", "", "0"});
  std::string marked = taken.token;
  marked.back() = '!';
  EXPECT_EQ(cluster[0].command({"GET", "redlock:k"}), marked);
  ASSERT_TRUE(c.release(taken));
  auto got = waiting.get();
  ASSERT_TRUE(got) << got.message();
  EXPECT_TRUE(b.release(got.lock));
  expect_nothing_left(cluster, 1);
}

// A waiter whose client went away without a word (a crashed process) is first in line on every
// node. Its turn is heard by nobody (no client listens on its channel): it loses its place at
// once and the key goes to the next, here a new waiter (at its first attempt).
TEST(Queue, AWaiterWhoseClientIsGoneIsPassedOverAtOnce) {
  constexpr std::size_t kNodes = 3;
  const std::string kGhost = "redlock:turn:0123456789abcdef#1";
  RedisCluster cluster(kNodes);
  for (std::size_t i = 0; i < kNodes; ++i)
    cluster[i].command({"ZADD", aux("k", detail::kQueue), "1", kGhost});
  auto config = test::fast_config(cluster);
  config.retry_count = 0;
  Client client(config);
  // Fenced: the script from the first attempt (a waiter's quick first attempt reads no line, and
  // takes a free key that no turn holds).
  AcquireRequest request({"k"}, 30000ms, 20ms);
  request.fencing = true;
  auto next = client.acquire(request);
  ASSERT_TRUE(next) << "a gone waiter kept the line: " << next.message();
  EXPECT_EQ(next.attempts, 1) << next.message();
  // Granted at the quorum: the last node's script may still be on its way.
  for (std::size_t i = 0; i < kNodes; ++i)
    EXPECT_TRUE(test::eventually([&] {
      return cluster[i].command({"ZSCORE", aux("k", detail::kQueue), kGhost}) == "(nil)";
    })) << "node "
        << i;
  EXPECT_TRUE(client.release(next.lock));
}

// A waiter whose client listens but does not come (stuck) is first in line on every node. When
// the key is free it is its turn, and nobody else's, for the turn's length: an acquire through
// the script that does not wait (here one with fencing) keeps to the line too. Then it loses its
// place, and the next one takes the key. (A try_acquire's quick SET does not look at the line:
// docs/guide-waiting.md.)
TEST(Queue, AWaiterThatDoesNotComeHoldsTheLineOnlyForItsTurn) {
  constexpr std::size_t kNodes = 3;
  const std::string kChannel = "redlock:turn:0123456789abcdef";
  const std::string kStuck = kChannel + "#1";
  RedisCluster cluster(kNodes);
  std::vector<redisContext*> listeners;  // the stuck client's subscriber connections
  for (std::size_t i = 0; i < kNodes; ++i) {
    cluster[i].command({"ZADD", aux("k", detail::kQueue), "1", kStuck});
    auto* c = redisConnect("127.0.0.1", cluster[i].port());
    ASSERT_TRUE(c != nullptr && c->err == 0);
    listeners.push_back(c);
    auto* reply = static_cast<redisReply*>(redisCommand(c, "SUBSCRIBE %s", kChannel.c_str()));
    ASSERT_NE(reply, nullptr);
    freeReplyObject(reply);
  }
  auto config = test::fast_config(cluster);
  config.retry_count = 0;
  Client client(config);
  AcquireRequest fenced{{"k"}, 30000ms, 0ms};
  fenced.fencing = true;
  auto tried = client.acquire(fenced);
  EXPECT_FALSE(tried) << "the stuck waiter's turn was not kept";
  EXPECT_EQ(tried.error, Errc::not_acquired) << tried.message();
  auto waited = client.acquire("k", 30000ms, 5000ms);
  ASSERT_TRUE(waited) << "the stuck waiter kept the line: " << waited.message();
  EXPECT_TRUE(client.release(waited.lock));
  // Gone from the line on every node that granted: their scripts passed it over. (A node whose
  // turn began a little later may have refused, its turn not yet over there, and keep it.)
  EXPECT_TRUE(test::eventually([&] {
    std::size_t gone = 0;
    for (std::size_t i = 0; i < kNodes; ++i)
      gone += cluster[i].command({"ZSCORE", aux("k", detail::kQueue), kStuck}) == "(nil)" ? 1 : 0;
    return gone >= 2;
  })) << lines(cluster, kNodes, "k");
  for (auto* c : listeners) redisFree(c);
}

// A turn lasts as long as its waiter's ticket says (its own client's max(100 ms,
// request_timeout), "@<ms>"), whoever released the key; 100 ms for a ticket that does not say.
// The release carries no turn's length of its own (scripts/release.lua).
TEST(Queue, ATurnLastsAsLongAsItsWaitersTicketSays) {
  RedisCluster cluster(1);
  const std::string kChannel = "redlock:turn:0123456789abcdef";
  auto* listener = redisConnect("127.0.0.1", cluster[0].port());  // the waiter's client
  ASSERT_TRUE(listener != nullptr && listener->err == 0);
  auto* reply = static_cast<redisReply*>(redisCommand(listener, "SUBSCRIBE %s", kChannel.c_str()));
  ASSERT_NE(reply, nullptr);
  freeReplyObject(reply);
  Client holder(test::fast_config(cluster));  // its own turns would last 200 ms
  // How long the turn of `ticket` has left once a marked holder released the key.
  auto turn_left_ms = [&](const std::string& ticket) -> long long {
    // The line, its turns and the last turn's hold on the key (acquire.lua, TURN) cleared.
    cluster[0].command({"DEL", "redlock:k", aux("k", detail::kQueue), aux("k", detail::kTurns)});
    cluster[0].command({"ZADD", aux("k", detail::kQueue), "1", ticket});
    auto held = holder.try_acquire("k", 30000ms);
    if (!held) return -1;
    std::string marked = held.lock.token;
    marked.back() = '!';  // somebody waits: the release tells the line
    cluster[0].command({"SET", "redlock:k", marked, "XX", "KEEPTTL"});
    if (!holder.release(held.lock)) return -1;
    auto due = cluster[0].command({"HGET", aux("k", detail::kTurns), ticket});
    auto now = cluster[0].command({"EVAL",
                                   "local t = redis.call('TIME') "
                                   "return t[1] * 1000 + math.floor(t[2] / 1000)",
                                   "0"});
    if (due == "(nil)" || due.empty()) return -1;
    return std::stoll(due) - std::stoll(now);
  };
  auto given = turn_left_ms(kChannel + "#1@1500");
  EXPECT_GT(given, 1000) << "the turn did not last as long as the ticket says";
  EXPECT_LE(given, 1500);
  auto unsaid = turn_left_ms(kChannel + "#2");
  EXPECT_GE(unsaid, 0) << "no turn was given";
  EXPECT_LE(unsaid, 100) << "a ticket that does not say gets 100 ms";
  // A waiter's own ticket says how long its client takes to come.
  auto config = notices_only(cluster);
  config.request_timeout = 700ms;
  Client waiter(config);
  cluster[0].command({"DEL", "redlock:k"});  // the last turn's hold on the key
  auto held = holder.try_acquire("k", 30000ms);
  ASSERT_TRUE(held) << held.message();
  cluster[0].command({"DEL", aux("k", detail::kQueue), aux("k", detail::kTurns)});
  auto wait = std::async(std::launch::async, [&] { return waiter.acquire("k", 30000ms, 5000ms); });
  ASSERT_TRUE(test::eventually([&] { return queue_length(cluster, 0, "k") == "1"; }));
  auto line = cluster[0].command({"ZRANGE", aux("k", detail::kQueue), "0", "-1"});
  EXPECT_NE(line.find("@700"), std::string::npos) << line;
  ASSERT_TRUE(holder.release(held.lock));
  auto r = wait.get();
  ASSERT_TRUE(r) << r.message();
  EXPECT_TRUE(waiter.release(r.lock));
  redisFree(listener);
}

// A turn given to a waiter of a live client that has since ended (a node still had it in line)
// is handed on by that client at once: here the next in line is a waiter of the same client
// that only a turn wakes (its fallback is beyond the test). Without the hand-on it would sleep
// through the lapsed turn to its fallback.
TEST(Queue, ATurnOfAWaiterThatEndedIsHandedOnByItsClient) {
  constexpr std::size_t kNodes = 3;
  RedisCluster cluster(kNodes);
  Client holder(test::fast_config(cluster));
  auto held = holder.try_acquire("k", 30000ms);
  ASSERT_TRUE(held) << held.message();
  Client waiter(notices_only(cluster));
  auto wait = std::async(std::launch::async, [&] { return waiter.acquire("k", 30000ms, 5000ms); });
  ASSERT_TRUE(test::eventually([&] { return line_is(cluster, kNodes, "k", "1"); }, 5s));
  // The waiter's client listens on its turn channel on every node; put a waiter of that client
  // that no longer exists first in line.
  std::string channel;
  for (std::size_t i = 0; i < kNodes; ++i) {
    ASSERT_TRUE(test::eventually([&] {
      channel = cluster[i].command({"PUBSUB", "CHANNELS", "redlock:turn:*"});
      return !channel.empty();
    }));
    cluster[i].command({"ZADD", aux("k", detail::kQueue), "0", channel + "#999999"});
  }
  ASSERT_TRUE(holder.release(held.lock));
  auto r = wait.get();
  EXPECT_TRUE(r) << "the turn of a waiter that ended was not handed on: " << r.message();
  if (r) {
    EXPECT_TRUE(waiter.release(r.lock));
  }
  expect_nothing_left(cluster, kNodes);
}

// The line's keys are the lock's key, a NUL byte and a kind (core/keys.hpp): no resource name
// reaches them, so a resource named `foo:queue` is a lock like any other. A key of another type
// where foo's line is (put there by something else) makes the line give way; the locks work: a
// lock of several resources is released in full, and foo can be acquired by a waiter.
TEST(Queue, ALockKeyWhereALineWouldBeStopsNoReleaseAndNoAcquire) {
  constexpr std::size_t kNodes = 3;
  RedisCluster cluster(kNodes);
  Client client(test::fast_config(cluster));
  auto both = client.acquire(AcquireRequest({"foo", "bar"}, 30000ms));
  ASSERT_TRUE(both) << both.message();
  auto named = client.try_acquire("foo:queue", 30000ms);  // once where foo's line was
  ASSERT_TRUE(named) << named.message();
  for (std::size_t i = 0; i < kNodes; ++i)
    cluster[i].command({"SET", aux("foo", detail::kQueue), "not a line"});
  auto released = client.release(both.lock);
  EXPECT_TRUE(released) << released.message();
  EXPECT_EQ(cluster.count_existing("redlock:foo"), 0u);
  EXPECT_EQ(cluster.count_existing("redlock:bar"), 0u) << "the release stopped at foo's line";
  auto foo = client.acquire("foo", 30000ms, 2000ms);
  EXPECT_TRUE(foo) << foo.message();
  if (foo) {
    EXPECT_TRUE(client.release(foo.lock));
  }
  EXPECT_TRUE(client.release(named.lock));
  for (std::size_t i = 0; i < kNodes; ++i)
    EXPECT_EQ(cluster[i].command({"GET", aux("foo", detail::kQueue)}), "not a line");
}

// A waiter that stops waiting (cancelled here) takes itself out of the line on every node.
TEST(Queue, AWaiterThatStopsWaitingLeavesTheLine) {
  constexpr std::size_t kNodes = 3;
  RedisCluster cluster(kNodes);
  Client holder(test::fast_config(cluster));
  auto held = holder.try_acquire("k", 30000ms);
  ASSERT_TRUE(held) << held.message();
  Client waiter(notices_only(cluster));
  CancelToken cancel;
  AcquireRequest request({"k"}, 30000ms, 20000ms);
  request.cancel = cancel;
  auto wait = std::async(std::launch::async, [&] { return waiter.acquire(request); });
  ASSERT_TRUE(test::eventually([&] { return line_is(cluster, kNodes, "k", "1"); }, 5s));
  cancel.cancel();
  EXPECT_EQ(wait.get().error, Errc::cancelled);
  EXPECT_TRUE(test::eventually([&] { return line_is(cluster, kNodes, "k", "0"); }))
      << "the cancelled waiter is still in line";
  ASSERT_TRUE(holder.release(held.lock));
}

// On a one-node cluster: a raw client listens on `ticket`'s channel (a waiter's client that
// never comes), the ticket stands first in k's line, and `holder` takes k and releases it marked,
// which begins that waiter's turn: the turn then holds the key (acquire.lua, TURN).
void begin_turn(RedisCluster& cluster, Client& holder, const std::string& ticket,
                redisContext*& listener) {
  const std::string channel = ticket.substr(0, ticket.find('#'));
  listener = redisConnect("127.0.0.1", cluster[0].port());
  ASSERT_TRUE(listener != nullptr && listener->err == 0);
  auto* reply = static_cast<redisReply*>(redisCommand(listener, "SUBSCRIBE %s", channel.c_str()));
  ASSERT_NE(reply, nullptr);
  freeReplyObject(reply);
  ASSERT_EQ(cluster[0].command({"ZADD", aux("k", detail::kQueue), "1", ticket}), "1");
  auto held = holder.try_acquire("k", 30000ms);
  ASSERT_TRUE(held) << held.message();
  std::string marked = held.lock.token;
  marked.back() = '!';  // somebody waits: the release gives the line its turn
  cluster[0].command({"SET", "redlock:k", marked, "XX", "KEEPTTL"});
  ASSERT_TRUE(holder.release(held.lock));
  ASSERT_EQ(cluster[0].command({"GET", "redlock:k"}), std::string("turn\0", 5) + ticket);
}

// A turn holds the key (acquire.lua, TURN): between a release and its waiter's grant, nobody
// outside the line takes the key, neither try_acquire (the quick command) nor a new waiter's
// quick first attempt; the new waiter stands in line and is served once the turn has passed.
TEST(Queue, ATurnHoldsTheKeySoThatNobodyOutsideTheLineTakesIt) {
  RedisCluster cluster(1);
  const std::string kChannel = "redlock:turn:0123456789abcdef";
  const std::string kTicket = kChannel + "#1@400";
  redisContext* listener = nullptr;
  Client holder(test::fast_config(cluster));
  begin_turn(cluster, holder, kTicket, listener);
  if (HasFatalFailure()) return;
  auto left = std::stoll(cluster[0].command({"PTTL", "redlock:k"}));
  EXPECT_GT(left, 0);
  EXPECT_LE(left, 400) << "the turn holds the key for the turn's length, no longer";
  // Its fallback, not a notice, brings it back when the turn nobody took has passed.
  Client other(test::fast_config(cluster));
  auto tried = other.try_acquire("k", 30000ms);
  EXPECT_EQ(tried.error, Errc::not_acquired) << "the quick command took a waiter's turn";
  auto waited = other.acquire("k", 30000ms, 5000ms);
  ASSERT_TRUE(waited) << waited.message();
  EXPECT_GE(waited.attempts, 2) << "granted during the turn";
  EXPECT_TRUE(other.release(waited.lock));
  redisFree(listener);
}

// The README's call on a free key that nobody waits for is the quick command: no script runs on
// any node for the acquire (the release is the one EVALSHA).
TEST(Queue, AWaitingAcquireOfAFreeKeyRunsNoScript) {
  constexpr std::size_t kNodes = 3;
  RedisCluster cluster(kNodes);
  Client client(test::fast_config(cluster));
  ASSERT_TRUE(client.status().size() == kNodes);  // connected, scripts loaded
  for (std::size_t i = 0; i < kNodes; ++i) cluster[i].command({"CONFIG", "RESETSTAT"});
  auto got = client.acquire("k", 10000ms, 2000ms);
  ASSERT_TRUE(got) << got.message();
  EXPECT_EQ(got.attempts, 1);
  for (std::size_t i = 0; i < kNodes; ++i)
    EXPECT_TRUE(test::eventually([&] {
      auto stats = cluster[i].command({"INFO", "commandstats"});
      return stats.find("cmdstat_set:calls=1,") != std::string::npos;
    })) << "node "
        << i << ": " << cluster[i].command({"INFO", "commandstats"});
  for (std::size_t i = 0; i < kNodes; ++i)
    EXPECT_EQ(cluster[i].command({"INFO", "commandstats"}).find("cmdstat_evalsha"),
              std::string::npos)
        << "node " << i;
  EXPECT_TRUE(client.release(got.lock));
}

// Another program's value that looks like a turn but that the line does not name is a holder like
// any other: no acquire takes its key.
TEST(Queue, AValueThatLooksLikeATurnButIsNoneIsAHolder) {
  RedisCluster cluster(1);
  const std::string kForeign = std::string("turn\0", 5) + "redlock:turn:0123456789abcdef#1@100";
  ASSERT_EQ(cluster[0].command({"SET", "redlock:k", kForeign, "PX", "10000"}), "OK");
  Client client(test::fast_config(cluster));
  auto got = client.acquire("k", 10000ms, 300ms);
  EXPECT_EQ(got.error, Errc::not_acquired) << got.message();
  EXPECT_EQ(cluster[0].command({"GET", "redlock:k"}), kForeign);
}

// A waiter that leaves the line (cancelled, out of time) while its turn holds the key frees the
// key at once: a free lock is never kept for a waiter that has gone.
TEST(Queue, AWaiterThatLeavesFreesTheKeyItsTurnHolds) {
  RedisCluster cluster(1);
  const std::string kChannel = "redlock:turn:0123456789abcdef";
  const std::string kTicket = kChannel + "#1@2000";
  redisContext* listener = nullptr;
  Client holder(test::fast_config(cluster));
  begin_turn(cluster, holder, kTicket, listener);
  if (HasFatalFailure()) return;
  // The waiter leaves, as its client does (Coordinator::leave_line).
  cluster[0].command(
      {"EVAL", detail::lua::release_body, "1", "redlock:k", "-", "0", kTicket, "", "0"});
  EXPECT_EQ(cluster[0].command({"EXISTS", "redlock:k"}), "0") << "the turn outlived its waiter";
  auto next = holder.try_acquire("k", 30000ms);
  EXPECT_TRUE(next) << next.message();
  if (next) {
    EXPECT_TRUE(holder.release(next.lock));
  }
  redisFree(listener);
}

}  // namespace
}  // namespace redlock
