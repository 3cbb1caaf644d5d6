// The `redlock` tool over TLS: redis-cli's option names (--tls, --cacert, --cert, --key, --sni,
// --insecure) and their environment variables.
#include <gtest/gtest.h>

#include <regex>

#include "cli_support.hpp"
#include "redis_server.hpp"

namespace redlock::test {
namespace {

bool is_token_line(const std::string& out) {
  return std::regex_match(out, std::regex("[0-9a-f]{32}[.]\n"));
}

class CliTls : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { files_ = new TlsFiles; }
  static void TearDownTestSuite() {
    delete files_;
    files_ = nullptr;
  }
  static TlsFiles* files_;
};
TlsFiles* CliTls::files_ = nullptr;

TEST_F(CliTls, TlsFlagAndCacertAcquireAndRelease) {
  RedisCluster cluster(3, TlsMode::of(*files_));
  // A plain node list made TLS by --tls, as with redis-cli.
  std::string nodes;
  for (std::size_t i = 0; i < cluster.size(); ++i)
    nodes +=
        (i ? "," : "") + std::string("redis://127.0.0.1:") + std::to_string(cluster[i].tls_port());
  auto r = cli({"--nodes", nodes, "--tls", "--cacert", files_->ca_cert, "acquire", "cli-tls"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_TRUE(is_token_line(r.out)) << r.out;
  std::string token = r.out.substr(0, 33);
  EXPECT_TRUE(eventually([&] { return cluster.count_holding("redlock:cli-tls", token) == 3u; }));
  auto rel =
      cli({"--nodes", nodes, "--tls", "--cacert", files_->ca_cert, "release", "cli-tls", token});
  EXPECT_EQ(rel.exit_code, 0) << rel.err;
}

TEST_F(CliTls, EnvironmentVariablesCarryTheTlsOptions) {
  RedisCluster cluster(3, TlsMode::of(*files_, /*auth_clients=*/true));
  std::vector<std::string> env = {"REDLOCK_NODES=" + cluster.tls_node_list("localhost"),
                                  "REDLOCK_TLS_CACERT=" + files_->ca_cert,
                                  "REDLOCK_TLS_CERT=" + files_->client_cert,
                                  "REDLOCK_TLS_KEY=" + files_->client_key};
  auto r = cli({"acquire", "cli-env"}, env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(is_token_line(r.out)) << r.out;
  // The same without the client certificate: refused, and the reason is named.
  env.resize(2);
  auto refused = cli({"acquire", "cli-env-2"}, env);
  EXPECT_EQ(refused.exit_code, 3) << refused.err;
  EXPECT_TRUE(refused.out.empty()) << refused.out;
  EXPECT_NE(refused.err.find("client certificate"), std::string::npos) << refused.err;
}

TEST_F(CliTls, UntrustedServerIsRefusedUnlessInsecure) {
  RedisCluster cluster(3, TlsMode::of(*files_));
  std::vector<std::string> args = {"--nodes", cluster.tls_node_list(), "--cacert",
                                   files_->other_ca_cert};
  auto refused = args;
  refused.insert(refused.end(), {"acquire", "cli-untrusted"});
  auto r = cli(refused);
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_NE(r.err.find("certificate"), std::string::npos) << r.err;

  auto insecure = args;
  insecure.insert(insecure.end(), {"--insecure", "acquire", "cli-untrusted"});
  auto ok = cli(insecure);
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_TRUE(is_token_line(ok.out)) << ok.out;
}

TEST_F(CliTls, SniNamesTheServerToCheck) {
  RedisCluster cluster(3, TlsMode::of(*files_));
  auto base = std::vector<std::string>{"--nodes", cluster.tls_node_list(), "--cacert",
                                       files_->ca_cert, "--sni"};
  auto wrong = base;
  wrong.insert(wrong.end(), {"not-this-server.example", "acquire", "cli-sni"});
  auto r = cli(wrong);
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("tls_name_mismatch"), std::string::npos) << r.err;
  auto right = base;
  right.insert(right.end(), {"localhost", "acquire", "cli-sni"});
  auto ok = cli(right);
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
}

// show and extend's read-back use connections of the tool's own: TLS, verified, as the lock's.
TEST_F(CliTls, ShowAndExtendReadTheNodesOverTls) {
  RedisCluster cluster(3, TlsMode::of(*files_, /*auth_clients=*/true));
  std::vector<std::string> tls = {"--nodes",  cluster.tls_node_list("localhost"),
                                  "--cacert", files_->ca_cert,
                                  "--cert",   files_->client_cert,
                                  "--key",    files_->client_key};
  auto with = [&](std::vector<std::string> rest) {
    auto args = tls;
    args.insert(args.end(), rest.begin(), rest.end());
    return cli(args);
  };
  auto a = with({"-q", "--ttl", "20s", "acquire", "cli-show"});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  std::string token = a.out.substr(0, 33);
  std::string name =
      cluster[0].command({"EVAL", "return string.sub(redis.sha1hex(ARGV[1]), 1, 16)", "0", token});
  auto s = with({"show", "cli-show"});
  EXPECT_EQ(s.exit_code, 0) << s.err;
  EXPECT_NE(s.out.find("held by " + name + " on 3 of 3 nodes"), std::string::npos) << s.out;
  auto e = with({"--ttl", "1s", "extend", "cli-show", token});
  EXPECT_EQ(e.exit_code, 0) << e.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(e.err, m, std::regex("holds it for ([0-9]+) ms more"))) << e.err;
  EXPECT_GT(std::stoll(m[1]), 15000) << e.err;

  // An untrusted server is not read, and says why.
  auto untrusted =
      cli({"--nodes", cluster.tls_node_list("localhost"), "--cacert", files_->other_ca_cert,
           "--cert", files_->client_cert, "--key", files_->client_key, "show", "cli-show"});
  EXPECT_EQ(untrusted.exit_code, 3) << untrusted.out;
  EXPECT_NE(untrusted.out.find("not read: TLS"), std::string::npos) << untrusted.out;
}

TEST_F(CliTls, CertWithoutKeyIsAUsageError) {
  auto r = cli({"--nodes", "rediss://127.0.0.1:1", "--cert", files_->client_cert, "acquire", "x"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("without a key file"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace redlock::test
