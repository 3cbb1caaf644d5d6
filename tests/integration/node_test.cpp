// Connection behaviour: reconnects, timeouts, late replies, status.
#include <gtest/gtest.h>

#include <thread>

#include "redis_server.hpp"
#include "redlock/redlock.hpp"
#include "test_config.hpp"

namespace redlock {
namespace {

using namespace std::chrono_literals;
using test::RedisCluster;

using test::fast_config;

TEST(Node, ReconnectsAfterARestart) {
  RedisCluster cluster(3);
  Client client(fast_config(cluster));
  ASSERT_TRUE(client.try_acquire("a", 1000ms));
  for (std::size_t i = 0; i < 3; ++i) cluster[i].kill9();
  auto down = client.try_acquire("b", 1000ms);
  EXPECT_EQ(down.error, Errc::no_quorum) << down.message();
  for (std::size_t i = 0; i < 3; ++i) cluster[i].restart();
  // Back-off is at most 100 ms here: the client is whole again well within the wait.
  auto back = client.acquire("c", 1000ms, 3000ms);
  ASSERT_TRUE(back) << back.message();
  EXPECT_GE(back.votes.yes(), 2u);
}

TEST(Node, RequestTimeoutClosesTheConnectionSoALateReplyIsNeverMisread) {
  RedisCluster cluster(3);
  Client client(fast_config(cluster));
  ASSERT_TRUE(client.try_acquire("warmup", 1000ms));
  std::this_thread::sleep_for(50ms);  // let every warmup reply arrive
  cluster[0].pause();
  auto first = client.try_acquire("first", 5000ms);
  ASSERT_TRUE(first) << first.message();
  std::this_thread::sleep_for(400ms);  // node 0's request times out; its connection is closed
  cluster[0].resume();
  // From here every verdict needs node 0's own answer: 2 of the 2 remaining nodes.
  cluster[2].kill9();
  bool up = false;
  for (int i = 0; i < 100 && !up; ++i) {
    auto rows = client.status();
    up = rows.size() == 3 && rows[0].up;
    if (!up) std::this_thread::sleep_for(20ms);
  }
  ASSERT_TRUE(up) << "node 0 came back";
  // The paused server may have run our buffered acquire after all (then it holds our token) or
  // not. Either way node 0's vote must describe the server's real state, not a stale reply.
  bool holds = cluster[0].command({"GET", "redlock:first"}) == first.lock.token;
  auto e = client.extend(first.lock, 5000ms);
  EXPECT_EQ(e.votes.nodes[0].vote, holds ? Vote::yes : Vote::no) << e.message();
  auto second = client.try_acquire("second", 5000ms);
  ASSERT_TRUE(second) << second.message();
  EXPECT_EQ(second.votes.nodes[0].vote, Vote::yes) << second.message();
  EXPECT_EQ(cluster[0].command({"GET", "redlock:second"}), second.lock.token);
}

TEST(Node, TimedOutRequestIsReportedAsSuch) {
  RedisCluster cluster(3);
  Client client(fast_config(cluster));
  ASSERT_TRUE(client.try_acquire("warmup", 1000ms));
  std::this_thread::sleep_for(50ms);  // let every warmup reply arrive
  cluster[0].pause();
  cluster[1].pause();
  auto r = client.try_acquire("x", 5000ms);
  cluster[0].resume();
  cluster[1].resume();
  EXPECT_EQ(r.error, Errc::no_quorum) << r.message();
  EXPECT_EQ(r.votes.nodes[0].error, Errc::request_timeout) << r.message();
  EXPECT_EQ(r.votes.nodes[1].error, Errc::request_timeout) << r.message();
}

TEST(Node, HostNamesAreResolvedAndAnUnresolvableOneIsAFailedVote) {
  RedisCluster cluster(3);
  std::string list;
  for (std::size_t i = 0; i < cluster.size(); ++i)
    list += (i ? "," : "") + std::string("redis://localhost:") + std::to_string(cluster[i].port());
  Config c = Config::from_node_list(list);
  c.retry_delay = 20ms;
  Client client(c);
  auto r = client.acquire("named", 1000ms, 3000ms);
  ASSERT_TRUE(r) << r.message();
  EXPECT_TRUE(
      test::eventually([&] { return cluster.count_holding("redlock:named", r.lock.token) == 3; }));
  Config bad = Config::from_node_list("redis://no-such-host.invalid:6379");
  bad.retry_delay = 10ms;
  Client unresolvable(bad);
  auto u = unresolvable.try_acquire("x", 1000ms);
  EXPECT_EQ(u.error, Errc::no_quorum) << u.message();
  EXPECT_EQ(u.votes.nodes[0].vote, Vote::failed) << u.message();
}

TEST(Node, StatusReportsEveryNode) {
  RedisCluster cluster(3);
  Client client(fast_config(cluster));
  ASSERT_TRUE(client.try_acquire("warmup", 1000ms));
  cluster[2].kill9();
  auto rows = client.status();
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_TRUE(rows[0].up);
  EXPECT_FALSE(rows[0].server_version.empty());
  EXPECT_GT(rows[0].round_trip.count(), 0);
  EXPECT_EQ(rows[0].address, cluster[0].address());
  EXPECT_FALSE(rows[2].up);
  EXPECT_TRUE(rows[2].error);
}

}  // namespace
}  // namespace redlock
