// `redlock elect` and `redlock leader` (docs/guide-election.md): the command runs while the
// process leads, with REDLOCK_TERM; the next campaigner leads once it exits; `leader` prints who
// leads, or exits 1 when the office is vacant; `show` names an office's leader. Real
// redis-servers; the CLI as a process.
#include <gtest/gtest.h>

#include <signal.h>

#include <string>
#include <thread>
#include <vector>

#include "cli_support.hpp"
#include "core/keys.hpp"
#include "redis_server.hpp"

namespace redlock::test {
namespace {

using namespace std::chrono_literals;

class CliElection : public CliTest {
 protected:
  std::vector<std::string> with_nodes(std::vector<std::string> more) {
    std::vector<std::string> args = {"--nodes", nodes, "--no-persistence-warning"};
    args.insert(args.end(), more.begin(), more.end());
    return args;
  }
  RedisCluster cluster{3};
  std::string nodes = cluster.node_list();
};

TEST_F(CliElection, TheCommandRunsWhileItLeadsWithItsTermAndTheExitCodeIsItsOwn) {
  auto r = cli(with_nodes({"elect", "office", "10.0.0.1:80", "--", "sh", "-c",
                           "echo term=$REDLOCK_TERM office=$REDLOCK_OFFICE; exit 7"}));
  EXPECT_EQ(r.exit_code, 7) << r.err;
  EXPECT_TRUE(has(r.out, "term=")) << r.out;
  EXPECT_FALSE(has(r.out, "term=\n")) << r.out;
  EXPECT_TRUE(has(r.out, "office=office")) << r.out;
  auto after = cli(with_nodes({"leader", "office"}));
  EXPECT_EQ(after.exit_code, 1) << "vacant once the command exited: " << after.out << after.err;
}

TEST_F(CliElection, LeaderPrintsTermAndValueAndTheNextCampaignerLeadsAfterTheFirst) {
  Process first({REDLOCK_CLI_PATH, "--nodes", nodes, "--no-persistence-warning", "elect", "svc",
                 "first value", "--", "sleep", "1"});
  ASSERT_TRUE(eventually([&] { return cli(with_nodes({"leader", "svc"})).exit_code == 0; }, 3s));
  auto seen = cli(with_nodes({"leader", "svc"}));
  auto space = seen.out.find(' ');
  ASSERT_NE(space, std::string::npos) << seen.out;
  auto term = std::stoull(seen.out.substr(0, space));
  EXPECT_GT(term, 0u);
  EXPECT_EQ(seen.out.substr(space + 1), "first value\n");
  // The second waits, and leads once the first's command has exited, with a later term.
  auto second = cli(with_nodes({"elect", "svc", "second", "--", "sh", "-c", "echo $REDLOCK_TERM"}));
  EXPECT_EQ(second.exit_code, 0) << second.err;
  EXPECT_GT(std::stoull(second.out), term);
  EXPECT_EQ(first.wait().exit_code, 0);
}

TEST_F(CliElection, NotElectedWithinTheWaitExitsOneOrTheConflictCode) {
  Process holder({REDLOCK_CLI_PATH, "--nodes", nodes, "--no-persistence-warning", "elect", "busy",
                  "a", "--", "sleep", "3"});
  ASSERT_TRUE(eventually([&] { return cli(with_nodes({"leader", "busy"})).exit_code == 0; }, 3s));
  auto r = cli(with_nodes({"elect", "--wait", "200ms", "busy", "b", "--", "true"}));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  auto e = cli(with_nodes({"elect", "-w", "100ms", "-E", "9", "busy", "b", "--", "true"}));
  EXPECT_EQ(e.exit_code, 9) << e.err;
  holder.signal(SIGTERM);
  holder.wait();
}

TEST_F(CliElection, ALostOfficeTerminatesTheCommandAndExitsFour) {
  Process p({REDLOCK_CLI_PATH, "--nodes", nodes, "--no-persistence-warning", "--ttl", "900",
             "elect", "lose", "v", "--", "sleep", "10"});
  ASSERT_TRUE(eventually([&] { return cli(with_nodes({"leader", "lose"})).exit_code == 0; }, 3s));
  for (std::size_t i = 0; i < cluster.size(); ++i)
    cluster[i].command({"SET", "redlock:lose", "intruder", "PX", "60000"});
  auto r = p.wait(10s);
  EXPECT_EQ(r.exit_code, 4) << r.err;
  EXPECT_TRUE(has(r.err, "office 'lose' lost")) << r.err;
}

TEST_F(CliElection, UsageErrorsAndAHostileLeaderKey) {
  EXPECT_EQ(cli(with_nodes({"elect", "o", "v"})).exit_code, 2) << "no command";
  EXPECT_EQ(cli(with_nodes({"leader"})).exit_code, 2);
  cluster[0].command({"HSET", detail::aux_key("redlock:h", "leader"), "f", "v"});
  cluster[1].command({"HSET", detail::aux_key("redlock:h", "leader"), "f", "v"});
  auto r = cli(with_nodes({"leader", "h"}));
  EXPECT_EQ(r.exit_code, 3) << r.out;
  EXPECT_TRUE(has(r.err, "WRONGTYPE") || has(r.err, "another type")) << r.err;
}

TEST_F(CliElection, ShowNamesTheOfficesLeader) {
  Process p({REDLOCK_CLI_PATH, "--nodes", nodes, "--no-persistence-warning", "elect", "shown",
             "addr:1", "--", "sleep", "2"});
  ASSERT_TRUE(eventually([&] { return cli(with_nodes({"leader", "shown"})).exit_code == 0; }, 3s));
  auto r = cli(with_nodes({"show", "shown"}));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(has(r.out, "leader: term ")) << r.out;
  EXPECT_TRUE(has(r.out, "addr:1")) << r.out;
  p.signal(SIGTERM);
  p.wait();
}

}  // namespace
}  // namespace redlock::test
