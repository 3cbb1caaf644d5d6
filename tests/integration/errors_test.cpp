// Bad input and hostile nodes: every case is a typed error naming the node, never a grant,
// a crash or a hang.
#include <gtest/gtest.h>

#include <thread>

#include "fake_server.hpp"
#include "net/scripts.hpp"
#include "redis_server.hpp"
#include "redlock/redlock.hpp"

namespace redlock {
namespace {

using namespace std::chrono_literals;
using test::RedisCluster;

Config config_for(const std::string& list) {
  Config c = Config::from_node_list(list);
  c.request_timeout = 500ms;
  c.retry_delay = 10ms;
  c.retry_jitter = 10ms;
  return c;
}

// Every failed vote carries `code`, and the message names the node.
void expect_failed_votes(const AcquireResult& r, Errc code, std::size_t at_least) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < r.votes.nodes.size(); ++i) {
    const auto& v = r.votes.nodes[i];
    if (v.vote != Vote::failed) continue;
    EXPECT_EQ(v.error, code) << r.votes.address(i) << ": " << v.detail;
    EXPECT_NE(r.message().find(r.votes.address(i)), std::string::npos) << r.message();
    ++n;
  }
  EXPECT_GE(n, at_least) << r.message();
}

TEST(RedisErrors, WrongTypeKeyIsAnErrorNeverAGrant) {
  RedisCluster cluster(5);
  for (std::size_t i = 0; i < 5; ++i) cluster[i].command({"HSET", "redlock:h", "f", "v"});
  Client client(config_for(cluster.node_list()));
  auto r = client.try_acquire("h", 5000ms);
  EXPECT_FALSE(r);
  EXPECT_EQ(r.error, Errc::no_quorum) << r.message();
  expect_failed_votes(r, Errc::redis_wrongtype, 3);  // lost at the 3rd failure
  EXPECT_NE(r.message().find("WRONGTYPE"), std::string::npos) << "the server's text is kept";

  // On one node only: granted by the other four, the odd node reported.
  cluster[0].command({"LPUSH", "redlock:h2", "x"});
  auto g = client.try_acquire("h2", 5000ms);
  ASSERT_TRUE(g) << g.message();
  EXPECT_NE(g.votes.nodes[0].vote, Vote::yes);
  if (g.votes.nodes[0].vote == Vote::failed) {
    EXPECT_EQ(g.votes.nodes[0].error, Errc::redis_wrongtype);
  }
  EXPECT_EQ(cluster[0].command({"TYPE", "redlock:h2"}), "list") << "the foreign key is untouched";
  auto rel = client.release(g.lock);
  EXPECT_TRUE(rel) << rel.message();
}

TEST(RedisErrors, OutOfMemoryOnAMajorityIsTyped) {
  RedisCluster cluster(3);
  for (std::size_t i : {0u, 1u}) {
    cluster[i].command({"CONFIG", "SET", "maxmemory-policy", "noeviction"});
    cluster[i].command({"CONFIG", "SET", "maxmemory", "1"});
  }
  Client client(config_for(cluster.node_list()));
  auto r = client.try_acquire("m", 5000ms);
  EXPECT_EQ(r.error, Errc::no_quorum) << r.message();
  expect_failed_votes(r, Errc::redis_oom, 2);
  EXPECT_TRUE(test::eventually([&] { return cluster.count_existing("redlock:m") == 0u; }));
}

// Without EVAL and EVALSHA the scripts are denied: a fenced acquire runs acquire.lua from its
// first attempt, and every release is a script. A waiting acquire's first attempt is the quick
// command, which needs none: granted, its release is the typed refusal. Without SET, the quick
// acquire of a try_acquire is denied.
TEST(RedisErrors, NoPermissionIsTyped) {
  RedisCluster cluster(3);
  for (std::size_t i = 0; i < 3; ++i)
    ASSERT_EQ(cluster[i].command({"ACL", "SETUSER", "default", "-evalsha", "-eval"}), "OK");
  auto config = config_for(cluster.node_list());
  config.retry_count = 0;
  Client client(config);
  AcquireRequest fenced({"p"}, 5000ms, 50ms);
  fenced.fencing = true;
  auto r = client.acquire(fenced);
  EXPECT_EQ(r.error, Errc::no_quorum) << r.message();
  expect_failed_votes(r, Errc::redis_noperm, 2);
  EXPECT_EQ(cluster.count_existing("redlock:p"), 0u);
  auto waited = client.acquire("w", 5000ms, 50ms);
  ASSERT_TRUE(waited) << waited.message();
  auto rel = client.release(waited.lock);
  EXPECT_EQ(rel.error, Errc::no_quorum) << rel.message();
  for (const auto& v : rel.votes.nodes) {
    if (v.vote == Vote::failed) {
      EXPECT_EQ(v.error, Errc::redis_noperm) << v.detail;
    }
  }

  for (std::size_t i = 0; i < 3; ++i)
    ASSERT_EQ(cluster[i].command({"ACL", "SETUSER", "default", "-set"}), "OK");
  auto q = client.try_acquire("q", 5000ms);
  EXPECT_EQ(q.error, Errc::no_quorum) << q.message();
  expect_failed_votes(q, Errc::redis_noperm, 2);
  EXPECT_EQ(cluster.count_existing("redlock:q"), 0u);
}

// The errors a node has answered with "ERR ..." so far.
long err_count(const test::RedisServer& node) {
  auto stats = node.command({"INFO", "errorstats"});
  auto pos = stats.find("errorstat_ERR:count=");
  return pos == std::string::npos ? 0 : std::stol(stats.substr(pos + 20));
}

// A server older than Redis 7.0 answers the quick acquire (SET with NX and GET) with "ERR syntax
// error" (played here by proxies that spoil the GET option). While the attempt's verdict is open
// those nodes get the acquire script instead, and it is granted; the client never sends the
// quick form again.
TEST(RedisErrors, AServerBeforeRedis7GetsTheScriptInsteadOfTheQuickAcquire) {
  RedisCluster cluster(3);
  std::vector<std::unique_ptr<test::FakeServer>> old;
  std::string list;
  for (std::size_t i = 0; i < 3; ++i) {
    old.push_back(std::make_unique<test::FakeServer>(test::FakeServer::Mode::before_redis7,
                                                     cluster[i].port()));
    list += (i ? "," : "") + old.back()->url();
  }
  Client client(config_for(list));
  auto r = client.try_acquire("old", 5000ms);
  ASSERT_TRUE(r) << r.message();
  EXPECT_EQ(r.attempts, 1);
  // Granted at the quorum: a node that refused the quick form after the verdict is not asked
  // again (its clean-up could overtake the script).
  EXPECT_GE(cluster.count_holding("redlock:old", r.lock.token), 2u);
  std::vector<long> errors;
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_TRUE(test::eventually([&] { return err_count(cluster[i]) >= 1; }))
        << "node " << i << " never refused the quick form";
    errors.push_back(err_count(cluster[i]));
  }
  ASSERT_TRUE(client.release(r.lock));
  auto again = client.try_acquire("old", 5000ms);
  ASSERT_TRUE(again) << again.message();
  EXPECT_TRUE(test::eventually(
      [&] { return cluster.count_holding("redlock:old", again.lock.token) == 3; }));
  for (std::size_t i = 0; i < 3; ++i)
    EXPECT_EQ(err_count(cluster[i]), errors[i]) << "node " << i << ": the quick form again";
  EXPECT_TRUE(client.release(again.lock));
}

// One node of three before Redis 7.0 (behind a proxy, so it answers last): the two others decide
// the first try_acquire before its syntax error comes. That late error still switches the quick
// form off, so the old node is asked with the script from then on and holds the next lock too.
TEST(RedisErrors, ALateSyntaxErrorAlsoEndsTheQuickAcquire) {
  RedisCluster cluster(3);
  test::FakeServer old(test::FakeServer::Mode::before_redis7, cluster[2].port());
  auto list = "redis://127.0.0.1:" + std::to_string(cluster[0].port()) +
              ",redis://127.0.0.1:" + std::to_string(cluster[1].port()) + "," + old.url();
  Client client(config_for(list));
  auto r = client.try_acquire("late", 5000ms);
  ASSERT_TRUE(r) << r.message();
  ASSERT_TRUE(test::eventually([&] { return err_count(cluster[2]) >= 1; }));
  auto errors = err_count(cluster[2]);
  // The server counted the error before the client read it. A request that follows on the same
  // connection is answered after it: once status() has every answer, the client has read it.
  (void)client.status();
  ASSERT_TRUE(client.release(r.lock));
  auto again = client.try_acquire("late", 5000ms);
  ASSERT_TRUE(again) << again.message();
  EXPECT_TRUE(test::eventually([&] {
    return cluster.count_holding("redlock:late", again.lock.token) == 3;
  })) << again.message();
  EXPECT_EQ(err_count(cluster[2]), errors) << "the quick form again";
  EXPECT_TRUE(client.release(again.lock));
}

// A command the scripts run is denied by the ACL (here SET, inside the acquire script): Redis 7
// words it "ERR The user executing the script can't run this command", not NOPERM; it is typed
// as redis_noperm all the same.
TEST(RedisErrors, ACommandDeniedInsideAScriptIsTypedAsNoPermission) {
  RedisCluster cluster(3);
  for (std::size_t i = 0; i < 3; ++i)
    ASSERT_EQ(cluster[i].command({"ACL", "SETUSER", "default", "-set"}), "OK");
  Client client(config_for(cluster.node_list()));
  auto r = client.try_acquire("p", 5000ms);
  EXPECT_EQ(r.error, Errc::no_quorum) << r.message();
  expect_failed_votes(r, Errc::redis_noperm, 2);
  EXPECT_EQ(cluster.count_existing("redlock:p"), 0u);
}

TEST(RedisErrors, ReadOnlyReplicaIsTyped) {
  RedisCluster cluster(3);
  RedisCluster primary(1);
  for (std::size_t i : {0u, 1u})
    cluster[i].command({"REPLICAOF", "127.0.0.1", std::to_string(primary[0].port())});
  // Turned into replicas after the client connected, or with the role check off: the writes
  // fail with READONLY (the role check refuses a replica when it connects: safeguards_test).
  Config config = config_for(cluster.node_list());
  config.check_role = false;
  Client client(config);
  auto r = client.try_acquire("ro", 5000ms);
  EXPECT_EQ(r.error, Errc::no_quorum) << r.message();
  expect_failed_votes(r, Errc::redis_readonly, 2);
}

TEST(Auth, RightPasswordWorksWrongPasswordFailsClearly) {
  RedisCluster cluster(3, {"--requirepass", "s3cret"}, "s3cret");
  {
    Client client(config_for(cluster.node_list(":s3cret")));
    auto r = client.try_acquire("a", 5000ms);
    ASSERT_TRUE(r) << r.message();
    EXPECT_EQ(r.votes.failed(), 0u);
    EXPECT_TRUE(client.release(r.lock));
  }
  {
    Client client(config_for(cluster.node_list(":wrong")));
    auto r = client.try_acquire("a", 5000ms);
    EXPECT_EQ(r.error, Errc::no_quorum) << r.message();
    expect_failed_votes(r, Errc::redis_auth_failed, 2);
  }
  {
    Client client(config_for(cluster.node_list()));  // no password at all
    auto r = client.try_acquire("a", 5000ms);
    EXPECT_EQ(r.error, Errc::no_quorum) << r.message();
    expect_failed_votes(r, Errc::redis_noauth, 2);
  }
}

TEST(Auth, AclUserAndDatabaseFromTheUrl) {
  RedisCluster cluster(3);
  for (std::size_t i = 0; i < 3; ++i)
    ASSERT_EQ(cluster[i].command({"ACL", "SETUSER", "locker", "on", ">pw", "~*", "&*", "+@all"}),
              "OK");
  std::string list;
  for (std::size_t i = 0; i < 3; ++i)
    list += (i ? "," : "") + std::string("redis://locker:pw@") + cluster[i].address() + "/3";
  Client client(config_for(list));
  auto r = client.try_acquire("acl", 5000ms);
  ASSERT_TRUE(r) << r.message();
  EXPECT_EQ(cluster[0].command({"SELECT", "3"}), "OK");
  EXPECT_EQ(cluster[0].command({"GET", "redlock:acl"}), "(nil)") << "not in db 0";
}

TEST(BadInput, ZeroTtlEmptyKeyEmptyTokenAreInvalidArguments) {
  RedisCluster cluster(1);
  Client client(config_for(cluster.node_list()));
  auto zero = client.try_acquire("k", 0ms);
  EXPECT_EQ(zero.error, Errc::invalid_argument);
  EXPECT_NE(zero.message().find("ttl"), std::string::npos);
  auto negative = client.try_acquire("k", -5ms);
  EXPECT_EQ(negative.error, Errc::invalid_argument);
  auto empty = client.try_acquire("", 1000ms);
  EXPECT_EQ(empty.error, Errc::invalid_argument);
  EXPECT_NE(empty.message().find("empty"), std::string::npos);
  auto dup = client.acquire(AcquireRequest{{"x", "x"}, 1000ms, 0ms});
  EXPECT_EQ(dup.error, Errc::invalid_argument);
  Lock no_token("k", "");
  EXPECT_EQ(client.release(no_token).error, Errc::invalid_argument);
  EXPECT_EQ(client.extend(no_token, 1000ms).error, Errc::invalid_argument);
  EXPECT_EQ(cluster.count_existing("redlock:k"), 0u);
}

TEST(BadInput, InvalidConfigurationThrowsATypedError) {
  Config c = Config::from_node_list("redis://127.0.0.1:1");
  c.request_timeout = c.ttl;
  try {
    Client client(c);
    FAIL() << "expected redlock::Error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::invalid_config);
    EXPECT_NE(std::string(e.what()).find("request timeout"), std::string::npos);
  }
}

TEST(Unreachable, ClosedPortsFailFastWithTheCause) {
  // Ports nobody listens on: take a free one from a server we then stop.
  std::string list;
  {
    RedisCluster gone(3);
    list = gone.node_list();
  }
  Client client(config_for(list));
  auto start = Clock::now();
  auto r = client.acquire("x", 1000ms, 300ms);
  EXPECT_EQ(r.error, Errc::no_quorum) << r.message();
  EXPECT_LT(Clock::now() - start, 2s);
  EXPECT_GE(r.votes.failed(), 2u);
  for (const auto& v : r.votes.nodes) {
    EXPECT_NE(v.vote, Vote::yes);
    if (v.vote != Vote::failed) continue;  // the verdict may come before the last node's
    EXPECT_TRUE(v.error == Errc::connect_failed || v.error == Errc::not_connected ||
                v.error == Errc::connection_lost)
        << v.error.message() << " " << v.detail;
  }
}

TEST(Scripts, EmbeddedDigestsMatchWhatRedisComputes) {
  RedisCluster cluster(1);
  for (const auto* s : {&detail::script_acquire, &detail::script_renew, &detail::script_release})
    EXPECT_EQ(cluster[0].command({"SCRIPT", "LOAD", s->body}), s->sha) << s->name;
}

}  // namespace
}  // namespace redlock
