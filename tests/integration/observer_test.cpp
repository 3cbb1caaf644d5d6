// Config::observer and Config::log against real redis-servers: each operation's event carries
// its outcome, votes and resources; a held lock's loss, a wait and a node's state changes are
// told with their reasons; no event names a password; and what used to go to standard error
// reaches the log hook.
#include <gtest/gtest.h>

#include <algorithm>
#include <future>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "redis_server.hpp"
#include "redlock/redlock.hpp"
#include "test_config.hpp"

namespace redlock {
namespace {

using namespace std::chrono_literals;
using test::eventually;
using test::RedisCluster;
using test::RedisServer;

// Copies of the events, in order of arrival (they come on the client's loop thread).
struct Recorder : Observer {
  struct Op {
    Operation operation;
    std::error_code error;
    std::vector<std::string> resources;
    Votes votes;
    std::chrono::microseconds latency;
    int attempts;
  };
  struct Node {
    NodeState state;
    std::size_t node;
    std::string address;
    bool subscriber;
    std::error_code error;
    std::string detail;
    Milliseconds backoff;
  };
  struct Lost {
    LostReason reason;
    std::error_code error;
    std::vector<std::string> resources;
  };
  struct Wait {
    WaitPhase phase;
    std::vector<std::string> resources;
    std::error_code error;
    std::chrono::microseconds waited;
  };

  std::mutex m;
  std::vector<Op> ops;
  std::vector<Node> nodes;
  std::vector<Lost> lost;
  std::vector<Wait> waits;
  std::vector<std::size_t> held;
  bool throw_on_operation = false;

  void on_operation(const OperationEvent& e) override {
    {
      std::lock_guard<std::mutex> lock(m);
      ops.push_back(Op{e.operation, e.error, *e.resources, *e.votes, e.latency, e.attempts});
    }
    if (throw_on_operation) throw std::runtime_error("observer failure");
  }
  void on_node(const NodeEvent& e) override {
    std::lock_guard<std::mutex> lock(m);
    nodes.push_back(Node{e.state, e.node, *e.address, e.subscriber, e.error,
                         e.detail != nullptr ? *e.detail : std::string(), e.backoff});
  }
  void on_lost(const LostEvent& e) override {
    std::lock_guard<std::mutex> lock(m);
    lost.push_back(Lost{e.reason, e.error, *e.resources});
  }
  std::vector<std::pair<NodeWarning, std::string>> node_warnings;
  void on_node_warning(const NodeWarningEvent& e) override {
    std::lock_guard<std::mutex> lock(m);
    node_warnings.emplace_back(e.kind, *e.address);
  }
  void on_wait(const WaitEvent& e) override {
    std::lock_guard<std::mutex> lock(m);
    waits.push_back(Wait{e.phase, *e.resources, e.error, e.waited});
  }
  void on_held(std::size_t n) override {
    std::lock_guard<std::mutex> lock(m);
    held.push_back(n);
  }

  std::vector<Op> ops_of(Operation op) {
    std::lock_guard<std::mutex> lock(m);
    std::vector<Op> out;
    for (const auto& o : ops)
      if (o.operation == op) out.push_back(o);
    return out;
  }
  std::vector<Node> node_events() {
    std::lock_guard<std::mutex> lock(m);
    return nodes;
  }
  std::vector<Lost> lost_events() {
    std::lock_guard<std::mutex> lock(m);
    return lost;
  }
  std::vector<Wait> wait_events() {
    std::lock_guard<std::mutex> lock(m);
    return waits;
  }
  std::vector<std::size_t> held_counts() {
    std::lock_guard<std::mutex> lock(m);
    return held;
  }
  bool has_node(NodeState state, std::size_t node, bool subscriber = false) {
    for (const auto& n : node_events())
      if (n.state == state && n.node == node && n.subscriber == subscriber) return true;
    return false;
  }
};

// Messages handed to Config::log.
struct LogLines {
  std::mutex m;
  std::vector<std::pair<LogLevel, std::string>> lines;
  LogHandler handler() {
    return [this](LogLevel level, const std::string& text) {
      std::lock_guard<std::mutex> lock(m);
      lines.emplace_back(level, text);
    };
  }
  std::size_t count(LogLevel level, const std::string& text) {
    std::lock_guard<std::mutex> lock(m);
    return static_cast<std::size_t>(std::count_if(lines.begin(), lines.end(), [&](const auto& l) {
      return l.first == level && l.second.find(text) != std::string::npos;
    }));
  }
};

Config observed(const std::string& nodes, const std::shared_ptr<Recorder>& recorder) {
  Config c = test::fast_config(nodes);
  c.on_warning = [](const std::string&) {};  // the fixture's servers have no persistence
  c.observer = recorder;
  return c;
}

TEST(Observer, OperationsCarryTheirOutcomeVotesAndResources) {
  RedisCluster cluster(3);
  auto rec = std::make_shared<Recorder>();
  Client client(observed(cluster.node_list(), rec));
  ASSERT_TRUE(eventually([&] { return test::connected_to_all(client); }));

  auto r = client.try_acquire("obs:one", 5000ms);
  ASSERT_TRUE(r) << r.message();
  // The event comes before the result reaches the caller: no waiting needed.
  auto acquires = rec->ops_of(Operation::acquire);
  ASSERT_EQ(acquires.size(), 1u);
  EXPECT_FALSE(acquires[0].error);
  EXPECT_EQ(acquires[0].resources, std::vector<std::string>{"obs:one"});
  EXPECT_EQ(acquires[0].votes.quorum, 2u);
  EXPECT_GE(acquires[0].votes.yes(), 2u) << acquires[0].votes.to_string();
  EXPECT_EQ(acquires[0].attempts, 1);
  EXPECT_GT(acquires[0].latency.count(), 0);

  auto again = client.try_acquire("obs:one", 5000ms);
  ASSERT_FALSE(again);
  acquires = rec->ops_of(Operation::acquire);
  ASSERT_EQ(acquires.size(), 2u);
  EXPECT_EQ(acquires[1].error, Errc::not_acquired);
  EXPECT_GE(acquires[1].votes.no(), 2u) << acquires[1].votes.to_string();

  auto e = client.extend(r.lock, 5000ms);
  ASSERT_TRUE(e) << e.message();
  auto extends = rec->ops_of(Operation::extend);
  ASSERT_EQ(extends.size(), 1u);
  EXPECT_FALSE(extends[0].error);
  EXPECT_GE(extends[0].votes.yes(), 2u);

  ASSERT_TRUE(client.release(r.lock));
  auto stale = client.release(r.lock);  // already released: not held on any node
  ASSERT_FALSE(stale);
  auto releases = rec->ops_of(Operation::release);
  ASSERT_EQ(releases.size(), 2u);
  EXPECT_FALSE(releases[0].error);
  EXPECT_EQ(releases[1].error, Errc::not_held);
  EXPECT_GE(releases[1].votes.no(), 2u) << releases[1].votes.to_string();
  EXPECT_EQ(releases[1].resources, std::vector<std::string>{"obs:one"});
}

TEST(Observer, EveryNodeIsToldConnected) {
  RedisCluster cluster(3);
  auto rec = std::make_shared<Recorder>();
  Client client(observed(cluster.node_list(), rec));
  ASSERT_TRUE(eventually([&] {
    return rec->has_node(NodeState::connected, 0) && rec->has_node(NodeState::connected, 1) &&
           rec->has_node(NodeState::connected, 2);
  }));
  for (const auto& n : rec->node_events()) {
    if (n.state != NodeState::connected) continue;
    EXPECT_EQ(n.address, cluster[n.node].address());
    EXPECT_FALSE(n.error);
  }
}

TEST(Observer, ARefusedReplicaIsToldWithWhyThenBacksOff) {
  RedisCluster masters(2);
  RedisServer replica({"--replicaof", "127.0.0.1", std::to_string(masters[0].port())});
  auto rec = std::make_shared<Recorder>();
  Client client(observed(masters.node_list() + "," + replica.url(), rec));
  ASSERT_TRUE(eventually([&] { return rec->has_node(NodeState::backoff, 2); }));
  bool refused = false;
  for (const auto& n : rec->node_events()) {
    if (n.node != 2) continue;
    EXPECT_NE(n.state, NodeState::connected) << "a replica never votes";
    if (n.state == NodeState::refused) {
      refused = true;
      EXPECT_EQ(n.error, Errc::node_not_master);
      EXPECT_NE(n.detail.find("replica"), std::string::npos) << n.detail;
      EXPECT_EQ(n.address, replica.address());
    }
    if (n.state == NodeState::backoff) {
      EXPECT_EQ(n.error, Errc::node_not_master);
      EXPECT_GT(n.backoff.count(), 0);
    }
  }
  EXPECT_TRUE(refused);
}

TEST(Observer, ANodeUnderTheRestartGuardIsToldRestartingThenConnected) {
  RedisCluster cluster(3);
  auto rec = std::make_shared<Recorder>();
  Config config = observed(cluster.node_list(), rec);
  // The servers have just started: each waits out the largest lease before it votes.
  config.ttl = 1000ms;
  config.watchdog_lease = 1500ms;
  config.restart_guard = 1500ms;
  Client client(config);
  ASSERT_TRUE(eventually([&] { return rec->has_node(NodeState::restarting, 0); }));
  for (const auto& n : rec->node_events()) {
    EXPECT_NE(n.state, NodeState::connected) << "no vote before the guard's time";
    if (n.state == NodeState::restarting) {
      EXPECT_EQ(n.error, Errc::node_restarting) << n.detail;
    }
  }
  // Once the guard's time has passed, the first acquire finds the nodes voting again.
  ASSERT_TRUE(eventually([&] { return static_cast<bool>(client.try_acquire("obs:guard")); }, 5s));
  // A node's guard ends at its own server's start plus the lease: a node whose guard outlasted
  // that first acquire votes in a later one. Each round asks every node again.
  EXPECT_TRUE(eventually(
      [&] {
        if (auto r = client.try_acquire("obs:guard:again")) client.release(r.lock);
        return rec->has_node(NodeState::connected, 0) && rec->has_node(NodeState::connected, 1) &&
               rec->has_node(NodeState::connected, 2);
      },
      5s));
}

TEST(Observer, NoEventNamesAPassword) {
  const std::string secret = "s3cr3t-pw";
  RedisCluster cluster(3, {"--requirepass", secret}, secret);
  auto rec = std::make_shared<Recorder>();
  // Node 2 is given a wrong password: refused (redis_auth_failed), its event says so without
  // naming either password.
  std::string list = "redis://:" + secret + "@" + cluster[0].address() + ",redis://:" + secret +
                     "@" + cluster[1].address() + ",redis://:wrong-" + secret + "@" +
                     cluster[2].address();
  Client client(observed(list, rec));
  ASSERT_TRUE(eventually([&] { return rec->has_node(NodeState::refused, 2); }));
  auto r = client.try_acquire("obs:pw", 5000ms);
  ASSERT_TRUE(r) << r.message();
  ASSERT_TRUE(client.release(r.lock));

  for (const auto& n : rec->node_events()) {
    EXPECT_EQ(n.address.find(secret), std::string::npos) << n.address;
    EXPECT_EQ(n.detail.find(secret), std::string::npos) << n.detail;
    if (n.node == 2 && n.state == NodeState::refused) {
      EXPECT_EQ(n.error, Errc::redis_auth_failed) << n.detail;
    }
  }
  auto ops = rec->ops_of(Operation::acquire);
  ASSERT_FALSE(ops.empty());
  for (const auto& o : ops) {
    for (std::size_t i = 0; i < o.votes.nodes.size(); ++i) {
      EXPECT_EQ(o.votes.address(i), cluster[i].address());
      EXPECT_EQ(o.votes.nodes[i].detail.find(secret), std::string::npos);
    }
  }
}

TEST(Observer, AnExpiredLeaseIsLostAndLeavesTheHeldCount) {
  RedisCluster cluster(3);
  auto rec = std::make_shared<Recorder>();
  Client client(observed(cluster.node_list(), rec));
  // A ttl given: no renewal. The watchdog declares it lost before its validity ends.
  auto h = client.hold(AcquireRequest({"obs:short"}, 150ms));
  ASSERT_TRUE(h) << h.message();
  ASSERT_TRUE(eventually([&] { return !rec->lost_events().empty(); }, 3s));
  auto lost = rec->lost_events();
  ASSERT_EQ(lost.size(), 1u);
  EXPECT_EQ(lost[0].reason, LostReason::expired);
  EXPECT_EQ(lost[0].error, Errc::lock_lost);
  EXPECT_EQ(lost[0].resources, std::vector<std::string>{"obs:short"});
  auto held = rec->held_counts();
  ASSERT_GE(held.size(), 2u);
  EXPECT_EQ(held.front(), 1u);
  EXPECT_EQ(held.back(), 0u);
}

TEST(Observer, ALockTakenAwayIsLostAsNotHeldByItsRenewal) {
  RedisCluster cluster(3);
  auto rec = std::make_shared<Recorder>();
  Config config = observed(cluster.node_list(), rec);
  config.watchdog_lease = 600ms;  // renewed every 200 ms
  Client client(config);
  auto h = client.hold("obs:renewed");
  ASSERT_TRUE(h) << h.message();
  // At least one renewal succeeds first.
  ASSERT_TRUE(eventually([&] { return !rec->ops_of(Operation::renew).empty(); }, 3s));
  EXPECT_FALSE(rec->ops_of(Operation::renew).front().error);
  // Then the key vanishes from every node: the next renewal finds it gone.
  for (std::size_t i = 0; i < cluster.size(); ++i)
    cluster[i].command({"DEL", config.key_prefix + "obs:renewed"});
  ASSERT_TRUE(eventually([&] { return !rec->lost_events().empty(); }, 3s));
  auto lost = rec->lost_events();
  EXPECT_EQ(lost[0].reason, LostReason::not_held);
  auto renewals = rec->ops_of(Operation::renew);
  EXPECT_EQ(renewals.back().error, Errc::not_held) << renewals.back().votes.to_string();
  EXPECT_EQ(renewals.back().resources, std::vector<std::string>{"obs:renewed"});
}

TEST(Observer, AWaitIsToldWhenItStartsAndEnds) {
  RedisCluster cluster(3);
  auto rec = std::make_shared<Recorder>();
  Client client(observed(cluster.node_list(), rec));
  auto r = client.try_acquire("obs:wait", 5000ms);
  ASSERT_TRUE(r) << r.message();
  auto waited = client.acquire("obs:wait", 5000ms, 150ms);
  ASSERT_FALSE(waited);
  EXPECT_EQ(waited.error, Errc::not_acquired);
  auto waits = rec->wait_events();
  ASSERT_EQ(waits.size(), 2u);
  EXPECT_EQ(waits[0].phase, WaitPhase::started);
  EXPECT_EQ(waits[1].phase, WaitPhase::ended);
  EXPECT_EQ(waits[1].error, Errc::not_acquired);
  EXPECT_EQ(waits[1].resources, std::vector<std::string>{"obs:wait"});
  EXPECT_GE(waits[1].waited, 100ms);  // the wait ran to its deadline (150 ms from the call)
  ASSERT_TRUE(client.release(r.lock));
  // An acquire granted at once never waits.
  auto quick = client.acquire("obs:wait", 5000ms, 150ms);
  ASSERT_TRUE(quick);
  EXPECT_EQ(rec->wait_events().size(), 2u);
  ASSERT_TRUE(client.release(quick.lock));
}

TEST(Observer, AThrowingObserverIsLoggedAndChangesNoOutcome) {
  RedisCluster cluster(3);
  auto rec = std::make_shared<Recorder>();
  rec->throw_on_operation = true;
  LogLines log;
  Config config = observed(cluster.node_list(), rec);
  config.log = log.handler();
  Client client(config);
  auto r = client.try_acquire("obs:throw", 5000ms);
  ASSERT_TRUE(r) << r.message();
  ASSERT_TRUE(client.release(r.lock));
  EXPECT_EQ(log.count(LogLevel::error, "exception escaped an observer: observer failure"), 2u);
}

// A grant that reaches the caller after its validity ended (here an observer that stalls the
// grant's delivery past the ttl stands in for a thread descheduled that long) is no grant: the
// blocking acquire reports Errc::validity_expired and releases it, so it never returns a lock
// that is not valid().
TEST(Observer, AGrantThatArrivesPastItsValidityIsReleasedNotReturned) {
  struct Stalling : Observer {
    void on_operation(const OperationEvent& e) override {
      if (e.operation == Operation::acquire && !e.error) std::this_thread::sleep_for(400ms);
    }
  };
  RedisCluster cluster(3);
  Config config = test::fast_config(cluster.node_list());
  config.observer = std::make_shared<Stalling>();
  Client client(config);
  auto r = client.try_acquire("obs:late", 300ms);
  EXPECT_EQ(r.error, Errc::validity_expired) << r.message();
  EXPECT_TRUE(r.lock.token.empty()) << "no lock is handed out";
  // The same stall on a grant with validity to spare changes nothing.
  auto kept = client.try_acquire("obs:kept", 5000ms);
  EXPECT_TRUE(kept) << kept.message();
}

TEST(Observer, TheLogHookReceivesWhatWentToStandardError) {
  RedisCluster cluster(3);
  LogLines log;
  Config config = test::fast_config(cluster.node_list());
  config.log = log.handler();  // on_warning unset: warnings go to the log
  Client client(config);
  // The fixture's servers have no persistence: one warning per node.
  ASSERT_TRUE(eventually([&] { return log.count(LogLevel::warning, "appendonly") >= 3; }))
      << "warnings: " << log.count(LogLevel::warning, "");
  EXPECT_EQ(log.count(LogLevel::warning, "node " + cluster[0].address() + ": "), 1u);

  // An exception escaping a callback is reported there too.
  std::promise<void> called;
  client.acquire_async(AcquireRequest({"obs:cb"}, 5000ms), [&](AcquireResult) {
    called.set_value();
    throw std::runtime_error("callback failure");
  });
  ASSERT_EQ(called.get_future().wait_for(5s), std::future_status::ready);
  ASSERT_TRUE(eventually([&] {
    return log.count(LogLevel::error, "exception escaped a acquire callback: callback failure") ==
           1;
  }));

  // A Mutex unlock that fails without an on_error handler: to the log as well.
  Mutex m(client, "obs:mutex");
  m.unlock();  // not held by this thread
  EXPECT_EQ(log.count(LogLevel::error, "unlock of 'obs:mutex' by a thread that does not hold it"),
            1u);
}

TEST(Observer, OnWarningStillTakesNodeWarningsWhenSet) {
  RedisCluster cluster(1);
  LogLines log;
  std::mutex m;
  std::vector<std::string> warnings;
  Config config = test::fast_config(cluster.node_list());
  config.log = log.handler();
  config.on_warning = [&](const std::string& w) {
    std::lock_guard<std::mutex> lock(m);
    warnings.push_back(w);
  };
  Client client(config);
  ASSERT_TRUE(eventually([&] {
    std::lock_guard<std::mutex> lock(m);
    return !warnings.empty();
  }));
  EXPECT_EQ(log.count(LogLevel::warning, ""), 0u);
}

// Issue 34: a lock of acquire() has no watchdog. Its loss counts when its release (or extend)
// finds that a quorum no longer holds it: once per token, with what the client knows of why.
TEST(Observer, APlainLockReleasedAfterItsTtlIsLostOnceAsReleasedAfterExpiry) {
  RedisCluster cluster(3);
  auto rec = std::make_shared<Recorder>();
  Client client(observed(cluster.node_list(), rec));
  auto r = client.acquire(AcquireRequest({"obs:plain"}, 150ms));
  ASSERT_TRUE(r) << r.message();
  ASSERT_TRUE(eventually([&] { return cluster.count_existing("redlock:obs:plain") == 0; }, 3s));
  EXPECT_EQ(client.release(r.lock).error, Errc::not_held);
  EXPECT_EQ(client.release(r.lock).error, Errc::not_held);  // again: the same loss
  auto lost = rec->lost_events();
  ASSERT_EQ(lost.size(), 1u);
  EXPECT_EQ(lost[0].reason, LostReason::released_after_expiry);
  EXPECT_EQ(lost[0].error, Errc::lock_lost);
  EXPECT_EQ(lost[0].resources, std::vector<std::string>{"obs:plain"});
}

TEST(Observer, APlainLockWhoseKeysVanishedWithinItsValidityIsLostAsKeysGone) {
  RedisCluster cluster(3);
  auto rec = std::make_shared<Recorder>();
  Config config = observed(cluster.node_list(), rec);
  Client client(config);
  auto r = client.acquire(AcquireRequest({"obs:gone"}, 20s));
  ASSERT_TRUE(r) << r.message();
  for (std::size_t i = 0; i < cluster.size(); ++i)
    cluster[i].command({"DEL", config.key_prefix + "obs:gone"});
  EXPECT_EQ(client.extend(r.lock).error, Errc::not_held);
  EXPECT_EQ(client.release(r.lock).error, Errc::not_held);
  auto lost = rec->lost_events();
  ASSERT_EQ(lost.size(), 1u);
  EXPECT_EQ(lost[0].reason, LostReason::keys_gone);
  // A lock released in time is no loss.
  auto ok = client.acquire(AcquireRequest({"obs:kept"}, 20s));
  ASSERT_TRUE(ok);
  EXPECT_TRUE(client.release(ok.lock));
  EXPECT_EQ(rec->lost_events().size(), 1u);
}

TEST(Observer, AHeldLockLostByItsWatchdogIsNotCountedAgainByItsRelease) {
  RedisCluster cluster(3);
  auto rec = std::make_shared<Recorder>();
  Client client(observed(cluster.node_list(), rec));
  auto h = client.hold(AcquireRequest({"obs:once"}, 150ms));
  ASSERT_TRUE(h) << h.message();
  ASSERT_TRUE(eventually([&] { return !rec->lost_events().empty(); }, 3s));
  // Declared lost before its keys expire; once they have, the release finds them gone.
  ASSERT_TRUE(eventually([&] { return cluster.count_existing("redlock:obs:once") == 0; }, 3s));
  EXPECT_EQ(h.lock.release().error, Errc::not_held);
  EXPECT_EQ(rec->lost_events().size(), 1u);
}

TEST(Observer, AHeldLockWhoseKeysVanishedIsCountedByItsReleaseIfTheWatchdogHadNot) {
  RedisCluster cluster(3);
  auto rec = std::make_shared<Recorder>();
  Config config = observed(cluster.node_list(), rec);
  config.watchdog_lease = 30s;  // the next renewal is 10 s away
  Client client(config);
  auto h = client.hold("obs:held");
  ASSERT_TRUE(h) << h.message();
  for (std::size_t i = 0; i < cluster.size(); ++i)
    cluster[i].command({"DEL", config.key_prefix + "obs:held"});
  EXPECT_EQ(h.lock.release().error, Errc::not_held);
  auto lost = rec->lost_events();
  ASSERT_EQ(lost.size(), 1u);
  EXPECT_EQ(lost[0].reason, LostReason::keys_gone);
}

TEST(Observer, PersistenceWarningsReachTheObserverOnEveryHandshake) {
  RedisCluster cluster(1);  // no AOF
  auto rec = std::make_shared<Recorder>();
  Client client(observed(cluster.node_list(), rec));
  auto count = [&] {
    std::lock_guard<std::mutex> lock(rec->m);
    return std::count_if(rec->node_warnings.begin(), rec->node_warnings.end(),
                         [](const auto& w) { return w.first == NodeWarning::persistence; });
  };
  ASSERT_TRUE(eventually([&] { return count() >= 1; }));
  cluster[0].command({"CLIENT", "KILL", "TYPE", "normal"});  // a new handshake warns again
  EXPECT_TRUE(eventually([&] { return count() >= 2; }, 5s));
}

}  // namespace
}  // namespace redlock
