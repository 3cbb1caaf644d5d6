// The example service (examples/metrics_service) against real redis-servers: its /metrics is
// accepted by `promtool check metrics`, and a real Prometheus server that scrapes it while it
// takes and loses locks reads back the figures it should through its HTTP query API. The alert
// rules of the docs are checked by promtool and loaded by that server.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "redis_server.hpp"

namespace {

using namespace std::chrono_literals;
using redlock::test::eventually;
using redlock::test::Process;
using redlock::test::RedisCluster;
using redlock::test::RedisServer;
namespace fs = std::filesystem;

const std::string kService = REDLOCK_METRICS_SERVICE_PATH;
const std::string kPromtool = REDLOCK_PROMTOOL_PATH;
const std::string kPrometheus = REDLOCK_PROMETHEUS_PATH;

// A temporary directory, removed with the object.
struct TempDir {
  fs::path path;
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "redlock-prom-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A port that was free a moment ago on the loopback (the kernel's pick).
int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  int port = -1;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  ::close(fd);
  return port;
}

// GET http://127.0.0.1:port/target over HTTP/1.0: the body, or empty on any failure. Every
// step is bounded (2 s).
std::string http_get(int port, const std::string& target) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return {};
  timeval tv{2, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string response;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
    std::string req = "GET " + target + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    if (::send(fd, req.data(), req.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(req.size())) {
      char buf[8192];
      for (int i = 0; i < 100000; ++i) {  // bounded: 800 MB at most
        ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n <= 0) break;
        response.append(buf, static_cast<std::size_t>(n));
      }
    }
  }
  ::close(fd);
  auto body = response.find("\r\n\r\n");
  if (response.rfind("HTTP/1.", 0) != 0 || response.find(" 200 ") > 12 || body == std::string::npos)
    return {};
  return response.substr(body + 4);
}

std::string url_encode(const std::string& s) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '_' || c == '-' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

// The value of a query that gives one sample (`"value":[<time>,"<number>"]`); -1 when the
// result is empty or the server did not answer.
double query(int port, const std::string& promql) {
  auto body = http_get(port, "/api/v1/query?query=" + url_encode(promql));
  auto at = body.find("\"value\":[");
  if (body.find("\"status\":\"success\"") == std::string::npos || at == std::string::npos)
    return -1;
  auto open = body.find(",\"", at);
  auto close = body.find('"', open + 2);
  if (open == std::string::npos || close == std::string::npos) return -1;
  return std::strtod(body.substr(open + 2, close - open - 2).c_str(), nullptr);
}

// The example service on a port of its choosing, written to a file once it serves /metrics.
struct Service {
  TempDir dir;
  std::unique_ptr<Process> process;
  int port = -1;

  Service(const RedisCluster& cluster, std::vector<std::string> args)
      : Service(cluster.node_list(), std::move(args)) {}
  Service(const std::string& nodes, std::vector<std::string> args) {
    auto port_file = (dir.path / "port").string();
    std::vector<std::string> argv{kService, "--nodes",     nodes,    "--port",
                                  "0",      "--port-file", port_file};
    argv.insert(argv.end(), args.begin(), args.end());
    process = std::make_unique<Process>(argv);
    if (eventually([&] { return fs::exists(port_file); }, 10s))
      port = std::atoi(read_file(port_file).c_str());
  }
};

TEST(Exposition, PromtoolAcceptsTheExamplesMetrics) {
  if (kPromtool.empty()) GTEST_SKIP() << "promtool not found (Debian package prometheus)";
  RedisCluster cluster(3);
  Service service(cluster, {"--locks", "60", "--interval-ms", "5", "--lose-every", "10",
                            "--seconds", "30", "--linger-ms", "10000"});
  ASSERT_GT(service.port, 0) << "the example did not start serving";
  // Until a lease has been lost (the watchdog needs ~100 ms after the lease began).
  std::string text;
  ASSERT_TRUE(eventually(
      [&] {
        text = http_get(service.port, "/metrics");
        return text.find("redlock_lock_lost_total{reason=\"expired\"} 0") == std::string::npos &&
               text.find("redlock_lock_lost_total{reason=\"expired\"}") != std::string::npos;
      },
      15s))
      << text;
  for (const char* name :
       {"redlock_acquire_duration_seconds_bucket{result=\"ok\"", "redlock_acquire_attempts_total",
        "redlock_releases_total{result=\"ok\"}", "redlock_node_up{node=\"127.0.0.1:",
        "redlock_held_locks", "redlock_waiters", "redlock_wait_duration_seconds_count"})
    EXPECT_NE(text.find(name), std::string::npos) << name << " missing:\n" << text;

  TempDir dir;
  auto file = dir.path / "metrics.txt";
  std::ofstream(file) << text;
  // promtool reads the exposition on its standard input.
  auto r = redlock::test::run_process(
      {"/bin/sh", "-c", "exec \"$0\" check metrics < \"$1\"", kPromtool, file.string()});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

TEST(Exposition, PromtoolAcceptsTheAlertRulesOfTheDocs) {
  if (kPromtool.empty()) GTEST_SKIP() << "promtool not found (Debian package prometheus)";
  auto r = redlock::test::run_process({kPromtool, "check", "rules", REDLOCK_ALERTS_PATH});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("SUCCESS: 9 rules found"), std::string::npos) << r.out;
  // docs/observability.md shows the same rules, word for word.
  auto rules = read_file(REDLOCK_ALERTS_PATH);
  auto doc = read_file(REDLOCK_OBSERVABILITY_DOC);
  auto groups = rules.find("groups:");
  ASSERT_NE(groups, std::string::npos);
  EXPECT_NE(doc.find(rules.substr(groups)), std::string::npos)
      << "docs/observability.md and contrib/prometheus/alerts.yml differ";
}

TEST(Server, ScrapesLocksTakenAndLostThroughTheExample) {
  if (kPrometheus.empty()) GTEST_SKIP() << "prometheus not found (Debian package prometheus)";
  RedisCluster cluster(3);
  Service service(cluster, {"--locks", "400", "--interval-ms", "25", "--lose-every", "20",
                            "--seconds", "60", "--linger-ms", "60000"});
  ASSERT_GT(service.port, 0) << "the example did not start serving";

  TempDir dir;
  int web = free_port();
  ASSERT_GT(web, 0);
  std::ofstream(dir.path / "prometheus.yml")
      << "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
      << "rule_files:\n  - " << REDLOCK_ALERTS_PATH << "\n"
      << "scrape_configs:\n  - job_name: redlock_example\n    static_configs:\n"
      << "      - targets: ['127.0.0.1:" << service.port << "']\n";
  Process prometheus({kPrometheus, "--config.file=" + (dir.path / "prometheus.yml").string(),
                      "--storage.tsdb.path=" + (dir.path / "data").string(),
                      "--web.listen-address=127.0.0.1:" + std::to_string(web)});

  // Every figure comes from the server's own store, scraped once a second.
  auto ok = [&] {
    return query(web, "sum(redlock_acquire_duration_seconds_count{result=\"ok\"})") > 0;
  };
  ASSERT_TRUE(eventually(ok, 40s)) << "no successful acquire scraped";
  EXPECT_TRUE(eventually(
      [&] { return query(web, "sum(redlock_lock_lost_total{reason=\"expired\"})") > 0; }, 20s))
      << "no lost lock scraped";
  EXPECT_TRUE(eventually(
      [&] {
        return query(web, "sum(redlock_acquire_duration_seconds_count{result=\"not_acquired\"})") >
               0;
      },
      20s))
      << "no contended acquire scraped";
  EXPECT_TRUE(eventually(
      [&] { return query(web, "sum(redlock_releases_total{result=\"ok\"})") > 0; }, 20s));
  // Each of the three nodes is up, as scraped.
  EXPECT_TRUE(eventually([&] { return query(web, "count(redlock_node_up == 1)") == 3; }, 20s));
  EXPECT_EQ(query(web, "count(redlock_node_up)"), 3);
  EXPECT_TRUE(eventually([&] { return query(web, "up{job=\"redlock_example\"}") == 1; }, 5s));
  // The alert rules loaded into the server (a rule file it could not read would stop it).
  EXPECT_NE(http_get(web, "/api/v1/rules").find("RedlockLockLost"), std::string::npos);

  // Stopped by its pid, as it was started.
  prometheus.signal(SIGTERM);
  auto stopped = prometheus.wait(20s);
  EXPECT_FALSE(stopped.timed_out);
  service.process->signal(SIGTERM);
  service.process->wait(10s);
}

// A real Prometheus server, scraping `target` every second and evaluating the alert rules of
// the docs every second; stopped by its pid.
struct PrometheusServer {
  TempDir dir;
  int web = free_port();
  std::unique_ptr<Process> process;

  explicit PrometheusServer(int target) {
    std::ofstream(dir.path / "prometheus.yml")
        << "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
        << "rule_files:\n  - " << REDLOCK_ALERTS_PATH << "\n"
        << "scrape_configs:\n  - job_name: redlock_example\n    static_configs:\n"
        << "      - targets: ['127.0.0.1:" << target << "']\n";
    process = std::make_unique<Process>(std::vector<std::string>{
        kPrometheus, "--config.file=" + (dir.path / "prometheus.yml").string(),
        "--storage.tsdb.path=" + (dir.path / "data").string(),
        "--web.listen-address=127.0.0.1:" + std::to_string(web)});
  }
  ~PrometheusServer() {
    process->signal(SIGTERM);
    process->wait(20s);
  }
  bool firing(const std::string& alert) const {
    return query(web, "count(ALERTS{alertname=\"" + alert + "\",alertstate=\"firing\"})") >= 1;
  }
};

// Issue 34: every "alert at once" case of docs/operations.md has a rule, and each fires in a
// real Prometheus server for its own fault: a replica in the node list, a wrong password, a
// rediss:// address on a plain-text port, a node out of memory, nodes without persistence, and
// a plain lock released after its ttl (the README's first pattern).
TEST(Server, EachAlertFiresForItsFault) {
  if (kPrometheus.empty()) GTEST_SKIP() << "prometheus not found (Debian package prometheus)";
  RedisCluster good(6);  // without AOF: persistence that forgets
  RedisServer replica, locked({}, "secret"), plain;
  ASSERT_EQ(replica.command({"REPLICAOF", "127.0.0.1", std::to_string(good[0].port())}), "OK");
  // One of the good nodes answers every write with OOM: five others still make a quorum of 9.
  ASSERT_EQ(good[5].command({"CONFIG", "SET", "maxmemory-policy", "noeviction"}), "OK");
  ASSERT_EQ(good[5].command({"CONFIG", "SET", "maxmemory", "1"}), "OK");
  const std::string nodes = good.node_list() + "," + replica.url() + ",redis://:wrong@" +
                            locked.address() + ",rediss://" + plain.address();
  Service service(nodes, {"--locks", "400", "--interval-ms", "25", "--lose-every", "0",
                          "--release-late-every", "4", "--seconds", "60", "--linger-ms", "60000"});
  ASSERT_GT(service.port, 0) << "the example did not start serving";
  PrometheusServer prometheus(service.port);
  ASSERT_GT(prometheus.web, 0);

  for (const char* alert :
       {"RedlockNodeNotMaster", "RedlockNodeAuthRefused", "RedlockNodeTls",
        "RedlockNodeRefusesCommands", "RedlockPersistenceForgets", "RedlockLockLost"})
    EXPECT_TRUE(eventually([&] { return prometheus.firing(alert); }, 40s)) << alert;
  // Each fires for its own node and reason.
  EXPECT_EQ(query(prometheus.web, "count(ALERTS{alertname=\"RedlockNodeNotMaster\",node=\"" +
                                      replica.address() + "\"})"),
            1);
  EXPECT_EQ(query(prometheus.web, "count(ALERTS{alertname=\"RedlockNodeAuthRefused\",node=\"" +
                                      locked.address() + "\"})"),
            1);
  EXPECT_EQ(query(prometheus.web,
                  "count(ALERTS{alertname=\"RedlockLockLost\",reason=\"released_after_expiry\"})"),
            1);
  // The good nodes without AOF forget; the replica, as a refused node, is not judged.
  EXPECT_GE(query(prometheus.web, "count(ALERTS{alertname=\"RedlockPersistenceForgets\"})"), 6);
  // Nothing is lost by the watchdog here (--lose-every 0): those series stay at zero.
  EXPECT_EQ(query(prometheus.web, "sum(redlock_lock_lost_total{reason=\"expired\"})"), 0);
  service.process->signal(SIGTERM);
  service.process->wait(10s);
}

}  // namespace
