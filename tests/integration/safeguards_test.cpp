// Restart safeguards, checked when a node connects: a replica or a Redis Cluster node is
// refused, the same server listed twice votes once and is named, persistence that forgets
// locks is warned about, and (optionally) a freshly restarted node is not eligible until the
// largest lease has passed.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
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

std::string url(const RedisServer& s) { return s.url(); }

Config config_for(const std::vector<std::string>& urls) {
  std::string list;
  for (const auto& u : urls) list += (list.empty() ? "" : ",") + u;
  Config c = test::fast_config(list);
  c.on_warning = [](const std::string&) {};  // the fixture's servers have no persistence
  return c;
}

// Collects warnings, thread-safe (they arrive on the client's loop thread).
struct WarningLog {
  std::mutex m;
  std::vector<std::string> lines;
  std::function<void(const std::string&)> handler() {
    return [this](const std::string& w) {
      std::lock_guard<std::mutex> lock(m);
      lines.push_back(w);
    };
  }
  std::vector<std::string> matching(const std::string& node, const std::string& text) {
    std::lock_guard<std::mutex> lock(m);
    std::vector<std::string> out;
    for (const auto& l : lines)
      if (l.find(node) != std::string::npos && l.find(text) != std::string::npos) out.push_back(l);
    return out;
  }
};

// The status row of a node, once its connection has been judged.
NodeStatus row_of(Client& client, std::size_t i) { return client.status().at(i); }

TEST(Safeguards, AReplicaIsRefusedAtConnectNamingItsMaster) {
  RedisCluster masters(2);
  RedisServer replica({"--replicaof", "127.0.0.1", std::to_string(masters[0].port())});
  Client client(config_for({url(masters[0]), url(masters[1]), url(replica)}));
  // An acquire decides once a quorum answered: wait until the replica was judged.
  ASSERT_TRUE(eventually([&] { return row_of(client, 2).error == Errc::node_not_master; }))
      << row_of(client, 2).detail;

  auto r = client.acquire(AcquireRequest({"replicated"}, 5000ms));
  ASSERT_TRUE(r) << "the two masters are a quorum of three: " << r.message();
  const auto& vote = r.votes.nodes[2];
  EXPECT_EQ(vote.vote, Vote::failed);
  EXPECT_EQ(vote.error, Errc::node_not_master) << r.votes.to_string();
  EXPECT_NE(vote.detail.find("replica"), std::string::npos) << vote.detail;
  EXPECT_NE(vote.detail.find(std::to_string(masters[0].port())), std::string::npos)
      << "names its master: " << vote.detail;

  auto row = row_of(client, 2);
  EXPECT_FALSE(row.up);
  EXPECT_EQ(row.error, Errc::node_not_master) << row.detail;
  ASSERT_TRUE(client.release(r.lock));
}

TEST(Safeguards, WithoutTheRoleCheckAReplicaOnlyFailsOnWrites) {
  // The contrast: what a user meets without the check (READONLY on every acquire). Two nodes:
  // the verdict needs the replica's answer.
  RedisServer master;
  RedisServer replica({"--replicaof", "127.0.0.1", std::to_string(master.port())});
  Config config = config_for({url(master), url(replica)});
  config.check_role = false;
  Client client(config);
  auto r = client.acquire(AcquireRequest({"replicated"}, 5000ms));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.votes.nodes[1].error, Errc::redis_readonly) << r.votes.to_string();
}

TEST(Safeguards, AClusterModeNodeIsRefusedAtConnect) {
  RedisCluster masters(2);
  RedisServer clustered({"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"});
  Client client(config_for({url(masters[0]), url(masters[1]), url(clustered)}));
  ASSERT_TRUE(eventually([&] { return row_of(client, 2).error == Errc::node_not_master; }))
      << row_of(client, 2).detail;

  auto r = client.acquire(AcquireRequest({"clustered"}, 5000ms));
  ASSERT_TRUE(r) << r.message();
  EXPECT_EQ(r.votes.nodes[2].error, Errc::node_not_master) << r.votes.to_string();
  EXPECT_NE(r.votes.nodes[2].detail.find("Cluster"), std::string::npos) << r.votes.nodes[2].detail;
  ASSERT_TRUE(client.release(r.lock));
}

TEST(Safeguards, ARefusedMajorityGivesNoQuorumNeverAGrant) {
  RedisServer master;
  RedisServer replica1({"--replicaof", "127.0.0.1", std::to_string(master.port())});
  RedisServer replica2({"--replicaof", "127.0.0.1", std::to_string(master.port())});
  Client client(config_for({url(master), url(replica1), url(replica2)}));
  auto r = client.acquire(AcquireRequest({"one-master"}, 5000ms));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error, Errc::no_quorum) << r.message();
  EXPECT_EQ(r.votes.nodes[1].error, Errc::node_not_master);
  EXPECT_EQ(r.votes.nodes[2].error, Errc::node_not_master);
  // The clean-up is sent before the result is delivered, and runs on the library's connection:
  // it lands at once, but not necessarily before a command on another connection.
  EXPECT_TRUE(eventually([&] {
    return master.command({"EXISTS", "redlock:one-master"}) == "0";
  })) << "the attempt did not clean up";
}

TEST(Safeguards, TheSameServerUnderTwoAddressesIsRefusedOnce) {
  RedisCluster cluster(2);
  // 127.0.0.1:P and localhost:P are one server (one run_id).
  std::string alias = "redis://localhost:" + std::to_string(cluster[0].port());
  Client client(config_for({url(cluster[0]), alias, url(cluster[1])}));

  // Both addresses connect; whichever is judged second is refused, naming the other.
  ASSERT_TRUE(eventually(
      [&] {
        auto rows = client.status();
        return rows[0].error == Errc::duplicate_node || rows[1].error == Errc::duplicate_node;
      },
      5s));
  auto rows = client.status();
  std::size_t dup = rows[0].error == Errc::duplicate_node ? 0 : 1;
  EXPECT_TRUE(rows[1 - dup].up) << rows[1 - dup].detail;
  EXPECT_NE(rows[dup].detail.find(rows[1 - dup].address), std::string::npos)
      << "names the other address: " << rows[dup].detail;

  auto r = client.acquire(AcquireRequest({"aliased"}, 5000ms));
  ASSERT_TRUE(r) << r.message();
  EXPECT_EQ(r.votes.yes(), 2u) << "the server voted once: " << r.votes.to_string();
  EXPECT_EQ(r.votes.nodes[dup].error, Errc::duplicate_node) << r.votes.to_string();
  ASSERT_TRUE(client.release(r.lock));
}

// While a node replays its AOF after a restart, INFO says aof_enabled:0 beside loading:1 (Redis
// turns AOF off for the replay): a client that connects then asks the config, and does not warn
// that persistence is off.
TEST(Safeguards, ANodeReplayingItsAofIsNotWarnedAboutAsPersistenceOff) {
  // 20,000 writes replayed at 100 us each: about 2 s of loading, during which the server answers
  // between every 1,024 of them (INFO and CONFIG GET; most other commands get LOADING).
  RedisServer node({"--appendonly", "yes", "--appendfsync", "always", "--key-load-delay", "100"});
  ASSERT_EQ(node.command({"EVAL", "for i = 1, 20000 do redis.call('SET', 'k' .. i, 'v') end", "0"}),
            "(nil)");
  WarningLog log;
  Config config = config_for({url(node)});
  config.on_warning = log.handler();
  config.connect_timeout = 1000ms;
  config.request_timeout = 1000ms;
  Client client(config);
  ASSERT_TRUE(eventually([&] { return test::connected_to_all(client); }, 5s));

  // The client reconnects while the new process loads; a reader of INFO on its own connections
  // shows that there was such a time.
  std::atomic<bool> restarted{false}, seen_loading{false};
  std::thread reader([&] {
    while (!restarted && !seen_loading) {
      if (node.command({"INFO", "persistence"}).find("loading:1") != std::string::npos)
        seen_loading = true;
      std::this_thread::sleep_for(10ms);
    }
  });
  node.restart();  // returns once PING answers: the replay is over
  restarted = true;
  reader.join();
  EXPECT_TRUE(seen_loading) << "the restarted node was never seen loading";
  auto r = client.acquire(AcquireRequest({"replayed"}, 5000ms, 3000ms));
  ASSERT_TRUE(r) << r.message();
  ASSERT_TRUE(client.release(r.lock));
  EXPECT_TRUE(log.matching(node.address(), "").empty())
      << "warned: " << log.matching(node.address(), "").front();
}

TEST(Safeguards, PersistenceThatForgetsLocksIsWarnedAboutOncePerNode) {
  RedisServer none;  // no AOF
  RedisServer everysec({"--appendonly", "yes", "--appendfsync", "everysec"});
  RedisServer always({"--appendonly", "yes", "--appendfsync", "always"});
  WarningLog log;
  Config config = config_for({url(none), url(everysec), url(always)});
  config.on_warning = log.handler();
  Client client(config);
  auto r = client.acquire(AcquireRequest({"durable"}, 5000ms));
  ASSERT_TRUE(r) << r.message();
  ASSERT_TRUE(client.release(r.lock));

  ASSERT_TRUE(eventually([&] {
    return !log.matching(none.address(), "appendonly no").empty() &&
           !log.matching(everysec.address(), "appendfsync everysec").empty();
  }));
  EXPECT_TRUE(log.matching(always.address(), "").empty()) << "appendfsync always is enough";
  EXPECT_NE(log.matching(none.address(), "").front().find("appendfsync always"), std::string::npos)
      << "says what to do";

  auto rows = client.status();
  EXPECT_EQ(rows[0].warnings.size(), 1u);
  EXPECT_EQ(rows[1].warnings.size(), 1u);
  EXPECT_TRUE(rows[2].warnings.empty());

  // A reconnect does not repeat it.
  none.restart();
  ASSERT_TRUE(eventually([&] { return client.status()[0].up; }, 5s));
  EXPECT_EQ(log.matching(none.address(), "").size(), 1u);
}

TEST(Safeguards, PersistenceCheckCanBeTurnedOff) {
  RedisServer none;
  WarningLog log;
  Config config = config_for({url(none)});
  config.check_persistence = false;
  config.on_warning = log.handler();
  Client client(config);
  auto r = client.acquire(AcquireRequest({"quiet"}, 5000ms));
  ASSERT_TRUE(r) << r.message();
  ASSERT_TRUE(client.release(r.lock));
  EXPECT_TRUE(log.matching("", "").empty());
}

// The hazard of an empty restart, and the client-side delayed restart that prevents it.
// A holds the lock on nodes 0 and 1: node 2 was out of A's reach when it acquired (shown here by
// giving A a third address where nobody listens). Node 1 crashes and restarts empty. B then
// asks: node 0 says no, but nodes 1 (empty) and 2 say yes: two holders.
struct RestartScene {
  RedisCluster cluster{3};
  RedisServer unreachable;
  static constexpr Milliseconds kTtl{2000};

  // With the guard on, a node is eligible once its uptime (whole seconds) reaches the lease:
  // the scene starts with servers older than that.
  RestartScene() {
    unreachable.stop();
    std::this_thread::sleep_for(kTtl + 1s);
  }

  Config config(bool guard, bool partitioned) {
    Config c = config_for(
        {url(cluster[0]), url(cluster[1]), partitioned ? unreachable.url() : url(cluster[2])});
    c.ttl = kTtl;
    c.watchdog_lease = kTtl;
    if (guard) c.restart_guard = kTtl;
    return c;
  }

  // A's grant on nodes 0 and 1 only, then node 1 restarted empty; returns A's lock.
  Lock hold_on_two_then_restart(Client& a) {
    auto r = a.acquire(AcquireRequest({"stock"}, kTtl));
    EXPECT_TRUE(r) << r.message();
    EXPECT_EQ(r.votes.yes(), 2u) << r.votes.to_string();
    cluster[1].kill9();
    cluster[1].restart();
    return r.lock;
  }
};

TEST(Safeguards, WithoutTheRestartGuardAnEmptyRestartGrantsAHeldLockTwice) {
  RestartScene scene;
  Client a(scene.config(false, true)), b(scene.config(false, false));
  auto held = scene.hold_on_two_then_restart(a);
  ASSERT_TRUE(eventually([&] { return b.status()[1].up; }, 5s));
  auto r = b.acquire(AcquireRequest({"stock"}, RestartScene::kTtl));
  EXPECT_TRUE(r) << "the hazard this guard exists for did not show: " << r.message();
  if (r) (void)b.release(r.lock);
  (void)a.release(held);
}

TEST(Safeguards, WithTheRestartGuardAFreshlyRestartedNodeIsNotEligible) {
  RestartScene scene;
  Client a(scene.config(true, true)), b(scene.config(true, false));
  auto held = scene.hold_on_two_then_restart(a);
  ASSERT_TRUE(eventually([&] { return b.status()[1].error == Errc::node_restarting; }, 5s))
      << b.status()[1].detail;
  auto r = b.acquire(AcquireRequest({"stock"}, RestartScene::kTtl));
  ASSERT_FALSE(r) << "granted while A holds: " << r.votes.to_string();
  EXPECT_EQ(r.error, Errc::not_acquired) << r.message();
  EXPECT_EQ(r.votes.nodes[1].error, Errc::node_restarting) << r.votes.to_string();
  EXPECT_NE(r.votes.nodes[1].detail.find("restart guard"), std::string::npos)
      << r.votes.nodes[1].detail;

  // Once the largest lease has passed since the restart, the node votes again.
  (void)a.release(held);  // node 1 is not eligible for A either: only node 0 deletes
  ASSERT_TRUE(eventually([&] { return b.status()[1].up; }, 6s)) << b.status()[1].detail;
  auto later = b.acquire(AcquireRequest({"stock"}, RestartScene::kTtl));
  ASSERT_TRUE(later) << later.message();
  EXPECT_TRUE(eventually([&] {
    return scene.cluster.count_holding("redlock:stock", later.lock.token) == 3;
  })) << later.votes.to_string();
  ASSERT_TRUE(b.release(later.lock));
}

TEST(Safeguards, WithTheRestartGuardANodeOfUnknownAgeWaitsAsIfJustRestarted) {
  RedisServer master;
  RedisServer hidden({"--rename-command", "INFO", ""});  // INFO gone: its uptime cannot be read
  Config config = config_for({url(master), url(hidden)});
  config.ttl = config.watchdog_lease = config.restart_guard = 2000ms;
  std::this_thread::sleep_for(3s);  // the readable node is old enough
  Client client(config);
  auto r = client.acquire(AcquireRequest({"aged"}, 2000ms));
  ASSERT_FALSE(r) << "granted by a node whose age is unknown: " << r.votes.to_string();
  EXPECT_EQ(r.votes.nodes[1].error, Errc::node_restarting) << r.votes.to_string();
  EXPECT_TRUE(client.status()[0].up) << "the node whose age is known votes";
}

}  // namespace
}  // namespace redlock
