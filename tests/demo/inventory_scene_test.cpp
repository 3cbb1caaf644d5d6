// The inventory scene of tools/demo.sh in its quick form (100 items, 150 requests, 3 shop
// processes x 3 threads), against five lock masters and a storage Redis started here. Without a
// lock the stock must be oversold; with redlock-cpp exactly the stock must be sold, also while
// two of the five lock nodes are killed by the scene.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <unistd.h>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <string>

#include "redis_server.hpp"

namespace {

using namespace std::chrono_literals;
using redlock::test::RedisCluster;
using redlock::test::RedisServer;

// True while `pid` (a child of this process) has not exited; does not reap it.
bool alive(pid_t pid) {
  siginfo_t info{};
  if (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) != 0)
    return false;
  return info.si_pid == 0;
}

std::map<std::string, long long> read_report(const std::string& path) {
  std::map<std::string, long long> values;
  std::ifstream f(path);
  for (std::string line; std::getline(f, line);) {
    const auto eq = line.find('=');
    if (eq != std::string::npos) values[line.substr(0, eq)] = std::stoll(line.substr(eq + 1));
  }
  return values;
}

TEST(InventoryScene, OversoldWithoutLockExactWithRedlockAlsoWithTwoNodesKilled) {
  RedisCluster nodes(5);
  RedisServer storage;
  const pid_t killed[2] = {nodes[1].pid(), nodes[3].pid()};
  char report_path[] = "/tmp/redlock-inventory-report-XXXXXX";
  const int fd = ::mkstemp(report_path);
  ASSERT_GE(fd, 0);
  ::close(fd);

  auto run = redlock::test::run_process(
      {REDLOCK_INVENTORY_PATH, "--quick", "--nodes", nodes.node_list(), "--storage", storage.url(),
       "--kill-pids", std::to_string(killed[0]) + "," + std::to_string(killed[1]), "--report",
       report_path},
      {}, 150s);
  auto r = read_report(report_path);
  std::remove(report_path);
  std::cout << run.out << run.err;  // the table; ctest shows it when the test fails
  ASSERT_FALSE(run.timed_out);
  EXPECT_EQ(run.exit_code, 0);
  ASSERT_EQ(r["stock_initial"], 100);

  // Without a lock, and with a lock that only the threads of one process see: oversold.
  for (const std::string way : {"none", "local"}) {
    SCOPED_TRACE(way);
    EXPECT_GT(r[way + ".logged"], 100);
    EXPECT_EQ(r[way + ".sold"], r[way + ".logged"]);
  }
  // With redlock-cpp, on five nodes and with two of them killed mid-run: exactly the stock, each
  // item once.
  for (const std::string way : {"redlock", "redlock_killed"}) {
    SCOPED_TRACE(way);
    EXPECT_EQ(r[way + ".sold"], 100);
    EXPECT_EQ(r[way + ".logged"], 100);
    EXPECT_EQ(r[way + ".stock"], 0);
    EXPECT_EQ(r[way + ".distinct_items"], 100);
    EXPECT_EQ(r[way + ".shops_ok"], 1);
    EXPECT_EQ(r[way + ".timed_out"], 0);
    EXPECT_GE(r[way + ".locks"], 100);
  }
  // The two nodes were killed in the middle of the fourth way, not before or after it.
  EXPECT_GT(r["redlock_killed.killed_after"], 0);
  EXPECT_LT(r["redlock_killed.killed_after"], 100);
  EXPECT_FALSE(alive(killed[0]));
  EXPECT_FALSE(alive(killed[1]));
  EXPECT_TRUE(alive(nodes[0].pid()));
  nodes[1].kill9();  // reaps them
  nodes[3].kill9();
}

}  // namespace
