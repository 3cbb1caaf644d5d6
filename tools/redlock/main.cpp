// redlock: the command-line face of redlock-cpp, for shell scripts and operators.
//
// Exit codes (a stable contract): 0 success; 1 not acquired / not held; 2 usage or
// configuration error; 3 no quorum of nodes reachable; 4 lock lost while `run`'s command ran
// (otherwise `run` exits with its command's status; 128 + N when signal N ended its wait for
// the lock). Only the token (acquire) and the status table go to stdout; every diagnostic goes
// to stderr.
#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif
#include <CLI/CLI.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "duration.hpp"
#include "redlock/redlock.hpp"
#include "show.hpp"

extern char** environ;

namespace {

using redlock::Errc;
using redlock::Milliseconds;

enum Exit { kOk = 0, kNotHeld = 1, kUsage = 2, kNoQuorum = 3, kLost = 4, kRefused = 5 };

struct Globals {
  std::string nodes;
  // Durations as given (units allowed: duration.hpp), converted in make_config.
  std::optional<std::string> ttl;
  std::optional<std::string> restart_guard;
  std::optional<std::string> prefix;
  std::optional<std::string> connect_timeout;
  std::optional<std::string> request_timeout;
  std::optional<int> retry_count;
  std::optional<std::string> retry_delay;
  std::optional<std::string> retry_jitter;
  std::optional<double> drift_factor;
  bool quiet = false;
  bool no_persistence_warning = false;
  // TLS, with redis-cli's option names: --tls makes every node rediss://.
  bool tls = false;
  redlock::TlsOptions tls_options;
  // Set by `status`: its table shows the warnings, so stderr does not repeat them.
  bool warnings_in_table = false;
};

// stdout was closed when redlock started (`>&-`): it now points at /dev/null, where a token
// would be lost.
bool g_stdout_was_closed = false;

int exit_code_for(std::error_code ec) {
  if (!ec) return kOk;
  if (ec == Errc::not_acquired || ec == Errc::not_held || ec == Errc::validity_expired)
    return kNotHeld;
  if (ec == Errc::invalid_argument || ec == Errc::invalid_config) return kUsage;
  return kNoQuorum;
}

[[noreturn]] void usage_error(const std::string& message) {
  throw redlock::Error(make_error_code(Errc::invalid_argument), message);
}

// A duration option's value; a usage error naming the option when it is not one.
std::optional<Milliseconds> duration_of(const char* option,
                                        const std::optional<std::string>& text) {
  if (!text) return std::nullopt;
  std::string why;
  auto d = redlock::cli::parse_duration(*text, why);
  if (!d) usage_error(std::string(option) + ": " + why);
  return d;
}

// A safeguard warning is "node ADDR: WHAT: WHY...". Persistence warnings are condensed to their
// first clause and a consequence, once per node and call (a reconnect does not repeat them);
// --no-persistence-warning drops them. Others are shown as they are.
class WarningPrinter {
 public:
  explicit WarningPrinter(const Globals& g)
      : quiet_(g.quiet), no_persistence_(g.no_persistence_warning) {}

  static bool is_persistence(const std::string& text) {
    return text.rfind("persistence off", 0) == 0 || text.rfind("appendfsync ", 0) == 0;
  }
  // "persistence off (appendonly no): a crash or restart forgets its locks"
  static std::string condensed(const std::string& text) {
    auto clause = text.substr(0, text.find(':'));
    return clause + ": a crash or restart can forget its locks";
  }

  void operator()(const std::string& line) {
    if (quiet_) return;
    // "node ADDR: TEXT"
    auto colon = line.find(": ");
    std::string node = colon == std::string::npos ? std::string() : line.substr(0, colon);
    std::string text = colon == std::string::npos ? line : line.substr(colon + 2);
    bool persistence = is_persistence(text);
    if (persistence && no_persistence_) return;
    std::lock_guard<std::mutex> lock(mutex_);
    if (!seen_.insert(node + '\n' + (persistence ? "persistence" : text)).second) return;
    std::string out = "redlock: warning: " + node + ": " + (persistence ? condensed(text) : text);
    if (persistence && !hinted_) {
      hinted_ = true;
      out += " (docs/operations.md; --no-persistence-warning hides this)";
    }
    std::cerr << out << '\n';
  }

 private:
  bool quiet_, no_persistence_;
  std::mutex mutex_;
  std::set<std::string> seen_;
  bool hinted_ = false;
};

// N = 1 tolerates no failure; an even N tolerates no more than N - 1: a quorum is N/2 + 1.
void warn_fault_tolerance(const Globals& g, std::size_t n) {
  if (g.quiet || n == 0 || n % 2 == 1) {
    if (n == 1 && !g.quiet)
      std::cerr << "redlock: warning: 1 node tolerates no failure: when it is down no lock can "
                   "be taken, when it restarts without persistence every lock is forgotten; "
                   "use 3 or 5 independent masters\n";
    return;
  }
  std::size_t tolerated = (n - 1) / 2;
  std::cerr << "redlock: warning: " << n << " nodes tolerate " << tolerated << " failure"
            << (tolerated == 1 ? "" : "s") << ", as " << n - 1 << " node"
            << (n - 1 == 1 ? " does" : "s do") << " (a quorum is " << n / 2 + 1 << " of " << n
            << "); use an odd number of nodes\n";
}

// The configuration from the options; throws redlock::Error on a bad list or option.
redlock::Config make_config(const Globals& g) {
  if (g.nodes.empty())
    throw redlock::Error(make_error_code(Errc::invalid_config),
                         "no nodes: pass --nodes or set REDLOCK_NODES");
  auto c = redlock::Config::from_node_list(g.nodes);
  auto printer = std::make_shared<WarningPrinter>(g);
  c.on_warning = [printer, in_table = g.warnings_in_table](const std::string& warning) {
    if (!in_table) (*printer)(warning);
  };
  if (auto d = duration_of("--ttl", g.ttl)) c.ttl = c.watchdog_lease = *d;
  if (auto d = duration_of("--restart-guard", g.restart_guard)) c.restart_guard = *d;
  if (g.prefix) c.key_prefix = *g.prefix;
  if (auto d = duration_of("--connect-timeout", g.connect_timeout)) c.connect_timeout = *d;
  if (auto d = duration_of("--request-timeout", g.request_timeout)) c.request_timeout = *d;
  if (g.retry_count) c.retry_count = *g.retry_count;
  if (auto d = duration_of("--retry-delay", g.retry_delay)) c.retry_delay = *d;
  if (auto d = duration_of("--retry-jitter", g.retry_jitter)) c.retry_jitter = *d;
  if (g.drift_factor) c.drift_factor = *g.drift_factor;
  c.tls = g.tls_options;
  if (g.tls)
    for (auto& node : c.nodes) node.tls = true;
  warn_fault_tolerance(g, c.nodes.size());
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

// Writes all of `text` to stdout, unbuffered; false when any of it could not be written
// (EPIPE, EBADF, a full disk).
bool write_stdout(const std::string& text) {
  std::fflush(stdout);
  const char* data = text.data();
  std::size_t size = text.size();
  while (size > 0) {
    ssize_t n = ::write(STDOUT_FILENO, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

int do_acquire(const Globals& g, redlock::Client& client, const std::string& key,
               std::optional<Milliseconds> wait, bool fencing) {
  if (g_stdout_was_closed) {
    // Nothing acquired: the token would go nowhere, and the lock would stay taken for its ttl.
    std::cerr << "redlock: stdout is closed: the token could not be delivered; '" << key
              << "' not acquired\n";
    return kUsage;
  }
  redlock::AcquireRequest req;
  req.resources = {key};
  req.ttl = client.config().ttl;
  req.fencing = fencing;
  req.wait = wait;
  auto r = client.acquire(req);
  if (!r) return fail(r, "not acquired '" + key + "'");
  // The token alone; with --fencing, the token and the fencing token on one line:
  //   read -r token fencing < <(redlock acquire --fencing KEY)
  std::string line = r.lock.token;
  if (fencing) line += ' ' + std::to_string(r.lock.fencing_token);
  if (!write_stdout(line + '\n')) {
    // Nobody got the token (a closed pipe, a full disk): give the lock back rather than leave
    // it held.
    const int error = errno;
    auto rel = client.release(r.lock);
    std::cerr << "redlock: cannot write the token to stdout (" << std::strerror(error) << "); "
              << (rel ? "released '" + key + "'"
                      : "'" + key + "' not released (" + rel.message() +
                            "): it expires with its ttl")
              << '\n';
    return kUsage;
  }
  diag(g, "acquired '" + key + "' (key " + client.key_of(key) + ") for " +
              std::to_string(r.lock.ttl.count()) + " ms, valid for " +
              std::to_string(r.lock.validity_left().count()) + " ms after " +
              std::to_string(r.attempts) + " attempt(s); votes " + r.votes.to_string());
  return kOk;
}

// What a quorum of nodes now guarantees: renew.lua raises a key's ttl to the new lease but
// never shortens it, so the keys may live longer than --ttl. Read back (plain TCP nodes) and
// reported as the quorum-th longest ttl of the keys that hold our token, less the drift
// allowance; otherwise (TLS) the library's own lower bound, said to be one.
int do_extend(const Globals& g, redlock::Client& client, const std::string& key,
              const std::string& token) {
  redlock::Lock lock(key, token);
  const auto ttl = client.config().ttl;
  const auto start = redlock::Clock::now();
  auto r = client.extend(lock, ttl);
  if (!r) return fail(r, "not extended '" + key + "'");
  if (g.quiet) return kOk;
  const auto& config = client.config();
  const auto views = redlock::cli::read_lock(config, client.key_of(key));
  const std::string ours = redlock::cli::holder_name(token);
  std::vector<long long> ttls;
  for (const auto& v : views)
    if (v.read && v.type == "string" && v.holder == ours && v.ttl_ms >= 0) ttls.push_back(v.ttl_ms);
  std::sort(ttls.rbegin(), ttls.rend());
  const std::size_t quorum = config.nodes.size() / 2 + 1;
  std::string said;
  if (ttls.size() >= quorum) {
    auto elapsed = std::chrono::duration_cast<Milliseconds>(redlock::Clock::now() - start).count();
    long long kept = ttls[quorum - 1];
    auto drift = static_cast<long long>(static_cast<double>(kept) * config.drift_factor) + 2;
    long long valid = std::max<long long>(0, kept - drift - elapsed);
    said = "a quorum holds it for " + std::to_string(kept) + " ms more, valid for " +
           std::to_string(valid) + " ms";
    if (kept > ttl.count() + 50)
      said += " (--ttl " + std::to_string(ttl.count()) +
              " ms asked for less: a node never shortens a lease, it kept the longer one)";
  } else {
    said = "valid for at least " + std::to_string(lock.validity_left().count()) +
           " ms (a node never shortens a lease: it may hold it longer)";
  }
  diag(g, "extended '" + key + "': " + said + "; votes " + r.votes.to_string());
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

// SIGPIPE's and SIGCHLD's dispositions and the signal mask when redlock started; given back
// to the command.
struct sigaction g_inherited_sigpipe;
struct sigaction g_inherited_sigchld;
sigset_t g_inherited_mask;
// Descriptors above stderr that redlock was started with, sorted: the command gets these, and
// none that redlock opened itself (hiredis's sockets to the nodes are not close-on-exec).
// Unknown (nullopt) without /proc: then nothing is closed.
std::optional<std::vector<int>> g_inherited_fds;

void note_inherited_fds() {
  std::vector<int> fds;
  std::error_code ec;
  for (std::filesystem::directory_iterator it("/proc/self/fd", ec), end; !ec && it != end;
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.find_first_not_of("0123456789") == std::string::npos) fds.push_back(std::stoi(name));
  }
  if (ec) return;
  std::vector<int> open;  // less the directory's own descriptor, closed by now
  for (int fd : fds)
    if (fd > 2 && ::fcntl(fd, F_GETFD) >= 0) open.push_back(fd);
  std::sort(open.begin(), open.end());
  g_inherited_fds = std::move(open);
}

// Termination signals that were ignored when redlock started (`nohup`, a background job of a
// script): they stay ignored, by redlock as by the command.
sigset_t g_inherited_ignored;

struct RunOptions {
  std::optional<long> wait_ms;  // from `wait` (and kill_after_ms from `kill_after`), in main
  std::optional<std::string> wait;
  std::optional<std::string> kill_after;
  std::optional<int> conflict_exit_code;
  long kill_after_ms = 5000;
  std::vector<std::string> command;
};

constexpr int kLostSignal = SIGUSR1;  // raised by the lock-lost callback
constexpr int kHoldDone = SIGUSR2;    // raised by the thread that waited for the lock

// Signals `run` takes in its main thread with sigtimedwait; blocked in every thread (set before
// the client's loop thread starts, which inherits the mask). The command gets the mask redlock
// was started with.
sigset_t run_signals() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD, SIGCONT, kLostSignal, kHoldDone})
    if (!sigismember(&g_inherited_ignored, sig)) sigaddset(&set, sig);
  return set;
}

// The signals that stop a waiting `run`, and that a running one passes to its command.
bool is_termination(int sig) {
  return sig == SIGINT || sig == SIGTERM || sig == SIGHUP || sig == SIGQUIT;
}

void note_ignored_signals() {
  sigemptyset(&g_inherited_ignored);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) {
    struct sigaction now {};
    if (::sigaction(sig, nullptr, &now) == 0 && now.sa_handler == SIG_IGN)
      sigaddset(&g_inherited_ignored, sig);
  }
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
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT})
      if (!sigismember(&g_inherited_ignored, sig)) sigaddset(&termination, sig);
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
  // The grant's fencing token (run always asks for one): pass it to the storage the command
  // writes, which rejects writes carrying a lower one.
  lock_vars.emplace_back("REDLOCK_FENCING_TOKEN", std::to_string(lock.fencing_token()));
  // More variables for the command go here: an inherited variable of the same name is replaced.

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

// ---- The command's process group, the sentinel, the terminal ----
//
// The command runs in a process group of its own: a lost lock, a forwarded signal and the final
// SIGKILL reach everything it started (`sh -c 'a; b'`, pipelines, make) that did not leave the
// group itself (setsid, setpgid). The code between fork and exec/_exit makes async-signal-safe
// calls only: redlock has threads.

void write_all(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    data += n;
    size -= static_cast<std::size_t>(n);
  }
}

long long monotonic_ms() {
  timespec t{};
  ::clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<long long>(t.tv_sec) * 1000 + t.tv_nsec / 1'000'000;
}

// True while any process is in process group `group` (zombies included).
bool group_exists(pid_t group) { return !(::kill(-group, 0) != 0 && errno == ESRCH); }

// Closes descriptors first…last (last: ~0U for all above first).
void close_range_of(unsigned first, unsigned last) {
  if (first > last) return;
#ifdef SYS_close_range
  if (::syscall(SYS_close_range, first, last, 0) == 0) return;
#endif
  for (unsigned fd = first; fd <= last && fd < 4096; ++fd) ::close(static_cast<int>(fd));
}

void close_from(int first) { close_range_of(static_cast<unsigned>(first), ~0U); }

// In the command, before exec: closes every descriptor above stderr that redlock did not
// inherit.
void close_own_fds(const std::vector<int>& inherited) {
  unsigned next = 3;
  for (int fd : inherited) {
    close_range_of(next, static_cast<unsigned>(fd) - 1);
    next = static_cast<unsigned>(fd) + 1;
  }
  close_range_of(next, ~0U);
}

// The sentinel ends the command if redlock ends without doing so (SIGKILL, a crash). It is
// forked before the command, in a process group of its own (a signal to redlock's group, such
// as `timeout -s KILL` sends, does not end it too), and reads a pipe whose writing end only
// redlock holds: first the command's process group, then, once the command is over, 'q'. End of
// file before 'q' means redlock is gone: SIGTERM to the group, SIGKILL --kill-after ms later.
struct Sentinel {
  pid_t pid = -1;
  int fd = -1;  // the writing end
};

[[noreturn]] void sentinel_main(int control, long kill_after_ms) {
  static const char message[] =
      "redlock: redlock ended while its command ran: terminating the command's process group\n";
  ::setpgid(0, 0);
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  for (int sig :
       {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGTSTP, SIGTTIN, SIGTTOU, SIGPIPE, SIGUSR1, SIGUSR2})
    ::sigaction(sig, &ignore, nullptr);
  // Hold nothing of redlock's but stderr: neither its sockets nor the pipe of its stdout.
  if (control != 3) ::dup2(control, 3);
  int null = ::open("/dev/null", O_RDWR);
  if (null >= 0) {
    ::dup2(null, 0);
    ::dup2(null, 1);
  }
  close_from(4);

  pid_t group = 0;
  char* at = reinterpret_cast<char*>(&group);
  for (std::size_t got = 0; got < sizeof group;) {
    ssize_t n = ::read(3, at + got, sizeof group - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) ::_exit(0);  // no command was started
    got += static_cast<std::size_t>(n);
  }
  for (;;) {  // until redlock says 'q' or is gone
    char byte = 0;
    ssize_t n = ::read(3, &byte, 1);
    if (n == 1 && byte == 'q') ::_exit(0);
    if (n == 0 || (n < 0 && errno != EINTR)) break;
  }
  write_all(2, message, sizeof message - 1);
  ::kill(-group, SIGTERM);
  ::kill(-group, SIGCONT);  // a stopped process acts on SIGTERM once continued
  for (long long end = monotonic_ms() + kill_after_ms; monotonic_ms() < end;) {
    if (!group_exists(group)) ::_exit(0);
    timespec tick{0, 20'000'000};
    ::nanosleep(&tick, nullptr);
  }
  ::kill(-group, SIGKILL);
  ::_exit(0);
}

Sentinel start_sentinel(long kill_after_ms) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return {};
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[1]);
    sentinel_main(fds[0], kill_after_ms);
  }
  ::close(fds[0]);
  if (pid < 0) {
    ::close(fds[1]);
    return {};
  }
  ::setpgid(pid, pid);  // in both, whichever runs first
  return {pid, fds[1]};
}

// Tells the sentinel that the command is over; reaps it (it exits at once).
void stop_sentinel(Sentinel& s) {
  if (s.fd >= 0) {
    write_all(s.fd, "q", 1);
    ::close(s.fd);
    s.fd = -1;
  }
  for (int i = 0; s.pid > 0 && i < 1000; ++i) {  // at most about one second
    if (::waitpid(s.pid, nullptr, WNOHANG) != 0) break;
    ::usleep(1000);
  }
  s.pid = -1;
}

// Our controlling terminal on stdin, stdout or stderr, or -1 (a pipe, a file, cron).
int controlling_terminal() {
  for (int fd : {STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO})
    if (::isatty(fd) && ::tcgetsid(fd) == ::getsid(0)) return fd;
  return -1;
}

// When redlock is in the terminal's foreground, the command's group takes its place there: it
// may read the terminal, and Ctrl-C, Ctrl-\ and Ctrl-Z go to it. (From the background,
// tcsetpgrp would raise SIGTTOU: it is blocked in `run`.)
void give_terminal(int tty, pid_t group) {
  if (tty >= 0 && ::tcgetpgrp(tty) == ::getpgrp()) ::tcsetpgrp(tty, group);
}

void take_terminal(int tty, pid_t group) {
  if (tty >= 0 && ::tcgetpgrp(tty) == group) ::tcsetpgrp(tty, ::getpgrp());
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
  req.fencing = true;                  // REDLOCK_FENCING_TOKEN: one more round trip, once
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

  // Everything the child needs is made here: between fork and exec it only makes
  // async-signal-safe calls.
  std::vector<std::string> env = child_environment(client, key, lock);
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<char*> argv;
  for (const auto& a : o.command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const std::string cannot_run = "redlock: cannot run '" + o.command[0] + "': ";

#ifdef PR_SET_CHILD_SUBREAPER
  // Orphans of the command become our children, not init's: we reap them, so that a process
  // group whose members have all exited is seen empty (also where init leaves zombies).
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
#endif
  Sentinel sentinel = start_sentinel(o.kill_after_ms);
  int gate[2] = {-1, -1};  // the command waits here until its group is known to the sentinel
  pid_t child = -1;
  if (sentinel.pid > 0 && ::pipe2(gate, O_CLOEXEC) == 0) child = ::fork();
  if (child < 0) {
    std::cerr << "redlock: cannot start the command: " << std::strerror(errno) << '\n';
    for (int fd : gate)
      if (fd >= 0) ::close(fd);
    stop_sentinel(sentinel);
    (void)lock.release();
    return kNoQuorum;
  }
  if (child == 0) {
    ::setpgid(0, 0);
    ::close(sentinel.fd);
    ::close(gate[1]);
    char go = 0;
    ssize_t n = -1;
    for (int i = 0; i < 100 && n < 0; ++i) n = ::read(gate[0], &go, 1);  // EINTR: again
    if (n != 1) ::_exit(127);  // redlock ended before the start: never run unwatched
    if (g_inherited_fds) close_own_fds(*g_inherited_fds);
    ::sigaction(SIGPIPE, &g_inherited_sigpipe, nullptr);
    ::sigaction(SIGCHLD, &g_inherited_sigchld, nullptr);
    ::sigprocmask(SIG_SETMASK, &g_inherited_mask, nullptr);
    environ = envp.data();
    ::execvp(argv[0], argv.data());
    int error = errno;
    const char* reason = std::strerror(error);
    write_all(2, cannot_run.data(), cannot_run.size());
    write_all(2, reason, std::strlen(reason));
    write_all(2, "\n", 1);
    ::_exit(error == ENOENT ? 127 : 126);
  }
  const pid_t group = child;
  ::setpgid(child, group);  // in both, whichever runs first
  ::close(gate[0]);
  write_all(sentinel.fd, reinterpret_cast<const char*>(&group), sizeof group);
  const int tty = controlling_terminal();
  give_terminal(tty, group);
  write_all(gate[1], "g", 1);
  ::close(gate[1]);

  // Until the command has exited and nothing is left in its group. Every pass ends within a
  // tick; SIGTERM, then SIGKILL --kill-after ms later, bound the end once it is asked for.
  using Steady = std::chrono::steady_clock;
  const auto never = Steady::time_point::max();
  bool lost = false, exited = false, ending = false;
  int status = 0;
  auto kill_at = never, give_up_at = never;
  auto end_group = [&] {
    if (ending) return;
    ending = true;
    ::kill(-group, SIGTERM);
    ::kill(-group, SIGCONT);  // a stopped process acts on SIGTERM once continued
    kill_at = Steady::now() + std::chrono::milliseconds(o.kill_after_ms);
  };
  const sigset_t signals = run_signals();
  for (;;) {
    timespec tick{0, 50'000'000};
    int sig = ::sigtimedwait(&signals, nullptr, &tick);
    if (is_termination(sig)) {
      ::kill(-group, sig);  // from a supervisor, kill, or the terminal while we had it
    } else if (sig == SIGCONT) {
      give_terminal(tty, group);  // `fg` after Ctrl-Z, or `bg`
      ::kill(-group, SIGCONT);
    }
    if (!lost && (sig == kLostSignal || !lock.valid())) {
      lost = true;
      std::cerr << "redlock: lock on '" << key << "' lost (" << lock.lost_flag().reason().message()
                << "): terminating the command\n";
      end_group();
    }
    for (int i = 0; i < 1000; ++i) {  // reap every child that has news
      int st = 0;
      pid_t pid = ::waitpid(-1, &st, WNOHANG | WUNTRACED);
      if (pid <= 0) break;
      if (pid == child && WIFSTOPPED(st)) {
        int why = WSTOPSIG(st);
        if (tty >= 0 && (why == SIGTSTP || why == SIGTTIN || why == SIGTTOU)) {
          // Job control: the shell gets the terminal back and sees the job stopped; its SIGCONT
          // continues the command too. The lock is not renewed while we are stopped.
          take_terminal(tty, group);
          ::raise(SIGTSTP);
        }
      } else if (pid == child) {
        exited = true;
        status = st;
      } else if (pid == sentinel.pid) {
        sentinel.pid = -1;
        diag(g, "the sentinel process ended; the command is no longer watched should redlock die");
      }  // else an orphan of the command, adopted as its subreaper
    }
    if (exited && !group_exists(group)) break;
    if (exited && !ending) {
      diag(g, "the command exited; terminating what it left running in its process group");
      end_group();
    }
    auto now = Steady::now();
    if (now >= kill_at) {
      ::kill(-group, SIGKILL);
      kill_at = never;
      give_up_at = now + std::chrono::seconds(1);
    }
    if (exited && now >= give_up_at) {
      diag(g, "processes of the command's group outlived SIGKILL; not waiting for them");
      break;
    }
  }
  take_terminal(tty, group);
  stop_sentinel(sentinel);
  auto r = lock.release();
  if (r)
    diag(g, "released '" + key + "'; votes " + r.votes.to_string());
  else if (!lost)
    diag(g, "release of '" + key + "': " + r.message());
  return lost ? kLost : exit_status_of(status);
}

bool is_refusal(std::error_code ec) {
  return ec == Errc::node_not_master || ec == Errc::duplicate_node || ec == Errc::node_restarting;
}

// One row per node. Exit 3 without a quorum; 5 when a node is refused (a replica, a Cluster
// node, one server listed twice, a node restarting under the restart guard), and with
// --strict also when a node's persistence can forget a lock; else 0.
int do_status(const Globals& g, redlock::Client& client, bool json, bool strict) {
  auto rows = client.status();
  std::size_t up = 0, refused = 0, forgetful = 0;
  const std::size_t quorum = rows.size() / 2 + 1;
  std::string out;
  char line[512];
  if (!json) {
    std::snprintf(line, sizeof line, "%-28s %-5s %10s  %-10s %s\n", "NODE", "STATE", "RTT",
                  "VERSION", "DETAIL");
    out += line;
  } else {
    out += "{\"nodes\":[";
  }
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& row = rows[i];
    if (row.up) ++up;
    if (!row.up && is_refusal(row.error)) ++refused;
    std::vector<std::string> warnings;
    bool forgets = false;
    for (const auto& w : row.warnings) {
      bool persistence = WarningPrinter::is_persistence(w);
      forgets = forgets || persistence;
      if (persistence && g.no_persistence_warning) continue;
      warnings.push_back(json || !persistence ? w : WarningPrinter::condensed(w));
    }
    if (forgets && !g.no_persistence_warning) ++forgetful;
    std::string code;
    if (row.error)
      code = row.error.category() == redlock::error_category()
                 ? redlock::errc_name(static_cast<Errc>(row.error.value()))
                 : row.error.message();
    if (json) {
      if (i > 0) out += ',';
      out += "{\"node\":" + redlock::cli::json_string(row.address) +
             ",\"up\":" + (row.up ? "true" : "false");
      out += ",\"rtt_ms\":";
      if (row.up) {
        std::snprintf(line, sizeof line, "%.3f", static_cast<double>(row.round_trip.count()) / 1e3);
        out += line;
      } else {
        out += "null";
      }
      out += ",\"version\":" + (row.server_version.empty()
                                    ? std::string("null")
                                    : redlock::cli::json_string(row.server_version));
      out += ",\"error\":" +
             (row.up || code.empty() ? std::string("null") : redlock::cli::json_string(code));
      out +=
          ",\"detail\":" + (row.up || row.detail.empty() ? std::string("null")
                                                         : redlock::cli::json_string(row.detail));
      out += ",\"refused\":" + std::string(!row.up && is_refusal(row.error) ? "true" : "false");
      out += ",\"persistence_forgets\":" + std::string(forgets ? "true" : "false");
      out += ",\"warnings\":[";
      for (std::size_t j = 0; j < warnings.size(); ++j)
        out += (j ? "," : "") + redlock::cli::json_string(warnings[j]);
      out += "]}";
      continue;
    }
    char rtt[32] = "-";
    if (row.up)
      std::snprintf(rtt, sizeof rtt, "%.2fms", static_cast<double>(row.round_trip.count()) / 1e3);
    std::string detail;
    if (!row.up && row.error) {
      detail = code;
      if (!row.detail.empty()) detail += ": " + row.detail;
    }
    std::snprintf(line, sizeof line, "%-28s %-5s %10s  %-10s ", row.address.c_str(),
                  row.up ? "up" : "down", rtt,
                  row.server_version.empty() ? "-" : row.server_version.c_str());
    out += line + detail + "\n";
    for (const auto& warning : warnings) out += "  warning: " + warning + "\n";
  }
  int code = up < quorum ? kNoQuorum : (refused > 0 || (strict && forgetful > 0)) ? kRefused : kOk;
  if (json) {
    out += "],\"up\":" + std::to_string(up) + ",\"total\":" + std::to_string(rows.size()) +
           ",\"quorum\":" + std::to_string(quorum) +
           ",\"quorum_reachable\":" + (up >= quorum ? "true" : "false") +
           ",\"refused\":" + std::to_string(refused) +
           ",\"persistence_forgets\":" + std::to_string(forgetful) +
           ",\"exit_code\":" + std::to_string(code) + "}\n";
  } else {
    std::snprintf(line, sizeof line, "%zu of %zu nodes up; quorum %zu %s", up, rows.size(), quorum,
                  up >= quorum ? "reachable" : "NOT reachable");
    out += line;
    if (refused > 0) out += "; " + std::to_string(refused) + " refused";
    if (forgetful > 0)
      out += "; " + std::to_string(forgetful) + " whose persistence can forget a lock";
    if (!g.no_persistence_warning && forgetful > 0 && !strict)
      out += " (--no-persistence-warning hides this)";
    out += "\n";
  }
  if (!write_stdout(out)) {
    std::cerr << "redlock: cannot write to stdout: " << std::strerror(errno) << '\n';
    return kUsage;
  }
  return code;
}

// Each node's view of one lock (show.hpp); exit 3 when fewer than a quorum could be read.
int do_show(const Globals& g, const redlock::Config& config, const std::string& key, bool json) {
  (void)g;
  const std::string lock_key = config.key_prefix + key;
  auto views = redlock::cli::read_lock(config, lock_key);
  std::size_t read = 0;
  for (const auto& v : views) read += v.read ? 1 : 0;
  if (!redlock::cli::print_views(key, lock_key, views, json)) {
    std::cerr << "redlock: cannot write to stdout\n";
    return kUsage;
  }
  return read >= views.size() / 2 + 1 ? kOk : kNoQuorum;
}

// Everything after KEY is the command. Two exceptions, for words that cannot begin a command:
// the first `--` (a separator), and the form of earlier versions, `run KEY --wait 5 -- CMD`,
// whose options of run are still taken (with a warning). Any other word with a leading '-'
// there is an option in the wrong place: a usage error, never a command run with it.
int take_legacy_run_options(const Globals& g, RunOptions& o) {
  auto& cmd = o.command;
  std::vector<std::string> moved;
  while (!cmd.empty() && cmd.front().size() > 1 && cmd.front()[0] == '-' && cmd.front() != "--") {
    std::string word = cmd.front(), value;
    auto eq = word.find('=');
    bool inline_value = word.rfind("--", 0) == 0 && eq != std::string::npos;
    std::string name = inline_value ? word.substr(0, eq) : word;
    bool known = name == "--wait" || name == "-w" || name == "--kill-after" ||
                 name == "--conflict-exit-code" || name == "-E";
    if (!known || (!inline_value && cmd.size() < 2)) {
      std::cerr << "redlock: run: '" << word
                << "' after KEY: options go before KEY, everything after KEY is the command "
                   "(redlock [OPTIONS] run [OPTIONS] KEY COMMAND...)\n";
      return kUsage;
    }
    value = inline_value ? word.substr(eq + 1) : cmd[1];
    cmd.erase(cmd.begin(), cmd.begin() + (inline_value ? 1 : 2));
    if (name == "--wait" || name == "-w") {
      o.wait = value;
    } else if (name == "--kill-after") {
      o.kill_after = value;
    } else {
      try {
        std::size_t used = 0;
        o.conflict_exit_code = std::stoi(value, &used);
        if (used != value.size()) throw std::invalid_argument(value);
      } catch (const std::exception&) {
        std::cerr << "redlock: run: " << name << ": '" << value << "' is not a number\n";
        return kUsage;
      }
    }
    moved.push_back(name);
  }
  if (!cmd.empty() && cmd.front() == "--") cmd.erase(cmd.begin());
  if (!moved.empty()) {
    std::string names;
    for (const auto& n : moved) names += (names.empty() ? "" : ", ") + n;
    diag(g, "warning: " + names +
                " after KEY taken as an option of run, as in earlier versions; put the options "
                "of run before KEY: everything after KEY is the command");
  }
  if (cmd.empty()) {
    std::cerr << "redlock: run: no command after KEY\n";
    return kUsage;
  }
  return kOk;
}

}  // namespace

int main(int argc, char** argv) {
  // A closed stdout or stderr (`redlock … | head -1`) makes our writes fail with EPIPE instead
  // of killing redlock, which must outlive its output to stop and release what it holds.
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGPIPE, &ignore, &g_inherited_sigpipe);
  ::pthread_sigmask(SIG_SETMASK, nullptr, &g_inherited_mask);
  note_ignored_signals();
  // A closed stdin, stdout or stderr gets /dev/null, so that no socket or pipe of ours takes
  // its number and receives what is meant for the terminal. A closed stdout is remembered:
  // `acquire` must not hand its token to /dev/null.
  for (int fd = 0; fd <= 2; ++fd)
    if (::fcntl(fd, F_GETFD) < 0 && errno == EBADF) {
      if (fd == STDOUT_FILENO) g_stdout_was_closed = true;
      ::open("/dev/null", O_RDWR);
    }

  CLI::App app{"redlock: a distributed lock over N independent Redis masters (Redlock)"};
  app.fallthrough();  // global options are accepted after the verb as well
  app.require_subcommand(1);
  app.set_version_flag("-V,--version", std::string("redlock ") + REDLOCK_CLI_VERSION);
  app.footer(
      "Durations: a whole number with a unit, 500ms, 30s, 2m, 1h; a plain number is "
      "milliseconds.\nExit codes: 0 ok, 1 not acquired / not held, 2 usage, configuration or "
      "stdout error, 3 no quorum, 4 run: lock lost, 5 status: a node refused.\n");
  Globals g;
  app.add_option("--nodes", g.nodes, "redis[s]://[user:password@]host:port[/db],...")
      ->envname("REDLOCK_NODES");
  app.add_option("--ttl", g.ttl,
                 "lease: acquire and extend 10s by default; run 30s by default, renewed every "
                 "third of it");
  app.add_option("--restart-guard", g.restart_guard,
                 "nodes up for less than this (or the ttl, if larger) do not vote (default 0: off)")
      ->envname("REDLOCK_RESTART_GUARD");
  app.add_option("--prefix", g.prefix, "key prefix (default 'redlock:')");
  app.add_option("--connect-timeout", g.connect_timeout, "per node (default 1s)");
  app.add_option("--request-timeout", g.request_timeout, "per request (default 200ms)");
  app.add_option("--retry-count", g.retry_count,
                 "acquire without --wait: 1 + this many attempts (default 3; run: unused)");
  app.add_option("--retry-delay", g.retry_delay, "between attempts (default 200ms)");
  app.add_option("--retry-jitter", g.retry_jitter, "random extra delay, up to (default 100ms)");
  app.add_option("--drift-factor", g.drift_factor, "clock drift allowance (default 0.01)");
  app.add_flag("-q,--quiet", g.quiet, "no diagnostics on stderr, except errors");
  app.add_flag("--no-persistence-warning", g.no_persistence_warning,
               "do not warn about nodes whose persistence can forget a lock (AOF off, "
               "appendfsync not always)")
      ->envname("REDLOCK_NO_PERSISTENCE_WARNING");
  // TLS, as in `redis-cli --tls`; each also from an environment variable.
  app.add_flag("--tls", g.tls, "TLS to every node, as if each were rediss://")
      ->envname("REDLOCK_TLS");
  app.add_option("--cacert", g.tls_options.ca_file, "trusted CA certificates (PEM file)")
      ->envname("REDLOCK_TLS_CACERT");
  app.add_option("--cacertdir", g.tls_options.ca_dir, "directory of trusted CA certificates")
      ->envname("REDLOCK_TLS_CACERTDIR");
  app.add_option("--cert", g.tls_options.cert_file, "client certificate (PEM), with --key")
      ->envname("REDLOCK_TLS_CERT");
  app.add_option("--key", g.tls_options.key_file, "client private key (PEM), with --cert")
      ->envname("REDLOCK_TLS_KEY");
  app.add_option("--sni", g.tls_options.server_name,
                 "server name to send and to check the certificate against (default: the host)")
      ->envname("REDLOCK_TLS_SNI");
  app.add_flag("--insecure", g.tls_options.insecure_skip_verify,
               "DANGER: do not verify the servers' certificates (anyone can impersonate them)")
      ->envname("REDLOCK_TLS_INSECURE");

  std::string key, token;
  std::optional<std::string> wait;
  auto* acquire = app.add_subcommand(
      "acquire", "acquire KEY for --ttl (default 10s); prints the token on stdout");
  acquire->add_option("KEY", key, "resource name")->required();
  acquire->add_option("-w,--wait", wait,
                      "keep trying this long (0: one attempt; default: 1 + --retry-count "
                      "attempts, 4 by default)");
  bool fencing = false;
  acquire->add_flag("--fencing", fencing,
                    "also print the grant's fencing token, after the token on the same line");
  auto* extend =
      app.add_subcommand("extend",
                         "extend KEY held with TOKEN to a lease of --ttl from now (default 10s); a "
                         "longer lease the nodes hold is kept, never shortened");
  extend->add_option("KEY", key, "resource name")->required();
  extend->add_option("TOKEN", token, "token printed by acquire")->required();
  auto* release = app.add_subcommand("release", "release KEY held with TOKEN");
  release->add_option("KEY", key, "resource name")->required();
  release->add_option("TOKEN", token, "token printed by acquire")->required();
  auto* status = app.add_subcommand(
      "status",
      "reachability, round trip and version per node; exit 3 without a quorum, 5 "
      "when a node is refused");
  bool status_json = false, strict = false;
  status->add_flag("--json", status_json, "one JSON object on stdout");
  status->add_flag("--strict", strict, "exit 5 also when a node's persistence can forget a lock");
  auto* show = app.add_subcommand(
      "show",
      "each node's view of KEY: holder (by name, never the token), ttl, waiters, turn, "
      "fence");
  show->add_option("KEY", key, "resource name")->required();
  bool show_json = false;
  show->add_flag("--json", show_json, "one JSON object on stdout");
  RunOptions run_options;
  auto* run = app.add_subcommand(
      "run",
      "run COMMAND while holding KEY, like flock(1): lease --ttl (default 30s here), "
      "renewed every third of it. Everything after KEY is the command, with or without "
      "--; options of run go before KEY");
  run->positionals_at_end();  // after KEY, everything is the command's
  run->add_option("-w,--wait", run_options.wait,
                  "wait this long for the lock (default 0: one attempt)");
  run->add_option("-E,--conflict-exit-code", run_options.conflict_exit_code,
                  "exit code when the lock is held by another (default 1)");
  run->add_option("--kill-after", run_options.kill_after,
                  "SIGKILL the command's process group this long after SIGTERM (default 5s)");
  run->add_option("KEY", key, "resource name")->required();
  run->add_option("COMMAND", run_options.command, "the command and its arguments")->required();

  for (auto* option :
       {app.get_option("--ttl"), app.get_option("--restart-guard"),
        app.get_option("--connect-timeout"), app.get_option("--request-timeout"),
        app.get_option("--retry-delay"), app.get_option("--retry-jitter"),
        acquire->get_option("--wait"), run->get_option("--wait"), run->get_option("--kill-after")})
    option->type_name("DURATION");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // A word where the verb should be that is none: name it, rather than "a subcommand is
    // required".
    if (app.get_subcommands().empty()) {
      for (const auto& word : app.remaining()) {
        if (word.empty() || word[0] == '-') continue;
        std::cerr << "redlock: unknown verb '" << word
                  << "' (verbs: acquire, extend, release, status, show, run; see --help)\n";
        return kUsage;
      }
    }
    app.exit(e);
    return kUsage;
  }
  if (run->parsed()) {
    if (int code = take_legacy_run_options(g, run_options); code != kOk) return code;
  }

  try {
    std::optional<Milliseconds> acquire_wait = duration_of("--wait", wait);
    if (run->parsed()) {
      run_options.wait_ms =
          duration_of("--wait", run_options.wait).value_or(Milliseconds(0)).count();
      if (auto d = duration_of("--kill-after", run_options.kill_after)) {
        if (d->count() < 0) usage_error("--kill-after: must not be negative");
        run_options.kill_after_ms = d->count();
      }
      sigset_t signals = run_signals();
      sigaddset(&signals, SIGTTOU);  // taking the terminal back from the command's group
      // An ignored SIGCHLD would have the kernel reap the command: we could not see it exit.
      struct sigaction chld_default {};
      chld_default.sa_handler = SIG_DFL;
      ::sigaction(SIGCHLD, &chld_default, &g_inherited_sigchld);
      ::pthread_sigmask(SIG_BLOCK, &signals, nullptr);  // before the loop thread exists
      note_inherited_fds();                             // before the client opens any
    }
    g.warnings_in_table = status->parsed();
    auto config = make_config(g);
    if (show->parsed()) {
      std::string message;
      if (redlock::validate(config, message)) usage_error(message);
      return do_show(g, config, key, show_json);
    }
    redlock::Client client(config);
    if (run->parsed()) return do_run(g, client, key, run_options);
    if (acquire->parsed()) return do_acquire(g, client, key, acquire_wait, fencing);
    if (extend->parsed()) return do_extend(g, client, key, token);
    if (release->parsed()) return do_release(g, client, key, token);
    if (status->parsed()) return do_status(g, client, status_json, strict);
  } catch (const redlock::Error& e) {
    std::cerr << "redlock: " << e.what() << '\n';
    return kUsage;
  } catch (const std::exception& e) {
    std::cerr << "redlock: " << e.what() << '\n';
    return kNoQuorum;
  }
  return kUsage;
}
