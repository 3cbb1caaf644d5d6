// Liveness (docs/guide-waiting.md, docs/safety.md): a free lock is never kept from a live waiter
// longer than a bound the nodes enforce, a waiter's traces leave with it, one resource's line
// never touches another resource's lock, and a grant too late to be of use is no grant. Each
// test sets up, on real servers, the state a reviewer found a hole with.
#include <gtest/gtest.h>
#include <hiredis/hiredis.h>

#include <algorithm>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <string_view>
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
using test::RedisServer;

// The longest turn the nodes give (lib/scripts/acquire.lua, release.lua: kMaxTurn).
constexpr long long kMaxTurnMs = 2000;
// How long the nodes keep a sign-up of a waiter for several keys past its last attempt.
constexpr long long kSignUpMs = 10000;

std::string aux(const std::string& resource, std::string_view kind) {
  return detail::aux_key("redlock:" + resource, kind);
}

long long node_now_ms(RedisServer& server) {
  return std::stoll(server.command(
      {"EVAL", "local t = redis.call('TIME') return t[1] * 1000 + math.floor(t[2] / 1000)", "0"}));
}

// A client's subscriber connection to one node: listens on `channel` until closed.
struct Listener {
  redisContext* c = nullptr;
  Listener(RedisServer& server, const std::string& channel) {
    c = redisConnect("127.0.0.1", server.port());
    if (c == nullptr || c->err) return;
    auto* reply = static_cast<redisReply*>(redisCommand(c, "SUBSCRIBE %s", channel.c_str()));
    if (reply != nullptr) freeReplyObject(reply);
  }
  ~Listener() { close(); }
  void close() {
    if (c != nullptr) redisFree(c);
    c = nullptr;
  }
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;
};

bool nobody_listens(RedisCluster& cluster, std::size_t nodes, const std::string& channel) {
  for (std::size_t i = 0; i < nodes; ++i)
    if (cluster[i].command({"PUBSUB", "NUMSUB", channel}) != channel + "\n0") return false;
  return true;
}

// Puts `ticket` (its client's channel, "#", its job, "@", its turn length) in resource k's line on
// each of the first `nodes` nodes at `place`, with its client listening there.
std::vector<std::unique_ptr<Listener>> line_up(RedisCluster& cluster, std::size_t nodes,
                                               const std::string& place,
                                               const std::string& ticket) {
  std::vector<std::unique_ptr<Listener>> listeners;
  for (std::size_t i = 0; i < nodes; ++i) {
    cluster[i].command({"ZADD", aux("k", detail::kQueue), place, ticket});
    listeners.push_back(std::make_unique<Listener>(cluster[i], ticket.substr(0, ticket.find('#'))));
  }
  return listeners;
}

// 1a. A turn that began while its waiter's client listened, whose client then left (it asked
// for a day), passes as soon as an acquire finds nobody listening: the free key is not kept.
TEST(Liveness, ATurnWhoseListenerLeftPassesAtOnce) {
  constexpr std::size_t kNodes = 3;
  const std::string kChannel = "redlock:turn:00000000000000aa";
  const std::string kTicket = kChannel + "#1@86400000";
  RedisCluster cluster(kNodes);
  auto listeners = line_up(cluster, kNodes, "1", kTicket);
  auto config = test::fast_config(cluster);
  config.retry_count = 0;
  Client client(config);
  AcquireRequest fenced{{"k"}, 30000ms, 0ms};  // the script: it keeps to the line
  fenced.fencing = true;
  auto first = client.acquire(fenced);
  ASSERT_FALSE(first) << "the turn did not begin: no test";
  EXPECT_NE(first.message().find("another waiter's turn"), std::string::npos)
      << "a turn is named as a held lock: " << first.message();
  for (auto& l : listeners) l->close();
  ASSERT_TRUE(test::eventually([&] { return nobody_listens(cluster, kNodes, kChannel); }));
  auto second = client.acquire(fenced);
  ASSERT_TRUE(second) << "a turn nobody listens for kept the free key: " << second.message();
  EXPECT_TRUE(client.release(second.lock));
}

// 1a'. A waiter placed ahead of a turn that runs (its place is earlier: places are its own
// wall clock) begins its own turn, which the key then holds; when that waiter's client leaves,
// its turn passes, and the key holds the turn that runs again. Left holding the turn of a waiter
// who is gone from the turns, the key was no turn but a holder's (acquire.lua, turn_of): it kept
// out even the waiter whose turn it was, for the rest of the gone turn's length (found by the
// simulator's checker 10: seeds 9964 and 22565 on the commit that added this test).
TEST(Liveness, AWaiterWhoseTurnPassesLeavesTheKeyToTheTurnThatRuns) {
  constexpr std::size_t kNodes = 3;
  const std::string kRunning = "redlock:turn:00000000000000a1";
  const std::string kAhead = "redlock:turn:00000000000000a2";
  const std::string kRunningTicket = kRunning + "#1@86400000";
  const std::string kAheadTicket = kAhead + "#1@86400000";
  RedisCluster cluster(kNodes);
  auto running = line_up(cluster, kNodes, "2", kRunningTicket);
  auto config = test::fast_config(cluster);
  config.retry_count = 0;
  Client client(config);
  AcquireRequest fenced{{"k"}, 30000ms, 0ms};  // the script: it keeps to the line
  fenced.fencing = true;
  ASSERT_FALSE(client.acquire(fenced)) << "the first turn did not begin: no test";
  auto ahead = line_up(cluster, kNodes, "1", kAheadTicket);
  ASSERT_FALSE(client.acquire(fenced)) << "the turn ahead did not begin: no test";
  for (auto& l : ahead) l->close();
  ASSERT_TRUE(test::eventually([&] { return nobody_listens(cluster, kNodes, kAhead); }));
  EXPECT_FALSE(client.acquire(fenced)) << "the running turn was passed over";
  const std::string held_turn =
      "local v = redis.call('GET', KEYS[1]) return v and string.sub(v, 6) or ''";
  for (std::size_t i = 0; i < kNodes; ++i)
    // The verdict came at the quorum: the last node's script may still be on its way.
    EXPECT_TRUE(test::eventually([&] {
      return cluster[i].command({"EVAL", held_turn, "1", "redlock:k"}) == kRunningTicket;
    })) << "node "
        << i << ": the key holds " << cluster[i].command({"EVAL", held_turn, "1", "redlock:k"});
}

// 1b. A waiter whose client listens but never comes (stopped) asked for a turn of a day: the
// nodes give it at most kMaxTurnMs, and the next waiter takes the free key after it.
TEST(Liveness, TheNodesCapATurnWhateverItsTicketAsks) {
  constexpr std::size_t kNodes = 3;
  const std::string kChannel = "redlock:turn:00000000000000bb";
  const std::string kTicket = kChannel + "#1@86400000";
  RedisCluster cluster(kNodes);
  std::vector<std::unique_ptr<Listener>> listeners;
  for (std::size_t i = 0; i < kNodes; ++i) {
    cluster[i].command({"ZADD", aux("k", detail::kQueue), "1", kTicket});
    cluster[i].command({"PEXPIRE", aux("k", detail::kQueue), "3600000"});
    listeners.push_back(std::make_unique<Listener>(cluster[i], kChannel));
  }
  auto config = test::fast_config(cluster);
  config.retry_count = 0;
  Client client(config);
  AcquireRequest fenced{{"k"}, 30000ms, 0ms};
  fenced.fencing = true;
  ASSERT_FALSE(client.acquire(fenced)) << "the turn did not begin: no test";
  for (std::size_t i = 0; i < kNodes; ++i) {
    // The verdict came at the quorum: the last node's script may still be on its way.
    std::string due;
    ASSERT_TRUE(test::eventually([&] {
      due = cluster[i].command({"HGET", aux("k", detail::kTurns), kTicket});
      return due != "(nil)";
    })) << "node "
        << i << ": no turn began";
    EXPECT_LE(std::stoll(due) - node_now_ms(cluster[i]), kMaxTurnMs) << "node " << i;
    auto pttl = std::stoll(cluster[i].command({"PTTL", aux("k", detail::kTurns)}));
    EXPECT_LE(pttl, 3600000) << "node " << i << ": the turns outlive the line";
  }
  auto waited = client.acquire("k", 30000ms, 5000ms);
  ASSERT_TRUE(waited) << "a stopped waiter kept the free key: " << waited.message();
  EXPECT_TRUE(client.release(waited.lock));
}

// 2. A resource whose name is where another resource's turns used to live (`coll:turns`) is a
// lock like any other: a release of `coll` that hands a turn to a waiter leaves its ttl alone.
// So is a key of another type where coll's turns live now (something else wrote it): the turn
// cannot be written there, and the release leaves its ttl alone too.
TEST(Liveness, ReleasingOneResourceLeavesAnothersLockAlone) {
  constexpr std::size_t kNodes = 3;
  RedisCluster cluster(kNodes);
  Client other(test::fast_config(cluster));
  ASSERT_TRUE(test::eventually([&] { return test::connected_to_all(other); }, 5s));
  auto a = other.try_acquire("coll:turns", 3000ms);
  ASSERT_TRUE(a) << a.message();
  for (std::size_t i = 0; i < kNodes; ++i)
    cluster[i].command({"SET", aux("coll", detail::kTurns), "not a hash", "PX", "3000"});
  Client holder(test::fast_config(cluster));
  ASSERT_TRUE(test::eventually([&] { return test::connected_to_all(holder); }, 5s));
  auto b = holder.try_acquire("coll", 30000ms);
  ASSERT_TRUE(b) << b.message();
  auto config = test::fast_config(cluster);
  config.retry_delay = 20000ms;  // only notices wake it
  Client waiter(config);
  auto wait = std::async(std::launch::async, [&] { return waiter.acquire("coll", 30000ms, 10s); });
  ASSERT_TRUE(test::eventually(
      [&] {
        for (std::size_t i = 0; i < kNodes; ++i)
          if (cluster[i].command({"ZCARD", aux("coll", detail::kQueue)}) != "1") return false;
        for (std::size_t i = 0; i < kNodes; ++i)
          if (cluster[i].command({"PUBSUB", "CHANNELS", "redlock:turn:*"}).empty()) return false;
        return true;
      },
      5s))
      << "the waiter is not in line";
  ASSERT_TRUE(holder.release(b.lock));
  auto got = wait.get();
  ASSERT_TRUE(got) << got.message();
  for (std::size_t i = 0; i < kNodes; ++i)
    EXPECT_LE(std::stoll(cluster[i].command({"PTTL", "redlock:coll:turns"})), 3000)
        << "node " << i << ": releasing coll prolonged the lock of coll:turns";
  for (std::size_t i = 0; i < kNodes; ++i)
    EXPECT_LE(std::stoll(cluster[i].command({"PTTL", aux("coll", detail::kTurns)})), 3000)
        << "node " << i << ": releasing coll prolonged a key of another type at its turns";
  EXPECT_TRUE(waiter.release(got.lock));
  EXPECT_TRUE(other.release(a.lock));
}

// 2'. The reserved byte cannot enter: a resource name or a key prefix with it is refused.
TEST(Liveness, ANameWithTheReservedByteIsRefused) {
  RedisCluster cluster(1);
  Client client(test::fast_config(cluster));
  const std::string bad = std::string("x") + detail::kReservedByte + "queue";
  auto r = client.try_acquire(bad, 1000ms);
  EXPECT_EQ(r.error, Errc::invalid_argument) << r.message();
  auto held = client.acquire(AcquireRequest({"ok", bad}, 1000ms));
  EXPECT_EQ(held.error, Errc::invalid_argument) << held.message();
  EXPECT_EQ(cluster[0].command({"DBSIZE"}), "0");
  auto config = test::fast_config(cluster);
  config.key_prefix = std::string("p") + detail::kReservedByte;
  std::string message;
  EXPECT_EQ(validate(config, message), Errc::invalid_config);
}

// 2''. The fence counter moved: a legacy counter `<key>:fence` is carried over, so fencing tokens
// never go backwards across the upgrade; a legacy key that is no counter is left alone.
TEST(Liveness, TheLegacyFenceCounterIsCarriedOver) {
  constexpr std::size_t kNodes = 3;
  RedisCluster cluster(kNodes);
  for (std::size_t i = 0; i < kNodes; ++i) {
    cluster[i].command({"SET", "redlock:f:fence", "41"});
    cluster[i].command({"SET", "redlock:g:fence", "a-token."});  // a lock of `g:fence`
  }
  Client client(test::fast_config(cluster));
  AcquireRequest f{{"f"}, 30000ms};
  f.fencing = true;
  auto r = client.acquire(f);
  ASSERT_TRUE(r) << r.message();
  EXPECT_EQ(r.lock.fencing_token, 42u);
  EXPECT_TRUE(client.release(r.lock));
  AcquireRequest g{{"g"}, 30000ms};
  g.fencing = true;
  auto s = client.acquire(g);
  ASSERT_TRUE(s) << s.message();
  EXPECT_EQ(s.lock.fencing_token, 1u);
  EXPECT_TRUE(client.release(s.lock));
  for (std::size_t i = 0; i < kNodes; ++i)
    EXPECT_EQ(cluster[i].command({"GET", "redlock:g:fence"}), "a-token.");
}

// The fence counter of the layout before the Cluster one (the lock key, NUL, "fence") is carried
// over by the first fenced grant, and by a write-back that finds no counter of the current layout
// (fence.lua): a token is never handed out twice across the upgrade.
TEST(Liveness, TheFenceCounterOfTheLayoutBeforeIsCarriedOver) {
  constexpr std::size_t kNodes = 3;
  RedisCluster cluster(kNodes);
  for (std::size_t i = 0; i < kNodes; ++i) {
    cluster[i].command({"SET", detail::nul_aux_key("redlock:f", detail::kFence), "41"});
    cluster[i].command({"SET", "redlock:f:fence", "17"});  // the one before that: lower
  }
  Client client(test::fast_config(cluster));
  AcquireRequest f{{"f"}, 30000ms};
  f.fencing = true;
  auto r = client.acquire(f);
  ASSERT_TRUE(r) << r.message();
  EXPECT_EQ(r.lock.fencing_token, 42u);
  EXPECT_TRUE(client.release(r.lock));
  // The write-back alone, on a node that holds the token and only a legacy counter above it.
  RedisServer& node = cluster[0];
  node.command({"DEL", aux("g", detail::kFence)});
  node.command({"SET", detail::nul_aux_key("redlock:g", detail::kFence), "500"});
  node.command({"SET", "redlock:g", "tok."});
  EXPECT_EQ(node.command({"EVAL", detail::lua::fence_body, "1", "redlock:g", "tok.", "7"}), "1");
  EXPECT_EQ(node.command({"GET", aux("g", detail::kFence)}), "500");
}

// Every key of one resource lies in its lock key's Redis Cluster hash slot (lib/core/keys.hpp,
// docs/architecture.md "Keys"), as a real cluster-enabled server computes it: the keys the
// scripts create for a fenced holder, a waiter in line and a waiter for several keys, and every
// kind's name. The lock key is never renamed, and no two resources share an auxiliary key.
TEST(Liveness, EveryKeyOfAResourceLiesInItsLockKeysHashSlot) {
  RedisServer slots({"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"});
  auto slot = [&](const std::string& key) { return slots.command({"CLUSTER", "KEYSLOT", key}); };
  for (const std::string resource : {"orders:42", "{user:7}:lock"}) {
    SCOPED_TRACE(resource);
    const std::string lock = "redlock:" + resource;
    for (auto kind : {detail::kQueue, detail::kTurns, detail::kOthers, detail::kFence})
      EXPECT_EQ(slot(detail::aux_key(lock, kind)), slot(lock)) << kind;
    RedisCluster cluster(1);
    Client holder(test::fast_config(cluster));
    AcquireRequest fenced{{resource}, 30000ms};
    fenced.fencing = true;
    auto held = holder.acquire(fenced);
    ASSERT_TRUE(held) << held.message();
    Client waiters(test::fast_config(cluster));
    auto one =
        std::async(std::launch::async, [&] { return waiters.acquire(resource, 30000ms, 5000ms); });
    auto two = std::async(std::launch::async, [&] {
      return waiters.acquire(AcquireRequest({resource, "elsewhere"}, 30000ms, 5000ms));
    });
    ASSERT_TRUE(test::eventually(
        [&] {
          return cluster[0].command({"EXISTS", detail::aux_key(lock, detail::kQueue),
                                     detail::aux_key(lock, detail::kOthers)}) == "2";
        },
        5s));
    auto keys = cluster[0].keys_of_lock(lock);
    for (const auto& key : keys) {
      std::string shown = key;
      std::replace(shown.begin(), shown.end(), '\0', '|');
      EXPECT_EQ(slot(key), slot(lock)) << shown;
    }
    EXPECT_EQ(keys.size(), 4u) << "the lock, its fence counter, its line, its sign-ups";
    EXPECT_TRUE(holder.release(held.lock));
    for (auto* wait : {&one, &two}) {
      auto got = wait->get();
      ASSERT_TRUE(got) << got.message();
      EXPECT_TRUE(waiters.release(got.lock));
    }
  }
  // A resource named as another's lock key in braces shares none of its auxiliary keys.
  EXPECT_NE(detail::aux_key("x", detail::kQueue), detail::aux_key("{x}", detail::kQueue));
  EXPECT_NE(detail::aux_key("x", detail::kQueue), detail::aux_key("x{x}", detail::kQueue));
  EXPECT_TRUE(detail::cluster_ready("orders:42"));
  EXPECT_TRUE(detail::cluster_ready("{user:7}:lock"));
  EXPECT_FALSE(detail::cluster_ready("a}b"));
  EXPECT_FALSE(detail::cluster_ready("a{b"));
  EXPECT_FALSE(detail::cluster_ready("{}b"));
}

// 3. A waiter for several keys signs up for their releases; when it stops waiting (its deadline
// passed) its sign-ups leave with it: nothing is left, and the next holder is not marked.
TEST(Liveness, ASignUpLeavesWithItsWaiter) {
  constexpr std::size_t kNodes = 3;
  RedisCluster cluster(kNodes);
  Client holder(test::fast_config(cluster));
  ASSERT_TRUE(test::eventually([&] { return test::connected_to_all(holder); }, 5s));
  auto held = holder.try_acquire("a", 30000ms);
  ASSERT_TRUE(held) << held.message();
  auto config = test::fast_config(cluster);
  Client waiter(config);
  auto wait = std::async(std::launch::async, [&] {
    return waiter.acquire(AcquireRequest({"a", "b"}, 30000ms, 1500ms));
  });
  ASSERT_TRUE(test::eventually([&] {
    for (std::size_t i = 0; i < kNodes; ++i)
      if (cluster[i].command({"EXISTS", aux("a", detail::kOthers)}) != "1") return false;
    return true;
  })) << "the waiter did not sign up: no test";
  // A crashed waiter's sign-up is bounded: it lasts kSignUpMs past its last attempt.
  for (std::size_t i = 0; i < kNodes; ++i) {
    auto pttl = std::stoll(cluster[i].command({"PTTL", aux("a", detail::kOthers)}));
    EXPECT_GT(pttl, 0) << "node " << i;
    EXPECT_LE(pttl, kSignUpMs) << "node " << i;
  }
  auto r = wait.get();
  ASSERT_EQ(r.error, Errc::not_acquired) << r.message();
  for (std::size_t i = 0; i < kNodes; ++i)
    EXPECT_TRUE(test::eventually([&] {
      return cluster[i].command({"EXISTS", aux("a", detail::kOthers)}) == "0" &&
             cluster[i].command({"EXISTS", aux("b", detail::kOthers)}) == "0";
    })) << "node "
        << i << ": the sign-up outlived its waiter";
  ASSERT_TRUE(holder.release(held.lock));
  AcquireRequest next{{"a"}, 30000ms};
  next.fencing = true;  // the script, which marks a grant where somebody waits
  auto again = holder.acquire(next);
  ASSERT_TRUE(again) << again.message();
  for (std::size_t i = 0; i < kNodes; ++i)
    EXPECT_TRUE(test::eventually([&] {
      return cluster[i].command({"GET", "redlock:a"}) == again.lock.token;
    })) << "node "
        << i << ": the grant was marked for a waiter that is gone";
  EXPECT_TRUE(holder.release(again.lock));
}

// 3'. A waiter for several keys that is granted takes its sign-ups with it on every node.
TEST(Liveness, AGrantedWaiterLeavesNoSignUp) {
  constexpr std::size_t kNodes = 3;
  RedisCluster cluster(kNodes);
  Client holder(test::fast_config(cluster));
  ASSERT_TRUE(test::eventually([&] { return test::connected_to_all(holder); }, 5s));
  auto held = holder.try_acquire("a", 30000ms);
  ASSERT_TRUE(held) << held.message();
  Client waiter(test::fast_config(cluster));
  auto wait = std::async(std::launch::async, [&] {
    return waiter.acquire(AcquireRequest({"a", "b"}, 30000ms, 10s));
  });
  ASSERT_TRUE(test::eventually([&] {
    for (std::size_t i = 0; i < kNodes; ++i)
      if (cluster[i].command({"EXISTS", aux("a", detail::kOthers)}) != "1") return false;
    return true;
  })) << "the waiter did not sign up: no test";
  ASSERT_TRUE(holder.release(held.lock));
  auto r = wait.get();
  ASSERT_TRUE(r) << r.message();
  for (std::size_t i = 0; i < kNodes; ++i)
    EXPECT_TRUE(test::eventually([&] {
      return cluster[i].command({"EXISTS", aux("a", detail::kOthers)}) == "0" &&
             cluster[i].command({"EXISTS", aux("b", detail::kOthers)}) == "0";
    })) << "node "
        << i << ": the sign-up outlived its grant";
  EXPECT_TRUE(waiter.release(r.lock));
}

// 3''. A sign-up key lasts as long as the latest sign-up left in it, not as long as the latest
// ever made (simulator seed 602919): an earlier waiter's sign-up whose release was lost (its
// node was cut off) ends on its own; a later waiter that signs up, then is granted or gives up,
// must not keep the key, with only that stale sign-up in it, for another kSignUpMs.
TEST(Liveness, ASignUpKeyLastsNoLongerThanTheSignUpsLeftInIt) {
  constexpr long long kStaleLeftMs = 1500;  // what is left of the lost waiter's sign-up
  const std::string kStale = "redlock:turn:00000000000000dd#1@200";
  const std::string kTicket = "redlock:turn:00000000000000ee#1@200";
  const std::string kToken = "0123456789abcdef0123456789abcdef.";
  RedisServer server;
  const std::string others = aux("a", detail::kOthers);

  // Signs the waiter up behind the lost one's sign-up, which ends kStaleLeftMs from now.
  auto sign_up_behind_stale = [&] {
    server.command({"DEL", "redlock:a", "redlock:b", others, aux("b", detail::kOthers)});
    server.command({"ZADD", others, std::to_string(node_now_ms(server) + kStaleLeftMs), kStale});
    server.command({"PEXPIRE", others, std::to_string(kStaleLeftMs)});
    server.command({"SET", "redlock:a", "fedcba9876543210fedcba9876543210.", "PX", "30000"});
    server.command({"EVAL", detail::lua::acquire_body, "2", "redlock:a", "redlock:b", kToken,
                    "30000", "0", kTicket, "1", "600000", "200"});
    return std::stoll(server.command({"ZCARD", others})) == 2 &&
           std::stoll(server.command({"PTTL", others})) > kStaleLeftMs;
  };

  // The waiter gives up (release.lua, its sign-ups taken out).
  ASSERT_TRUE(sign_up_behind_stale()) << "give-up: the waiter did not sign up: no test";
  server.command({"EVAL", detail::lua::release_body, "2", "redlock:a", "redlock:b", "-", "0",
                  kTicket, "", "0"});
  EXPECT_EQ(server.command({"ZSCORE", others, kTicket}), "(nil)") << "give-up: still signed up";
  auto pttl = std::stoll(server.command({"PTTL", others}));
  EXPECT_GT(pttl, 0) << "give-up: the lost waiter's sign-up went before its end";
  EXPECT_LE(pttl, kStaleLeftMs) << "give-up: the sign-ups outlive the ones left in them";

  // The waiter is granted (acquire.lua, its sign-ups taken out with the grant).
  ASSERT_TRUE(sign_up_behind_stale()) << "grant: the waiter did not sign up: no test";
  server.command({"DEL", "redlock:a"});
  auto granted = server.command({"EVAL", detail::lua::acquire_body, "2", "redlock:a", "redlock:b",
                                 kToken, "30000", "0", kTicket, "1", "600000", "200"});
  ASSERT_EQ(server.command({"GET", "redlock:a"}).substr(0, 32), kToken.substr(0, 32))
      << "grant: not granted (" << granted << "): no test";
  EXPECT_EQ(server.command({"ZSCORE", others, kTicket}), "(nil)") << "grant: still signed up";
  pttl = std::stoll(server.command({"PTTL", others}));
  EXPECT_GT(pttl, 0) << "grant: the lost waiter's sign-up went before its end";
  EXPECT_LE(pttl, kStaleLeftMs) << "grant: the sign-ups outlive the ones left in them";
}

// 5. A majority of nodes answers slowly (300 ms each way): the grant arrives with less validity
// left than the client asks for (min_validity_ratio), and counts as a failed attempt, cleaned up
// on every node. The same client is granted at once when nothing is slow, and a fenced grant
// whose write-back takes the validity below the minimum is refused too.
struct SlowMajority {
  static constexpr std::size_t kNodes = 3;
  RedisCluster cluster{kNodes};
  std::vector<std::unique_ptr<chaos::FaultProxy>> proxies;
  std::string node_list() {
    std::string list;
    for (std::size_t i = 0; i < kNodes; ++i) {
      proxies.push_back(std::make_unique<chaos::FaultProxy>(cluster[i].port()));
      list += (i ? ",redis://127.0.0.1:" : "redis://127.0.0.1:") +
              std::to_string(proxies.back()->port());
    }
    return list;
  }
  void slow(bool on) {
    for (std::size_t i = 1; i < kNodes; ++i)
      proxies[i]->set_mode(on ? chaos::ProxyMode::delay : chaos::ProxyMode::pass, 300ms);
  }
};

TEST(Liveness, AGrantWithTooLittleValidityLeftIsRefused) {
  SlowMajority s;
  auto config = test::fast_config(s.node_list());
  config.request_timeout = 1500ms;
  config.retry_count = 0;
  config.min_validity_ratio = 0.75;  // of a 2 s ttl: 1.5 s; a slow grant has about 1.37 s
  Client client(config);
  ASSERT_TRUE(test::eventually([&] { return test::connected_to_all(client); }, 5s));
  auto fast = client.try_acquire("k", 2000ms);
  ASSERT_TRUE(fast) << "a prompt grant was refused: " << fast.message();
  ASSERT_TRUE(client.release(fast.lock));
  s.slow(true);
  auto late = client.try_acquire("k", 2000ms);
  EXPECT_FALSE(late) << "a grant with " << late.lock.validity_left().count() << " ms left was kept";
  EXPECT_EQ(late.error, Errc::validity_expired) << late.message();
  s.slow(false);
  for (std::size_t i = 0; i < SlowMajority::kNodes; ++i)
    EXPECT_TRUE(test::eventually(
        [&] {
          return s.cluster[i].command({"EXISTS", "redlock:k"}) == "0";
        },
        5s))
        << "node " << i << ": the refused grant was not cleaned up";
}

TEST(Liveness, AFencedGrantWhoseWriteBackLeavesTooLittleIsRefused) {
  SlowMajority s;
  auto config = test::fast_config(s.node_list());
  config.request_timeout = 1500ms;
  config.retry_count = 0;
  config.min_validity_ratio =
      0.5;  // 1 s of 2 s: the acquire round leaves ~1.37 s, the write-back ~0.77 s
  Client client(config);
  ASSERT_TRUE(test::eventually([&] { return test::connected_to_all(client); }, 5s));
  s.slow(true);
  auto plain = client.try_acquire("k", 2000ms);
  ASSERT_TRUE(plain) << "the acquire round alone leaves enough: " << plain.message();
  ASSERT_TRUE(client.release(plain.lock));
  AcquireRequest fenced{{"k"}, 2000ms};
  fenced.fencing = true;
  auto late = client.acquire(fenced);
  EXPECT_FALSE(late) << "a fenced grant with " << late.lock.validity_left().count()
                     << " ms left was kept";
  EXPECT_EQ(late.error, Errc::validity_expired) << late.message();
  s.slow(false);
  for (std::size_t i = 0; i < SlowMajority::kNodes; ++i)
    EXPECT_TRUE(test::eventually(
        [&] {
          return s.cluster[i].command({"EXISTS", "redlock:k"}) == "0";
        },
        5s))
        << "node " << i << ": the refused grant was not cleaned up";
}

// 9. A turn that begins while its line has less than a millisecond left still leaves the turns
// with an expiry (simulator seed 380463). On Redis 7.0 a script sees its keys as they were when
// it began, but PTTL reads the clock: a line whose expiry passes while the script runs (or falls
// on the very millisecond it runs in) is still there and reads a PTTL of 0. The turns, kept as
// long as the line, must then be kept a turn's length, not left without a ttl for ever. Here the
// line is given one millisecond in the same transaction as the script, and the script's notice
// is slowed down on its way: the server matches its channel against many patterns.
TEST(Liveness, TheTurnsOfALineThatRunsOutStillExpire) {
  const std::string kChannel = "redlock:turn:" + std::string(4096, 'a');
  constexpr long long kTurnMs = 1500;
  const std::string kTicket = kChannel + "#1@" + std::to_string(kTurnMs);
  RedisServer server;
  Listener listener(server, kChannel);
  ASSERT_TRUE(listener.c != nullptr && listener.c->err == 0);
  std::unique_ptr<redisContext, decltype(&redisFree)> patterns(
      redisConnect("127.0.0.1", server.port()), &redisFree);
  ASSERT_TRUE(patterns != nullptr && patterns->err == 0);
  std::vector<std::string> argv{"PSUBSCRIBE"};
  for (int i = 0; i < 2000; ++i) argv.push_back("*z" + std::to_string(i));
  std::vector<const char*> args;
  std::vector<std::size_t> lengths;
  for (const auto& a : argv) {
    args.push_back(a.data());
    lengths.push_back(a.size());
  }
  ASSERT_EQ(redisAppendCommandArgv(patterns.get(), static_cast<int>(args.size()), args.data(),
                                   lengths.data()),
            REDIS_OK);
  for (std::size_t i = 1; i < argv.size(); ++i) {  // one confirmation per pattern
    void* reply = nullptr;
    ASSERT_EQ(redisGetReply(patterns.get(), &reply), REDIS_OK);
    freeReplyObject(reply);
  }

  const std::string key = "redlock:k";
  const std::string queue = aux("k", detail::kQueue);
  const std::string turns = aux("k", detail::kTurns);
  // Runs `script` in a transaction right after giving the line 2 ms, so that it runs out while
  // the script publishes. Returns the turns' PTTL once a try began the waiter's turn (a loaded
  // machine may let the line run out before the script begins: then it tries again), or -3.
  auto turns_pttl_as_line_ends = [&](const std::vector<std::string>& setup,
                                     const std::vector<std::string>& script) -> long long {
    for (int attempt = 0; attempt < 10; ++attempt) {
      server.command({"DEL", key, queue, turns});
      if (!setup.empty()) server.command(setup);
      server.command({"ZADD", queue, "1", kTicket});
      redisContext* c = redisConnect("127.0.0.1", server.port());
      if (c == nullptr || c->err) {
        if (c != nullptr) redisFree(c);
        continue;
      }
      std::vector<std::vector<std::string>> commands{
          {"MULTI"}, {"PEXPIRE", queue, "2"}, script, {"EXEC"}};
      for (const auto& command : commands) {
        std::vector<const char*> a;
        std::vector<std::size_t> l;
        for (const auto& part : command) {
          a.push_back(part.data());
          l.push_back(part.size());
        }
        redisAppendCommandArgv(c, static_cast<int>(a.size()), a.data(), l.data());
      }
      for (std::size_t i = 0; i < commands.size(); ++i) {
        void* reply = nullptr;
        if (redisGetReply(c, &reply) == REDIS_OK && reply != nullptr) freeReplyObject(reply);
      }
      redisFree(c);
      if (server.command({"HEXISTS", turns, kTicket}) == "1")
        return std::stoll(server.command({"PTTL", turns}));
    }
    return -3;
  };

  // A release that begins the waiter's turn (release.lua, announce): the key holds the token
  // marked, so somebody waits.
  auto pttl = turns_pttl_as_line_ends(
      {"SET", key, "0123456789abcdef0123456789abcdef!", "PX", "10000"},
      {"EVAL", detail::lua::release_body, "1", key, "0123456789abcdef0123456789abcdef."});
  ASSERT_NE(pttl, -3) << "release: no turn began: no test";
  EXPECT_NE(pttl, -1) << "release: the turns outlive their line";
  EXPECT_LE(pttl, kTurnMs) << "release: the turns outlive the turn";

  // An acquire that finds the key free and begins the first waiter's turn (acquire.lua).
  pttl = turns_pttl_as_line_ends(
      {}, {"EVAL", detail::lua::acquire_body, "1", key, "fedcba9876543210fedcba9876543210.", "1000",
           "0", "redlock:turn:00000000000000cc#1@200", "2", "1000", "200"});
  ASSERT_NE(pttl, -3) << "acquire: no turn began: no test";
  EXPECT_NE(pttl, -1) << "acquire: the turns outlive their line";
  EXPECT_LE(pttl, kTurnMs) << "acquire: the turns outlive the turn";
}

}  // namespace
}  // namespace redlock
