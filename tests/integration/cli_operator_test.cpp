// The `redlock` tool without traps (issue 27): each test is one trap an operator fell into.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "cli_support.hpp"
#include "core/keys.hpp"
#include "redis_server.hpp"

namespace redlock::test {
namespace {

using namespace std::chrono_literals;

std::size_t count_of(const std::string& text, const std::string& part) {
  std::size_t n = 0;
  for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

// The CLI with stdout closed (`redlock ... >&-`) and stderr to a file; its exit status and
// stderr.
std::pair<int, std::string> cli_with_stdout_closed(std::vector<std::string> args) {
  args.insert(args.begin(), REDLOCK_CLI_PATH);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  char path[] = "/tmp/redlock-cli-err-XXXXXX";
  int err = ::mkstemp(path);
  if (err < 0) throw std::runtime_error("mkstemp failed");
  pid_t pid = ::fork();
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    ::dup2(err, 2);
    ::close(err);
    ::close(1);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(err);
  int status = -1;
  bool done = eventually([&] { return ::waitpid(pid, &status, WNOHANG) == pid; }, 20s);
  if (!done) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
  }
  std::ifstream f(path);
  std::stringstream text;
  text << f.rdbuf();
  std::remove(path);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, text.str()};
}

class CliOperator : public CliTest {
 protected:
  std::string name_of(const std::string& token) { return holder_name_on(cluster[0], token); }

  RedisCluster cluster{3};
  std::string nodes = cluster.node_list();
};

// Trap: `run job echo --wait 5` ran `echo` alone (redlock took --wait), `run job cmd --ttl 5`
// changed the lease.
TEST_F(CliOperator, EverythingAfterTheKeyIsTheCommand) {
  auto a = cli({"--nodes", nodes, "-q", "run", "job", "echo", "--wait", "5"});
  EXPECT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(a.out, "--wait 5\n");
  auto b = cli({"--nodes", nodes, "-q", "run", "job", "sh", "-c", "echo \"$REDLOCK_LEASE_MS $*\"",
                "sh", "--ttl", "5"});
  EXPECT_EQ(b.exit_code, 0) << b.err;
  EXPECT_EQ(b.out, "30000 --ttl 5\n") << "the lease is the default, --ttl went to the command";
  // Options of run before KEY; `--` after KEY separates, and only the first.
  auto c = cli({"--nodes", nodes, "-q", "run", "--wait", "1s", "--ttl", "6s", "job", "--", "sh",
                "-c", "echo \"$REDLOCK_LEASE_MS $*\"", "sh", "--", "x"});
  EXPECT_EQ(c.exit_code, 0) << c.err;
  EXPECT_EQ(c.out, "6000 -- x\n");
  auto none = cli({"--nodes", nodes, "run", "job", "--"});
  EXPECT_EQ(none.exit_code, 2) << none.err;
  // The form of earlier versions, options of run between KEY and `--` (no command begins with
  // '-'): still read, with a warning.
  auto legacy =
      cli({"--nodes", nodes, "run", "job", "--wait", "1s", "--kill-after=2s", "--", "echo", "hi"});
  EXPECT_EQ(legacy.exit_code, 0) << legacy.err;
  EXPECT_EQ(legacy.out, "hi\n");
  EXPECT_NE(legacy.err.find("put the options of run before KEY"), std::string::npos) << legacy.err;
  // Any other option there is named, and nothing runs.
  auto misplaced = cli({"--nodes", nodes, "run", "job", "--ttl", "5", "--", "echo", "ran"});
  EXPECT_EQ(misplaced.exit_code, 2) << misplaced.err;
  EXPECT_TRUE(misplaced.out.empty()) << misplaced.out;
  EXPECT_NE(misplaced.err.find("'--ttl' after KEY"), std::string::npos) << misplaced.err;
  EXPECT_EQ(cluster.count_existing("redlock:job"), 0u);
}

// Trap: `redlock acquire k >&-` exited 0, the lock held for its ttl and the token lost.
TEST_F(CliOperator, AcquireWithStdoutClosedHoldsNothing) {
  auto [code, err] = cli_with_stdout_closed({"--nodes", nodes, "acquire", "closed"});
  EXPECT_EQ(code, 2) << err;
  EXPECT_NE(err.find("stdout"), std::string::npos) << err;
  EXPECT_EQ(cluster.count_existing("redlock:closed"), 0u) << "a token nobody got holds nothing";
  // stdout to /dev/null by choice is a place like any other.
  auto null = run_process(
      {"/bin/sh", "-c",
       std::string(REDLOCK_CLI_PATH) + " --nodes " + nodes + " -q acquire devnull > /dev/null"});
  EXPECT_EQ(null.exit_code, 0) << null.err;
}

// Trap: `extend --ttl 1000` on a 20 s lock said "valid for 981 ms" while the keys kept 19.8 s.
TEST_F(CliOperator, ExtendSaysWhatTheQuorumHolds) {
  auto a = cli({"--nodes", nodes, "-q", "--ttl", "20s", "acquire", "ext"});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  std::string token = a.out.substr(0, 33);
  auto e = cli({"--nodes", nodes, "--ttl", "1000", "extend", "ext", token});
  ASSERT_EQ(e.exit_code, 0) << e.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(e.err, m, std::regex("holds it for ([0-9]+) ms more"))) << e.err;
  EXPECT_GT(std::stoll(m[1]), 15000) << e.err;
  EXPECT_NE(e.err.find("never shortens"), std::string::npos) << e.err;
  EXPECT_GT(std::stoll(cluster[0].command({"PTTL", "redlock:ext"})), 15000);
  // A longer lease is reported as such.
  auto longer = cli({"--nodes", nodes, "--ttl", "60s", "extend", "ext", token});
  ASSERT_TRUE(std::regex_search(longer.err, m, std::regex("holds it for ([0-9]+) ms more")))
      << longer.err;
  EXPECT_GT(std::stoll(m[1]), 55000) << longer.err;
  EXPECT_EQ(longer.err.find("never shortens"), std::string::npos) << longer.err;
}

// Trap: --help said the --ttl default is 10000; for run it is 30000.
TEST_F(CliOperator, HelpGivesEachVerbsDefaults) {
  auto all = cli({"--help"});
  EXPECT_EQ(all.exit_code, 0);
  EXPECT_NE(all.out.find("run 30s"), std::string::npos) << all.out;
  EXPECT_NE(all.out.find("acquire and extend 10s"), std::string::npos) << all.out;
  auto run = cli({"run", "--help"});
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_NE(run.out.find("--ttl (default 30s here)"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("default 0"), std::string::npos) << run.out;
  auto acquire = cli({"acquire", "--help"});
  EXPECT_NE(acquire.out.find("--ttl (default 10s)"), std::string::npos) << acquire.out;
  EXPECT_NE(acquire.out.find("1 + --retry-count"), std::string::npos) << acquire.out;
}

// Trap: --version, -V and an unknown verb all said "A subcommand is required".
TEST_F(CliOperator, VersionAndUnknownVerbs) {
  for (const char* flag : {"--version", "-V"}) {
    auto v = cli({flag});
    EXPECT_EQ(v.exit_code, 0) << flag << v.err;
    EXPECT_TRUE(std::regex_match(v.out, std::regex("redlock [0-9]+\\.[0-9]+\\.[0-9]+\n"))) << v.out;
  }
  auto unknown = cli({"--nodes", nodes, "aquire", "k"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("unknown verb 'aquire'"), std::string::npos) << unknown.err;
}

// Durations take units; a plain number stays milliseconds.
TEST_F(CliOperator, DurationsTakeUnits) {
  auto pttl = [&](const std::string& key) {
    return std::stoll(cluster[0].command({"PTTL", "redlock:" + key}));
  };
  ASSERT_EQ(cli({"--nodes", nodes, "-q", "--ttl", "5000", "acquire", "ms"}).exit_code, 0);
  EXPECT_LE(pttl("ms"), 5000);
  ASSERT_EQ(cli({"--nodes", nodes, "-q", "--ttl", "30s", "acquire", "s"}).exit_code, 0);
  EXPECT_GT(pttl("s"), 25000);
  EXPECT_LE(pttl("s"), 30000);
  ASSERT_EQ(cli({"--nodes", nodes, "-q", "--ttl", "2m", "acquire", "m"}).exit_code, 0);
  EXPECT_GT(pttl("m"), 115000);
  ASSERT_EQ(cli({"--nodes", nodes, "-q", "--ttl", "1h", "acquire", "h"}).exit_code, 0);
  EXPECT_GT(pttl("h"), 3'590'000);
  ASSERT_EQ(cli({"--nodes", nodes, "-q", "--ttl", "500ms", "acquire", "x"}).exit_code, 0);
  EXPECT_LE(pttl("x"), 500);
  // Every duration option takes them.
  auto all = cli({"--nodes",      nodes,
                  "-q",           "--connect-timeout",
                  "2s",           "--request-timeout",
                  "300ms",        "--retry-delay",
                  "50ms",         "--retry-jitter",
                  "0s",           "--restart-guard",
                  "0s",           "run",
                  "--wait",       "1s",
                  "--kill-after", "1s",
                  "units",        "true"});
  EXPECT_EQ(all.exit_code, 0) << all.err;
  auto busy = cli({"--nodes", nodes, "-q", "acquire", "s", "--wait", "100ms"});
  EXPECT_EQ(busy.exit_code, 1) << busy.err;
  for (std::string bad : {"5x", "1.5ms", "s", "10 s", "1m30"}) {
    auto r = cli({"--nodes", nodes, "--ttl", bad, "acquire", "bad"});
    EXPECT_EQ(r.exit_code, 2) << bad << ": " << r.err;
    EXPECT_NE(r.err.find("--ttl"), std::string::npos) << r.err;
  }
  for (std::string bad : {"-1s", "1099511628s"}) {
    auto kill_after = cli({"--nodes", nodes, "run", "--kill-after", bad, "bad", "true"});
    EXPECT_EQ(kill_after.exit_code, 2) << bad << ": " << kill_after.err;
    EXPECT_NE(kill_after.err.find("--kill-after"), std::string::npos) << kill_after.err;
  }
  EXPECT_EQ(cluster.count_existing("redlock:bad"), 0u);
}

// Trap: a space-separated node list said "database '/127.0.0.1:18002' is not a non-negative
// integer".
TEST_F(CliOperator, ASeparatorMistakeIsNamed) {
  for (std::string sep : {" ", ";", "|"}) {
    auto r = cli({"--nodes", cluster[0].url() + sep + cluster[1].url(), "status"});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("separate the nodes with ','"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("database"), std::string::npos) << r.err;
  }
}

// Trap: N = 1 and an even N were accepted silently.
TEST_F(CliOperator, OneOrAnEvenNumberOfNodesIsWarnedAbout) {
  auto one = cli({"--nodes", cluster[0].url(), "--no-persistence-warning", "acquire", "n1"});
  EXPECT_EQ(one.exit_code, 0) << one.err;
  EXPECT_NE(one.err.find("1 node tolerates no failure"), std::string::npos) << one.err;
  auto two = cli({"--nodes", cluster[0].url() + "," + cluster[1].url(), "status"});
  EXPECT_NE(two.err.find("2 nodes tolerate 0 failures, as 1 node does"), std::string::npos)
      << two.err;
  EXPECT_NE(two.out.find("tolerates 0 more failures"), std::string::npos) << two.out;
  auto three = cli({"--nodes", nodes, "status"});
  EXPECT_EQ(three.err.find("tolerate"), std::string::npos) << three.err;
  auto quiet = cli({"-q", "--nodes", cluster[0].url(), "acquire", "n2"});
  EXPECT_TRUE(quiet.err.empty()) << quiet.err;
}

// Trap: one long persistence warning per node on every call; -q hid the votes with them.
TEST_F(CliOperator, PersistenceWarningsAreShortOncePerNodeAndCanBeSwitchedOff) {
  // The fixture's servers run without AOF.
  auto a = cli({"--nodes", nodes, "acquire", "p"});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(count_of(a.err, "persistence off"), 3u) << a.err;
  EXPECT_EQ(count_of(a.err, "--no-persistence-warning"), 1u) << a.err;
  std::istringstream lines(a.err);
  for (std::string line; std::getline(lines, line);) {
    if (line.find("persistence off") != std::string::npos) {
      EXPECT_LT(line.size(), 200u) << "condensed: " << line;
    }
  }
  auto off = cli({"--nodes", nodes, "--no-persistence-warning", "acquire", "p2"});
  EXPECT_EQ(off.err.find("persistence"), std::string::npos) << off.err;
  EXPECT_NE(off.err.find("votes"), std::string::npos) << "the votes stay: " << off.err;
  auto env = cli({"acquire", "p3"}, {"REDLOCK_NODES=" + nodes, "REDLOCK_NO_PERSISTENCE_WARNING=1"});
  EXPECT_EQ(env.err.find("persistence"), std::string::npos) << env.err;

  // status: in its table, once per node, nothing on stderr.
  auto s = cli({"--nodes", nodes, "status"});
  EXPECT_EQ(s.exit_code, 0) << s.out;
  EXPECT_EQ(count_of(s.out, "  warning: persistence off"), 3u) << s.out;
  EXPECT_EQ(s.err.find("persistence"), std::string::npos) << s.err;
  auto quiet = cli({"--nodes", nodes, "--no-persistence-warning", "status"});
  EXPECT_EQ(quiet.out.find("persistence"), std::string::npos) << quiet.out;
}

// Trap: status exited 0 with a node refused as a replica, and had no JSON.
TEST_F(CliOperator, StatusJsonAndARefusedNode) {
  auto j = cli({"--nodes", nodes, "status", "--json"});
  EXPECT_EQ(j.exit_code, 0) << j.err;
  EXPECT_EQ(j.out.front(), '{');
  EXPECT_EQ(count_of(j.out, "\"up\":true"), 3u) << j.out;
  EXPECT_NE(j.out.find("\"quorum_reachable\":true"), std::string::npos) << j.out;
  EXPECT_NE(j.out.find("\"quorum\":2,\"tolerates\":1"), std::string::npos) << j.out;
  EXPECT_NE(j.out.find("\"node\":\"" + cluster[1].address() + "\""), std::string::npos) << j.out;
  EXPECT_EQ(count_of(j.out, "\"persistence_forgets\":true"), 3u) << j.out;
  // --strict: persistence that forgets is a fault too.
  EXPECT_EQ(cli({"--nodes", nodes, "status", "--strict"}).exit_code, 5);
  EXPECT_EQ(cli({"--nodes", nodes, "--no-persistence-warning", "status", "--strict"}).exit_code, 0);

  ASSERT_EQ(cluster[2].command({"REPLICAOF", "127.0.0.1", std::to_string(cluster[0].port())}),
            "OK");
  auto s = cli({"--nodes", nodes, "status"});
  EXPECT_EQ(s.exit_code, 5) << s.out << s.err;
  EXPECT_NE(s.out.find("node_not_master"), std::string::npos) << s.out;
  EXPECT_NE(s.out.find("1 refused"), std::string::npos) << s.out;
  auto sj = cli({"--nodes", nodes, "status", "--json"});
  EXPECT_EQ(sj.exit_code, 5);
  EXPECT_NE(sj.out.find("\"refused\":true"), std::string::npos) << sj.out;
  EXPECT_NE(sj.out.find("\"error\":\"node_not_master\""), std::string::npos) << sj.out;
  cluster[2].command({"REPLICAOF", "NO", "ONE"});
}

// `redlock show KEY`: every node's view, by name, never the token.
TEST_F(CliOperator, ShowNamesTheHolderAndTheLine) {
  auto free = cli({"--nodes", nodes, "show", "s"});
  EXPECT_EQ(free.exit_code, 0) << free.err;
  EXPECT_NE(free.out.find("free on every node"), std::string::npos) << free.out;

  auto a = cli({"--nodes", nodes, "-q", "--ttl", "20s", "acquire", "--fencing", "s"});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  std::string token = a.out.substr(0, 33);
  std::string name = name_of(token);
  ASSERT_EQ(name.size(), 16u) << name;
  // A waiter in line while the lock is held.
  Process waiter({REDLOCK_CLI_PATH, "--nodes", nodes, "-q", "run", "--wait", "20s", "s", "true"});
  ASSERT_TRUE(eventually(
      [&] {
        return cli({"--nodes", nodes, "show", "s"}).out.find("    line: ") != std::string::npos;
      },
      5s));

  auto s = cli({"--nodes", nodes, "show", "s"});
  EXPECT_EQ(s.exit_code, 0) << s.err;
  EXPECT_EQ(count_of(s.out, "held by " + name + ","), 3u) << s.out;
  EXPECT_NE(s.out.find("held by " + name + " on 3 of 3 nodes"), std::string::npos) << s.out;
  EXPECT_EQ(count_of(s.out, "; fence 1"), 3u) << s.out;
  EXPECT_EQ(count_of(s.out, "    line: "), 3u) << s.out;
  EXPECT_EQ(s.out.find(token.substr(0, 32)), std::string::npos) << "never the token: " << s.out;

  auto j = cli({"--nodes", nodes, "show", "--json", "s"});
  EXPECT_EQ(j.exit_code, 0) << j.err;
  EXPECT_NE(j.out.find("\"holder\":\"" + name + "\",\"nodes\""), std::string::npos) << j.out;
  EXPECT_EQ(count_of(j.out, "\"fence\":\"1\""), 3u) << j.out;
  EXPECT_EQ(count_of(j.out, "\"line\":[{\"name\":"), 3u) << j.out;
  EXPECT_EQ(count_of(j.out, "\"waited_for\":true"), 3u) << j.out;
  EXPECT_EQ(j.out.find(token.substr(0, 32)), std::string::npos) << j.out;

  ASSERT_EQ(cli({"--nodes", nodes, "-q", "release", "s", token}).exit_code, 0);
  EXPECT_EQ(waiter.wait(10s).exit_code, 0);
}

// A turn, on the node's clock; a key of another type; a node that cannot be read.
TEST_F(CliOperator, ShowTurnsForeignTypesAndDownNodes) {
  for (std::size_t i = 0; i < cluster.size(); ++i) {
    auto time = cluster[i].command({"EVAL",
                                    "local t = redis.call('TIME') return t[1] * 1000 + "
                                    "math.floor(t[2] / 1000)",
                                    "0"});
    long long due = std::stoll(time) + 8000;
    std::string queue = detail::aux_key("redlock:t", detail::kQueue);
    std::string turns = detail::aux_key("redlock:t", detail::kTurns);
    cluster[i].command({"ZADD", queue, "1", "chan#1@100"});
    cluster[i].command({"HSET", turns, "chan#1@100", std::to_string(due)});
  }
  auto s = cli({"--nodes", nodes, "show", "t"});
  EXPECT_EQ(s.exit_code, 0) << s.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(s.out, m, std::regex("turn: [0-9a-f]{16}, ([0-9]+) ms left")))
      << s.out;
  EXPECT_GT(std::stoll(m[1]), 5000);
  EXPECT_LE(std::stoll(m[1]), 8000);

  cluster[0].command({"HSET", "redlock:h", "f", "v"});
  auto h = cli({"--nodes", nodes, "show", "h"});
  EXPECT_EQ(h.exit_code, 0) << h.err;
  EXPECT_NE(h.out.find("NOT A LOCK: the key holds a hash"), std::string::npos) << h.out;
  auto hj = cli({"--nodes", nodes, "show", "--json", "h"});
  EXPECT_NE(hj.out.find("\"type\":\"hash\""), std::string::npos) << hj.out;

  cluster[1].kill9();
  auto down = cli({"--nodes", nodes, "show", "h"});
  EXPECT_EQ(down.exit_code, 0) << down.err;
  EXPECT_TRUE(std::regex_search(down.out, std::regex(cluster[1].address() + " +not read")))
      << down.out;
  EXPECT_EQ(down.out.find("free on every node"), std::string::npos) << down.out;
  cluster[2].kill9();
  EXPECT_EQ(cli({"--nodes", nodes, "show", "h"}).exit_code, 3);
}

// etcdctl lock's holding until a signal, as docs/guide-run.md spells it with run.
TEST_F(CliOperator, RunSleepInfinityHoldsUntilSigterm) {
  Process p({REDLOCK_CLI_PATH, "--nodes", nodes, "-q", "run", "held", "sleep", "infinity"});
  ASSERT_TRUE(eventually([&] { return cluster.count_existing("redlock:held") == 3; }, 5s));
  std::this_thread::sleep_for(200ms);  // the command has started (exec of sleep)
  p.signal(SIGTERM);
  auto r = p.wait(10s);
  EXPECT_EQ(r.exit_code, 128 + SIGTERM) << r.err;
  EXPECT_EQ(cluster.count_existing("redlock:held"), 0u) << "released after the command ended";
}

}  // namespace
}  // namespace redlock::test
