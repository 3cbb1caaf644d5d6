// What the fault tools need from tests/support's RedisServer: an extra environment (the clock
// shim) kept across restarts, and restarts that keep the data when persistence is on.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <time.h>

#include <filesystem>
#include <sstream>

#include "clock_skew.hpp"
#include "redis_server.hpp"

namespace redlock::chaos {
namespace {

using namespace std::chrono_literals;
using redlock::test::RedisServer;

// redis-server's TIME ahead of real time, in seconds (rounded down).
long long seconds_ahead(const RedisServer& server) {
  std::istringstream in(server.command({"TIME"}));
  long long sec = 0;
  in >> sec;
  return sec - static_cast<long long>(::time(nullptr));
}

TEST(RedisServerSupport, RestartWithAppendOnlyFsyncAlwaysKeepsTheData) {
  RedisServer server({"--appendonly", "yes", "--appendfsync", "always"});
  ASSERT_EQ(server.command({"SET", "k", "v", "PX", "60000"}), "OK");
  server.kill9();
  server.restart();
  EXPECT_EQ(server.command({"GET", "k"}), "v");
  EXPECT_EQ(server.command({"CONFIG", "GET", "appendonly"}), "appendonly\nyes");
}

TEST(RedisServerSupport, RestartWithoutPersistenceStartsEmpty) {
  RedisServer server;
  ASSERT_EQ(server.command({"SET", "k", "v"}), "OK");
  server.restart();
  EXPECT_EQ(server.command({"GET", "k"}), "(nil)");
}

TEST(RedisServerSupport, EnvironmentGoesToTheServerAndSetEnvToItsRestart) {
  char tmpl[] = "/tmp/redlock-chaos-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  std::string dir = tmpl;
  {
    ClockSkew ahead(dir + "/ahead");
    ahead.set(3600s);
    RedisServer server(std::vector<std::string>{}, std::string{}, ahead.env());
    EXPECT_EQ(server.env(), ahead.env());
    long long skew = seconds_ahead(server);
    EXPECT_GE(skew, 3599);
    EXPECT_LE(skew, 3601);

    server.set_env({});  // the running process keeps its environment until restarted
    skew = seconds_ahead(server);
    EXPECT_GE(skew, 3599);
    server.restart();
    skew = seconds_ahead(server);
    EXPECT_GE(skew, -1);
    EXPECT_LE(skew, 1);
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

TEST(RedisServerSupport, ClusterTakesAnEnvironmentPerNode) {
  char tmpl[] = "/tmp/redlock-chaos-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  std::string dir = tmpl;
  {
    ClockSkew ahead(dir + "/ahead");
    ahead.set(3600s);
    redlock::test::RedisCluster cluster(3, {}, {}, {{}, ahead.env()});
    EXPECT_LE(std::abs(seconds_ahead(cluster[0])), 1);
    EXPECT_GE(seconds_ahead(cluster[1]), 3599);
    EXPECT_LE(std::abs(seconds_ahead(cluster[2])), 1);
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

}  // namespace
}  // namespace redlock::chaos
