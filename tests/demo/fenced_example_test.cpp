// examples/fenced_storage against local servers: the paused holder's late write is refused.
#include <gtest/gtest.h>

#include "redis_server.hpp"

namespace {

TEST(FencedExample, TheStaleHoldersWriteIsRefused) {
  redlock::test::RedisCluster nodes(3);
  redlock::test::RedisServer storage;
  auto r = redlock::test::run_process(
      {REDLOCK_FENCED_EXAMPLE_PATH, "--nodes", nodes.node_list(), "--storage", storage.address()});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("refused, as it must be"), std::string::npos) << r.out;
  EXPECT_EQ(storage.command({"GET", "report"}), "written by B");
}

}  // namespace
