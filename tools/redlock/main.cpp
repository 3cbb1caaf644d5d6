// redlock: the command-line face of redlock-cpp, for shell scripts and operators.
//
// Exit codes (a stable contract): 0 success; 1 not acquired / not held; 2 usage or
// configuration error; 3 no quorum of nodes reachable; 4 lock lost while `run`'s command ran
// (otherwise `run` exits with its command's status). Only the token (acquire) and the status
// table go to stdout; every diagnostic goes to stderr.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "redlock/redlock.hpp"

extern char** environ;

namespace {

using redlock::Errc;
using redlock::Milliseconds;

enum Exit { kOk = 0, kNotHeld = 1, kUsage = 2, kNoQuorum = 3, kLost = 4 };

struct Globals {
  std::string nodes;
  std::optional<long> ttl_ms;
  std::optional<std::string> prefix;
  std::optional<long> connect_timeout_ms;
  std::optional<long> request_timeout_ms;
  std::optional<int> retry_count;
  std::optional<long> retry_delay_ms;
  std::optional<long> retry_jitter_ms;
  std::optional<double> drift_factor;
  bool quiet = false;
};

int exit_code_for(std::error_code ec) {
  if (!ec) return kOk;
  if (ec == Errc::not_acquired || ec == Errc::not_held || ec == Errc::validity_expired)
    return kNotHeld;
  if (ec == Errc::invalid_argument || ec == Errc::invalid_config) return kUsage;
  return kNoQuorum;
}

// The configuration from the options; throws redlock::Error on a bad list or option.
redlock::Config make_config(const Globals& g) {
  if (g.nodes.empty())
    throw redlock::Error(make_error_code(Errc::invalid_config),
                         "no nodes: pass --nodes or set REDLOCK_NODES");
  auto c = redlock::Config::from_node_list(g.nodes);
  if (g.ttl_ms) c.ttl = Milliseconds(*g.ttl_ms);
  if (g.prefix) c.key_prefix = *g.prefix;
  if (g.connect_timeout_ms) c.connect_timeout = Milliseconds(*g.connect_timeout_ms);
  if (g.request_timeout_ms) c.request_timeout = Milliseconds(*g.request_timeout_ms);
  if (g.retry_count) c.retry_count = *g.retry_count;
  if (g.retry_delay_ms) c.retry_delay = Milliseconds(*g.retry_delay_ms);
  if (g.retry_jitter_ms) c.retry_jitter = Milliseconds(*g.retry_jitter_ms);
  if (g.drift_factor) c.drift_factor = *g.drift_factor;
  return c;
}

void diag(const Globals& g, const std::string& line) {
  if (!g.quiet) std::cerr << "redlock: " << line << '\n';
}

// Always shown, also with --quiet: why the command failed.
int fail(const redlock::Outcome& r, const std::string& what) {
  std::cerr << "redlock: " << what << ": " << r.message() << '\n';
  return exit_code_for(r.error);
}

int do_acquire(const Globals& g, redlock::Client& client, const std::string& key,
               std::optional<long> wait_ms) {
  redlock::AcquireRequest req;
  req.resources = {key};
  req.ttl = client.config().ttl;
  if (wait_ms) req.wait = Milliseconds(*wait_ms);
  auto r = client.acquire(req);
  if (!r) return fail(r, "not acquired '" + key + "'");
  if (!(std::cout << r.lock.token << std::endl)) {
    // Nobody got the token (stdout is closed): give the lock back rather than leave it held.
    (void)client.release(r.lock);
    std::cerr << "redlock: cannot write the token to stdout; released '" << key << "'\n";
    return kNotHeld;
  }
  diag(g, "acquired '" + key + "' (key " + client.key_of(key) + ") for " +
              std::to_string(r.lock.ttl.count()) + " ms, valid for " +
              std::to_string(r.lock.validity_left().count()) + " ms after " +
              std::to_string(r.attempts) + " attempt(s); votes " + r.votes.to_string());
  return kOk;
}

int do_extend(const Globals& g, redlock::Client& client, const std::string& key,
              const std::string& token) {
  redlock::Lock lock(key, token);
  auto r = client.extend(lock, client.config().ttl);
  if (!r) return fail(r, "not extended '" + key + "'");
  diag(g, "extended '" + key + "' to " + std::to_string(client.config().ttl.count()) +
              " ms, valid for " + std::to_string(lock.validity_left().count()) + " ms; votes " +
              r.votes.to_string());
  return kOk;
}

int do_release(const Globals& g, redlock::Client& client, const std::string& key,
               const std::string& token) {
  auto r = client.release(redlock::Lock(key, token));
  if (!r) return fail(r, "not released '" + key + "'");
  diag(g, "released '" + key + "' on " + std::to_string(r.released) + " node(s); votes " +
              r.votes.to_string());
  return kOk;
}

// SIGPIPE's disposition when redlock started; given back to the command.
struct sigaction g_inherited_sigpipe;

struct RunOptions {
  std::optional<long> wait_ms;
  std::optional<int> conflict_exit_code;
  long kill_after_ms = 5000;
  std::vector<std::string> command;
};

constexpr int kLostSignal = SIGUSR1;  // raised by the lock-lost callback
constexpr int kHoldDone = SIGUSR2;    // raised by the thread that waited for the lock

// Signals `run` takes in its main thread with sigtimedwait; blocked in every thread (set before
// the client's loop thread starts, which inherits the mask) and unblocked in the child.
sigset_t run_signals() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD, kLostSignal, kHoldDone})
    sigaddset(&set, sig);
  return set;
}

// The signals that stop a waiting `run`, and that a running one passes to its command.
bool is_termination(int sig) {
  return sig == SIGINT || sig == SIGTERM || sig == SIGHUP || sig == SIGQUIT;
}

const char* signal_name(int sig) {
  switch (sig) {
    case SIGINT:
      return "SIGINT";
    case SIGTERM:
      return "SIGTERM";
    case SIGHUP:
      return "SIGHUP";
    case SIGQUIT:
      return "SIGQUIT";
    default:
      return "a signal";
  }
}

// Client::hold() in a helper thread while this thread takes the signals: SIGINT, SIGTERM,
// SIGHUP or SIGQUIT cancel the wait at once. `*cancelled_by` is that signal (0: none); a lock
// granted as the signal came is returned held, for the caller to release.
redlock::HoldResult hold_cancellable(redlock::Client& client, redlock::AcquireRequest req,
                                     int* cancelled_by) {
  redlock::CancelToken cancel;
  req.cancel = cancel;
  redlock::HoldResult held;
  std::atomic<bool> done{false};
  std::thread waiter([&] {
    held = client.hold(std::move(req), [](std::error_code) { ::kill(::getpid(), kLostSignal); });
    done = true;
    ::kill(::getpid(), kHoldDone);
  });
  sigset_t signals = run_signals();
  *cancelled_by = 0;
  while (!done) {  // hold() ends by itself: --wait, no quorum, or the cancel below
    timespec tick{0, 100'000'000};
    int sig = ::sigtimedwait(&signals, nullptr, &tick);
    if (is_termination(sig) && *cancelled_by == 0) {
      *cancelled_by = sig;
      cancel.cancel();
    }
  }
  waiter.join();
  if (*cancelled_by == 0) {  // one that came with the grant, not yet taken
    sigset_t termination;
    sigemptyset(&termination);
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaddset(&termination, sig);
    timespec now{0, 0};
    int sig = ::sigtimedwait(&termination, nullptr, &now);
    if (sig > 0) *cancelled_by = sig;
  }
  return held;
}

long long unix_ms_of(redlock::Clock::time_point t) {
  auto left = t - redlock::Clock::now();
  auto at = std::chrono::system_clock::now() + left;
  return std::chrono::duration_cast<std::chrono::milliseconds>(at.time_since_epoch()).count();
}

// The command's environment, built before fork (the child only execs): ours, less
// REDLOCK_NODES, which may carry passwords and is for redlock alone, plus the variables that
// describe the lock.
std::vector<std::string> child_environment(const redlock::Client& client, const std::string& key,
                                           const redlock::HeldLock& lock) {
  std::vector<std::pair<std::string, std::string>> lock_vars = {
      {"REDLOCK_TOKEN", lock.token()},
      {"REDLOCK_RESOURCE", key},
      {"REDLOCK_KEY", client.key_of(key)},
      {"REDLOCK_LEASE_MS", std::to_string(client.config().watchdog_lease.count())},
      {"REDLOCK_VALID_UNTIL_MS", std::to_string(unix_ms_of(lock.valid_until()))},
  };
  // ---- More variables for the command go here (REDLOCK_FENCING_TOKEN, when grants carry
  // ---- one): append to lock_vars; an inherited variable of the same name is replaced.

  auto withheld = [&](std::string_view name) {
    if (name == "REDLOCK_NODES") return true;
    for (const auto& v : lock_vars)
      if (v.first == name) return true;
    return false;
  };
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string_view entry(*e);
    if (!withheld(entry.substr(0, entry.find('=')))) env.emplace_back(entry);
  }
  for (const auto& v : lock_vars) env.push_back(v.first + "=" + v.second);
  return env;
}

int exit_status_of(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return kNoQuorum;
}

// Like flock(1) / `etcdctl lock`: acquire (waiting up to --wait), run the command while the
// lock is renewed, release when it exits. A lost lock terminates the command (exit 4).
int do_run(const Globals& g, redlock::Client& client, const std::string& key, const RunOptions& o) {
  redlock::AcquireRequest req({key});  // no ttl: the watchdog lease (--ttl), renewed
  if (o.wait_ms) req.wait = redlock::Milliseconds(*o.wait_ms);
  int cancelled_by = 0;
  auto held = hold_cancellable(client, std::move(req), &cancelled_by);
  if (cancelled_by != 0) {
    if (held) (void)held.lock.release();
    std::cerr << "redlock: waiting for '" << key << "' cancelled by " << signal_name(cancelled_by)
              << "; the command was not started\n";
    return 128 + cancelled_by;
  }
  if (!held) {
    int code = fail(held, "not acquired '" + key + "'");
    if (held.error == Errc::not_acquired && o.conflict_exit_code) code = *o.conflict_exit_code;
    return code;
  }
  auto& lock = held.lock;
  diag(g, "acquired '" + key + "', lease " +
              std::to_string(client.config().watchdog_lease.count()) +
              " ms renewed while the command runs; votes " + held.votes.to_string());

  sigset_t signals = run_signals();
  std::vector<std::string> env = child_environment(client, key, lock);
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<char*> argv;
  for (const auto& a : o.command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t child = ::fork();
  if (child < 0) {
    std::cerr << "redlock: fork failed: " << std::strerror(errno) << '\n';
    (void)lock.release();
    return kNoQuorum;
  }
  if (child == 0) {
    ::sigprocmask(SIG_UNBLOCK, &signals, nullptr);
    ::sigaction(SIGPIPE, &g_inherited_sigpipe, nullptr);
    environ = envp.data();
    ::execvp(argv[0], argv.data());
    std::fprintf(stderr, "redlock: cannot run '%s': %s\n", argv[0], std::strerror(errno));
    ::_exit(errno == ENOENT ? 127 : 126);
  }

  bool lost = false;
  int status = 0;
  auto kill_at = std::chrono::steady_clock::time_point::max();
  for (;;) {
    timespec tick{0, 50'000'000};
    siginfo_t info{};
    int sig = ::sigtimedwait(&signals, &info, &tick);
    if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP || sig == SIGQUIT) {
      // A signal from the terminal already reached the child through the process group; one
      // sent to us alone (kill, a supervisor) is passed on.
      if (info.si_code == SI_USER || info.si_code == SI_QUEUE) ::kill(child, sig);
    }
    if (!lost && (sig == kLostSignal || !lock.valid())) {
      lost = true;
      std::cerr << "redlock: lock on '" << key << "' lost (" << lock.lost_flag().reason().message()
                << "): terminating the command\n";
      ::kill(child, SIGTERM);
      kill_at = std::chrono::steady_clock::now() + std::chrono::milliseconds(o.kill_after_ms);
    }
    if (std::chrono::steady_clock::now() >= kill_at) {
      ::kill(child, SIGKILL);
      kill_at = std::chrono::steady_clock::time_point::max();
    }
    if (::waitpid(child, &status, WNOHANG) == child) break;
  }
  auto r = lock.release();
  if (r)
    diag(g, "released '" + key + "'; votes " + r.votes.to_string());
  else if (!lost)
    diag(g, "release of '" + key + "': " + r.message());
  return lost ? kLost : exit_status_of(status);
}

int do_status(redlock::Client& client) {
  auto rows = client.status();
  std::size_t up = 0;
  std::printf("%-28s %-5s %10s  %-10s %s\n", "NODE", "STATE", "RTT", "VERSION", "DETAIL");
  for (const auto& row : rows) {
    char rtt[32] = "-";
    if (row.up) {
      ++up;
      std::snprintf(rtt, sizeof rtt, "%.2fms", static_cast<double>(row.round_trip.count()) / 1e3);
    }
    std::string detail;
    if (!row.up && row.error) {
      detail = row.error.category() == redlock::error_category()
                   ? redlock::errc_name(static_cast<Errc>(row.error.value()))
                   : row.error.message();
      if (!row.detail.empty()) detail += ": " + row.detail;
    }
    std::printf("%-28s %-5s %10s  %-10s %s\n", row.address.c_str(), row.up ? "up" : "down", rtt,
                row.server_version.empty() ? "-" : row.server_version.c_str(), detail.c_str());
  }
  std::size_t quorum = rows.size() / 2 + 1;
  std::printf("%zu of %zu nodes up; quorum %zu %s\n", up, rows.size(), quorum,
              up >= quorum ? "reachable" : "NOT reachable");
  return up >= quorum ? kOk : kNoQuorum;
}

}  // namespace

int main(int argc, char** argv) {
  // A closed stdout or stderr (`redlock … | head -1`) makes our writes fail with EPIPE instead
  // of killing redlock, which must outlive its output to stop and release what it holds.
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGPIPE, &ignore, &g_inherited_sigpipe);

  CLI::App app{"redlock: a distributed lock over N independent Redis masters (Redlock)"};
  app.fallthrough();  // global options are accepted after the verb as well
  app.require_subcommand(1);
  Globals g;
  app.add_option("--nodes", g.nodes, "redis://[user:password@]host:port[/db],...")
      ->envname("REDLOCK_NODES");
  app.add_option("--ttl", g.ttl_ms, "lease in milliseconds (default 10000)");
  app.add_option("--prefix", g.prefix, "key prefix (default 'redlock:')");
  app.add_option("--connect-timeout", g.connect_timeout_ms, "per node, ms (default 1000)");
  app.add_option("--request-timeout", g.request_timeout_ms, "per request, ms (default 200)");
  app.add_option("--retry-count", g.retry_count, "retries without --wait (default 3)");
  app.add_option("--retry-delay", g.retry_delay_ms, "ms between attempts (default 200)");
  app.add_option("--retry-jitter", g.retry_jitter_ms, "random extra ms (default 100)");
  app.add_option("--drift-factor", g.drift_factor, "clock drift allowance (default 0.01)");
  app.add_flag("-q,--quiet", g.quiet, "no diagnostics on stderr, except errors");

  std::string key, token;
  std::optional<long> wait_ms;
  auto* acquire = app.add_subcommand("acquire", "acquire KEY; prints the token on stdout");
  acquire->add_option("KEY", key, "resource name")->required();
  acquire->add_option("--wait", wait_ms,
                      "keep trying this many ms (0: one attempt; default: retry count)");
  auto* extend = app.add_subcommand("extend", "extend KEY held with TOKEN to a new --ttl");
  extend->add_option("KEY", key, "resource name")->required();
  extend->add_option("TOKEN", token, "token printed by acquire")->required();
  auto* release = app.add_subcommand("release", "release KEY held with TOKEN");
  release->add_option("KEY", key, "resource name")->required();
  release->add_option("TOKEN", token, "token printed by acquire")->required();
  auto* status = app.add_subcommand("status", "reachability, round trip and version per node");
  RunOptions run_options;
  auto* run = app.add_subcommand("run", "run a command while holding KEY (renewed), like flock(1)");
  run->add_option("KEY", key, "resource name")->required();
  run->add_option("--wait", run_options.wait_ms, "wait this many ms for the lock (default 0)");
  run->add_option("--conflict-exit-code", run_options.conflict_exit_code,
                  "exit code when the lock is held by another (default 1)");
  run->add_option("--kill-after", run_options.kill_after_ms,
                  "after a lost lock, SIGKILL the command this many ms after SIGTERM (5000)");
  run->add_option("COMMAND", run_options.command, "the command and its arguments, after --")
      ->required();

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kUsage;
  }

  if (run->parsed()) {
    if (!run_options.wait_ms) run_options.wait_ms = 0;
    sigset_t signals = run_signals();
    ::pthread_sigmask(SIG_BLOCK, &signals, nullptr);  // before the loop thread exists
  }
  try {
    auto config = make_config(g);
    if (g.ttl_ms) config.watchdog_lease = redlock::Milliseconds(*g.ttl_ms);
    redlock::Client client(config);
    if (run->parsed()) return do_run(g, client, key, run_options);
    if (acquire->parsed()) return do_acquire(g, client, key, wait_ms);
    if (extend->parsed()) return do_extend(g, client, key, token);
    if (release->parsed()) return do_release(g, client, key, token);
    if (status->parsed()) return do_status(client);
  } catch (const redlock::Error& e) {
    std::cerr << "redlock: " << e.what() << '\n';
    return kUsage;
  } catch (const std::exception& e) {
    std::cerr << "redlock: " << e.what() << '\n';
    return kNoQuorum;
  }
  return kUsage;
}
