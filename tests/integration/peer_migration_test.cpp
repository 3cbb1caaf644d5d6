// A rolling migration with the real peer (issue 34): node-redlock 5 itself (npm, pinned in
// tests/peers/node/package.json, installed by tools/test.sh), run as a process beside our client
// against the same real masters. Unlike migration_test.cpp, which sends the peers' scripts as
// copied text, this catches drift between the peer's versions and options such as ioredis'
// keyPrefix. Shown: mutual exclusion both ways, and that neither releases the other's lock.
#include <gtest/gtest.h>

#include <unistd.h>

#include <string>
#include <vector>

#include "redis_server.hpp"
#include "redlock/redlock.hpp"
#include "test_config.hpp"

namespace redlock {
namespace {

using namespace std::chrono_literals;
using test::ProcessResult;
using test::RedisCluster;

const std::string kNode = REDLOCK_NODE_PATH;
const std::string kPeerDir = REDLOCK_PEER_DIR;

class RealNodeRedlock : public ::testing::Test {
 protected:
  void SetUp() override {
    if (kNode.empty()) GTEST_SKIP() << "node not found: tools/test.sh installs it (nodejs, npm)";
    if (::access((kPeerDir + "/node_modules/redlock/package.json").c_str(), R_OK) != 0)
      GTEST_SKIP() << "node-redlock not installed: tools/test.sh runs npm ci in tests/peers/node";
  }
  // One operation of the real node-redlock on the cluster's nodes.
  ProcessResult peer(const std::vector<std::string>& args) {
    std::string ports;
    for (std::size_t i = 0; i < cluster.size(); ++i)
      ports += (i ? "," : "") + std::to_string(cluster[i].port());
    std::vector<std::string> argv{kNode, kPeerDir + "/peer.mjs", ports};
    argv.insert(argv.end(), args.begin(), args.end());
    return test::run_process(argv, {}, 20s);
  }
  std::string value_of(const ProcessResult& r) {
    std::string v = r.out;
    while (!v.empty() && (v.back() == '\n' || v.back() == '\r')) v.pop_back();
    return v;
  }

  RedisCluster cluster{3};
  Client client{[this] {
    Config c = test::fast_config(cluster.node_list());
    c.key_prefix = "";  // node-redlock's key is the resource itself
    c.on_warning = [](const std::string&) {};
    return c;
  }()};
};

TEST_F(RealNodeRedlock, ALockOfEitherKindExcludesTheOtherAndNeitherReleasesTheOthers) {
  // node-redlock holds it: we are refused, and our release (another token) leaves its key.
  auto held = peer({"acquire", "migrating", "10000"});
  ASSERT_EQ(held.exit_code, 0) << held.err;
  const std::string value = value_of(held);
  ASSERT_EQ(value.size(), 32u) << held.out;
  // peer.mjs waits for every node's vote before it exits: its key is on all three.
  const auto quorum_held = cluster.count_holding("migrating", value);
  EXPECT_EQ(quorum_held, 3u);
  auto ours = client.try_acquire("migrating", 10s);
  EXPECT_EQ(ours.error, Errc::not_acquired) << ours.message();
  EXPECT_FALSE(client.release(Lock("migrating", "0123456789abcdef0123456789abcdef.")));
  EXPECT_EQ(cluster.count_holding("migrating", value), quorum_held);
  // Its own release frees it, and we take it.
  auto freed = peer({"release", "migrating", value});
  EXPECT_EQ(freed.exit_code, 0) << freed.err;
  EXPECT_EQ(cluster.count_existing("migrating"), 0u);

  auto mine = client.try_acquire("migrating", 10s);
  ASSERT_TRUE(mine) << mine.message();
  // We hold it: node-redlock is refused, and its release of a value of its own leaves ours.
  auto refused = peer({"acquire", "migrating", "10000"});
  EXPECT_EQ(refused.exit_code, 1) << refused.out << refused.err;
  auto foreign = peer({"release", "migrating", "ffffffffffffffffffffffffffffffff"});
  EXPECT_EQ(foreign.exit_code, 1) << foreign.out;
  EXPECT_EQ(cluster.count_holding("migrating", mine.lock.token), 3u);
  EXPECT_TRUE(client.release(mine.lock));
  EXPECT_EQ(cluster.count_existing("migrating"), 0u);
}

TEST_F(RealNodeRedlock, IoredisKeyPrefixIsOurKeyPrefix) {
  // node-redlock over ioredis with keyPrefix "redlock:" and our default prefix "redlock:" name
  // the same key for the same resource.
  Config c = test::fast_config(cluster.node_list());
  c.on_warning = [](const std::string&) {};
  Client prefixed(c);
  auto held = peer({"acquire", "job", "10000", "redlock:"});
  ASSERT_EQ(held.exit_code, 0) << held.err;
  EXPECT_GE(cluster.count_holding("redlock:job", value_of(held)), 2u);
  EXPECT_EQ(prefixed.try_acquire("job", 10s).error, Errc::not_acquired);
  EXPECT_EQ(peer({"release", "job", value_of(held), "redlock:"}).exit_code, 0);
  auto mine = prefixed.try_acquire("job", 10s);
  ASSERT_TRUE(mine) << mine.message();
  EXPECT_EQ(peer({"acquire", "job", "10000", "redlock:"}).exit_code, 1);
  EXPECT_TRUE(prefixed.release(mine.lock));
}

}  // namespace
}  // namespace redlock
