// The `redlock` tool's contract: stdout, stderr and exit codes.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <thread>

#include "cli_support.hpp"
#include "core/keys.hpp"
#include "redis_server.hpp"

namespace redlock::test {
namespace {

using namespace std::chrono_literals;

bool is_token_line(const std::string& out) {
  return std::regex_match(out, std::regex("[0-9a-f]{32}[.]\n"));
}

// A fresh directory for the files a test's command writes; removed with everything in it.
class TempDir {
 public:
  TempDir() {
    auto tmpl = (std::filesystem::temp_directory_path() / "redlock-cli-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// True once `pid` has ended: no such process, or a zombie that nobody has reaped yet.
bool gone(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(f, stat)) return true;
  auto paren = stat.rfind(')');  // "pid (comm) S ...": the name may hold anything
  if (paren == std::string::npos || paren + 2 >= stat.size()) return true;
  return stat[paren + 2] == 'Z' || stat[paren + 2] == 'X';
}

std::string comm_of(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/comm");
  std::string name;
  std::getline(f, name);
  return name;
}

// The pids a test's command wrote to `file`, one a line.
std::vector<pid_t> pids_in(const std::string& file) {
  std::ifstream f(file);
  std::vector<pid_t> pids;
  for (long pid = 0; f >> pid;) pids.push_back(static_cast<pid_t>(pid));
  return pids;
}

// Hygiene after a failed test: SIGKILL what its command left running, by pid, and only if it
// is still the shell or sleep that the command started.
void kill_leftovers(const std::vector<pid_t>& pids) {
  for (pid_t pid : pids) {
    auto name = comm_of(pid);
    if (!gone(pid) && (name == "sh" || name == "sleep")) ::kill(pid, SIGKILL);
  }
}

std::string describe(int status) {
  if (status == -1) return "still running (killed by the test)";
  if (WIFEXITED(status)) return "exit " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return std::string("killed by ") + ::strsignal(WTERMSIG(status));
  return "status " + std::to_string(status);
}

// The CLI with stdout and stderr on pipes whose reading ends are closed before it starts: every
// write to them fails with EPIPE, or raises SIGPIPE. Killed (SIGKILL) if still running when
// destroyed.
class ClosedOutputCli {
 public:
  explicit ClosedOutputCli(std::vector<std::string> args) {
    args.insert(args.begin(), REDLOCK_CLI_PATH);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    int out[2];
    if (::pipe(out) != 0) throw std::runtime_error("pipe failed");
    pid_ = ::fork();
    if (pid_ < 0) throw std::runtime_error("fork failed");
    if (pid_ == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      ::close(out[0]);
      ::dup2(out[1], 1);
      ::dup2(out[1], 2);
      ::close(out[1]);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    ::close(out[0]);
    ::close(out[1]);
  }
  ~ClosedOutputCli() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  ClosedOutputCli(const ClosedOutputCli&) = delete;
  ClosedOutputCli& operator=(const ClosedOutputCli&) = delete;

  // The wait status once it has exited, or -1 after `limit` (it is then killed).
  int wait(std::chrono::milliseconds limit) {
    int status = -1;
    bool done = eventually([&] { return ::waitpid(pid_, &status, WNOHANG) == pid_; }, limit);
    if (!done) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
      status = -1;
    }
    pid_ = -1;
    return status;
  }

 private:
  pid_t pid_ = -1;
};

bool all_gone(const std::vector<pid_t>& pids) {
  for (pid_t pid : pids)
    if (!gone(pid)) return false;
  return true;
}

// A shell script for `sh -c` that starts two grandchildren, one of which ignores SIGTERM, writes
// their pids and its own to `pids`, and waits. Its output goes nowhere, so that what outlives
// redlock does not hold the test's pipes open.
std::string process_tree(const std::string& pids) {
  return "exec >/dev/null 2>&1; sleep 20 & echo $! >> " + pids +
         "; (trap '' TERM; exec sleep 20) & echo $! >> " + pids + "; echo $$ >> " + pids + "; wait";
}

// The CLI in a session of its own on a pseudo-terminal, as from an interactive shell: the
// terminal's foreground process group is redlock's. Killed if still running when destroyed.
class TerminalCli {
 public:
  explicit TerminalCli(std::vector<std::string> args) {
    args.insert(args.begin(), REDLOCK_CLI_PATH);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    master_ = ::posix_openpt(O_RDWR | O_NOCTTY);
    if (master_ < 0 || ::grantpt(master_) != 0 || ::unlockpt(master_) != 0)
      throw std::runtime_error("no pseudo-terminal");
    std::string slave = ::ptsname(master_);
    pid_ = ::fork();
    if (pid_ < 0) throw std::runtime_error("fork failed");
    if (pid_ == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      ::setsid();
      int fd = ::open(slave.c_str(), O_RDWR);  // becomes the controlling terminal
      if (fd < 0) ::_exit(127);
      ::dup2(fd, 0);
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      if (fd > 2) ::close(fd);
      ::close(master_);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
  }
  ~TerminalCli() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    ::close(master_);
  }
  TerminalCli(const TerminalCli&) = delete;
  TerminalCli& operator=(const TerminalCli&) = delete;

  void type(const std::string& keys) { (void)!::write(master_, keys.data(), keys.size()); }

  // Reads the terminal until `text` has appeared, up to `limit`.
  bool expect(const std::string& text, std::chrono::milliseconds limit) {
    auto end = std::chrono::steady_clock::now() + limit;
    while (screen_.find(text) == std::string::npos) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          end - std::chrono::steady_clock::now());
      if (left.count() <= 0) return false;
      pollfd pfd{master_, POLLIN, 0};
      if (::poll(&pfd, 1, static_cast<int>(left.count())) <= 0) continue;
      char buf[512];
      ssize_t n = ::read(master_, buf, sizeof buf);
      if (n <= 0) return false;  // EIO: every process on the terminal has closed it
      screen_.append(buf, static_cast<std::size_t>(n));
    }
    return true;
  }
  const std::string& screen() const { return screen_; }

  // The wait status once it has exited, or -1 after `limit` (it is then killed).
  int wait(std::chrono::milliseconds limit) {
    int status = -1;
    bool done = eventually(
        [&] {
          char buf[512];
          pollfd pfd{master_, POLLIN, 0};
          if (::poll(&pfd, 1, 0) > 0 && ::read(master_, buf, sizeof buf) > 0) {
          }  // keep the terminal drained
          return ::waitpid(pid_, &status, WNOHANG) == pid_;
        },
        limit);
    if (!done) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
      status = -1;
    }
    pid_ = -1;
    return status;
  }

 private:
  int master_ = -1;
  pid_t pid_ = -1;
  std::string screen_;
};

class Cli : public ::testing::Test {
 protected:
  // The CLI starts with the default dispositions, as from an interactive shell, also when the
  // tests run as a background job (SIGINT and SIGQUIT ignored) or under nohup.
  void SetUp() override {
    for (int sig : {SIGINT, SIGQUIT, SIGHUP, SIGTERM}) ::signal(sig, SIG_DFL);
  }

  RedisCluster cluster{3};
  std::string nodes = cluster.node_list();
};

TEST_F(Cli, AcquireExtendReleaseRoundTrip) {
  auto a = cli({"--nodes", nodes, "--ttl", "5000", "acquire", "job"});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  ASSERT_TRUE(is_token_line(a.out)) << "stdout is the token alone: '" << a.out << "'";
  std::string token = a.out.substr(0, 33);
  EXPECT_NE(a.err.find("votes"), std::string::npos) << a.err;
  EXPECT_TRUE(eventually([&] { return cluster.count_holding("redlock:job", token) == 3; }));

  auto again = cli({"--nodes", nodes, "acquire", "job", "--wait", "0"});
  EXPECT_EQ(again.exit_code, 1) << again.err;
  EXPECT_TRUE(again.out.empty());

  auto ext = cli({"--nodes", nodes, "--ttl", "60000", "extend", "job", token});
  EXPECT_EQ(ext.exit_code, 0) << ext.err;
  EXPECT_GT(std::stoll(cluster[0].command({"PTTL", "redlock:job"})), 30000);
  auto bad_ext = cli({"--nodes", nodes, "extend", "job", std::string(32, 'f')});
  EXPECT_EQ(bad_ext.exit_code, 1) << bad_ext.err;

  auto wrong = cli({"--nodes", nodes, "release", "job", std::string(32, '0')});
  EXPECT_EQ(wrong.exit_code, 1) << wrong.err;
  EXPECT_EQ(cluster.count_holding("redlock:job", token), 3u);
  auto rel = cli({"--nodes", nodes, "release", "job", token});
  EXPECT_EQ(rel.exit_code, 0) << rel.err;
  EXPECT_EQ(cluster.count_existing("redlock:job"), 0u) << "released on every node before exit";
  auto twice = cli({"--nodes", nodes, "release", "job", token});
  EXPECT_EQ(twice.exit_code, 1) << twice.err;
}

TEST_F(Cli, GlobalOptionsAfterTheVerbAndFromTheEnvironment) {
  auto a = cli({"acquire", "k1", "--ttl", "5000", "--prefix", "app:", "--nodes", nodes});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_TRUE(
      eventually([&] { return cluster.count_holding("app:k1", a.out.substr(0, 33)) == 3; }));
  auto e = cli({"acquire", "k2"}, {"REDLOCK_NODES=" + nodes});
  EXPECT_EQ(e.exit_code, 0) << e.err;
  EXPECT_TRUE(is_token_line(e.out));
}

TEST_F(Cli, QuietKeepsStderrForErrorsOnly) {
  auto a = cli({"-q", "--nodes", nodes, "acquire", "q"});
  ASSERT_EQ(a.exit_code, 0);
  EXPECT_TRUE(a.err.empty()) << a.err;
  auto b = cli({"-q", "--nodes", nodes, "acquire", "q", "--wait", "0"});
  EXPECT_EQ(b.exit_code, 1);
  EXPECT_NE(b.err.find("not acquired"), std::string::npos) << b.err;
}

TEST_F(Cli, UsageAndConfigurationErrorsExitTwo) {
  auto bad = cli({"--nodes", "redis://127.0.0.1:99999", "status"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("out of range"), std::string::npos) << bad.err;
  // A TLS option without its pair is a configuration error too (TLS itself: cli_tls_test).
  auto tls = cli({"--nodes", nodes, "--cert", "client.crt", "status"});
  EXPECT_EQ(tls.exit_code, 2);
  EXPECT_NE(tls.err.find("key"), std::string::npos) << tls.err;
  auto none = run_process({REDLOCK_CLI_PATH, "status"}, {"REDLOCK_NODES="});
  EXPECT_EQ(none.exit_code, 2) << none.err;
  auto no_verb = cli({"--nodes", nodes});
  EXPECT_EQ(no_verb.exit_code, 2);
  auto missing_key = cli({"--nodes", nodes, "acquire"});
  EXPECT_EQ(missing_key.exit_code, 2);
  auto zero_ttl = cli({"--nodes", nodes, "--ttl", "0", "acquire", "z"});
  EXPECT_EQ(zero_ttl.exit_code, 2) << zero_ttl.err;
  auto empty_key = cli({"--nodes", nodes, "acquire", ""});
  EXPECT_EQ(empty_key.exit_code, 2) << empty_key.err;
  auto help = cli({"--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("acquire"), std::string::npos);
}

TEST_F(Cli, NoQuorumExitsThree) {
  cluster[0].kill9();
  cluster[1].kill9();
  auto a = cli({"--nodes", nodes, "acquire", "x", "--wait", "300"});
  EXPECT_EQ(a.exit_code, 3) << a.err;
  EXPECT_TRUE(a.out.empty());
  EXPECT_NE(a.err.find(cluster[0].address()), std::string::npos) << "names the failed node";
  auto s = cli({"--nodes", nodes, "status"});
  EXPECT_EQ(s.exit_code, 3) << s.out;
}

TEST_F(Cli, StatusPrintsOneRowPerNode) {
  auto s = cli({"--nodes", nodes, "status"});
  ASSERT_EQ(s.exit_code, 0) << s.err;
  for (std::size_t i = 0; i < cluster.size(); ++i) {
    auto row = s.out.find(cluster[i].address());
    ASSERT_NE(row, std::string::npos) << s.out;
    auto line = s.out.substr(row, s.out.find('\n', row) - row);
    EXPECT_NE(line.find(" up "), std::string::npos) << line;
    EXPECT_TRUE(std::regex_search(line, std::regex("[0-9]+\\.[0-9]+\\.[0-9]+"))) << line;
  }
}

TEST_F(Cli, RunGivesTheCommandTheLockAndItsExitStatus) {
  // The child prints what it was given, then what a quorum of nodes holds for its key.
  std::string script =
      "echo \"$REDLOCK_TOKEN $REDLOCK_RESOURCE $REDLOCK_KEY $REDLOCK_VALID_UNTIL_MS\"";
  for (std::size_t i = 0; i < cluster.size(); ++i)
    script += "; redis-cli -p " + std::to_string(cluster[i].port()) + " GET \"$REDLOCK_KEY\"";
  script += "; exit 7";
  auto r = cli({"--nodes", nodes, "--ttl", "2000", "run", "job", "--", "sh", "-c", script});
  EXPECT_EQ(r.exit_code, 7) << r.err;
  std::smatch m;
  ASSERT_TRUE(
      std::regex_search(r.out, m, std::regex("^([0-9a-f]{32}[.]) job redlock:job ([0-9]+)\n")))
      << r.out;
  std::string token = m[1];
  std::size_t holding = 0;
  for (std::size_t pos = 0; (pos = r.out.find(token + "\n", pos + 1)) != std::string::npos;)
    ++holding;
  EXPECT_GE(holding, 2u) << "a quorum held the child's token while it ran:\n" << r.out;
  EXPECT_EQ(cluster.count_existing("redlock:job"), 0u) << "released when the command exited";
}

// The command gets the grant's fencing token; each run's is greater than the last, and
// `acquire --fencing` prints the token and the fencing token on one line.
TEST_F(Cli, RunAndAcquireHandOutFencingTokensThatGrow) {
  std::uint64_t last = 0;
  for (int i = 0; i < 3; ++i) {
    auto r = cli(
        {"--nodes", nodes, "run", "fenced", "--", "sh", "-c", "echo \"$REDLOCK_FENCING_TOKEN\""});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    ASSERT_TRUE(std::regex_match(r.out, std::regex("[0-9]+\n"))) << r.out;
    auto token = std::stoull(r.out);
    EXPECT_GT(token, last) << "run " << i;
    last = token;
  }
  auto a = cli({"--nodes", nodes, "acquire", "fenced", "--fencing"});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_match(a.out, m, std::regex("([0-9a-f]{32}[.]) ([0-9]+)\n"))) << a.out;
  EXPECT_GT(std::stoull(m[2]), last);
  auto plain = cli({"--nodes", nodes, "acquire", "other"});
  EXPECT_TRUE(std::regex_match(plain.out, std::regex("[0-9a-f]{32}[.]\n"))) << plain.out;
}

TEST_F(Cli, RunWhenTheLockIsTakenExitsOneOrTheConflictCode) {
  auto held = cli({"--nodes", nodes, "--ttl", "30000", "acquire", "busy"});
  ASSERT_EQ(held.exit_code, 0);
  auto r = cli({"--nodes", nodes, "run", "busy", "--", "echo", "ran"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(r.out.empty()) << "the command did not run";
  auto c = cli({"--nodes", nodes, "run", "--conflict-exit-code", "75", "busy", "--", "echo", "x"});
  EXPECT_EQ(c.exit_code, 75);
  auto missing = cli({"--nodes", nodes, "run", "free", "--", "/nonexistent/command"});
  EXPECT_EQ(missing.exit_code, 127) << missing.err;
}

TEST_F(Cli, RunPassesSignalsToTheCommandAndReleases) {
  Process p({REDLOCK_CLI_PATH, "--nodes", nodes, "run", "sig", "--", "sh", "-c",
             "trap 'echo got-term; exit 42' TERM; echo started; while :; do sleep 0.05; done"});
  ASSERT_TRUE(eventually([&] { return cluster.count_existing("redlock:sig") >= 2; }, 5s));
  std::this_thread::sleep_for(200ms);  // let the shell install its trap
  p.signal(SIGTERM);
  auto r = p.wait(10s);
  EXPECT_EQ(r.exit_code, 42) << r.err;
  EXPECT_NE(r.out.find("got-term"), std::string::npos) << r.out;
  EXPECT_EQ(cluster.count_existing("redlock:sig"), 0u) << "released after the command ended";
}

TEST_F(Cli, RunTerminatesTheCommandWhenTheLockIsLost) {
  // The command has started (so the grant, fencing write-back included, is complete) once it
  // has written its marker file.
  std::string marker = ::testing::TempDir() + "redlock-fragile-" + std::to_string(::getpid());
  std::remove(marker.c_str());
  Process p({REDLOCK_CLI_PATH, "--nodes", nodes, "--ttl", "1000", "--request-timeout", "100", "run",
             "--kill-after", "300", "fragile", "--", "sh", "-c",
             "trap 'echo ignoring-term' TERM; : > '" + marker + "'; while :; do sleep 0.05; done"});
  ASSERT_TRUE(eventually([&] { return ::access(marker.c_str(), F_OK) == 0; }, 5s));
  std::remove(marker.c_str());
  auto start = std::chrono::steady_clock::now();
  cluster[0].kill9();
  cluster[1].kill9();
  auto r = p.wait(10s);
  EXPECT_EQ(r.exit_code, 4) << r.err;
  EXPECT_NE(r.out.find("ignoring-term"), std::string::npos) << "SIGTERM first: " << r.out;
  EXPECT_LT(std::chrono::steady_clock::now() - start, 3s) << "then SIGKILL after the grace";
  EXPECT_NE(r.err.find("lost"), std::string::npos) << r.err;
}

TEST_F(Cli, RunDoesNotHandTheNodeListToTheCommand) {
  RedisCluster secured(3, {"--requirepass", "s3cret-pw"}, "s3cret-pw");
  auto r = cli({"run", "env", "--", "sh", "-c",
                "echo \"nodes=[${REDLOCK_NODES-unset}] token=[$REDLOCK_TOKEN]\"; env"},
               {"REDLOCK_NODES=" + secured.node_list(":s3cret-pw")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("nodes=\\[unset\\] token=\\[[0-9a-f]{32}[.]\\]")))
      << r.out;
  EXPECT_EQ(r.out.find("s3cret-pw"), std::string::npos) << "the password reached the command";

  // Nor redlock's own connections to the nodes (authenticated), nor its other descriptors; a
  // descriptor redlock was given is passed on.
  int given = ::open("/dev/null", O_RDONLY);  // not close-on-exec: redlock inherits it
  ASSERT_GE(given, 3);
  auto fds = cli({"run", "fds", "--", "sh", "-c", "ls -l /proc/$$/fd"},
                 {"REDLOCK_NODES=" + secured.node_list(":s3cret-pw")});
  ::close(given);
  ASSERT_EQ(fds.exit_code, 0) << fds.err;
  EXPECT_EQ(fds.out.find("socket:"), std::string::npos) << fds.out;
  EXPECT_EQ(fds.out.find("anon_inode:"), std::string::npos) << fds.out;
  EXPECT_NE(fds.out.find(" " + std::to_string(given) + " -> /dev/null"), std::string::npos)
      << fds.out;
}

TEST_F(Cli, OutputToAClosedPipeDoesNotKillRedlock) {
  // acquire: the token cannot be delivered, so the lock is given back and it exits 2.
  int status = ClosedOutputCli({"--nodes", nodes, "acquire", "pipe"}).wait(10s);
  ASSERT_TRUE(WIFEXITED(status)) << describe(status);
  EXPECT_EQ(WEXITSTATUS(status), 2);
  EXPECT_EQ(cluster.count_existing("redlock:pipe"), 0u) << "a token nobody got is released";

  // The command gets SIGPIPE's default back (an ignored signal stays ignored across exec).
  auto ign =
      cli({"--nodes", nodes, "run", "sigign", "--", "sh", "-c", "grep SigIgn /proc/$$/status"});
  std::smatch m;
  ASSERT_TRUE(std::regex_search(ign.out, m, std::regex("SigIgn:\\s*([0-9a-f]+)"))) << ign.out;
  EXPECT_EQ(std::stoull(m[1], nullptr, 16) & (1ull << (SIGPIPE - 1)), 0u) << ign.out;

  // run: diagnostics to a closed stderr, then a lost lock: still the command ends, exit 4.
  TempDir dir;
  ClosedOutputCli run({"--nodes", nodes, "--ttl", "1000", "--request-timeout", "100", "run",
                       "--kill-after", "300", "piped", "--", "sh", "-c",
                       "echo $$ > " + dir / "pid" + "; while :; do sleep 0.05; done"});
  bool started = eventually([&] { return pids_in(dir / "pid").size() == 1; }, 5s);
  if (!started) {
    int early = run.wait(1s);
    FAIL() << "the command never started; redlock: " << describe(early);
  }
  ASSERT_TRUE(eventually([&] { return cluster.count_existing("redlock:piped") >= 2; }, 5s));
  cluster[0].kill9();
  cluster[1].kill9();
  status = run.wait(10s);
  kill_leftovers(pids_in(dir / "pid"));
  ASSERT_TRUE(WIFEXITED(status)) << describe(status);
  EXPECT_EQ(WEXITSTATUS(status), 4);
  EXPECT_TRUE(gone(pids_in(dir / "pid").at(0))) << "the command was terminated";
}

TEST_F(Cli, RunWaitingForTheLockEndsOnSigtermAndSigint) {
  auto held = cli({"--nodes", nodes, "--ttl", "30000", "acquire", "queue"});
  ASSERT_EQ(held.exit_code, 0) << held.err;
  // A waiter stands in the resource's line on every node while it waits.
  auto waiters = [&] {
    return cluster[0].command({"ZCARD", detail::aux_key("redlock:queue", detail::kQueue)});
  };
  TempDir dir;
  for (int sig : {SIGTERM, SIGINT}) {
    SCOPED_TRACE(::strsignal(sig));
    ASSERT_TRUE(eventually([&] { return waiters() == "0"; }));
    Process p({REDLOCK_CLI_PATH, "--nodes", nodes, "run", "--wait", "20000", "queue", "--", "touch",
               dir / "ran"});
    ASSERT_TRUE(eventually([&] { return waiters() == "1"; }, 5s));
    auto start = std::chrono::steady_clock::now();
    p.signal(sig);
    auto r = p.wait(5s);
    ASSERT_FALSE(r.timed_out) << "still waiting for the lock";
    EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
    EXPECT_EQ(r.exit_code, 128 + sig) << r.err;
    EXPECT_NE(r.err.find("cancelled"), std::string::npos) << r.err;
    EXPECT_FALSE(std::filesystem::exists(dir / "ran")) << "the command did not run";
  }
  {
    // Under nohup (SIGHUP ignored from the start) a hang-up does not end the wait.
    ASSERT_TRUE(eventually([&] { return waiters() == "0"; }));
    ::signal(SIGHUP, SIG_IGN);  // inherited by the CLI, as nohup does it
    Process p({REDLOCK_CLI_PATH, "--nodes", nodes, "run", "--wait", "1000", "queue", "--", "touch",
               dir / "ran"});
    ::signal(SIGHUP, SIG_DFL);
    ASSERT_TRUE(eventually([&] { return waiters() == "1"; }, 5s));
    p.signal(SIGHUP);
    auto r = p.wait(5s);
    EXPECT_EQ(r.exit_code, 1) << "waited until --wait ran out: " << r.err;
    EXPECT_FALSE(std::filesystem::exists(dir / "ran"));
  }
  EXPECT_EQ(cluster.count_holding("redlock:queue", held.out.substr(0, 33)), 3u)
      << "the other holder's lock is untouched";
}

TEST_F(Cli, RunTerminatesTheCommandsWholeProcessGroupWhenTheLockIsLost) {
  TempDir dir;
  Process p({REDLOCK_CLI_PATH, "--nodes", nodes, "--ttl", "1000", "--request-timeout", "100", "run",
             "--kill-after", "300", "tree", "--", "sh", "-c", process_tree(dir / "pids")});
  ASSERT_TRUE(eventually([&] { return pids_in(dir / "pids").size() == 3; }, 5s));
  ASSERT_TRUE(eventually([&] { return cluster.count_existing("redlock:tree") >= 2; }, 5s));
  auto start = std::chrono::steady_clock::now();
  cluster[0].kill9();
  cluster[1].kill9();
  auto r = p.wait(10s);
  auto elapsed = std::chrono::steady_clock::now() - start;
  auto pids = pids_in(dir / "pids");
  bool ended = eventually([&] { return all_gone(pids); }, 500ms);
  kill_leftovers(pids);
  EXPECT_EQ(r.exit_code, 4) << r.err;
  EXPECT_TRUE(ended) << "the command's children, also one that ignores SIGTERM, are ended";
  EXPECT_LT(elapsed, 4s);
}

TEST_F(Cli, RunCommandEndsWhenRedlockIsKilled) {
  TempDir dir;
  Process p({REDLOCK_CLI_PATH, "--nodes", nodes, "run", "--kill-after", "500", "orphan", "--", "sh",
             "-c", process_tree(dir / "pids")});
  ASSERT_TRUE(eventually([&] { return pids_in(dir / "pids").size() == 3; }, 5s));
  auto pids = pids_in(dir / "pids");
  p.signal(SIGKILL);
  bool ended = eventually([&] { return all_gone(pids); }, 500ms + 2500ms);  // --kill-after + margin
  kill_leftovers(pids);
  p.wait(2s);
  EXPECT_TRUE(ended) << "the whole command ends with redlock, SIGKILL after --kill-after";
}

TEST_F(Cli, RunEndsWhatTheCommandLeftRunningBeforeItReleases) {
  TempDir dir;
  auto r = cli({"--nodes", nodes, "run", "--kill-after", "500", "leftover", "--", "sh", "-c",
                "exec >/dev/null 2>&1; sleep 20 & echo $! > " + dir / "pid" + "; exit 3"});
  auto pids = pids_in(dir / "pid");
  bool ended = all_gone(pids);
  kill_leftovers(pids);
  EXPECT_EQ(r.exit_code, 3) << r.err;
  ASSERT_EQ(pids.size(), 1u);
  EXPECT_TRUE(ended) << "a background process of the command would run on without the lock";
  EXPECT_EQ(cluster.count_existing("redlock:leftover"), 0u);
}

TEST_F(Cli, RunWorksWhenStartedWithSigchldIgnored) {
  ::signal(SIGCHLD, SIG_IGN);  // inherited by the CLI; restored here before any child can exit
  Process p(
      {REDLOCK_CLI_PATH, "--nodes", nodes, "run", "nochld", "--", "sh", "-c", "sleep 0.2; exit 5"});
  ::signal(SIGCHLD, SIG_DFL);
  auto r = p.wait(5s);
  EXPECT_FALSE(r.timed_out) << "redlock did not notice that its command had exited";
  EXPECT_EQ(r.exit_code, 5) << r.err;
  EXPECT_EQ(cluster.count_existing("redlock:nochld"), 0u);
}

TEST_F(Cli, RunGivesTheCommandTheTerminal) {
  {
    // Reading the terminal works (a command in a background process group would be stopped).
    TerminalCli t({"--nodes", nodes, "run", "tty", "--", "sh", "-c",
                   "echo ready; read line; echo \"got:$line\""});
    ASSERT_TRUE(t.expect("ready", 5s)) << t.screen();
    t.type("hello\n");
    EXPECT_TRUE(t.expect("got:hello", 3s)) << t.screen();
    int status = t.wait(3s);
    ASSERT_TRUE(WIFEXITED(status)) << describe(status) << '\n' << t.screen();
    EXPECT_EQ(WEXITSTATUS(status), 0);
  }
  {
    // Ctrl-C reaches the command, once; redlock reports its death by SIGINT. (Typed once the
    // shell has become `sleep`: a shell between two commands may defer SIGINT.)
    TerminalCli t(
        {"--nodes", nodes, "run", "tty", "--", "sh", "-c", "echo pid=$$=started; exec sleep 20"});
    ASSERT_TRUE(t.expect("=started", 5s)) << t.screen();
    pid_t command = std::stoi(t.screen().substr(t.screen().find("pid=") + 4));
    ASSERT_TRUE(eventually([&] { return comm_of(command) == "sleep"; }, 3s)) << t.screen();
    t.type("\x03");
    int status = t.wait(3s);
    ASSERT_TRUE(WIFEXITED(status)) << describe(status) << '\n' << t.screen();
    EXPECT_EQ(WEXITSTATUS(status), 128 + SIGINT);
  }
  EXPECT_EQ(cluster.count_existing("redlock:tty"), 0u);
}

// Bad input at the command line: each case has one answer (docs/errors.md, "Bad input").
// Usage errors exit 2 and name the bad part; nothing reaches the nodes.
TEST_F(Cli, BadDurationsExitTwoAndNameTheOption) {
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{"--ttl", "-5", "acquire", "d"}, "must be positive"},
      {{"--ttl", "2", "acquire", "d"}, "drift"},
      {{"--ttl", "1099511627777", "acquire", "d"}, "longest"},
      {{"--ttl", "99999999999999999999", "acquire", "d"}, "longest"},
      {{"--ttl", "abc", "acquire", "d"}, "--ttl"},
      {{"acquire", "d", "--wait", "-1"}, "wait must not be negative"},
      {{"acquire", "d", "--wait", "soon"}, "--wait"},
      {{"--request-timeout", "-1", "acquire", "d"}, ""},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args = {"--nodes", nodes};
    args.insert(args.end(), c.args.begin(), c.args.end());
    auto r = cli(args);
    std::string shown;
    for (const auto& a : c.args) shown += a + " ";
    EXPECT_EQ(r.exit_code, 2) << shown << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << shown << r.err;
    EXPECT_TRUE(r.out.empty()) << shown;
  }
  EXPECT_EQ(cluster.count_existing("redlock:d"), 0u);
}

TEST_F(Cli, BadNodeListsExitTwo) {
  std::string one = cluster[0].url();
  std::string spelled = "redis://127.0.0.1:0" + std::to_string(cluster[0].port());
  for (const std::string& list : {std::string(), std::string(","), one + "," + spelled,
                                  one + "," + one + "/2", std::string("redis://127.0.0.1:0")}) {
    auto r = cli({"--nodes", list, "acquire", "n"});
    EXPECT_EQ(r.exit_code, 2) << "'" << list << "': " << r.err;
    EXPECT_FALSE(r.err.empty());
  }
  // One server under a name and under its address: the list cannot tell, the server does; it
  // never votes twice, so 1 of the 2 listed nodes is no quorum.
  auto twice = cli({"--nodes", one + ",redis://localhost:" + std::to_string(cluster[0].port()),
                    "acquire", "n", "--wait", "0"});
  EXPECT_TRUE(twice.exit_code == 1 || twice.exit_code == 3) << twice.err;
  EXPECT_TRUE(twice.out.empty()) << "no token for a false grant";
  EXPECT_TRUE(eventually([&] { return cluster.count_existing("redlock:n") == 0; }));
}

// Keys are bytes: spaces, CR LF, RESP-looking text, invalid UTF-8, and up to the size of one
// command-line argument.
TEST_F(Cli, BinaryAndHugeKeysRoundTrip) {
  for (const std::string& key : {std::string("a b"), std::string("\r\n*1\r\n$8\r\nFLUSHALL"),
                                 std::string("\xff\xfe"), std::string(100'000, 'k')}) {
    auto a = cli({"--nodes", nodes, "-q", "acquire", key});
    ASSERT_EQ(a.exit_code, 0) << a.err.substr(0, 300);
    ASSERT_TRUE(is_token_line(a.out)) << a.out;
    std::string token = a.out.substr(0, 33);
    EXPECT_TRUE(eventually([&] { return cluster.count_holding("redlock:" + key, token) == 3; }));
    auto r = cli({"--nodes", nodes, "-q", "release", key, token});
    EXPECT_EQ(r.exit_code, 0) << r.err.substr(0, 300);
  }
  EXPECT_EQ(cluster[0].command({"DBSIZE"}), "0");
}

// A token is opaque: one that is empty exits 2; any other that is not the holder's exits 1
// and leaves the holder's lock as it was.
TEST_F(Cli, MalformedTokensExitOneAndLeaveTheHolder) {
  auto a = cli({"--nodes", nodes, "-q", "--ttl", "5000", "acquire", "m"});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  std::string token = a.out.substr(0, 33);
  std::string upper = token;
  for (auto& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  auto empty = cli({"--nodes", nodes, "release", "m", ""});
  EXPECT_EQ(empty.exit_code, 2) << empty.err;
  EXPECT_NE(empty.err.find("token"), std::string::npos) << empty.err;
  for (const std::string& t : {std::string("zz"), upper, token + "0", token.substr(1),
                               std::string("--"), std::string(50'000, 'f')}) {
    auto rel = cli({"--nodes", nodes, "-q", "release", "m", "--", t});
    EXPECT_EQ(rel.exit_code, 1) << t.substr(0, 40) << ": " << rel.err.substr(0, 300);
    auto ext = cli({"--nodes", nodes, "-q", "--ttl", "60000", "extend", "m", "--", t});
    EXPECT_EQ(ext.exit_code, 1) << t.substr(0, 40) << ": " << ext.err.substr(0, 300);
  }
  EXPECT_EQ(cluster.count_holding("redlock:m", token), 3u);
  EXPECT_LE(std::stoll(cluster[0].command({"PTTL", "redlock:m"})), 5000) << "not extended";
  EXPECT_EQ(cli({"--nodes", nodes, "release", "m", token}).exit_code, 0);
}

}  // namespace
}  // namespace redlock::test
