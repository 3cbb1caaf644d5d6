#include "driver.hpp"

#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace redlock::chaos {

using Steady = std::chrono::steady_clock;
using namespace std::chrono_literals;

const char* to_string(Fault verb) {
  switch (verb) {
    case Fault::kill:
      return "kill";
    case Fault::pause:
      return "pause";
    case Fault::resume:
      return "resume";
    case Fault::restart:
      return "restart";
  }
  return "?";
}

// ---------------------------------------------------------------------------------------------
// LocalDriver

bool LocalDriver::apply(Fault verb, std::size_t i, std::string& why) {
  if (i >= nodes_.size()) {
    why = "no node " + std::to_string(i);
    return false;
  }
  auto& node = *nodes_[i];
  try {
    switch (verb) {
      case Fault::kill:
        node.kill9();
        return true;
      case Fault::pause:
        node.pause();
        return true;
      case Fault::resume:
        node.resume();
        return true;
      case Fault::restart:
        node.restart();
        return true;
    }
  } catch (const std::exception& e) {
    why = e.what();
  }
  return false;
}

std::string LocalDriver::how(Fault verb) const {
  switch (verb) {
    case Fault::kill:
      return "kill -9";
    case Fault::pause:
      return "SIGSTOP";
    case Fault::resume:
      return "SIGCONT";
    case Fault::restart:
      return "started again on its port";
  }
  return "?";
}

// ---------------------------------------------------------------------------------------------
// CommandDriver

CommandDriver::CommandDriver(std::string program, std::vector<std::string> urls,
                             std::string log_path, std::chrono::milliseconds limit)
    : program_(std::move(program)),
      urls_(std::move(urls)),
      log_path_(std::move(log_path)),
      limit_(limit) {}

std::string CommandDriver::how(Fault verb) const { return program_ + " " + to_string(verb); }

bool CommandDriver::apply(Fault verb, std::size_t i, std::string& why) {
  if (i >= urls_.size()) {
    why = "no node " + std::to_string(i);
    return false;
  }
  std::vector<std::string> args = {program_, to_string(verb), std::to_string(i)};
  // The environment is built before fork: the child only execs.
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string entry = *e;
    bool ours = entry.rfind("REDLOCK_CHAOS_NODE=", 0) == 0 ||
                entry.rfind("REDLOCK_CHAOS_NODE_COUNT=", 0) == 0;
    if (!ours) env_strings.push_back(std::move(entry));
  }
  env_strings.push_back("REDLOCK_CHAOS_NODE=" + urls_[i]);
  env_strings.push_back("REDLOCK_CHAOS_NODE_COUNT=" + std::to_string(urls_.size()));
  std::vector<char*> argv, envp;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);

  int log = ::open(log_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log >= 0) {
    std::string head = "== " + program_ + " " + args[1] + " " + args[2] + "\n";
    (void)!::write(log, head.data(), head.size());
  }
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) {
    if (log >= 0) ::close(log);
    why = "fork failed";
    return false;
  }
  if (pid == 0) {
    // A group of its own: a driver that hangs is ended with everything it started meanwhile.
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    ::signal(SIGPIPE, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, 0);
    if (log >= 0) {
      ::dup2(log, 1);
      ::dup2(log, 2);
    }
    ::execve(argv[0], argv.data(), envp.data());
    std::fprintf(stderr, "cannot run %s: %s\n", argv[0], std::strerror(errno));
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // also here: no race with the child's own call
  if (log >= 0) ::close(log);

  auto end = Steady::now() + limit_;
  int status = 0;
  for (;;) {
    pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (r < 0 && errno != EINTR) {
      why = std::string("waitpid: ") + std::strerror(errno);
      return false;
    }
    if (Steady::now() >= end) {
      ::kill(-pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      why = "`" + program_ + " " + args[1] + " " + args[2] + "` took longer than " +
            std::to_string(limit_.count()) + " ms (killed)";
      return false;
    }
    std::this_thread::sleep_for(5ms);
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return true;
  why = "`" + program_ + " " + args[1] + " " + args[2] + "` " +
        (WIFEXITED(status) ? "exited with status " + std::to_string(WEXITSTATUS(status))
                           : "died of signal " + std::to_string(WTERMSIG(status))) +
        " (see driver.log)";
  return false;
}

// ---------------------------------------------------------------------------------------------
// node_command

namespace {

std::string reply_text(const redisReply* r) {
  if (r == nullptr) return "(no reply)";
  switch (r->type) {
    case REDIS_REPLY_STRING:
    case REDIS_REPLY_STATUS:
      return std::string(r->str, r->len);
    case REDIS_REPLY_INTEGER:
      return std::to_string(r->integer);
    case REDIS_REPLY_NIL:
      return "(nil)";
    case REDIS_REPLY_ERROR:
      return "(error) " + std::string(r->str, r->len);
    case REDIS_REPLY_ARRAY: {
      std::string s;
      for (std::size_t i = 0; i < r->elements; ++i)
        s += (i ? "\n" : "") + reply_text(r->element[i]);
      return s;
    }
  }
  return "(unknown)";
}

// One command; "(io error) ..." when the connection failed meanwhile.
std::string run(redisContext* c, const std::vector<std::string>& argv) {
  std::vector<const char*> ptrs;
  std::vector<std::size_t> lens;
  for (const auto& a : argv) {
    ptrs.push_back(a.data());
    lens.push_back(a.size());
  }
  auto* r = static_cast<redisReply*>(
      redisCommandArgv(c, static_cast<int>(argv.size()), ptrs.data(), lens.data()));
  std::string text = r ? reply_text(r) : "(io error) " + std::string(c->errstr);
  if (r) freeReplyObject(r);
  return text;
}

}  // namespace

std::string node_command(const NodeAddress& node, const std::vector<std::string>& argv,
                         std::chrono::milliseconds limit) {
  timeval tv{static_cast<time_t>(limit.count() / 1000),
             static_cast<suseconds_t>((limit.count() % 1000) * 1000)};
  redisContext* c = redisConnectWithTimeout(node.host.c_str(), node.port, tv);
  if (c == nullptr || c->err) {
    std::string e = c ? c->errstr : "out of memory";
    if (c) redisFree(c);
    return "(connect error) " + e;
  }
  if (node.tls) {
    redisFree(c);
    return "(tls)";
  }
  redisSetTimeout(c, tv);
  std::string text;
  if (!node.password.empty()) {
    text = node.user.empty() ? run(c, {"AUTH", node.password})
                             : run(c, {"AUTH", node.user, node.password});
    if (text != "OK") {
      redisFree(c);
      return text.rfind("(", 0) == 0 ? text : "(error) AUTH: " + text;
    }
  }
  if (node.db != 0) {
    text = run(c, {"SELECT", std::to_string(node.db)});
    if (text != "OK") {
      redisFree(c);
      return text.rfind("(", 0) == 0 ? text : "(error) SELECT: " + text;
    }
  }
  text = run(c, argv);
  redisFree(c);
  return text;
}

}  // namespace redlock::chaos
