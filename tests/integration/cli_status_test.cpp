// `redlock status` as a health check that tells the truth (issue 34): it fails whenever a node
// cannot vote, its summary counts the nodes that vote against the quorum, its text and JSON
// classify each node the same way, and TLS faults are named as TLS by every verb.
#include <gtest/gtest.h>

#include <signal.h>

#include <fstream>
#include <string>
#include <vector>

#include "cli_support.hpp"
#include "redis_server.hpp"

namespace redlock::test {
namespace {

// The text row of `address`.
std::string row_of(const std::string& out, const std::string& address) {
  auto at = out.find(address);
  if (at == std::string::npos) return {};
  return out.substr(at, out.find('\n', at) - at);
}

class CliStatus : public CliTest {
 protected:
  RedisCluster cluster{3};
};

TEST_F(CliStatus, ANodeOnADeadPortFailsTheCheckUnlessDownIsAllowed) {
  const std::string nodes = cluster.node_list();
  const std::string dead = cluster[2].address();
  cluster[2].stop();
  auto s = cli({"--nodes", nodes, "--no-persistence-warning", "status"});
  EXPECT_EQ(s.exit_code, 5) << s.out << s.err;
  EXPECT_TRUE(has(s.out, "2 of 3 nodes vote; quorum 2 reachable; tolerates 0 more failures"))
      << s.out;
  EXPECT_TRUE(has(row_of(s.out, dead), " down ")) << s.out;
  auto allowed = cli({"--nodes", nodes, "--no-persistence-warning", "status", "--allow-down"});
  EXPECT_EQ(allowed.exit_code, 0) << allowed.out;
  auto j = cli({"--nodes", nodes, "--no-persistence-warning", "status", "--json"});
  EXPECT_EQ(j.exit_code, 5);
  EXPECT_TRUE(has(j.out, "\"voting\":2")) << j.out;
  EXPECT_TRUE(has(j.out, "\"tolerates\":0")) << j.out;
  EXPECT_TRUE(has(j.out, "\"state\":\"down\"")) << j.out;
}

TEST_F(CliStatus, AWrongPasswordIsARefusalInTheTextAndTheJsonAlike) {
  RedisServer locked({}, "secret");
  const std::string nodes =
      cluster[0].url() + "," + cluster[1].url() + ",redis://:wrong@" + locked.address();
  auto s = cli({"--nodes", nodes, "--no-persistence-warning", "status", "--allow-down"});
  EXPECT_EQ(s.exit_code, 5) << s.out << s.err;  // a refusal is never "allowed down"
  const auto row = row_of(s.out, locked.address());
  EXPECT_TRUE(has(row, " refused ")) << s.out;
  EXPECT_TRUE(has(row, "redis_auth_failed")) << s.out;
  EXPECT_TRUE(has(s.out, "2 of 3 nodes vote")) << s.out;
  EXPECT_TRUE(has(s.out, "1 refused")) << s.out;
  auto j = cli({"--nodes", nodes, "--no-persistence-warning", "status", "--json"});
  EXPECT_EQ(j.exit_code, 5);
  const auto obj = j.out.substr(j.out.find("\"node\":\"" + locked.address() + "\""));
  EXPECT_TRUE(has(obj.substr(0, obj.find('}')), "\"state\":\"refused\"")) << j.out;
  EXPECT_TRUE(has(obj.substr(0, obj.find('}')), "\"refused\":true")) << j.out;
  EXPECT_TRUE(has(j.out, "\"refused\":1")) << j.out;
}

// A node that answers INFO but refuses every write (maxmemory reached with noeviction; an ACL
// without SET) cannot vote: status says so, from a write probe that writes nothing.
TEST_F(CliStatus, ANodeThatRefusesWritesCannotVoteAndStatusSaysSo) {
  const std::string nodes = cluster.node_list();
  cluster[1].command({"CONFIG", "SET", "maxmemory-policy", "noeviction"});
  ASSERT_EQ(cluster[1].command({"CONFIG", "SET", "maxmemory", "1"}), "OK");
  auto s = cli({"--nodes", nodes, "--no-persistence-warning", "status"});
  EXPECT_EQ(s.exit_code, 5) << s.out << s.err;
  const auto row = row_of(s.out, cluster[1].address());
  EXPECT_TRUE(has(row, " refused ")) << s.out;
  EXPECT_TRUE(has(row, "redis_oom")) << s.out;
  EXPECT_TRUE(has(s.out, "2 of 3 nodes vote")) << s.out;
  auto j = cli({"--nodes", nodes, "--no-persistence-warning", "status", "--json"});
  EXPECT_EQ(j.exit_code, 5);
  EXPECT_TRUE(has(j.out, "\"voting\":2")) << j.out;
  ASSERT_EQ(cluster[1].command({"CONFIG", "SET", "maxmemory", "0"}), "OK");

  // An ACL user that may not SET: its votes are refused with NOPERM.
  for (std::size_t i = 0; i < 3; ++i)
    ASSERT_EQ(
        cluster[i].command({"ACL", "SETUSER", "reader", "on", ">pw", "~*", "&*", "+@all", "-set"}),
        "OK");
  std::string as_reader;
  for (std::size_t i = 0; i < 3; ++i)
    as_reader += (i ? "," : "") + std::string("redis://reader:pw@") + cluster[i].address();
  auto acl = cli({"--nodes", as_reader, "--no-persistence-warning", "status"});
  EXPECT_EQ(acl.exit_code, 3) << acl.out << acl.err;  // no quorum
  EXPECT_TRUE(has(row_of(acl.out, cluster[0].address()), "redis_noperm")) << acl.out;

  // The probe wrote nothing, on any node.
  for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(cluster[i].command({"DBSIZE"}), "0") << i;
  auto ok = cli({"--nodes", nodes, "--no-persistence-warning", "status"});
  EXPECT_EQ(ok.exit_code, 0) << ok.out << ok.err;
  EXPECT_TRUE(has(ok.out, "3 of 3 nodes vote")) << ok.out;
}

TEST_F(CliStatus, AReplicaAmongFiveLeavesAMarginOfOneAndIsNotDown) {
  RedisCluster five{5};
  ASSERT_EQ(five[4].command({"REPLICAOF", "127.0.0.1", std::to_string(five[0].port())}), "OK");
  auto s = cli({"--nodes", five.node_list(), "--no-persistence-warning", "status"});
  five[4].command({"REPLICAOF", "NO", "ONE"});
  EXPECT_EQ(s.exit_code, 5) << s.out;
  EXPECT_TRUE(has(s.out, "4 of 5 nodes vote; quorum 3 reachable; tolerates 1 more failure;"))
      << s.out;
  const auto row = row_of(s.out, five[4].address());
  EXPECT_TRUE(has(row, " refused ")) << s.out;
  EXPECT_FALSE(has(row, " down ")) << s.out;
  EXPECT_TRUE(has(row, "node_not_master")) << s.out;
}

TEST_F(CliStatus, TlsToAPlainTextNodeIsNamedTlsByStatusAndAcquire) {
  const std::string nodes =
      "rediss://" + cluster[0].address() + "," + cluster[1].url() + "," + cluster[2].url();
  auto s = cli({"--nodes", nodes, "--no-persistence-warning", "--insecure", "status"});
  EXPECT_EQ(s.exit_code, 5) << s.out << s.err;
  EXPECT_TRUE(has(row_of(s.out, cluster[0].address()), "tls_handshake_failed")) << s.out;
  // Without a quorum of plain nodes, the refusal says why each TLS node did not vote.
  const std::string two = "rediss://" + cluster[0].address() + ",rediss://" + cluster[1].address() +
                          "," + cluster[2].url();
  auto a = cli({"--nodes", two, "--no-persistence-warning", "--insecure", "acquire", "t"});
  EXPECT_EQ(a.exit_code, 3) << a.err;
  EXPECT_TRUE(has(a.err, "TLS handshake")) << a.err;
  EXPECT_FALSE(has(a.err, "no connection to the node was ready,")) << a.err;
}

TEST_F(CliStatus, TlsOptionsWithoutATlsNodeAreAnError) {
  const std::string ca = ::testing::TempDir() + "redlock-ca-for-no-tls.pem";
  std::ofstream(ca) << "not used\n";
  auto r = cli({"--nodes", cluster.node_list(), "--cacert", ca, "acquire", "plain"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(has(r.err, "--cacert given, but no node is TLS")) << r.err;
  EXPECT_EQ(cluster.count_existing("redlock:plain"), 0u);
  auto missing = cli(
      {"--nodes", "rediss://" + cluster[0].address(), "--cacert", "/nonexistent/ca.pem", "status"});
  EXPECT_EQ(missing.exit_code, 2) << missing.err;
  EXPECT_TRUE(has(missing.err, "/nonexistent/ca.pem")) << missing.err;
  std::remove(ca.c_str());
}

}  // namespace
}  // namespace redlock::test
