// NetFault: nftables rules against a real redis-server. Runs only inside a private network
// namespace with nft available (ctest's chaos_support.netns runs this file under `unshare -n`);
// elsewhere every rule test is skipped, and NetFault must refuse to start.
#include "netfault.hpp"

#include <gtest/gtest.h>

#include <memory>

#include "raw_client.hpp"
#include "redis_server.hpp"

namespace redlock::chaos {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using test::RawClient;
using test::Reply;

constexpr auto kSilence = 300ms;

TEST(NetFaultGuard, RefusesOutsideAPrivateNetworkNamespace) {
  if (in_private_netns()) GTEST_SKIP() << "inside a private network namespace: nothing to refuse";
  EXPECT_THROW(NetFault(), std::runtime_error);
}

class NetFaultTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!in_private_netns())
      GTEST_SKIP() << "not in a private network namespace (an interface besides lo exists); "
                      "these tests run under `unshare -n` (ctest -R chaos_support.netns)";
    bring_loopback_up();
    if (!nft_available())
      GTEST_SKIP() << "nft is not installed or not usable here (Debian package nftables)";
    server = std::make_unique<redlock::test::RedisServer>();
    fault = std::make_unique<NetFault>();
  }

  std::uint16_t port() const { return server->port(); }

  std::unique_ptr<redlock::test::RedisServer> server;
  std::unique_ptr<NetFault> fault;
};

TEST_F(NetFaultTest, DropToPortSilencesRequestsUntilHealed) {
  RawClient before(port());
  ASSERT_TRUE(before.command({"PING"}).is("+PONG"));
  fault->drop_to_port(port());
  EXPECT_EQ(before.command({"SET", "k", "v"}, kSilence).kind, Reply::timeout);
  RawClient during(port(), kSilence);
  EXPECT_EQ(during.connect_error(), ETIMEDOUT) << "the SYN never arrives";
  fault->heal(port());
  EXPECT_TRUE(fault->rules().empty());
  RawClient after(port());
  EXPECT_TRUE(after.command({"PING"}).is("+PONG"));
}

TEST_F(NetFaultTest, DropFromPortRunsTheCommandButLosesTheReply) {
  RawClient c(port());
  ASSERT_TRUE(c.command({"PING"}).is("+PONG"));
  fault->drop_from_port(port());
  Reply r = c.command({"SET", "k", "v"}, kSilence);
  EXPECT_EQ(r.kind, Reply::timeout) << test::describe(r);
  fault->heal_all();
  EXPECT_EQ(server->command({"GET", "k"}), "v") << "the SET ran";
}

TEST_F(NetFaultTest, ResetPortRefusesAtOnce) {
  fault->reset_port(port());
  auto t = Clock::now();
  RawClient c(port(), 2s);
  EXPECT_EQ(c.connect_error(), ECONNREFUSED);
  EXPECT_LT(Clock::now() - t, 200ms);
  fault->heal(port());
  EXPECT_TRUE(RawClient(port()).command({"PING"}).is("+PONG"));
}

TEST_F(NetFaultTest, FullLossBlocksBothWaysAndHealsPerPort) {
  redlock::test::RedisServer other;
  fault->loss(port(), 100);
  fault->loss(other.port(), 100);
  EXPECT_EQ(fault->rules().size(), 4u);
  fault->loss(port(), 0);  // no rule
  EXPECT_EQ(fault->rules().size(), 4u);
  EXPECT_THROW(fault->loss(port(), 101), std::invalid_argument);
  EXPECT_EQ(RawClient(port(), kSilence).connect_error(), ETIMEDOUT);
  fault->heal(port());  // only this port
  EXPECT_TRUE(RawClient(port()).command({"PING"}).is("+PONG"));
  EXPECT_EQ(RawClient(other.port(), kSilence).connect_error(), ETIMEDOUT);
  fault->heal_all();
  EXPECT_TRUE(RawClient(other.port()).command({"PING"}).is("+PONG"));
}

TEST_F(NetFaultTest, PartialLossLetsSomeConnectionsThrough) {
  // 30 % loss each way: a connection attempt with a 100 ms budget (no SYN retransmit within it)
  // succeeds when its SYN and its SYN-ACK both pass, about one time in two. All 20 failing or
  // all 20 passing by chance: about 1 in a million each.
  fault->loss(port(), 30);
  int ok = 0;
  for (int i = 0; i < 20; ++i) ok += RawClient(port(), 100ms).connected() ? 1 : 0;
  EXPECT_GT(ok, 0) << "loss is not total";
  EXPECT_LT(ok, 20) << "loss is real";
}

TEST_F(NetFaultTest, TheDestructorDeletesTheTable) {
  std::string table = fault->table();
  fault->drop_to_port(port());
  auto listed = redlock::test::run_process({"/bin/sh", "-c", "nft list tables"}, {}, 5s);
  EXPECT_NE(listed.out.find(table), std::string::npos) << listed.out;
  fault.reset();
  listed = redlock::test::run_process({"/bin/sh", "-c", "nft list tables"}, {}, 5s);
  EXPECT_EQ(listed.out.find(table), std::string::npos) << listed.out;
  EXPECT_TRUE(RawClient(port()).command({"PING"}).is("+PONG"));
}

}  // namespace
}  // namespace redlock::chaos
