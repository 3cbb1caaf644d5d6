// `redlock run --shared` (like `flock -s`) and `show` of a read-write lock (docs/guide-rwlock.md):
// readers run together, a writer (`run` without --shared) waits for them and runs alone, `show`
// names each reader by a digest of its token and its time left, never the token. Real
// redis-servers; the CLI as a process.
#include <gtest/gtest.h>

#include <signal.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "cli_support.hpp"
#include "core/keys.hpp"
#include "redis_server.hpp"

namespace redlock::test {
namespace {

using namespace std::chrono_literals;

const std::string kMarker("readers\0", 8);  // what the lock key holds while readers hold

class CliShared : public CliTest {
 protected:
  std::vector<std::string> with_nodes(std::vector<std::string> more) {
    std::vector<std::string> args = {"--nodes", nodes, "--no-persistence-warning"};
    args.insert(args.end(), more.begin(), more.end());
    return args;
  }
  // A fresh directory for the commands' files; removed with the fixture.
  std::string scratch() {
    std::string pattern = ::testing::TempDir() + "redlock-shared-XXXXXX";
    char* made = ::mkdtemp(pattern.data());
    EXPECT_NE(made, nullptr);
    dirs_.push_back(pattern);
    return pattern;
  }
  void TearDown() override {
    std::error_code ec;
    for (const auto& d : dirs_) std::filesystem::remove_all(d, ec);
  }
  // A reader by hand, as the reader's script leaves it on `node`: the marker on the lock key and
  // the token in the readers' set, scored with the end of its lease on the node's clock.
  static void add_reader(const RedisServer& node, const std::string& lock_key,
                         const std::string& token, long long lease_ms) {
    auto time = node.command({"TIME"});
    auto nl = time.find('\n');
    long long now_ms =
        std::stoll(time.substr(0, nl)) * 1000 + std::stoll(time.substr(nl + 1)) / 1000;
    node.command(
        {"ZADD", detail::aux_key(lock_key, "readers"), std::to_string(now_ms + lease_ms), token});
    node.command({"PEXPIRE", detail::aux_key(lock_key, "readers"), std::to_string(lease_ms)});
    node.command({"SET", lock_key, kMarker, "PX", std::to_string(lease_ms)});
  }

  RedisCluster cluster{3};
  std::string nodes = cluster.node_list();
  std::vector<std::string> dirs_;
};

// `show` of a read-locked key, laid out by hand as the contract gives it: each node's readers by
// name with their time left, the readers on a quorum in the summary, the JSON form, and never a
// token. A reader whose score has passed is not shown.
TEST_F(CliShared, ShowPrintsTheReadersOfAReadWriteLockByNameNeverByToken) {
  const std::string key = "redlock:books", a = "reader-token-aaaaaaaaaaaaaaaa",
                    b = "reader-token-bbbbbbbbbbbbbbbb", gone = "reader-token-gone";
  for (std::size_t i = 0; i < cluster.size(); ++i) add_reader(cluster[i], key, a, 20'000);
  for (std::size_t i = 0; i < 2; ++i) add_reader(cluster[i], key, b, 20'000);
  cluster[2].command({"ZADD", detail::aux_key(key, "readers"), "1", gone});  // long ended
  const std::string name_a = holder_name_on(cluster[0], a), name_b = holder_name_on(cluster[0], b),
                    name_gone = holder_name_on(cluster[0], gone);

  auto r = cli(with_nodes({"show", "books"}));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(has(r.out, "read-locked by 2 reader(s)")) << r.out;
  EXPECT_TRUE(has(r.out, "read-locked by 1 reader(s)")) << r.out;
  EXPECT_TRUE(has(r.out, "reader: " + name_a + ", ")) << r.out;
  EXPECT_TRUE(has(r.out, "reader: " + name_b + ", ")) << r.out;
  EXPECT_TRUE(has(r.out, " ms left")) << r.out;
  EXPECT_FALSE(has(r.out, name_gone)) << r.out;
  EXPECT_TRUE(has(r.out, "read-locked on 3 of 3 nodes (quorum 2): 2 reader(s) on a quorum"))
      << r.out;
  EXPECT_FALSE(has(r.out, "free on every node")) << r.out;
  for (const auto& token : {a, b, gone}) EXPECT_FALSE(has(r.out + r.err, token));

  auto json = cli(with_nodes({"show", "--json", "books"}));
  EXPECT_EQ(json.exit_code, 0) << json.err;
  EXPECT_TRUE(has(json.out, "\"holder\":null,\"readers\":[")) << json.out;
  EXPECT_TRUE(has(json.out, "\"readers_marker\":true,\"readers\":[{\"name\":\"")) << json.out;
  EXPECT_TRUE(has(json.out, name_a)) << json.out;
  for (const auto& token : {a, b, gone}) EXPECT_FALSE(has(json.out, token));

  // `list` names no holder for the marker, and `break` leaves readers alone.
  auto list = cli(with_nodes({"list"}));
  EXPECT_TRUE(has(list.out, "(readers)")) << list.out;
  auto brk = cli(with_nodes({"break", "books", "--force"}));
  EXPECT_EQ(brk.exit_code, 1) << brk.err;
  EXPECT_EQ(cluster.count_holding(key, kMarker), 3u);
}

TEST_F(CliShared, SharedWithPermitsIsAUsageError) {
  auto r = cli(with_nodes({"run", "--shared", "--permits", "2", "both", "true"}));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(has(r.err, "--shared and --permits")) << r.err;
  EXPECT_EQ(cluster.count_existing("redlock:both"), 0u);
  auto e = cli(with_nodes({"release", "--shared", "--permit", "1", "both", "t"}));
  EXPECT_EQ(e.exit_code, 2) << e.err;
}

// Two readers hold at once: each waits, inside its command, until it sees the other inside. A
// writer started while they hold waits for both and then runs alone; it sees no reader inside. A
// third reader that comes while the writer waits stands behind it (a waiting writer holds new
// readers back) and runs after it; `show` prints the two readers and the line, the reader
// marked (r).
TEST_F(CliShared, ReadersOverlapAWaitingWriterHoldsNewReadersBackAndRunsAlone) {
  const std::string dir = scratch();
  // Inside: a file of its own; wait (up to 10 s) for two; stay a moment; leave. Exit 0 only when
  // it saw the other reader inside with it.
  const std::string reader =
      "touch \"$0/in.$$\"; i=0; while [ $(ls \"$0\" | grep -c '^in\\.') -lt 2 ]; do "
      "i=$((i+1)); [ $i -gt 200 ] && { rm -f \"$0/in.$$\"; exit 9; }; sleep 0.05; done; "
      "echo \"shared=$REDLOCK_SHARED\"; sleep 2; rm -f \"$0/in.$$\"";
  std::vector<std::string> argv = {REDLOCK_CLI_PATH,
                                   "--nodes",
                                   nodes,
                                   "--no-persistence-warning",
                                   "run",
                                   "--shared",
                                   "--wait",
                                   "10s",
                                   "rw",
                                   "sh",
                                   "-c",
                                   reader,
                                   dir};
  Process first(argv), second(argv);
  ASSERT_TRUE(eventually(
      [&] {
        std::size_t in = 0;
        for (const auto& e : std::filesystem::directory_iterator(dir))
          in += e.path().filename().string().rfind("in.", 0) == 0;
        return in == 2;
      },
      10s));
  auto show = cli(with_nodes({"show", "rw"}));
  EXPECT_TRUE(has(show.out, "2 reader(s) on a quorum")) << show.out;
  // The writer: the plain run of the same key, waiting. No reader may be inside while it runs.
  auto t0 = std::chrono::steady_clock::now();
  Process writer({REDLOCK_CLI_PATH, "--nodes", nodes, "--no-persistence-warning", "run", "--wait",
                  "20s", "rw", "sh", "-c",
                  "ls \"$0\" | grep -q '^in\\.' && exit 7; touch \"$0/wrote\"; echo writer alone",
                  dir});
  auto line_of = [&] {
    auto r = cli(with_nodes({"show", "rw"}));
    auto at = r.out.find("line:");
    return at == std::string::npos ? std::string() : r.out.substr(at, r.out.find('\n', at) - at);
  };
  ASSERT_TRUE(eventually([&] { return !line_of().empty(); }, 5s)) << "the writer stands in line";
  // A third reader, after the writer: it waits behind it, and runs once the writer has written.
  Process third({REDLOCK_CLI_PATH, "--nodes", nodes, "--no-persistence-warning", "run", "--shared",
                 "--wait", "20s", "rw", "sh", "-c",
                 "[ -e \"$0/wrote\" ] && echo after the writer || echo before the writer", dir});
  EXPECT_TRUE(eventually([&] { return has(line_of(), "(r)"); }, 5s)) << line_of();
  auto w = writer.wait(20s);
  auto waited = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(w.exit_code, 0) << w.err << w.out;
  EXPECT_EQ(w.out, "writer alone\n");
  EXPECT_GT(waited, 300ms) << "the writer ran while the readers held";
  auto a = first.wait(15s), b = second.wait(15s), c = third.wait(15s);
  EXPECT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(b.exit_code, 0) << b.err;
  EXPECT_EQ(a.out, "shared=1\n");
  EXPECT_EQ(b.out, "shared=1\n");
  EXPECT_EQ(c.exit_code, 0) << c.err;
  EXPECT_EQ(c.out, "after the writer\n") << "a reader that came after a waiting writer";
  EXPECT_TRUE(eventually([&] { return cluster.count_existing("redlock:rw") == 0; }, 5s));
}

// A reader does not get in beside a writer: without --wait it exits 1 (or -E), the command not
// run; with --wait it runs once the writer is done.
TEST_F(CliShared, AReaderWaitsForAWriter) {
  Process writer(
      {REDLOCK_CLI_PATH, "--nodes", nodes, "--no-persistence-warning", "run", "w", "sleep", "1"});
  ASSERT_TRUE(eventually([&] { return cluster.count_existing("redlock:w") >= 2; }, 5s));
  auto refused = cli(with_nodes({"run", "--shared", "w", "echo", "ran"}));
  EXPECT_EQ(refused.exit_code, 1) << refused.err;
  EXPECT_EQ(refused.out, "");
  auto coded = cli(with_nodes({"run", "--shared", "-E", "9", "w", "echo", "ran"}));
  EXPECT_EQ(coded.exit_code, 9) << coded.err;
  auto waited = cli(with_nodes({"run", "--shared", "--wait", "10s", "w", "echo", "ran"}));
  EXPECT_EQ(waited.exit_code, 0) << waited.err;
  EXPECT_EQ(waited.out, "ran\n");
  EXPECT_EQ(writer.wait(10s).exit_code, 0);
}

// A reader's share that is lost (its entry gone from every node) ends the command as a lost
// lock does (exit 4); a signal to a reader's run goes to its command, as to any run's.
TEST_F(CliShared, ALostShareExitsFourAndSignalsReachTheCommand) {
  Process lost({REDLOCK_CLI_PATH, "--nodes", nodes, "--no-persistence-warning", "--ttl", "900",
                "run", "--shared", "lose", "sleep", "10"});
  ASSERT_TRUE(eventually(
      [&] { return cluster.count_holding("redlock:lose", kMarker) == cluster.size(); }, 5s));
  for (std::size_t i = 0; i < cluster.size(); ++i)
    cluster[i].command({"DEL", detail::aux_key("redlock:lose", "readers"), "redlock:lose"});
  auto r = lost.wait(10s);
  EXPECT_EQ(r.exit_code, 4) << r.err;
  EXPECT_TRUE(has(r.err, "read lock on 'lose' lost")) << r.err;

  Process term({REDLOCK_CLI_PATH, "--nodes", nodes, "--no-persistence-warning", "run", "--shared",
                "sig", "sleep", "10"});
  ASSERT_TRUE(eventually(
      [&] { return cluster.count_holding("redlock:sig", kMarker) == cluster.size(); }, 5s));
  term.signal(SIGTERM);
  auto t = term.wait(10s);
  EXPECT_EQ(t.exit_code, 128 + SIGTERM) << t.err;
  EXPECT_TRUE(eventually([&] { return cluster.count_existing("redlock:sig") == 0; }, 5s))
      << "released once the command ended";
}

// A reader's token: acquire --shared prints it; extend and release --shared act on that share.
TEST_F(CliShared, AcquireExtendAndReleaseASharedToken) {
  auto a = cli(with_nodes({"acquire", "--shared", "tok"}));
  ASSERT_EQ(a.exit_code, 0) << a.err;
  std::string token = a.out.substr(0, a.out.find('\n'));
  auto b = cli(with_nodes({"acquire", "--shared", "tok"}));
  ASSERT_EQ(b.exit_code, 0) << "readers share: " << b.err;
  EXPECT_EQ(cli(with_nodes({"acquire", "tok"})).exit_code, 1) << "a writer is refused";
  EXPECT_EQ(cli(with_nodes({"extend", "--shared", "tok", token})).exit_code, 0);
  EXPECT_EQ(cli(with_nodes({"release", "--shared", "tok", token})).exit_code, 0);
  EXPECT_NE(cli(with_nodes({"release", "--shared", "tok", token})).exit_code, 0)
      << "released already";
  std::string other = b.out.substr(0, b.out.find('\n'));
  EXPECT_EQ(cli(with_nodes({"release", "tok", other}), {"REDLOCK_SHARED=1"}).exit_code, 0)
      << "REDLOCK_SHARED, as run --shared gives its command, is --shared";
  EXPECT_TRUE(eventually([&] { return cluster.count_existing("redlock:tok") == 0; }, 5s));
  EXPECT_EQ(cli(with_nodes({"acquire", "tok"})).exit_code, 0) << "a writer once they left";
}

}  // namespace
}  // namespace redlock::test
