#include "run.hpp"

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

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <functional>
#include <iostream>
#include <string_view>
#include <thread>
#include <utility>

#include "lock_verbs.hpp"
#include "redlock/election.hpp"

extern char** environ;

namespace redlock::cli {
namespace {

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

// `start(cancel)` (Client::hold, Election::campaign) in a helper thread while this thread takes
// the signals: SIGINT, SIGTERM, SIGHUP or SIGQUIT cancel the wait at once. `*cancelled_by` is
// that signal (0: none); a lock granted as the signal came is returned held, for the caller to
// release.
template <typename Result, typename Start>
Result cancellable(Start&& start, int* cancelled_by) {
  redlock::CancelToken cancel;
  Result held;
  std::atomic<bool> done{false};
  std::thread waiter([&] {
    held = start(cancel);
    done = true;
    ::kill(::getpid(), kHoldDone);
  });
  sigset_t signals = run_signals();
  *cancelled_by = 0;
  while (!done) {  // it ends by itself: --wait, no quorum, or the cancel below
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

void on_lost_signal(std::error_code) { ::kill(::getpid(), kLostSignal); }

long long unix_ms_of(redlock::Clock::time_point t) {
  auto left = t - redlock::Clock::now();
  auto at = std::chrono::system_clock::now() + left;
  return std::chrono::duration_cast<std::chrono::milliseconds>(at.time_since_epoch()).count();
}

// The variables that describe what `run` holds, for the command.
using Vars = std::vector<std::pair<std::string, std::string>>;

Vars lock_variables(const redlock::Client& client, const std::string& key,
                    const redlock::HeldLock& lock) {
  Vars lock_vars = {
      {"REDLOCK_TOKEN", lock.token()},
      {"REDLOCK_RESOURCE", key},
      {"REDLOCK_KEY", client.key_of(key)},
      {"REDLOCK_LEASE_MS", std::to_string(client.config().watchdog_lease.count())},
      {"REDLOCK_VALID_UNTIL_MS", std::to_string(unix_ms_of(lock.valid_until()))},
  };
  // The grant's fencing token (run always asks for one): pass it to the storage the command
  // writes, which rejects writes carrying a lower one.
  lock_vars.emplace_back("REDLOCK_FENCING_TOKEN", std::to_string(lock.fencing_token()));
  // With --permits: the slot the command holds, 0 to K - 1 (a name for its share of the work).
  if (lock.permit() >= 0) lock_vars.emplace_back("REDLOCK_PERMIT", std::to_string(lock.permit()));
  // More variables for the command go here: an inherited variable of the same name is replaced.
  return lock_vars;
}

// The command's environment, built before fork (the child only execs): ours, less
// REDLOCK_NODES, which may carry passwords and is for redlock alone, plus `lock_vars`.
std::vector<std::string> child_environment(const Vars& lock_vars) {
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

// What the command runs under (a held lock, a held office), as run_command sees it.
struct Holding {
  std::string what;  // "lock on 'KEY'", "office 'NAME'"
  std::string name;  // "'KEY'", "office 'NAME'"
  std::function<bool()> valid;
  std::function<std::error_code()> lost_reason;
  std::function<redlock::ReleaseResult()> release;
};

// Runs the command while `lock` is held, then releases it; the exit code of run and elect.
int run_command(const Globals& g, const RunOptions& o, const Vars& vars, Holding& lock);

int exit_status_of(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return kNoQuorum;
}

// Like flock(1) / `etcdctl lock`: acquire (waiting up to --wait), run the command while the
// lock is renewed, release when it exits. A lost lock terminates the command (exit 4).
}  // namespace

int do_run(const Globals& g, redlock::Client& client, const std::string& key, const RunOptions& o) {
  redlock::AcquireRequest req({key});  // no ttl: the watchdog lease (--ttl), renewed
  req.fencing = true;                  // REDLOCK_FENCING_TOKEN: one more round trip, once
  req.permits = o.permits;
  req.shared = o.shared;  // a reader of KEY's read-write lock (docs/guide-rwlock.md)
  if (o.wait_ms) req.wait = redlock::Milliseconds(*o.wait_ms);
  int cancelled_by = 0;
  auto held = cancellable<redlock::HoldResult>(
      [&](const redlock::CancelToken& cancel) {
        req.cancel = cancel;
        return client.hold(std::move(req), on_lost_signal);
      },
      &cancelled_by);
  if (cancelled_by != 0) {
    if (held) (void)held.lock.release();
    say("redlock: waiting for '" + key + "' cancelled by " + signal_name(cancelled_by) +
        "; the command was not started");
    return 128 + cancelled_by;
  }
  if (!held) {
    int code = fail(held, "not acquired '" + key + "'");
    if (held.error == Errc::not_acquired && o.conflict_exit_code) code = *o.conflict_exit_code;
    return code;
  }
  auto& lock = held.lock;
  diag(g, std::string(o.shared ? "acquired a reader's share of '" : "acquired '") + key +
              "', lease " + std::to_string(client.config().watchdog_lease.count()) +
              " ms renewed while the command runs; votes " + held.votes.to_string());
  Holding holding{(o.shared ? "read lock on '" : "lock on '") + key + "'", "'" + key + "'",
                  [&] { return lock.valid(); }, [&] { return lock.lost_flag().reason(); },
                  [&] { return lock.release(); }};
  Vars vars = lock_variables(client, key, lock);
  // With --shared: the command holds a reader's share of KEY; `extend` and `release` read
  // REDLOCK_SHARED as their --shared, so that the command acts on its own share by its token.
  if (o.shared) vars.emplace_back("REDLOCK_SHARED", "1");
  return run_command(g, o, vars, holding);
}

int do_elect(const Globals& g, redlock::Client& client, const std::string& office,
             const std::string& value, const RunOptions& o) {
  redlock::Election election(client);
  redlock::CampaignRequest req;
  req.office = office;
  req.value = value;
  req.ttl = client.config().watchdog_lease;  // renewed every third of it
  req.wait = o.wait_ms ? redlock::Milliseconds(*o.wait_ms) : redlock::forever;
  int cancelled_by = 0;
  auto won = cancellable<redlock::CampaignResult>(
      [&](const redlock::CancelToken& cancel) {
        req.cancel = cancel;
        return election.campaign(std::move(req), on_lost_signal);
      },
      &cancelled_by);
  if (cancelled_by != 0) {
    if (won) (void)won.office.resign();
    say("redlock: campaign for '" + office + "' cancelled by " + signal_name(cancelled_by) +
        "; the command was not started");
    return 128 + cancelled_by;
  }
  if (!won) {
    int code = fail(won, "not elected to '" + office + "'");
    if (won.error == Errc::not_acquired && o.conflict_exit_code) code = *o.conflict_exit_code;
    return code;
  }
  auto& held = won.office;
  diag(g, "elected to '" + office + "', term " + std::to_string(held.term()) + ", lease " +
              std::to_string(client.config().watchdog_lease.count()) +
              " ms renewed while the command runs");
  Vars vars = lock_variables(client, office, held.lock());
  vars.emplace_back("REDLOCK_TERM", std::to_string(held.term()));
  vars.emplace_back("REDLOCK_OFFICE", office);
  Holding holding{"office '" + office + "'", "office '" + office + "'",
                  [&] { return held.valid(); }, [&] { return held.lost_flag().reason(); },
                  [&] { return held.resign(); }};
  return run_command(g, o, vars, holding);
}

namespace {

int run_command(const Globals& g, const RunOptions& o, const Vars& vars, Holding& lock) {
  const std::string& key = lock.name;
  // Everything the child needs is made here: between fork and exec it only makes
  // async-signal-safe calls.
  std::vector<std::string> env = child_environment(vars);
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<char*> argv;
  for (const auto& a : o.command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const std::string cannot_run = "redlock: cannot run '" + printable(o.command[0]) + "': ";

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
      say("redlock: " + lock.what + " lost (" + lock.lost_reason().message() +
          "): terminating the command");
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
    diag(g, "released " + key + ": " + release_summary(r) + "; votes " + r.votes.to_string());
  else if (!lost)
    diag(g, "release of " + key + ": " + r.message());
  return lost ? kLost : exit_status_of(status);
}

}  // namespace

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
      say("redlock: run: '" + word +
          "' after KEY: options go before KEY, everything after KEY is the command "
          "(redlock [OPTIONS] run [OPTIONS] KEY COMMAND...)");
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
        say("redlock: run: " + name + ": '" + value + "' is not a number");
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

void note_startup_signals() {
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGPIPE, &ignore, &g_inherited_sigpipe);
  ::pthread_sigmask(SIG_SETMASK, nullptr, &g_inherited_mask);
  note_ignored_signals();
}

void prepare_run() {
  sigset_t signals = run_signals();
  sigaddset(&signals, SIGTTOU);  // taking the terminal back from the command's group
  // An ignored SIGCHLD would have the kernel reap the command: we could not see it exit.
  struct sigaction chld_default {};
  chld_default.sa_handler = SIG_DFL;
  ::sigaction(SIGCHLD, &chld_default, &g_inherited_sigchld);
  ::pthread_sigmask(SIG_BLOCK, &signals, nullptr);  // before the loop thread exists
  note_inherited_fds();                             // before the client opens any
}

}  // namespace redlock::cli
