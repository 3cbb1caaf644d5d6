// TLS to the masters (rediss://), against real redis-server processes with TLS ports and
// certificates made at test time (test::TlsFiles). Verification is on unless a test says not.
#include <gtest/gtest.h>

#include <fstream>
#include <future>
#include <iterator>
#include <thread>

#include "redis_server.hpp"
#include "redlock/redlock.hpp"
#include "test_config.hpp"

namespace redlock {
namespace {

using namespace std::chrono_literals;
using test::RedisCluster;
using test::RedisServer;
using test::TlsFiles;
using test::TlsMode;

// One set of certificates for the whole suite: openssl takes about a second.
const TlsFiles& files() {
  static TlsFiles* f = new TlsFiles;  // removed by the environment below
  return *f;
}

class TlsFilesCleanup : public ::testing::Environment {
 public:
  void TearDown() override { delete &files(); }
};
[[maybe_unused]] auto* const cleanup = ::testing::AddGlobalTestEnvironment(new TlsFilesCleanup);

Config tls_config(const std::string& node_list) {
  Config c = test::fast_config(node_list);
  c.tls.ca_file = files().ca_cert;
  c.request_timeout = 500ms;  // a handshake under sanitizers takes longer
  c.connect_timeout = 1000ms;
  return c;
}

// The status of every node once node `i` reports `want` (or the last one after ~5 s).
std::vector<NodeStatus> status_when(Client& client, std::size_t i, std::error_code want) {
  std::vector<NodeStatus> rows;
  for (int n = 0; n < 100; ++n) {
    rows = client.status();
    if (rows.size() > i && rows[i].error == want) break;
    std::this_thread::sleep_for(50ms);
  }
  return rows;
}

// What one node of a one-node client reports: its status error once it has one.
NodeStatus failing_node(Config c) {
  c.retry_count = 0;
  Client client(c);
  NodeStatus row;
  for (int n = 0; n < 100; ++n) {
    auto rows = client.status();
    row = rows.at(0);
    // Until the connection attempt has ended, status() reports that nothing was ready.
    if (row.error && row.error != Errc::not_connected && row.error != Errc::request_timeout) break;
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_FALSE(row.up);
  // Never a grant through a connection that failed.
  auto r = client.try_acquire("never", 5000ms);
  EXPECT_FALSE(r) << r.message();
  EXPECT_EQ(r.votes.yes(), 0u) << r.message();
  return row;
}

void lock_cycle(const RedisCluster& cluster, Client& client, Client& other) {
  const std::size_t quorum = cluster.size() / 2 + 1;
  auto r = client.try_acquire("tls-orders", 5000ms);
  ASSERT_TRUE(r) << r.message();
  EXPECT_GE(r.votes.yes(), quorum) << r.message();
  // Every node, TLS included, has it once its reply is in (the verdict needs only a quorum).
  EXPECT_TRUE(test::eventually(
      [&] { return cluster.count_holding("redlock:tls-orders", r.lock.token) == cluster.size(); }));

  auto refused = other.try_acquire("tls-orders", 5000ms);
  EXPECT_EQ(refused.error, Errc::not_acquired) << refused.message();

  auto e = client.extend(r.lock, 8000ms);
  ASSERT_TRUE(e) << e.message();
  EXPECT_GE(e.votes.yes(), quorum) << e.message();

  // A waiter: blocked while the lock is held, granted once it is released.
  auto waiter = std::async(std::launch::async, [&] {
    return other.acquire(AcquireRequest({"tls-orders"}, 5000ms, 10000ms));
  });
  EXPECT_EQ(waiter.wait_for(100ms), std::future_status::timeout);
  auto rel = client.release(r.lock);
  ASSERT_TRUE(rel) << rel.message();
  EXPECT_GE(rel.released, quorum);
  auto got = waiter.get();
  ASSERT_TRUE(got) << got.message();
  ASSERT_TRUE(other.release(got.lock));

  // The watchdog renews a held lock over TLS: it outlives its lease.
  auto held = client.hold(AcquireRequest({"tls-held"}));
  ASSERT_TRUE(held) << held.message();
  const std::string token = held.lock.token();
  std::this_thread::sleep_for(client.config().watchdog_lease * 2);
  EXPECT_TRUE(held.lock.valid());
  EXPECT_FALSE(held.lock.lost());
  EXPECT_GE(cluster.count_holding("redlock:tls-held", token), quorum);
  ASSERT_TRUE(held.lock.release());
}

class TlsCluster : public ::testing::TestWithParam<std::size_t> {};

TEST_P(TlsCluster, AcquireExtendReleaseWaitersAndWatchdog) {
  RedisCluster cluster(GetParam(), TlsMode::of(files()));
  Config c = tls_config(cluster.tls_node_list());
  c.watchdog_lease = 600ms;
  Client client(c), other(c);
  lock_cycle(cluster, client, other);
}

INSTANTIATE_TEST_SUITE_P(Nodes, TlsCluster, ::testing::Values(3, 5));

TEST(Tls, HostNameMatchesTheCertificatesDnsName) {
  RedisCluster cluster(3, TlsMode::of(files()));
  Client client(tls_config(cluster.tls_node_list("localhost")));
  auto r = client.try_acquire("by-name", 5000ms);
  ASSERT_TRUE(r) << r.message();
  EXPECT_TRUE(test::eventually(
      [&] { return cluster.count_holding("redlock:by-name", r.lock.token) == 3u; }));
}

TEST(Tls, MixedListOfPlainAndTlsNodes) {
  RedisServer a, b;
  RedisServer x(TlsMode::of(files())), y(TlsMode::of(files())), z(TlsMode::of(files()));
  Config c = tls_config(a.url() + "," + x.tls_url() + "," + b.url() + "," + y.tls_url() + "," +
                        z.tls_url());
  EXPECT_FALSE(c.nodes[0].tls);
  EXPECT_TRUE(c.nodes[1].tls);
  Client client(c);
  auto r = client.try_acquire("mixed", 5000ms);
  ASSERT_TRUE(r) << r.message();
  for (RedisServer* s : {&a, &b, &x, &y, &z})
    EXPECT_TRUE(test::eventually([&] {
      return s->command({"GET", "redlock:mixed"}) == r.lock.token;
    })) << s->address();
  EXPECT_TRUE(client.release(r.lock));
}

TEST(Tls, MutualTlsWithAClientCertificate) {
  RedisCluster cluster(3, TlsMode::of(files(), /*auth_clients=*/true));
  Config c = tls_config(cluster.tls_node_list());
  c.tls.cert_file = files().client_cert;
  c.tls.key_file = files().client_key;
  Client client(c);
  auto r = client.try_acquire("mtls", 5000ms);
  ASSERT_TRUE(r) << r.message();
  EXPECT_TRUE(
      test::eventually([&] { return cluster.count_holding("redlock:mtls", r.lock.token) == 3u; }));
}

TEST(Tls, MutualTlsWithoutAClientCertificateIsATypedError) {
  RedisServer server(TlsMode::of(files(), /*auth_clients=*/true));
  auto row = failing_node(tls_config(server.tls_url()));
  EXPECT_EQ(row.error, Errc::tls_client_cert_required) << row.detail;
  EXPECT_NE(row.detail.find("client certificate"), std::string::npos) << row.detail;
}

TEST(Tls, UntrustedCaIsRefused) {
  RedisServer server(TlsMode::of(files()));
  Config c = tls_config(server.tls_url());
  c.tls.ca_file = files().other_ca_cert;  // the server's certificate is not signed by this one
  auto row = failing_node(c);
  EXPECT_EQ(row.error, Errc::tls_unknown_ca) << row.detail;
  EXPECT_NE(row.detail.find("certificate"), std::string::npos) << row.detail;
}

TEST(Tls, ServerCertificateFromAnotherCaIsRefused) {
  TlsMode mode = TlsMode::of(files());
  mode.cert_file = files().other_cert;
  mode.key_file = files().other_key;
  RedisServer server(mode);
  auto row = failing_node(tls_config(server.tls_url()));
  EXPECT_EQ(row.error, Errc::tls_unknown_ca) << row.detail;
}

TEST(Tls, WrongHostNameIsRefused) {
  RedisServer server(TlsMode::of(files()));
  Config c = tls_config(server.tls_url());
  c.tls.server_name = "not-this-server.example";
  auto row = failing_node(c);
  EXPECT_EQ(row.error, Errc::tls_name_mismatch) << row.detail;
}

TEST(Tls, ServerNameOptionIsWhatIsChecked) {
  RedisServer server(TlsMode::of(files()));
  Config c = tls_config(server.tls_url());
  c.tls.server_name = "localhost";  // in the certificate, though the node is 127.0.0.1
  Client client(c);
  auto r = client.try_acquire("sni", 5000ms);
  EXPECT_TRUE(r) << r.message();
}

TEST(Tls, ExpiredServerCertificateIsRefused) {
  TlsMode mode = TlsMode::of(files());
  mode.cert_file = files().expired_cert;
  mode.key_file = files().expired_key;
  RedisServer server(mode);
  auto row = failing_node(tls_config(server.tls_url()));
  EXPECT_EQ(row.error, Errc::tls_cert_expired) << row.detail;
}

TEST(Tls, InsecureSkipVerifyAcceptsAnUntrustedServer) {
  TlsMode mode = TlsMode::of(files());
  mode.cert_file = files().other_cert;
  mode.key_file = files().other_key;
  RedisServer server(mode);
  Config c = tls_config(server.tls_url());
  c.tls.insecure_skip_verify = true;
  c.tls.server_name = "wrong.example";
  Client client(c);
  auto r = client.try_acquire("insecure", 5000ms);
  EXPECT_TRUE(r) << r.message();
}

TEST(Tls, PlainClientAtATlsPortFailsWithinTheTimeouts) {
  RedisServer server(TlsMode::of(files()));
  Config c = tls_config("redis://127.0.0.1:" + std::to_string(server.tls_port()));
  c.retry_count = 0;
  Client client(c);
  auto r = client.try_acquire("plain-at-tls", 5000ms);
  EXPECT_FALSE(r) << r.message();
  EXPECT_EQ(r.votes.yes(), 0u);
  ASSERT_EQ(r.votes.nodes.size(), 1u);
  EXPECT_TRUE(r.votes.nodes[0].error) << r.message();
}

TEST(Tls, TlsClientAtAPlainPortIsAHandshakeError) {
  RedisServer server;
  auto row = failing_node(tls_config("rediss://" + server.address()));
  EXPECT_TRUE(row.error == Errc::tls_handshake_failed || row.error == Errc::connect_timeout)
      << row.error.message() << ": " << row.detail;
  // Never a plain-text session instead.
  EXPECT_NE(row.error, Errc::protocol_error) << row.detail;
}

TEST(Tls, KilledTlsNodeReconnectsAndHandshakesAgain) {
  RedisCluster cluster(3, TlsMode::of(files()));
  Client client(tls_config(cluster.tls_node_list()));
  auto first = client.try_acquire("before", 5000ms);
  ASSERT_TRUE(first) << first.message();
  cluster[1].kill9();
  auto during = client.try_acquire("during", 5000ms);
  ASSERT_TRUE(during) << during.message();  // a quorum of the other two
  cluster[1].restart();
  auto rows = status_when(client, 1, {});
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_TRUE(rows[1].up) << rows[1].detail;
  auto after = client.try_acquire("after", 5000ms);
  ASSERT_TRUE(after) << after.message();
  // The restarted node took part again, through a new TLS session.
  EXPECT_TRUE(test::eventually([&] {
    return cluster[1].command({"GET", "redlock:after"}) == after.lock.token;
  }));
}

// A CA rotation: the trusted CA file gains the new CA while the client runs. A node whose
// certificate is signed by the new CA connects once the file changed, even though another
// node's connection, made with the old file, is still open (and may share its context).
TEST(Tls, ACaFileChangedWhileConnectedIsReadAgainForTheNextConnection) {
  RedisServer old_ca_node(TlsMode::of(files()));
  TlsMode rotated = TlsMode::of(files());
  rotated.cert_file = files().other_cert;
  rotated.key_file = files().other_key;
  RedisServer new_ca_node(rotated);

  const std::string ca = files().dir + "/rotating-ca.pem";
  auto slurp = [](const std::string& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  { std::ofstream(ca) << slurp(files().ca_cert); }
  Config c = tls_config(old_ca_node.tls_url() + "," + new_ca_node.tls_url());
  c.tls.ca_file = ca;
  Client client(c);
  auto rows = status_when(client, 1, Errc::tls_unknown_ca);
  ASSERT_EQ(rows.size(), 2u);
  auto first = status_when(client, 0, {});
  ASSERT_TRUE(first[0].up) << first[0].detail;
  EXPECT_EQ(rows[1].error, Errc::tls_unknown_ca) << rows[1].detail;

  { std::ofstream(ca) << slurp(files().ca_cert) << slurp(files().other_ca_cert); }
  rows = status_when(client, 1, {});
  EXPECT_TRUE(rows[1].up) << rows[1].detail;
  EXPECT_TRUE(rows[0].up) << rows[0].detail;
  auto r = client.try_acquire("rotated", 5000ms);
  ASSERT_TRUE(r) << r.message();
  EXPECT_EQ(r.votes.yes(), 2u) << r.message();
}

TEST(Tls, UnreadableCaFileIsAConfigErrorNamingTheFile) {
  Config c = tls_config("rediss://127.0.0.1:1");
  c.tls.ca_file = files().dir + "/no-such-ca.crt";
  try {
    Client client(c);
    FAIL() << "constructed";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::invalid_config);
    EXPECT_NE(std::string(e.what()).find("no-such-ca.crt"), std::string::npos) << e.what();
  }
}

TEST(Tls, KeyNotMatchingTheCertificateIsAConfigError) {
  Config c = tls_config("rediss://127.0.0.1:1");
  c.tls.cert_file = files().client_cert;
  c.tls.key_file = files().server_key;
  try {
    Client client(c);
    FAIL() << "constructed";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::invalid_config);
    EXPECT_NE(std::string(e.what()).find("server.key"), std::string::npos) << e.what();
  }
}

TEST(Tls, TlsFilesAreNotLoadedWithoutATlsNode) {
  RedisServer server;
  Config c = tls_config(server.url());
  c.tls.ca_file = files().dir + "/no-such-ca.crt";
  Client client(c);
  EXPECT_TRUE(client.try_acquire("plain-only", 5000ms));
}

}  // namespace
}  // namespace redlock
