// A counting semaphore of k permits over the quorum (docs/guide-semaphore.md): k slots, each a
// mutex; never more than k holders with validity left, whatever order each node sees the
// acquirers in.
#include <gtest/gtest.h>
#include <hiredis/hiredis.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "core/keys.hpp"
#include "redis_server.hpp"
#include "redlock/redlock.hpp"
#include "redlock_scripts.hpp"
#include "test_config.hpp"

namespace redlock {
namespace {

using namespace std::chrono_literals;
using test::eventually;
using test::RedisCluster;

AcquireRequest permit(unsigned k, Milliseconds ttl = 5000ms, Milliseconds wait = 0ms,
                      std::string resource = "pool") {
  AcquireRequest r({std::move(resource)}, ttl, wait);
  r.permits = k;
  return r;
}

std::string slot(unsigned i) { return detail::slot_key("redlock:pool", i); }

// The case: N = 3, k = 2. A holds slot 0 on nodes 0 and 2, B slot 1 on nodes 0 and 1:
// node 0 {A, B}, node 1 {B}, node 2 {A}. A per-node counter would admit C on nodes 1 and 2 (each
// has one of two places left), a third holder of two permits. C must be refused: no slot is free
// on a quorum.
TEST(Semaphore, TheThreeHolderCaseAdmitsNoThirdHolder) {
  RedisCluster cluster(3);
  for (std::size_t i = 0; i < 3; ++i)
    cluster[i].command(
        {"SET", detail::aux_key("redlock:pool", detail::kPermits), "2", "PX", "60000"});
  for (std::size_t i : {0u, 2u}) cluster[i].command({"SET", slot(0), "aaaa.", "PX", "60000"});
  for (std::size_t i : {0u, 1u}) cluster[i].command({"SET", slot(1), "bbbb.", "PX", "60000"});
  Client c(test::fast_config(cluster));
  ASSERT_TRUE(eventually([&] { return test::connected_to_all(c); }, 5s));
  auto r = c.acquire(permit(2));
  EXPECT_EQ(r.error, Errc::not_acquired) << r.message();
  // Nothing of C's is left on any node: each attempt's grants were cleaned up. The clean-up of
  // the last attempt leaves as the result is delivered, without waiting for its replies: it may
  // land just after this thread reads.
  for (std::size_t i = 0; i < 3; ++i)
    for (unsigned s : {0u, 1u}) {
      std::string v;
      EXPECT_TRUE(eventually(
          [&] {
            v = cluster[i].command({"GET", slot(s)});
            return v == "(nil)" || v == "aaaa." || v == "bbbb.";
          },
          2s))
          << "node " << i << " slot " << s << ": " << v;
    }
}

// The same case arising from the acquirers themselves, many times: three clients try at once for
// two permits; at most two are granted in each trial, and two are whenever the slots are free.
TEST(Semaphore, ThreeAcquirersAtOnceNeverHoldMoreThanTwoPermits) {
  RedisCluster cluster(3);
  std::vector<std::unique_ptr<Client>> clients;
  for (int i = 0; i < 3; ++i) {
    clients.push_back(std::make_unique<Client>(test::fast_config(cluster)));
    ASSERT_TRUE(eventually([&] { return test::connected_to_all(*clients.back()); }, 5s));
  }
  int two = 0;
  for (int trial = 0; trial < 12; ++trial) {
    std::vector<AcquireResult> results(3);
    std::atomic<int> ready{0};
    std::vector<std::thread> threads;
    for (int i = 0; i < 3; ++i)
      threads.emplace_back([&, i] {
        ++ready;
        while (ready.load() < 3) std::this_thread::yield();
        results[i] = clients[i]->acquire(permit(2, 5000ms, 300ms));
      });
    for (auto& t : threads) t.join();
    int granted = 0;
    std::set<int> slots;
    for (auto& r : results)
      if (r) {
        ++granted;
        slots.insert(r.lock.permit);
      }
    ASSERT_LE(granted, 2) << "trial " << trial;
    EXPECT_EQ(slots.size(), static_cast<std::size_t>(granted)) << "two holders of one slot";
    two += granted == 2;
    for (int i = 0; i < 3; ++i) {
      if (results[i]) {
        ASSERT_TRUE(clients[i]->release(results[i].lock));
      }
    }
  }
  EXPECT_GT(two, 0) << "both permits were never held at once";
}

TEST(Semaphore, KHoldersAtOnceAndTheNextIsRefusedUntilOneReleases) {
  RedisCluster cluster(3);
  Client a(test::fast_config(cluster));
  std::vector<Lock> held;
  for (int i = 0; i < 3; ++i) {
    auto r = a.acquire(permit(3));
    ASSERT_TRUE(r) << "permit " << i << ": " << r.message();
    held.push_back(r.lock);
  }
  std::set<int> slots;
  for (auto& l : held) slots.insert(l.permit);
  EXPECT_EQ(slots, (std::set<int>{0, 1, 2}));
  auto refused = a.acquire(permit(3));
  EXPECT_EQ(refused.error, Errc::not_acquired) << refused.message();
  ASSERT_TRUE(a.release(held[1]));
  auto again = a.acquire(permit(3));
  ASSERT_TRUE(again) << again.message();
  EXPECT_EQ(again.lock.permit, held[1].permit) << "the freed slot";
}

TEST(Semaphore, AWaiterIsWokenByARelease) {
  RedisCluster cluster(3);
  Client a(test::fast_config(cluster)), b(test::fast_config(cluster));
  auto first = a.acquire(permit(1, 30'000ms));
  ASSERT_TRUE(first) << first.message();
  std::thread releaser([&] {
    std::this_thread::sleep_for(200ms);
    a.release(first.lock);
  });
  // The holder's lease is 30 s: only the release's notice can serve the waiter within 10 s.
  auto r = b.acquire(permit(1, 5000ms, 10'000ms));
  releaser.join();
  ASSERT_TRUE(r) << r.message();
  EXPECT_EQ(r.lock.permit, 0);
}

// Every slot's release reaches the waiters, whichever slot they last asked for: k = 3 slots held
// for 30 s, three waiters in two clients, each slot released in turn; only the notices (and the
// hints that follow them) can serve them within the wait.
TEST(Semaphore, EverySlotsReleaseWakesAWaiter) {
  RedisCluster cluster(3);
  // The waiters' fallback timers (the retry delay, and the sign-ups' refresh) fire after their
  // wait is over: only notices serve them.
  Config slow = test::fast_config(cluster);
  slow.retry_delay = 20'000ms;
  slow.retry_jitter = 0ms;
  Client holder(test::fast_config(cluster)), a(slow), b(slow);
  std::vector<Lock> held;
  for (int i = 0; i < 3; ++i) {
    auto r = holder.acquire(permit(3, 30'000ms));
    ASSERT_TRUE(r) << r.message();
    held.push_back(r.lock);
  }
  std::vector<AcquireResult> results(3);
  std::vector<std::thread> waiters;
  for (int i = 0; i < 3; ++i)
    waiters.emplace_back([&, i] {
      Client& c = i == 2 ? b : a;
      results[i] = c.acquire(permit(3, 30'000ms, 3000ms));
    });
  std::this_thread::sleep_for(500ms);
  // Released from the last slot down: a waiter that drew slot 0 is refused by it until the end.
  std::sort(held.begin(), held.end(),
            [](const Lock& x, const Lock& y) { return x.permit > y.permit; });
  for (auto& l : held) {
    ASSERT_TRUE(holder.release(l));
    std::this_thread::sleep_for(300ms);
  }
  for (auto& t : waiters) t.join();
  std::set<int> slots;
  for (auto& r : results) {
    EXPECT_TRUE(r) << r.message();
    if (r) slots.insert(r.lock.permit);
  }
  EXPECT_EQ(slots, (std::set<int>{0, 1, 2}));
}

// Waiters stand in one line for all k slots (docs/guide-semaphore.md, "Waiting in line"): each
// freed slot is the turn of the first waiter that has none, in the order they began to wait, and
// only that waiter is told. Four waiters in four clients, whose fallback timers fire after
// their wait; k = 2 held for 30 s, released one slot at a time, then each served waiter releases.
TEST(Semaphore, WaitersAreServedInTheOrderTheyBeganToWaitOneTurnASlot) {
  RedisCluster cluster(3);
  Config slow = test::fast_config(cluster);
  slow.retry_delay = 20'000ms;
  slow.retry_jitter = 0ms;
  Client holder(test::fast_config(cluster));
  std::vector<std::unique_ptr<Client>> clients;
  for (int i = 0; i < 4; ++i) clients.push_back(std::make_unique<Client>(slow));
  for (auto& c : clients) ASSERT_TRUE(eventually([&] { return test::connected_to_all(*c); }, 5s));
  std::vector<Lock> held;
  for (int i = 0; i < 2; ++i) {
    auto r = holder.acquire(permit(2, 30'000ms));
    ASSERT_TRUE(r) << r.message();
    held.push_back(r.lock);
  }
  std::mutex mutex;
  std::vector<int> order;
  std::vector<AcquireResult> results(4);
  std::vector<std::thread> waiters;
  for (int i = 0; i < 4; ++i) {
    waiters.emplace_back([&, i] {
      results[i] = clients[i]->acquire(permit(2, 30'000ms, 8000ms));
      std::lock_guard<std::mutex> lock(mutex);
      order.push_back(i);
    });
    // Each in line before the next begins (places are microseconds apart otherwise too).
    ASSERT_TRUE(eventually(
        [&] {
          return cluster[0].command({"ZCARD", detail::aux_key("redlock:pool", detail::kQueue)}) ==
                 std::to_string(i + 1);
        },
        5s));
  }
  auto served = [&](std::size_t n) {
    return eventually(
        [&] {
          std::lock_guard<std::mutex> lock(mutex);
          return order.size() >= n;
        },
        5s);
  };
  ASSERT_TRUE(holder.release(held[0]));
  ASSERT_TRUE(served(1));
  ASSERT_TRUE(holder.release(held[1]));
  ASSERT_TRUE(served(2));
  std::this_thread::sleep_for(200ms);
  {
    std::lock_guard<std::mutex> lock(mutex);
    EXPECT_EQ(order, (std::vector<int>{0, 1})) << "one waiter a freed slot, first come first";
  }
  // Two slots freed at once are two turns at once, of the next two in line: neither release
  // gives a second turn to a waiter whose turn holds the other slot.
  ASSERT_TRUE(clients[0]->release(results[0].lock));
  ASSERT_TRUE(clients[1]->release(results[1].lock));
  ASSERT_TRUE(served(4));
  for (auto& t : waiters) t.join();
  EXPECT_EQ(std::set<int>(order.begin() + 2, order.end()), (std::set<int>{2, 3}));
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(results[i]) << i << ": " << results[i].message();
  EXPECT_TRUE(clients[2]->release(results[2].lock));
  EXPECT_TRUE(clients[3]->release(results[3].lock));
  EXPECT_EQ(cluster[0].command({"EXISTS", detail::aux_key("redlock:pool", detail::kQueue)}), "0");
}

TEST(Semaphore, ChangingKIsRefusedWhileAPermitOfTheOldKIsHeld) {
  RedisCluster cluster(3);
  Client a(test::fast_config(cluster));
  auto held = a.acquire(permit(2));
  ASSERT_TRUE(held) << held.message();
  auto other = a.acquire(permit(3));
  EXPECT_EQ(other.error, Errc::permits_mismatch) << other.message();
  auto waiting = a.acquire(permit(3, 5000ms, 2000ms));
  EXPECT_EQ(waiting.error, Errc::permits_mismatch) << "refused at once, not waited out";
  // The last permit of k = 2 released, the semaphore takes the new k.
  ASSERT_TRUE(a.release(held.lock));
  auto changed = a.acquire(permit(3));
  EXPECT_TRUE(changed) << changed.message();
}

// The simulator's F4 (docs/simulation.md), script by script on one real server: a waiter of k = 2
// stands in line on a node where no permit is held (its holders' keys there ran out). An acquire
// with k = 3 asking for slot 2 used to find nothing that kept k, and began the waiter's turn on
// slot 2, a slot beyond the waiter's k: the waiter never asks for it nor clears it when it
// leaves, so it refused everyone until the turn ran out. k is now kept as long as a waiter of it
// stands in line: the new k is refused, and taken once the waiter has left.
TEST(Semaphore, AWaiterInLineKeepsKSoNoTurnIsGivenOnASlotBeyondIt) {
  RedisCluster cluster(1);
  const auto& node = cluster[0];
  const std::string channel = "redlock:turn:w", ticket = channel + "#1@200";
  // The waiter's client listens on its channel: the waiter is alive.
  redisContext* listener = redisConnect("127.0.0.1", node.port());
  ASSERT_TRUE(listener != nullptr && listener->err == 0);
  auto* sub = static_cast<redisReply*>(redisCommand(listener, "SUBSCRIBE %s", channel.c_str()));
  if (sub) freeReplyObject(sub);
  auto permits_key = detail::aux_key("redlock:pool", detail::kPermits);
  // Both slots of k = 2 held, for 300 ms.
  node.command({"SET", permits_key, "2", "PX", "300"});
  node.command({"SET", slot(0), "aaaa.", "PX", "300"});
  node.command({"SET", slot(1), "bbbb.", "PX", "300"});
  // acquire.lua as a client sends it: the slot keys, token, ttl 5 s, no fencing, the ticket and
  // place (or none), the line kept 10 s, turns of 200 ms, k and the slot asked for.
  auto ask = [&](unsigned k, unsigned asked, const std::string& who, const std::string& token) {
    std::vector<std::string> argv{"EVAL", detail::lua::acquire_body, std::to_string(k)};
    for (unsigned i = 0; i < k; ++i) argv.push_back(slot(i));
    for (const std::string& a :
         {token, std::string("5000"), std::string("0"), who, std::string(who.empty() ? "0" : "100"),
          std::string("10000"), std::string("200"), std::to_string(k), std::to_string(asked)})
      argv.push_back(a);
    return node.command(argv);
  };
  auto waited = ask(2, 0, ticket, "cccccccccccccccccccccccccccccccc!");
  ASSERT_EQ(waited.substr(0, 1), "0") << "both slots are held: " << waited;
  ASSERT_EQ(node.command({"ZSCORE", detail::aux_key("redlock:pool", detail::kQueue), ticket}),
            "100")
      << "the waiter stands in line";
  std::this_thread::sleep_for(400ms);  // the holders' keys run out: no permit is held here
  ASSERT_EQ(node.command({"EXISTS", slot(0), slot(1)}), "0");

  auto other = ask(3, 2, "", "dddddddddddddddddddddddddddddddd.");
  EXPECT_EQ(other, "-2\n2") << "another k while a waiter of k = 2 stands in line";
  EXPECT_EQ(node.command({"EXISTS", detail::slot_key("redlock:pool", 2)}), "0")
      << "a turn was begun on a slot beyond the waiter's k";

  // The waiter leaves (release.lua, as AcquireMachine::leave_waiting sends it): k goes with it.
  node.command({"EVAL", detail::lua::release_body, "2", slot(0), slot(1), "-", "0", ticket, "", "0",
                "line"});
  EXPECT_EQ(node.command({"EXISTS", permits_key}), "0") << "k kept with nobody holding or waiting";
  auto changed = ask(3, 2, "", "eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee.");
  EXPECT_EQ(changed.substr(0, 1), "1") << changed;
  redisFree(listener);
}

// k is kept while a permit of it may be valid, and no longer (docs/guide-semaphore.md, "Changing
// k"): a failed attempt's clean-up lets it go where it leaves no slot held, as a release does.
// Here an attempt granted on node 0 alone (the others full) is cleaned up; once the holders have
// released, no node keeps k, and a new k is taken with a node down.
TEST(Semaphore, AFailedAttemptsCleanUpLetsKGo) {
  RedisCluster cluster(3);
  auto permits_key = detail::aux_key("redlock:pool", detail::kPermits);
  for (std::size_t i : {1u, 2u}) {
    cluster[i].command({"SET", permits_key, "2", "PX", "60000"});
    cluster[i].command({"SET", slot(0), "aaaa.", "PX", "60000"});
    cluster[i].command({"SET", slot(1), "bbbb.", "PX", "60000"});
  }
  Client c(test::fast_config(cluster));
  ASSERT_TRUE(eventually([&] { return test::connected_to_all(c); }, 5s));
  auto refused = c.acquire(permit(2, 30'000ms));
  ASSERT_EQ(refused.error, Errc::not_acquired) << refused.message();
  ASSERT_TRUE(eventually(
      [&] {
        return cluster[0].command({"EXISTS", slot(0), slot(1)}) == "0";
      },
      5s))
      << "the attempt's grant on node 0 was cleaned up";
  for (auto [token, p] : {std::pair<const char*, int>{"aaaa.", 0}, {"bbbb.", 1}}) {
    Lock held("pool", token);
    held.permit = p;
    EXPECT_TRUE(c.release(held)) << token;
  }
  for (std::size_t i = 0; i < 3; ++i)
    EXPECT_EQ(cluster[i].command({"EXISTS", permits_key}), "0")
        << "node " << i << " keeps k with no permit of it held";
  cluster[2].kill9();
  auto changed = c.acquire(permit(3));
  EXPECT_TRUE(changed) << changed.message();
}

TEST(Semaphore, APermitRenewsAndKeepsItsSemaphoresK) {
  RedisCluster cluster(3);
  Client a(test::fast_config(cluster));
  auto r = a.acquire(permit(2, 1000ms));
  ASSERT_TRUE(r) << r.message();
  auto e = a.extend(r.lock, 20'000ms);
  ASSERT_TRUE(e) << e.message();
  auto permits_key = detail::aux_key("redlock:pool", detail::kPermits);
  for (std::size_t i = 0; i < 3; ++i) {
    // k first: read earlier, its ttl is the larger if it ends no sooner than the slot. The extend
    // returned at its quorum: the last node may run it (and the acquire) just after.
    long long k_ttl = 0, slot_ttl = 0;
    EXPECT_TRUE(eventually(
        [&] {
          k_ttl = std::stoll(cluster[i].command({"PTTL", permits_key}));
          slot_ttl = std::stoll(cluster[i].command({"PTTL", slot(r.lock.permit)}));
          return slot_ttl > 10'000 && k_ttl >= slot_ttl;
        },
        2s))
        << "node " << i << ": the slot has " << slot_ttl << " ms left, k " << k_ttl
        << " ms: k outlives the permit";
  }
  // The held permit outlives its first lease: another k is still refused after it.
  std::this_thread::sleep_for(1200ms);
  EXPECT_EQ(a.acquire(permit(5)).error, Errc::permits_mismatch);
}

TEST(Semaphore, AHeldPermitIsRenewedAndReleased) {
  RedisCluster cluster(3);
  Config config = test::fast_config(cluster);
  config.watchdog_lease = 600ms;
  Client a(config);
  AcquireRequest req({"pool"}, std::nullopt, 0ms);
  req.permits = 2;
  auto held = a.hold(req);
  ASSERT_TRUE(held) << held.message();
  EXPECT_GE(held.lock.permit(), 0);
  std::this_thread::sleep_for(1500ms);  // past two leases: renewed, or lost
  EXPECT_TRUE(held.lock.held());
  auto key = slot(static_cast<unsigned>(held.lock.permit()));
  EXPECT_NE(cluster[0].command({"GET", key}), "(nil)");
  ASSERT_TRUE(held.lock.release());
  for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(cluster[i].command({"GET", key}), "(nil)");
}

TEST(Semaphore, ACrashedHolderFreesItsPermitAtItsTtl) {
  RedisCluster cluster(3);
  {
    Client gone(test::fast_config(cluster));
    ASSERT_TRUE(gone.acquire(permit(1, 800ms)));
  }  // never released
  Client b(test::fast_config(cluster));
  EXPECT_EQ(b.acquire(permit(1)).error, Errc::not_acquired);
  auto r = b.acquire(permit(1, 5000ms, 3000ms));
  EXPECT_TRUE(r) << r.message();
}

TEST(Semaphore, FencingTokensGrowAcrossAllPermits) {
  RedisCluster cluster(3);
  Client a(test::fast_config(cluster));
  std::uint64_t last = 0;
  std::vector<Lock> held;
  for (int i = 0; i < 4; ++i) {
    auto req = permit(2);
    req.fencing = true;
    auto r = a.acquire(req);
    ASSERT_TRUE(r) << r.message();
    EXPECT_GT(r.lock.fencing_token, last);
    last = r.lock.fencing_token;
    held.push_back(r.lock);
    if (held.size() == 2) {
      ASSERT_TRUE(a.release(held.front()));
      held.erase(held.begin());
    }
  }
}

TEST(Semaphore, AMinorityDownStillGrantsAndAMajorityDownRefuses) {
  RedisCluster cluster(3);
  Client a(test::fast_config(cluster));
  ASSERT_TRUE(eventually([&] { return test::connected_to_all(a); }, 5s));
  cluster[2].kill9();
  auto r = a.acquire(permit(2));
  ASSERT_TRUE(r) << r.message();
  cluster[1].pause();
  auto s = a.acquire(permit(2));
  EXPECT_FALSE(s);
  EXPECT_NE(s.error, Errc::not_acquired) << "no quorum answered, it is no contention";
  cluster[1].resume();
}

TEST(Semaphore, BadRequestsAreRefusedBeforeAnythingIsSent) {
  RedisCluster cluster(1);
  Client a(test::fast_config(cluster));
  AcquireRequest two({"a", "b"}, 1000ms, 0ms);
  two.permits = 2;
  EXPECT_EQ(a.acquire(two).error, Errc::invalid_argument);
  EXPECT_EQ(a.acquire(permit(AcquireRequest::max_permits + 1)).error, Errc::invalid_argument);
  EXPECT_TRUE(a.acquire(permit(AcquireRequest::max_permits)));
  // A permit is one slot of one resource: a lock that says otherwise is refused, never released
  // or extended in part.
  Lock both({"a"}, "0123456789abcdef0123456789abcdef.");
  both.resources.push_back("b");
  both.permit = 0;
  EXPECT_EQ(a.release(both).error, Errc::invalid_argument);
  EXPECT_EQ(a.extend(both, 1000ms).error, Errc::invalid_argument);
  Lock far("a", "0123456789abcdef0123456789abcdef.");
  far.permit = static_cast<int>(AcquireRequest::max_permits);
  EXPECT_EQ(a.release(far).error, Errc::invalid_argument);
}

TEST(Semaphore, AHostileValueInThePermitsKeyIsAnErrorNeverAGrant) {
  RedisCluster cluster(3);
  auto permits_key = detail::aux_key("redlock:pool", detail::kPermits);
  for (std::size_t i = 0; i < 3; ++i) cluster[i].command({"HSET", permits_key, "x", "y"});
  Client a(test::fast_config(cluster));
  auto r = a.acquire(permit(2));
  EXPECT_FALSE(r);
  EXPECT_EQ(r.error, Errc::no_quorum) << r.message();
  std::size_t wrongtype = 0;
  for (const auto& v : r.votes.nodes) {
    EXPECT_NE(v.vote, Vote::yes);
    wrongtype += v.error == Errc::redis_wrongtype;
  }
  EXPECT_GE(wrongtype, 2u) << "the quorum's refusals say why";
}

// Every key a semaphore creates (its slots, k, the waiters' line, the fence counter) lies in
// its lock key's Redis Cluster hash slot, asked of a real cluster-enabled server.
TEST(Semaphore, EveryKeyOfASemaphoreLiesInItsLockKeysHashSlot) {
  test::RedisServer slots({"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"});
  auto hash_slot = [&](const std::string& key) {
    return slots.command({"CLUSTER", "KEYSLOT", key});
  };
  for (const std::string resource : {"pool:7", "{tenant:3}:pool"}) {
    SCOPED_TRACE(resource);
    const std::string lock = "redlock:" + resource;
    RedisCluster cluster(1);
    Client a(test::fast_config(cluster)), waiter(test::fast_config(cluster));
    std::vector<Lock> held;
    for (int i = 0; i < 2; ++i) {
      auto req = permit(2, 30'000ms, 0ms, resource);
      req.fencing = true;
      auto r = a.acquire(req);
      ASSERT_TRUE(r) << r.message();
      held.push_back(r.lock);
    }
    auto waiting = std::thread([&] { waiter.acquire(permit(2, 1000ms, 1500ms, resource)); });
    ASSERT_TRUE(eventually(
        [&] {
          return cluster[0].command({"EXISTS", detail::aux_key(lock, detail::kQueue)}) == "1";
        },
        5s));
    auto keys = cluster[0].keys_of_lock(lock);
    for (const auto& key : keys) {
      std::string shown = key;
      std::replace(shown.begin(), shown.end(), '\0', '|');
      EXPECT_EQ(hash_slot(key), hash_slot(lock)) << shown;
    }
    EXPECT_EQ(keys.size(), 5u) << "slots 0 and 1, k, the line, the fence counter";
    waiting.join();
  }
}

// The observer hears of permits as of locks, with the k asked for and the slot each operation
// was on.
TEST(Semaphore, TheObserverHearsWhichPermitEachOperationWasOn) {
  struct Recorder : Observer {
    std::mutex mutex;
    std::vector<std::tuple<Operation, unsigned, int, bool>> ops;
    void on_operation(const OperationEvent& e) override {
      std::lock_guard<std::mutex> lock(mutex);
      ops.emplace_back(e.operation, e.permits, e.permit, !e.error);
    }
  };
  auto recorder = std::make_shared<Recorder>();
  RedisCluster cluster(3);
  Config config = test::fast_config(cluster);
  config.observer = recorder;
  Client a(config);
  auto r = a.acquire(permit(3));
  ASSERT_TRUE(r) << r.message();
  ASSERT_TRUE(a.extend(r.lock, 5000ms));
  ASSERT_TRUE(a.release(r.lock));
  std::lock_guard<std::mutex> lock(recorder->mutex);
  ASSERT_GE(recorder->ops.size(), 3u);
  EXPECT_EQ(recorder->ops[0], std::make_tuple(Operation::acquire, 3u, r.lock.permit, true));
  EXPECT_EQ(recorder->ops[1], std::make_tuple(Operation::extend, 0u, r.lock.permit, true));
  EXPECT_EQ(recorder->ops[2], std::make_tuple(Operation::release, 0u, r.lock.permit, true));
}

}  // namespace
}  // namespace redlock
