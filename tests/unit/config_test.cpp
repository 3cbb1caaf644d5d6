#include "redlock/config.hpp"

#include <gtest/gtest.h>

#include <cstdlib>

#include "redlock/errors.hpp"

namespace redlock {
namespace {

using namespace std::chrono_literals;

std::vector<NodeAddress> parse_ok(std::string_view list) {
  std::vector<NodeAddress> nodes;
  std::string message;
  auto ec = parse_node_list(list, nodes, message);
  EXPECT_FALSE(ec) << list << ": " << message;
  return nodes;
}

// Refused with invalid_config and a message that contains `names`.
void expect_refused(std::string_view list, std::string_view names) {
  std::vector<NodeAddress> nodes;
  std::string message;
  auto ec = parse_node_list(list, nodes, message);
  EXPECT_EQ(ec, Errc::invalid_config) << list;
  EXPECT_NE(message.find(names), std::string::npos)
      << "message for '" << list << "' was: " << message;
}

TEST(NodeList, ParsesHostsPortsDatabasesAndCredentials) {
  auto nodes = parse_ok(
      "redis://127.0.0.1:7001, redis://user:p%40ss@db.example:6380/2,redis://:secret@[::1]:7003");
  ASSERT_EQ(nodes.size(), 3u);
  EXPECT_EQ(nodes[0].host, "127.0.0.1");
  EXPECT_EQ(nodes[0].port, 7001);
  EXPECT_EQ(nodes[0].db, 0);
  EXPECT_TRUE(nodes[0].password.empty());
  EXPECT_EQ(nodes[1].host, "db.example");
  EXPECT_EQ(nodes[1].user, "user");
  EXPECT_EQ(nodes[1].password, "p@ss");
  EXPECT_EQ(nodes[1].db, 2);
  EXPECT_EQ(nodes[2].host, "::1");
  EXPECT_EQ(nodes[2].user, "");
  EXPECT_EQ(nodes[2].password, "secret");
  EXPECT_EQ(nodes[2].port, 7003);
}

TEST(NodeList, AddressTextNeverShowsCredentials) {
  auto nodes = parse_ok("redis://u:hunter2@h:1/3,redis://[::1]:2");
  EXPECT_EQ(nodes[0].to_string(), "h:1/3");
  EXPECT_EQ(nodes[1].to_string(), "[::1]:2");
}

// Messages about a bad node list name the bad part, never the password.
TEST(NodeList, ErrorMessagesNeverShowPasswords) {
  for (const char* list : {"redis://alice:s3cret@host:99999", "redis://:s3cret@host",
                           "redis://:s3cret@h:1/x", "redis://u:s3cret@h:1,redis://u:s3cret@h:1",
                           "rediss://alice:s3cret@host:0", "redis://alice:s3cret@[::1:1"}) {
    std::vector<NodeAddress> nodes;
    std::string message;
    auto ec = parse_node_list(list, nodes, message);
    EXPECT_EQ(ec, Errc::invalid_config) << list;
    EXPECT_EQ(message.find("s3cret"), std::string::npos) << message;
    EXPECT_NE(message.find("***"), std::string::npos) << message;
  }
}

TEST(NodeList, RefusesWhatCannotWorkAndNamesTheBadPart) {
  expect_refused("", "empty");
  expect_refused("   ", "empty");
  expect_refused("redis://a:1,,redis://b:2", "empty entry at position 2");
  expect_refused("redis://a:1,", "empty entry");
  expect_refused("rediss2://a:6380", "unknown scheme");
  expect_refused("http://a:1", "unknown scheme 'http'");
  expect_refused("a:1", "'a:1'");
  expect_refused("redis://a", "missing port");
  expect_refused("redis://a:", "missing port");
  expect_refused("redis://:1", "missing host");
  expect_refused("redis://a:0", "out of range");
  expect_refused("redis://a:65536", "out of range");
  expect_refused("redis://a:x1", "'x1' is not a number");
  expect_refused("redis://a:1,redis://A:1", "listed twice");
  expect_refused("redis://a:1/x", "database 'x'");
  expect_refused("redis://a:1/-1", "database '-1'");
  expect_refused("redis://user@a:1", "credentials");
  expect_refused("redis://u:%zz@a:1", "%-escape");
  expect_refused("redis://[::1:1", "unterminated");
  expect_refused("redis://::1:1", "brackets");
}

Config valid_config() {
  Config c = Config::from_node_list("redis://127.0.0.1:7001");
  std::string message;
  EXPECT_FALSE(validate(c, message)) << message;
  return c;
}

void expect_invalid(const Config& c, std::string_view names) {
  std::string message;
  EXPECT_EQ(validate(c, message), Errc::invalid_config);
  EXPECT_NE(message.find(names), std::string::npos) << message;
}

TEST(Config, DefaultsAreValid) {
  auto c = valid_config();
  EXPECT_EQ(c.drift_factor, 0.01);
  EXPECT_EQ(c.key_prefix, "redlock:");
  EXPECT_EQ(c.min_validity_ratio, 0.1);
}

TEST(Config, RefusesOptionsThatCannotWork) {
  auto c = valid_config();
  c.ttl = 2ms;  // drift allowance alone is 2 ms
  expect_invalid(c, "not above its clock drift");
  c = valid_config();
  c.ttl = 0ms;
  expect_invalid(c, "must be positive");
  c = valid_config();
  c.request_timeout = c.ttl;
  expect_invalid(c, "must be below the ttl");
  c = valid_config();
  c.drift_factor = 1.0;
  expect_invalid(c, "drift factor");
  c = valid_config();
  c.drift_factor = -0.1;
  expect_invalid(c, "drift factor");
  c = valid_config();
  c.retry_count = -1;
  expect_invalid(c, "retry count");
  c = valid_config();
  c.connect_timeout = 0ms;
  expect_invalid(c, "connect timeout");
  c = valid_config();
  c.nodes.clear();
  expect_invalid(c, "empty");
  c = valid_config();
  c.min_validity_ratio = 1.0;
  expect_invalid(c, "min validity ratio");
  c = valid_config();
  c.min_validity_ratio = -0.1;
  expect_invalid(c, "min validity ratio");
  c = valid_config();
  c.drift_factor = 0.5;
  c.min_validity_ratio = 0.5;  // nothing would ever be left
  expect_invalid(c, "min validity ratio");
  c = valid_config();
  c.key_prefix = std::string("app", 4);  // "app" and the reserved byte
  expect_invalid(c, "NUL");
}

TEST(NodeList, RedissTurnsTlsOnForThatNodeOnly) {
  auto nodes =
      parse_ok("rediss://u:p%40ss@db.example:6380/2,redis://127.0.0.1:7001,rediss://[::1]:7003");
  ASSERT_EQ(nodes.size(), 3u);
  EXPECT_TRUE(nodes[0].tls);
  EXPECT_EQ(nodes[0].host, "db.example");
  EXPECT_EQ(nodes[0].port, 6380);
  EXPECT_EQ(nodes[0].user, "u");
  EXPECT_EQ(nodes[0].password, "p@ss");
  EXPECT_EQ(nodes[0].db, 2);
  EXPECT_FALSE(nodes[1].tls);
  EXPECT_TRUE(nodes[2].tls);
  EXPECT_EQ(nodes[2].host, "::1");
  // The same server under both schemes is still listed twice.
  expect_refused("redis://a:1,rediss://a:1", "listed twice");
  expect_refused("rediss://a", "missing port");
  expect_refused("redisss://a:1", "unknown scheme");
}

TEST(Config, TlsOptionsAreCheckedTogether) {
  auto c = valid_config();
  EXPECT_FALSE(c.tls.insecure_skip_verify);  // verification is on by default
  c.tls.cert_file = "client.crt";
  expect_invalid(c, "without a key file");
  c = valid_config();
  c.tls.key_file = "client.key";
  expect_invalid(c, "without a certificate file");
  c.tls.cert_file = "client.crt";
  std::string message;
  EXPECT_FALSE(validate(c, message)) << message;
}

TEST(Config, TheSafeguardsAreOnAndTheRestartGuardOffByDefault) {
  auto c = valid_config();
  EXPECT_TRUE(c.check_role);
  EXPECT_TRUE(c.check_duplicates);
  EXPECT_TRUE(c.check_persistence);
  EXPECT_EQ(c.restart_guard.count(), 0);
  c.restart_guard = Milliseconds(-1);
  expect_invalid(c, "restart guard");
  c.restart_guard = longest_duration + Milliseconds(1);
  expect_invalid(c, "longest");
}

TEST(Config, FromNodeListThrowsATypedError) {
  try {
    (void)Config::from_node_list("redis://a:99999");
    FAIL() << "expected redlock::Error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::invalid_config);
    EXPECT_NE(std::string(e.what()).find("out of range"), std::string::npos);
  }
}

TEST(Config, FromEnvReadsREDLOCK_NODES) {
  ::setenv("REDLOCK_NODES", "redis://h1:1,redis://h2:2", 1);
  auto c = Config::from_env();
  ASSERT_EQ(c.nodes.size(), 2u);
  EXPECT_EQ(c.nodes[1].host, "h2");
  ::unsetenv("REDLOCK_NODES");
  EXPECT_THROW((void)Config::from_env(), Error);
}

// Broke the round-trip property of tests/fuzz/fuzz_node_list.cpp: a host nothing can resolve
// was accepted, "[" among them, which does not even survive being written back as a node list.
TEST(Config, HostIsANameOrAnAddress) {
  for (auto list : {"redis://[[]:1", "redis://[abc]:1", "redis://a b:1", "redis://a\tb:1",
                    "redis://[::1%]:1", "redis://[::1 ]:1", "redis://a[:1", "redis://h\x01:1"})
    expect_refused(list, "is not a host name or an IP address");
  auto nodes = parse_ok(
      "redis://a-b.example_1:1,redis://10.0.0.1:2,redis://[::1]:3,redis://[fe80::1%eth0]:4,"
      "redis://[::ffff:10.0.0.1]:5");
  ASSERT_EQ(nodes.size(), 5u);
  EXPECT_EQ(nodes[3].host, "fe80::1%eth0");
}

}  // namespace
}  // namespace redlock
