// The `redlock` tool's honest output and the verbs operators of flock, etcdctl and consul expect
// (issue 34): control bytes escaped, a release that says what the quorum confirmed, `show`
// without waiters that left, `list`, a guarded `break`, `run -c`, compound durations and the
// environment variables for --prefix and --ttl. Real redis-servers; the CLI as a process.
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <set>

#include <string>
#include <vector>

#include "cli_support.hpp"
#include "core/keys.hpp"
#include "redis_server.hpp"

namespace redlock::test {
namespace {

using namespace std::chrono_literals;

// True when `text` holds a raw control byte other than the line feeds that end lines.
bool raw_control(const std::string& text) {
  for (char c : text) {
    auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 && u != '\n') || u == 0x7f) return true;
  }
  return false;
}

class CliVerbs : public CliTest {
 protected:
  std::string name_of(const std::string& token) { return holder_name_on(cluster[0], token); }
  std::string acquire(const std::string& key, std::vector<std::string> more = {}) {
    std::vector<std::string> args = {"--nodes", nodes, "--no-persistence-warning"};
    args.insert(args.end(), more.begin(), more.end());
    args.insert(args.end(), {"acquire", key});
    auto r = cli(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::string token = r.out;
    while (!token.empty() && (token.back() == '\n' || token.back() == ' ')) token.pop_back();
    return token;
  }
  long long pttl(const std::string& key) { return std::stoll(cluster[0].command({"PTTL", key})); }

  RedisCluster cluster{3};
  std::string nodes = cluster.node_list();
};

TEST_F(CliVerbs, ControlBytesInANameAreEscapedInEveryVerbsText) {
  const std::string key = "a\x1b[2Jb\rc\nd\x7f";
  const std::string shown = "a\\x1b[2Jb\\rc\\nd\\x7f";
  auto token = acquire(key);
  ASSERT_FALSE(token.empty());
  for (const std::vector<std::string>& verb : {std::vector<std::string>{"show", key},
                                               {"list"},
                                               {"extend", key, token},
                                               {"release", key, token},
                                               {"acquire", key},
                                               {"break", key}}) {
    std::vector<std::string> args = {"--nodes", nodes};
    args.insert(args.end(), verb.begin(), verb.end());
    auto r = cli(args);
    EXPECT_FALSE(raw_control(r.out)) << verb[0] << ": " << r.out;
    EXPECT_FALSE(raw_control(r.err)) << verb[0] << ": " << r.err;
    EXPECT_TRUE(has(r.out + r.err, shown)) << verb[0] << ": " << r.out << r.err;
  }
}

TEST_F(CliVerbs, ReleaseSaysWhatTheQuorumConfirmedAndWhatWasStillPending) {
  auto token = acquire("rel");
  cluster[2].pause();  // its answer cannot come before the quorum's
  auto r = cli({"--nodes", nodes, "--request-timeout", "2s", "release", "rel", token});
  cluster[2].resume();
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(has(r.err, "deleted on 2 of 3 node(s), quorum 2 confirmed")) << r.err;
  EXPECT_TRUE(has(r.err, "1 still pending")) << r.err;
  EXPECT_FALSE(has(r.err, "released 'rel' on 2 node(s)")) << r.err;
  EXPECT_EQ(cluster[0].command({"EXISTS", "redlock:rel"}), "0");
  EXPECT_EQ(cluster[1].command({"EXISTS", "redlock:rel"}), "0");
}

TEST_F(CliVerbs, ShowSaysWaitedForOnlyWhileAWaiterIsThere) {
  auto token = acquire("w");
  {
    Process waiter({REDLOCK_CLI_PATH, "--nodes", nodes, "-q", "acquire", "w", "--wait", "1500ms"});
    EXPECT_TRUE(eventually(
        [&] {
          return has(cli({"--nodes", nodes, "show", "w"}).out, "waited for");
        },
        5s));
    auto gone = waiter.wait(10s);
    EXPECT_EQ(gone.exit_code, 1) << gone.err;  // its wait ran out
  }
  // The mark stays on the holder's token; nobody waits any more.
  auto json = cli({"--nodes", nodes, "show", "w", "--json"});
  EXPECT_TRUE(has(json.out, "\"marked\":true")) << json.out;
  EXPECT_FALSE(has(json.out, "\"waited_for\":true")) << json.out;
  EXPECT_FALSE(has(cli({"--nodes", nodes, "show", "w"}).out, "waited for"));
  EXPECT_EQ(cli({"--nodes", nodes, "release", "w", token}).exit_code, 0);
}

TEST_F(CliVerbs, ListShowsHeldLocksByHolderNameAndNeverATokenOrAnAuxiliaryKey) {
  auto a = acquire("jobs:a", {"--ttl", "1m"});
  auto fenced = cli({"--nodes", nodes, "-q", "acquire", "jobs:b", "--fencing"});
  ASSERT_EQ(fenced.exit_code, 0) << fenced.err;  // a fence counter beside it: not a lock
  auto b = fenced.out.substr(0, fenced.out.find(' '));
  auto c = acquire("other");
  cluster[0].command({"SET", "redlock:minority", "x", "PX", "60000"});
  cluster[1].command({"HSET", "redlock:hash", "f", "v"});  // another program's key

  auto r = cli({"--nodes", nodes, "list"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  for (const auto& t : {a, b, c}) EXPECT_FALSE(has(r.out, t)) << r.out;
  EXPECT_TRUE(has(r.out, name_of(a))) << r.out;
  EXPECT_TRUE(has(r.out, name_of(b))) << r.out;
  EXPECT_TRUE(has(r.out, "3/3")) << r.out;
  EXPECT_TRUE(has(r.out, "(minority)")) << r.out;
  EXPECT_FALSE(has(r.out, "hash")) << r.out;
  EXPECT_FALSE(has(r.out, "fence")) << r.out;
  EXPECT_TRUE(has(r.out, "3 lock(s) held on a quorum")) << r.out;

  auto only = cli({"--nodes", nodes, "list", "jobs:*", "--json"});
  EXPECT_EQ(only.exit_code, 0) << only.err;
  EXPECT_TRUE(has(only.out, "\"resource\":\"jobs:a\"")) << only.out;
  EXPECT_TRUE(has(only.out, "\"resource\":\"jobs:b\"")) << only.out;
  EXPECT_FALSE(has(only.out, "other")) << only.out;
  EXPECT_TRUE(has(only.out, "\"holder\":\"" + name_of(a) + "\"")) << only.out;

  auto cut = cli({"--nodes", nodes, "list", "--limit", "1"});
  EXPECT_TRUE(has(cut.out, "cut at 1")) << cut.out;

  cluster[0].stop();
  cluster[1].stop();
  EXPECT_EQ(cli({"--nodes", nodes, "list"}).exit_code, 3);
}

TEST_F(CliVerbs, BreakIsGuardedAndRemovesOnlyTheHolderItRead) {
  auto token = acquire("stuck");
  const std::string name = name_of(token);

  auto refused = cli({"--nodes", nodes, "break", "stuck"});
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_TRUE(has(refused.err, "--force")) << refused.err;
  EXPECT_EQ(cluster.count_holding("redlock:stuck", token), 3u);

  auto other = cli({"--nodes", nodes, "break", "stuck", "--force", "--holder", "0123456789abcdef"});
  EXPECT_EQ(other.exit_code, 1) << other.err;
  EXPECT_EQ(cluster.count_holding("redlock:stuck", token), 3u);

  auto r = cli({"--nodes", nodes, "break", "stuck", "--force", "--holder", name});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(has(r.err, "broke 'stuck': holder " + name)) << r.err;
  EXPECT_FALSE(has(r.err + r.out, token));
  EXPECT_TRUE(eventually([&] { return cluster.count_existing("redlock:stuck") == 0; }, 5s));
  EXPECT_EQ(cli({"--nodes", nodes, "break", "stuck", "--force"}).exit_code, 1);

  // A key of another type is not a lock: left as it is.
  for (std::size_t i = 0; i < 3; ++i) cluster[i].command({"HSET", "redlock:h", "f", "v"});
  EXPECT_EQ(cli({"--nodes", nodes, "break", "h", "--force"}).exit_code, 1);
  EXPECT_EQ(cluster.count_existing("redlock:h"), 3u);
}

TEST_F(CliVerbs, RunDashCRunsTheLineThroughTheShell) {
  auto r = cli({"--nodes", nodes, "-q", "run", "-c",
                "echo $((40 + 2)) \"$REDLOCK_TOKEN\" | wc -w; exit 7", "sh"});
  EXPECT_EQ(r.exit_code, 7) << r.err;
  EXPECT_EQ(r.out, "2\n");
  EXPECT_EQ(cluster.count_existing("redlock:sh"), 0u);
  auto both = cli({"--nodes", nodes, "run", "-c", "true", "sh", "extra"});
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_TRUE(has(both.err, "-c")) << both.err;
}

// `run --permits K`, like `consul lock -n`: at most K commands at once, each told its slot; a run
// that gives another K while permits of the first are held is a usage error (exit 2).
TEST_F(CliVerbs, RunWithPermitsRunsAtMostKCommandsAtOnce) {
  std::vector<std::string> base = {REDLOCK_CLI_PATH, "--nodes", nodes, "-q", "run", "--permits",
                                   "2", "pool", "sh", "-c",
                                   // Each extends its own permit by its token: REDLOCK_PERMIT
                                   // names the slot for `extend`.
                                   "echo $REDLOCK_PERMIT; \"$0\" --nodes \"$1\" -q extend pool "
                                   "\"$REDLOCK_TOKEN\" || echo unextended; sleep 10",
                                   REDLOCK_CLI_PATH, nodes};
  Process first(base), second(base);
  auto slot_holders = [&] {
    std::size_t held = 0;
    for (unsigned i = 0; i < 2; ++i)
      held += cluster.count_existing(redlock::detail::slot_key("redlock:pool", i)) >= 2;
    return held;
  };
  ASSERT_TRUE(eventually([&] { return slot_holders() == 2; }, 5s));
  auto show = cli({"--nodes", nodes, "show", "pool"});
  EXPECT_EQ(show.exit_code, 0) << show.err;
  EXPECT_TRUE(has(show.out, "semaphore of 2 permits")) << show.out;
  EXPECT_TRUE(has(show.out, "semaphore: 2 of 2 permits held on a quorum")) << show.out;
  auto json = cli({"--nodes", nodes, "show", "--json", "pool"});
  EXPECT_TRUE(has(json.out, "\"permits\":2,\"slots\":[{\"slot\":1,\"holder\":\"")) << json.out;
  auto third = cli({"--nodes", nodes, "-q", "run", "--permits", "2", "pool", "true"});
  EXPECT_EQ(third.exit_code, 1) << third.err;
  auto other_k = cli({"--nodes", nodes, "-q", "run", "--permits", "3", "pool", "true"});
  EXPECT_EQ(other_k.exit_code, 2) << other_k.err;
  EXPECT_TRUE(has(other_k.err, "permits")) << other_k.err;
  first.signal(SIGTERM);
  second.signal(SIGTERM);
  auto a = first.wait(10s), b = second.wait(10s);
  std::set<std::string> slots = {a.out, b.out};
  EXPECT_EQ(slots, (std::set<std::string>{"0\n", "1\n"})) << "each its own slot";
  auto again = cli({"--nodes", nodes, "-q", "run", "--permits", "2", "pool", "true"});
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(cli({"--nodes", nodes, "run", "--permits", "0", "pool", "true"}).exit_code, 2);
}

// show reads a semaphore's k as acquire.lua does: a value with more to it than the decimal k is
// no number of permits (every acquire is refused with it), never read as its first digits.
TEST_F(CliVerbs, ShowReadsKAsTheScriptsDo) {
  for (const std::string value : {"2x", "1e3", "02"}) {
    SCOPED_TRACE(value);
    for (std::size_t i = 0; i < cluster.size(); ++i)
      cluster[i].command(
          {"SET", redlock::detail::aux_key("redlock:pool", redlock::detail::kPermits), value});
    auto show = cli({"--nodes", nodes, "show", "pool"});
    EXPECT_EQ(show.exit_code, 0) << show.err;
    EXPECT_FALSE(has(show.out, "semaphore of")) << show.out;
    EXPECT_TRUE(has(show.out, "not a number of permits")) << show.out;
  }
}

TEST_F(CliVerbs, CompoundDurationsAreReadAsGoReadsThem) {
  acquire("d1", {"--ttl", "1m30s"});
  EXPECT_GT(pttl("redlock:d1"), 80'000);
  EXPECT_LE(pttl("redlock:d1"), 90'000);
  acquire("d2", {"--ttl", "1.5s"});
  EXPECT_GT(pttl("redlock:d2"), 1'000);
  EXPECT_LE(pttl("redlock:d2"), 1'500);
  acquire("d3", {"--ttl", "1h0m2.5s"});
  EXPECT_GT(pttl("redlock:d3"), 3'600'000);
  for (const std::string bad : {"1m30", "1.5ms", "1x", "", "1s-2s", ".s", "m"}) {
    auto r = cli({"--nodes", nodes, "--ttl", bad, "acquire", "d4"});
    EXPECT_EQ(r.exit_code, 2) << "'" << bad << "' " << r.err;
    EXPECT_TRUE(has(r.err, "--ttl")) << "'" << bad << "' " << r.err;
  }
  EXPECT_EQ(cluster.count_existing("redlock:d4"), 0u);
}

TEST_F(CliVerbs, PrefixAndTtlComeFromTheEnvironmentAndAFlagWins) {
  auto r = cli({"--nodes", nodes, "acquire", "e"}, {"REDLOCK_PREFIX=app:", "REDLOCK_TTL=1m"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(cluster.count_existing("app:e"), 3u);
  EXPECT_GT(pttl("app:e"), 50'000);
  auto flag = cli({"--nodes", nodes, "--prefix", "cli:", "--ttl", "5s", "acquire", "e"},
                  {"REDLOCK_PREFIX=app:", "REDLOCK_TTL=1m"});
  EXPECT_EQ(flag.exit_code, 0) << flag.err;
  EXPECT_EQ(cluster.count_existing("cli:e"), 3u);
  EXPECT_LE(pttl("cli:e"), 5'000);
  auto bad = cli({"--nodes", nodes, "acquire", "e"}, {"REDLOCK_TTL=soon"});
  EXPECT_EQ(bad.exit_code, 2);
}

// A node that answers every vote with OOM is up and cannot vote: the textfile counts its errors
// (redlock_node_errors_total, which RedlockNodeRefusesCommands alerts on), as the Prometheus
// component does, with the alerted errors of every node at zero from the start.
TEST_F(CliVerbs, RunsMetricsCountTheErrorsOfANodeThatCannotVote) {
  const std::string file = ::testing::TempDir() + "redlock-run-errors.prom";
  std::remove(file.c_str());
  // Two of three: the verdict waits for both refusals (a quorum decided without a node's reply
  // would leave that node's vote unanswered in the event).
  for (std::size_t i : {1, 2}) {
    cluster[i].command({"CONFIG", "SET", "maxmemory-policy", "noeviction"});
    ASSERT_EQ(cluster[i].command({"CONFIG", "SET", "maxmemory", "1"}), "OK");
  }
  auto r = cli({"--nodes", nodes, "-q", "run", "--metrics-file", file, "oom", "true"});
  for (std::size_t i : {1, 2}) cluster[i].command({"CONFIG", "SET", "maxmemory", "0"});
  EXPECT_NE(r.exit_code, 0) << r.err;  // no quorum
  auto text = run_process({"/bin/cat", file}).out;
  auto value = [&](const std::string& series) {
    auto at = text.find(series + " ");
    return at == std::string::npos ? -1.0 : std::stod(text.substr(at + series.size() + 1));
  };
  auto series = [&](std::size_t node, const char* error) {
    return "redlock_node_errors_total{resource=\"oom\",node=\"" + cluster[node].address() +
           "\",error=\"" + error + "\"}";
  };
  EXPECT_GE(value(series(1, "redis_oom")), 1.0) << text;
  EXPECT_GE(value(series(2, "redis_oom")), 1.0) << text;
  EXPECT_EQ(value(series(0, "redis_oom")), 0.0) << text;
  EXPECT_EQ(value(series(0, "redis_readonly")), 0.0) << text;
  std::remove(file.c_str());
}

TEST_F(CliVerbs, RunWritesItsMetricsForTheTextfileCollectorAndCountsALostLock) {
  const std::string file = ::testing::TempDir() + "redlock-run-metrics.prom";
  std::remove(file.c_str());
  auto ok = cli({"--nodes", nodes, "-q", "run", "--metrics-file", file, "m", "true"});
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  auto text = run_process({"/bin/cat", file}).out;
  for (const char* line : {"redlock_acquires_total{resource=\"m\",result=\"ok\"} 1",
                           "redlock_releases_total{resource=\"m\",result=\"ok\"} 1",
                           "redlock_lock_lost_total{resource=\"m\",reason=\"not_held\"} 0",
                           "redlock_held_locks{resource=\"m\"} 0"})
    EXPECT_TRUE(has(text, line)) << line << "\n" << text;
  if (::access("/usr/bin/promtool", X_OK) == 0) {
    auto check =
        run_process({"/bin/sh", "-c", "exec /usr/bin/promtool check metrics < \"$0\"", file});
    EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  }

  // The keys vanish while the command runs: the renewal finds them gone, the run ends with 4,
  // and the file counts the loss.
  Process run({REDLOCK_CLI_PATH, "--nodes", nodes, "-q", "--ttl", "900ms", "run", "--metrics-file",
               file, "gone", "sleep", "10"});
  // Once the lock is held (the file says so), not when its keys first exist: run asks for a
  // fencing token, and keys deleted between the grant and its write-back refuse the grant (exit 1).
  ASSERT_TRUE(eventually(
      [&] {
        return has(run_process({"/bin/cat", file}).out,
                   "redlock_held_locks{resource=\"gone\"} 1") &&
               cluster.count_existing("redlock:gone") == 3;
      },
      5s));
  for (std::size_t i = 0; i < 3; ++i) cluster[i].command({"DEL", "redlock:gone"});
  auto lost = run.wait(15s);
  EXPECT_EQ(lost.exit_code, 4) << lost.err;
  text = run_process({"/bin/cat", file}).out;
  EXPECT_TRUE(has(text, "redlock_lock_lost_total{resource=\"gone\",reason=\"not_held\"} 1"))
      << text;
  std::remove(file.c_str());

  // A permit (--permits) and a reader's share (--shared) are counted in their own series too.
  auto permit =
      cli({"--nodes", nodes, "-q", "run", "--permits", "2", "--metrics-file", file, "p", "true"});
  ASSERT_EQ(permit.exit_code, 0) << permit.err;
  text = run_process({"/bin/cat", file}).out;
  EXPECT_TRUE(has(text, "redlock_permit_acquires_total{resource=\"p\",result=\"ok\"} 1")) << text;
  EXPECT_TRUE(has(text, "redlock_shared_acquires_total{resource=\"p\",result=\"ok\"} 0")) << text;
  auto shared =
      cli({"--nodes", nodes, "-q", "run", "--shared", "--metrics-file", file, "s", "true"});
  ASSERT_EQ(shared.exit_code, 0) << shared.err;
  text = run_process({"/bin/cat", file}).out;
  EXPECT_TRUE(has(text, "redlock_shared_acquires_total{resource=\"s\",result=\"ok\"} 1")) << text;
  EXPECT_TRUE(has(text, "redlock_permit_acquires_total{resource=\"s\",result=\"ok\"} 0")) << text;
  if (::access("/usr/bin/promtool", X_OK) == 0) {
    auto check =
        run_process({"/bin/sh", "-c", "exec /usr/bin/promtool check metrics < \"$0\"", file});
    EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  }
  std::remove(file.c_str());

  auto bad =
      cli({"--nodes", nodes, "run", "--metrics-file", "/nonexistent/dir/m.prom", "x", "true"});
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_TRUE(has(bad.err, "--metrics-file")) << bad.err;
  EXPECT_EQ(cluster.count_existing("redlock:x"), 0u);
}

}  // namespace
}  // namespace redlock::test
