#include "harness.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <set>
#include <sstream>
#include <thread>

#include "record.hpp"

namespace redlock::chaos {

namespace fs = std::filesystem;
using Steady = std::chrono::steady_clock;
using namespace std::chrono_literals;

const char* to_string(Tool tool) {
  switch (tool) {
    case Tool::netns_nft:
      return "nftables in a private network namespace";
    case Tool::proxy:
      return "fault proxy";
    case Tool::clock_shim:
      return "clock shim";
    case Tool::fsync_nodes:
      return "nodes with appendfsync always";
  }
  return "?";
}

const char* to_string(Expect e) {
  switch (e) {
    case Expect::safe:
      return "safe";
    case Expect::caught:
      return "caught";
    case Expect::actual_only:
      return "actual-only";
  }
  return "?";
}

// ---------------------------------------------------------------------------------------------
// Child

Child::Child(const std::vector<std::string>& argv, const std::string& log_path, bool pipes) {
  int in_pipe[2] = {-1, -1}, out_pipe[2] = {-1, -1};
  if (pipes && (::pipe2(in_pipe, O_CLOEXEC) != 0 || ::pipe2(out_pipe, O_CLOEXEC) != 0))
    throw std::runtime_error("pipe failed");
  std::vector<std::string> copy = argv;
  std::vector<char*> args;
  for (auto& a : copy) args.push_back(a.data());
  args.push_back(nullptr);
  pid_t parent = ::getpid();
  pid_ = ::fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    // The runner ignores SIGPIPE; its children must not inherit that, or a library that lets a
    // socket raise SIGPIPE would go unnoticed.
    ::signal(SIGPIPE, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    int log = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (pipes) {
      ::dup2(in_pipe[0], 0);
      ::dup2(out_pipe[1], 1);
    } else {
      int devnull = ::open("/dev/null", O_RDONLY);
      if (devnull >= 0) ::dup2(devnull, 0);
      if (log >= 0) ::dup2(log, 1);
    }
    if (log >= 0) ::dup2(log, 2);
    ::execv(args[0], args.data());
    std::fprintf(stderr, "cannot run %s: %s\n", args[0], std::strerror(errno));
    ::_exit(127);
  }
  if (pipes) {
    ::close(in_pipe[0]);
    ::close(out_pipe[1]);
    in_ = in_pipe[1];
    out_ = out_pipe[0];
  }
}

Child::~Child() {
  if (!done_ && pid_ > 0) kill_now();
  if (in_ >= 0) ::close(in_);
  if (out_ >= 0) ::close(out_);
}

bool Child::running() {
  if (done_) return false;
  int st = 0;
  pid_t r = ::waitpid(pid_, &st, WNOHANG);
  if (r == pid_) {
    done_ = true;
    status_ = st;
    return false;
  }
  return true;
}

bool Child::wait(Ms limit) {
  auto end = Steady::now() + limit;
  while (running()) {
    if (Steady::now() >= end) return false;
    std::this_thread::sleep_for(2ms);
  }
  return true;
}

void Child::kill_now() {
  if (done_ || pid_ <= 0) return;
  killed_ = true;
  ::kill(pid_, SIGCONT);
  ::kill(pid_, SIGKILL);
  int st = 0;
  ::waitpid(pid_, &st, 0);
  done_ = true;
  status_ = st;
}

bool Child::send(const std::string& line) {
  if (in_ < 0) return false;
  return write_all(in_, line + "\n");
}

std::optional<std::string> Child::read_line(Ms limit) {
  auto end = Steady::now() + limit;
  for (;;) {
    auto nl = buffer_.find('\n');
    if (nl != std::string::npos) {
      auto line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      return line;
    }
    if (out_ < 0) return std::nullopt;
    auto left = std::chrono::duration_cast<Ms>(end - Steady::now()).count();
    if (left <= 0) return std::nullopt;
    pollfd p{out_, POLLIN, 0};
    int r = ::poll(&p, 1, static_cast<int>(std::min<long>(left, 100)));
    if (r < 0 && errno != EINTR) return std::nullopt;
    if (r <= 0) continue;
    char buf[4096];
    ssize_t n = ::read(out_, buf, sizeof buf);
    if (n <= 0) {
      ::close(out_);
      out_ = -1;
      continue;
    }
    buffer_.append(buf, static_cast<std::size_t>(n));
  }
}

// ---------------------------------------------------------------------------------------------
// Control

std::string Control::call(const std::string& command, Ms limit) {
  send(command);
  return reply(limit);
}

void Control::send(const std::string& command) { child_->send(command); }

std::string Control::reply(Ms limit) {
  auto line = child_->read_line(limit);
  return line ? *line : std::string();
}

// ---------------------------------------------------------------------------------------------
// Run

Run::Run(const Settings& settings, std::string name, Expect expect)
    : settings_(settings), t0_ns_(raw_now_ns()), started_(Steady::now()) {
  outcome_.name = std::move(name);
  outcome_.expect = expect;
  dir_ = settings_.out_dir + "/" + outcome_.name;
  std::error_code ec;
  fs::remove_all(dir_, ec);
  fs::create_directories(dir_);
  log_fd_ = ::open((dir_ + "/events.log").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  storage_ = std::make_unique<test::RedisServer>();
  event("storage redis-server on port " + std::to_string(storage_->port()));
}

Run::~Run() {
  controls_.clear();
  children_.clear();
  if (settings_.on_deployment()) {
    try {
      restore();  // when finish() did not run
    } catch (const std::exception& e) {
      std::fprintf(stderr, "redlock_chaos: %s: cannot restore the nodes: %s\n",
                   outcome_.name.c_str(), e.what());
    }
  } else {
    for (std::size_t i = 0; i < nodes_.size(); ++i)
      if (paused_[i]) nodes_[i]->resume();
  }
  nodes_.clear();
  storage_.reset();
  if (log_fd_ >= 0) ::close(log_fd_);
}

std::uint16_t Run::storage_port() const { return storage_->port(); }

void Run::start_nodes(std::size_t n, bool persistent,
                      std::vector<std::vector<std::string>> env_per_node) {
  if (count_ != 0) throw std::runtime_error("start_nodes twice");
  if (settings_.on_deployment()) {
    const auto& urls = settings_.deployment_urls;
    if (n != urls.size() || !env_per_node.empty())
      throw std::runtime_error("this scenario needs nodes of its own, not a deployment's");
    for (std::size_t i = 0; i < n; ++i) {
      auto pong = node_command(settings_.deployment.at(i), {"PING"});
      if (pong != "PONG" && pong != "(tls)")
        throw std::runtime_error("node " + std::to_string(i) + " (" +
                                 settings_.deployment[i].to_string() +
                                 ") does not answer PING: " + pong);
    }
    count_ = n;
    paused_.assign(n, false);
    down_.assign(n, false);
    driver_ = std::make_unique<CommandDriver>(settings_.driver, urls, dir_ + "/driver.log",
                                              settings_.driver_timeout);
    std::string list;
    for (const auto& node : settings_.deployment) list += " " + node.to_string();
    event(std::to_string(n) + " nodes of the deployment:" + list + "; faults through " +
          settings_.driver + (persistent ? "; persistence as deployed" : ""));
    for (std::size_t i = 0; i < n; ++i)
      if (settings_.deployment[i].tls)
        note("node " + std::to_string(i) +
             " speaks TLS only: the runner cannot look at its keys (no ghost or leak check "
             "there) nor see it go down or come back");
    return;
  }
  std::vector<std::string> args;
  if (persistent) args = {"--appendonly", "yes", "--appendfsync", "always"};
  for (std::size_t i = 0; i < n; ++i) {
    std::vector<std::string> env =
        i < env_per_node.size() ? env_per_node[i] : std::vector<std::string>{};
    if (settings_.tls != nullptr)
      nodes_.push_back(
          std::make_unique<test::RedisServer>(test::TlsMode::of(*settings_.tls), args, env));
    else
      nodes_.push_back(std::make_unique<test::RedisServer>(args, std::string(), env));
    paused_.push_back(false);
    down_.push_back(false);
  }
  count_ = nodes_.size();
  driver_ = std::make_unique<LocalDriver>(nodes_);
  std::string ports;
  for (std::size_t i = 0; i < nodes_.size(); ++i) ports += " " + std::to_string(client_port(i));
  event(std::to_string(n) + " nodes" + (persistent ? " (appendfsync always)" : "") +
        (settings_.tls != nullptr ? " (TLS)" : "") + " on ports" + ports);
}

test::RedisServer& Run::node(std::size_t i) {
  if (settings_.on_deployment()) throw std::runtime_error("a deployment's nodes are not ours");
  return *nodes_.at(i);
}

std::uint16_t Run::client_port(std::size_t i) const {
  if (settings_.on_deployment()) throw std::runtime_error("a deployment's nodes are not ours");
  return settings_.tls != nullptr ? nodes_.at(i)->tls_port() : nodes_.at(i)->port();
}

std::string Run::node_list(const std::vector<std::uint16_t>& ports) const {
  std::string s;
  if (settings_.on_deployment()) {
    if (!ports.empty()) throw std::runtime_error("a deployment's nodes are not ours");
    for (const auto& url : settings_.deployment_urls) s += (s.empty() ? "" : ",") + url;
    return s;
  }
  std::size_t n = ports.empty() ? nodes_.size() : ports.size();
  for (std::size_t i = 0; i < n; ++i) {
    if (!s.empty()) s += ",";
    s += settings_.tls != nullptr ? "rediss://127.0.0.1:" : "redis://127.0.0.1:";
    s += std::to_string(ports.empty() ? client_port(i) : ports[i]);
  }
  return s;
}

void Run::crash(std::size_t i) { apply(Fault::kill, i); }
void Run::restart(std::size_t i) { apply(Fault::restart, i); }
void Run::pause(std::size_t i) { apply(Fault::pause, i); }
void Run::resume(std::size_t i) { apply(Fault::resume, i); }

void Run::apply(Fault verb, std::size_t i) {
  static const char* const done[] = {"crashed", "paused", "resumed", "restarted"};
  std::string name = "node " + std::to_string(i);
  if (!driver_ || i >= count_) throw std::runtime_error("no " + name);
  last_fault_ = Steady::now();
  std::string why;
  bool ok = driver_->apply(verb, i, why);
  // A driver command may take a while: a lock command held back by the fault can run until it
  // returns, and the leak check counts from there.
  last_fault_ = Steady::now();
  if (!ok) {
    check(false, name + ": " + to_string(verb) + " failed: " + why);
    return;
  }
  event(name + " " + done[static_cast<int>(verb)] + " (" + driver_->how(verb) + ")");
  paused_.at(i) = verb == Fault::pause;
  if (verb == Fault::kill) down_.at(i) = true;
  if (verb == Fault::restart) down_.at(i) = false;
  if (!settings_.on_deployment()) return;
  // The runner's own processes are known by their pids; a deployment's node is judged by what
  // it answers. A killed node must stop answering (an orchestrator that restarts it at once, and
  // empty, changes the scenario); a restarted one must answer again (a node still loading its
  // AOF answers LOADING), each within a bound.
  const auto& node = settings_.deployment.at(i);
  // A TLS node cannot be asked (the runner speaks no TLS), and an open port proves nothing: a
  // userland proxy in front of a container (docker-proxy) keeps it open while the node is down.
  if (node.tls) return;
  if (verb == Fault::kill) {
    auto end = Steady::now() + 10s;
    std::string reply;
    while ((reply = node_command(node, {"PING"}, 500ms)) == "PONG") {
      if (Steady::now() >= end) {
        check(false, name + " still answers 10 s after the driver killed it");
        return;
      }
      std::this_thread::sleep_for(50ms);
    }
  } else if (verb == Fault::restart) {
    auto end = Steady::now() + 60s;
    std::string reply;
    while ((reply = node_command(node, {"PING"}, 1000ms)) != "PONG") {
      if (Steady::now() >= end) {
        check(false, name + " does not answer 60 s after the driver restarted it: " + reply);
        return;
      }
      std::this_thread::sleep_for(50ms);
    }
    event(name + " answers again");
  }
}

void Run::restore() {
  if (!settings_.on_deployment() || !driver_) return;
  for (std::size_t i = 0; i < count_; ++i) {
    if (paused_[i]) resume(i);
    if (down_[i]) restart(i);
  }
}

std::string Run::node_text(std::size_t i, const std::vector<std::string>& argv) const {
  if (settings_.on_deployment()) return node_command(settings_.deployment.at(i), argv);
  return nodes_.at(i)->command(argv);
}

std::vector<std::string> Run::lock_keys(std::size_t i) {
  if (i >= count_ || down_[i] || paused_[i]) return {};
  if (!settings_.on_deployment() && !nodes_.at(i)->running()) return {};
  // A deployment may hold other locks: only the suite's resource (and its auxiliary keys) there.
  auto text = node_text(i, {"KEYS", settings_.on_deployment() ? "redlock:chaos*" : "redlock:*"});
  if (text.empty() || text.rfind("(", 0) == 0) return {};  // none, or an error
  std::vector<std::string> keys;
  for (std::size_t pos = 0; pos <= text.size();) {
    auto nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    auto key = text.substr(pos, nl - pos);
    // Fence counters live without a ttl by design, and waiters' lines (queue, turns, others)
    // are no locks either: named {lock key}:kind, or {lock key}\0kind (lib/core/keys.hpp). A
    // semaphore's slots ({lock key}\0{{lock key}}slot<i>) and its k (...permits) are: each has
    // a ttl, and one that outlives every ttl is a leak.
    auto ends = [&](const char* tail) {
      std::size_t n = std::char_traits<char>::length(tail);
      return key.size() >= n && key.compare(key.size() - n, n, tail) == 0;
    };
    auto nul = key.find('\0');
    bool semaphore = false;
    if (nul != std::string::npos) {
      auto close = key.rfind('}');
      auto kind = key.substr(close != std::string::npos && close > nul ? close + 1 : nul + 1);
      // A read-write lock's readers (...readers) too: a sorted set with a ttl.
      semaphore = kind == "permits" || kind == "readers" ||
                  (kind.size() > 4 && kind.compare(0, 4, "slot") == 0 &&
                   kind.find_first_not_of("0123456789", 4) == std::string::npos);
    }
    bool other = ends(":fence") || ends(":queue") || ends(":turns") || ends(":others") ||
                 (nul != std::string::npos && !semaphore);
    if (settings_.on_deployment() && key != "redlock:chaos") other = true;
    if (nl > pos && !other) keys.push_back(key);
    pos = nl + 1;
  }
  return keys;
}

void Run::network_healed() {
  healed_ = Steady::now();
  event("network healed");
}

std::vector<std::string> Run::worker_args(const std::string& id, const WorkerSpec& spec) const {
  std::vector<std::string> a = {settings_.worker_path,
                                "--id",
                                id,
                                "--mode",
                                spec.mode,
                                "--nodes",
                                spec.nodes.empty() ? node_list() : spec.nodes,
                                "--storage",
                                std::to_string(storage_port()),
                                "--out",
                                records_path(id),
                                "--resource",
                                spec.resource,
                                "--ttl",
                                std::to_string(spec.ttl),
                                "--wait",
                                std::to_string(spec.wait),
                                "--hold",
                                std::to_string(spec.hold),
                                "--hold-jitter",
                                std::to_string(spec.hold_jitter),
                                "--duration",
                                std::to_string(spec.duration),
                                "--request-timeout",
                                std::to_string(spec.request_timeout),
                                "--connect-timeout",
                                std::to_string(spec.connect_timeout),
                                "--drift",
                                std::to_string(spec.drift)};
  if (spec.max_sections > 0) {
    a.push_back("--max-sections");
    a.push_back(std::to_string(spec.max_sections));
  }
  if (spec.until_deadline) a.push_back("--until-deadline");
  if (spec.extend) a.push_back("--extend");
  if (spec.permits > 0) {
    a.push_back("--permits");
    a.push_back(std::to_string(spec.permits));
  }
  if (spec.mode == "run") {
    a.push_back("--redlock");
    a.push_back(settings_.redlock_path);
  }
  a.insert(a.end(), spec.extra_args.begin(), spec.extra_args.end());
  return a;
}

void Run::spawn(const std::string& id, WorkerSpec spec) {
  use_ttl(spec.ttl);
  auto args = worker_args(id, spec);
  children_.emplace_back(id, std::make_unique<Child>(args, dir_ + "/" + id + ".log", false));
  event("worker " + id + " (" + spec.mode + ", ttl " + std::to_string(spec.ttl) + " ms) pid " +
        std::to_string(children_.back().second->pid()));
}

Control& Run::control(const std::string& id, WorkerSpec spec) {
  spec.mode = "control";
  use_ttl(spec.ttl);
  auto args = worker_args(id, spec);
  auto child = std::make_unique<Child>(args, dir_ + "/" + id + ".log", true);
  event("control worker " + id + " pid " + std::to_string(child->pid()));
  controls_.push_back(std::make_unique<Control>(std::move(child), id));
  return *controls_.back();
}

Child& Run::spawn_process(const std::string& id, const std::vector<std::string>& argv) {
  children_.emplace_back(id, std::make_unique<Child>(argv, dir_ + "/" + id + ".log", false));
  own_status_.push_back(id);
  event("process " + id + " pid " + std::to_string(children_.back().second->pid()));
  return *children_.back().second;
}

void Run::wait_all(Ms limit) {
  for (auto& c : controls_) c->send("quit");
  auto end = Steady::now() + limit;
  auto settle = [&](const std::string& id, Child& c) {
    if (c.exited()) return;
    auto left = std::chrono::duration_cast<Ms>(end - Steady::now());
    if (!c.wait(std::max(left, Ms(0)))) {
      c.kill_now();
      ++outcome_.hung;
      outcome_.problems.push_back(id + " did not finish in time (killed)");
    }
  };
  for (auto& [id, c] : children_) settle(id, *c);
  for (auto& c : controls_) settle(c->id(), c->child());
}

void Run::sleep(Ms d) const { std::this_thread::sleep_for(d); }

double Run::elapsed() const {
  return std::chrono::duration<double>(Steady::now() - started_).count();
}

void Run::event(const std::string& what) {
  char head[32];
  std::snprintf(head, sizeof head, "%8.3f ", elapsed());
  std::string line = head + what + "\n";
  if (log_fd_ >= 0) (void)!::write(log_fd_, line.data(), line.size());
  if (settings_.verbose) std::fprintf(stderr, "  [%s] %s", outcome_.name.c_str(), line.c_str());
}

void Run::check(bool ok, const std::string& what) {
  event(std::string(ok ? "check ok: " : "CHECK FAILED: ") + what);
  if (!ok) outcome_.problems.push_back(what);
}

void Run::note(const std::string& what) {
  event("note: " + what);
  outcome_.notes.push_back(what);
}

void Run::use_ttl(long ttl_ms) { max_ttl_ = std::max(max_ttl_, ttl_ms); }

void Run::allow_actual(const std::string& why) { actual_allowed_ = why; }

void Run::fencing_not_judged(const std::string& why) { fencing_unjudged_ = why; }

namespace {

// Whether a child of ours still runs, without reaping it (its owner does that): a process that
// ended on its own is a zombie until then.
bool still_running(pid_t pid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid));
  FILE* f = std::fopen(path, "r");
  if (!f) return false;
  char buf[512] = {0};
  std::size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  const char* close = std::strrchr(buf, ')');
  return n > 0 && close != nullptr && close[1] == ' ' && close[2] != 'Z' && close[2] != 'X';
}

std::string signal_name(int sig) {
  const char* d = ::sigabbrev_np(sig);
  return d ? std::string("SIG") + d : std::to_string(sig);
}

}  // namespace

Outcome Run::finish() {
  auto& o = outcome_;
  // Servers end only when the scenario kills them: one that ended on its own (a crash under the
  // clock shim, say) would void the scenario.
  for (std::size_t i = 0; i < nodes_.size(); ++i)
    if (nodes_[i]->running() && !still_running(nodes_[i]->pid()))
      o.problems.push_back("node " + std::to_string(i) + " (redis-server) ended by itself");
  if (!still_running(storage_->pid())) o.problems.push_back("the storage redis-server ended");
  wait_all(30s);
  if (settings_.on_deployment()) {
    restore();
  } else {
    for (std::size_t i = 0; i < nodes_.size(); ++i)
      if (paused_[i]) resume(i);
  }
  auto ended = Steady::now();

  // Every process the run started must have exited normally.
  auto judge = [&](const std::string& id, Child& c) {
    if (c.exited() && WIFSIGNALED(c.status()) && !c.killed_by_us()) {
      int sig = WTERMSIG(c.status());
      ++o.signals;
      o.problems.push_back(id + " died of " + signal_name(sig));
    }
    bool judged = std::find(own_status_.begin(), own_status_.end(), id) == own_status_.end();
    if (judged && c.exited() && WIFEXITED(c.status()) && WEXITSTATUS(c.status()) != 0)
      o.problems.push_back(id + " exited with status " + std::to_string(WEXITSTATUS(c.status())) +
                           " (see " + id + ".log)");
  };
  for (auto& [id, c] : children_) judge(id, *c);
  for (auto& c : controls_) judge(c->id(), c->child());

  // Records.
  std::vector<Section> sections;
  // The counters the sections updated: the shared one, and each slot's of a semaphore.
  std::set<std::string> counters = {"chaos:counter"};
  for (const auto& entry : fs::directory_iterator(dir_)) {
    if (entry.path().extension() != ".rec") continue;
    for (const auto& r : read_records(entry.path().string())) {
      if (r.kind == "section") {
        sections.push_back(section_from_record(r));
        if (!r.get("counter").empty()) counters.insert(r.get("counter"));
        o.attempts += r.get_int("attempts");
      } else if (r.kind == "counts") {
        for (const auto& [k, v] : r.fields) {
          if (k == "worker") continue;
          long n = std::atol(v.c_str());
          if (k == "acquired")
            o.acquired += n;
          else if (k.rfind("fail.", 0) == 0)
            o.failures[k.substr(5)] += n;
          else
            o.failures[k] += n;
        }
      } else if (r.kind == "died") {
        ++o.signals;
        o.problems.push_back(r.get("what") + " of " + r.get("worker") + " died of " +
                             signal_name(static_cast<int>(r.get_int("signal"))));
      } else if (r.kind == "hung") {
        ++o.hung;
        o.problems.push_back(r.get("what") + " of " + r.get("worker") + " hung (killed)");
      } else if (r.kind == "error") {
        o.problems.push_back(r.get("worker") + ": " + r.get("what"));
      }
    }
  }
  o.sections = sections.size();

  // Lock keys right after the end (ghosts), then once every ttl has passed (leaks).
  for (std::size_t i = 0; i < count_; ++i) o.ghosts += lock_keys(i).size();
  if (o.ghosts > 0)
    note(std::to_string(o.ghosts) + " lock key(s) on the nodes right after the workers ended");

  // Mutex sections by the mutex's check; permits of a semaphore by the permit check (never more
  // than k open, one holder per slot, one k), whose violations count as overlaps.
  // Readers of a read-write lock by the reader-writer check (no reader beside a writer, and no
  // write seen inside a reader's section); its writers are mutex holders, judged with them.
  std::vector<Section> mutexes;
  std::copy_if(sections.begin(), sections.end(), std::back_inserter(mutexes),
               [](const Section& s) { return !is_permit(s) && !is_reader(s); });
  auto claimed = find_overlaps(mutexes, Mode::claimed);
  auto actual = find_overlaps(mutexes, Mode::actual);
  auto permits_claimed = find_permit_excess(sections, Mode::claimed);
  auto permits_actual = find_permit_excess(sections, Mode::actual);
  auto rw_claimed = find_reader_writer_overlaps(sections, Mode::claimed);
  auto rw_actual = find_reader_writer_overlaps(sections, Mode::actual);
  const auto torn = torn_reads(sections);
  o.claimed = claimed.count + permits_claimed.violations() + rw_claimed.count;
  o.actual = actual.count + permits_actual.violations() + rw_actual.count + torn;
  o.negative_validity = negative_validity(sections);
  // Fencing tokens of a semaphore grow from grant to grant of one slot (grants of different
  // slots may be known in another order than their tokens were drawn), and a read-write lock's
  // from each grant to the next that excludes it (readers together may learn theirs in another
  // order).
  o.fence_violations = rw_fencing_violations(sections);
  o.rejected = static_cast<std::size_t>(
      std::count_if(sections.begin(), sections.end(), [](const Section& s) { return s.rejected; }));
  if (o.rejected > 0)
    note(std::to_string(o.rejected) + " stale write(s) rejected by the storage's fencing check");
  std::int64_t counter = 0;
  for (const auto& key : counters) {
    auto text = storage_->command({"GET", key});
    counter += text == "(nil)" ? 0 : std::atoll(text.c_str());
  }
  o.lost_updates = lost_updates(sections, counter);
  for (const auto& ex : claimed.examples) note("claimed overlap: " + describe(mutexes, ex, t0_ns_));
  if (o.claimed == 0)
    for (const auto& ex : actual.examples) note("actual overlap: " + describe(mutexes, ex, t0_ns_));
  auto permit_notes = [&](const PermitResult& p, const char* mode) {
    for (const auto& ex : p.examples)
      note(std::string(mode) + " permits: " + describe(sections, ex, t0_ns_));
    for (const auto& ex : p.slot_overlaps.examples)
      note(std::string(mode) + " slot overlap: " + describe(sections, ex, t0_ns_));
    if (p.mismatch > 0)
      note(std::string(mode) + ": " + std::to_string(p.mismatch) +
           " grant(s) while a holder with another k held");
    if (p.bad_slot > 0) note(std::to_string(p.bad_slot) + " permit(s) with a slot outside 0..k-1");
  };
  if (std::any_of(sections.begin(), sections.end(), is_reader)) {
    note("read-write lock: at most " + std::to_string(max_readers(sections, Mode::claimed)) +
         " readers at once (claimed), " + std::to_string(max_readers(sections, Mode::actual)) +
         " (actual); " + std::to_string(rw_claimed.count) + " reader-writer overlap(s) claimed, " +
         std::to_string(rw_actual.count) + " actual; " + std::to_string(torn) +
         " reader(s) saw a write inside their section");
    for (const auto& ex : rw_claimed.examples)
      note("claimed reader-writer overlap: " + describe(sections, ex, t0_ns_));
    if (rw_claimed.count == 0)
      for (const auto& ex : rw_actual.examples)
        note("actual reader-writer overlap: " + describe(sections, ex, t0_ns_));
  }
  if (std::any_of(sections.begin(), sections.end(), is_permit)) {
    note("permits: at most " + std::to_string(permits_claimed.max_open) +
         " holders at once (claimed), " + std::to_string(permits_actual.max_open) + " (actual)");
    permit_notes(permits_claimed, "claimed");
    if (permits_claimed.violations() == 0) permit_notes(permits_actual, "actual");
  }

  if (o.actual > 0 && !actual_allowed_.empty())
    note(std::to_string(o.actual) + " actual overlaps allowed: " + actual_allowed_);

  // Once every ttl has passed since the last moment a lock command could still run: the end of
  // the workers, the last fault, or (after a partition) the last retransmission TCP may make.
  auto quiet =
      std::max({ended, last_fault_, healed_ + Ms(healed_ == Steady::time_point{} ? 0 : 3000)});
  auto leak_at = quiet + Ms(max_ttl_ + 300);
  if (Steady::now() < leak_at) std::this_thread::sleep_until(leak_at);
  for (std::size_t i = 0; i < count_; ++i) {
    for (const auto& key : lock_keys(i)) {
      ++o.leaked;
      auto shown = key;  // a semaphore's slot key holds a NUL
      std::replace(shown.begin(), shown.end(), '\0', '|');
      note("leaked: node " + std::to_string(i) + " " + shown + " = " + node_text(i, {"GET", key}) +
           ", pttl " + node_text(i, {"PTTL", key}));
    }
  }

  // Verdict.
  if (o.claimed > 0)
    o.seen = "caught";
  else if (o.actual > 0 && actual_allowed_.empty())
    o.seen = "actual-only";
  else if (o.lost_updates != 0)
    o.seen = "lost-updates";
  else
    o.seen = "safe";
  if (o.seen != to_string(o.expect))
    o.problems.push_back(std::string("expected ") + to_string(o.expect) + ", seen " + o.seen);
  // A writer beside readers shows in the storage as a reader's torn read, not a lost update.
  if (o.expect == Expect::caught && o.claimed > 0 && o.lost_updates <= 0 && torn == 0)
    o.problems.push_back("overlap caught but no lost update (nor a torn read)");
  if (o.expect == Expect::actual_only && o.actual > 0 && o.lost_updates <= 0)
    o.problems.push_back("actual overlap but no lost update");
  if (o.sections == 0) o.problems.push_back("no critical section at all");
  if (o.expect == Expect::safe && o.lost_updates != 0)
    o.problems.push_back(std::to_string(o.lost_updates) + " lost updates");
  if (o.negative_validity > 0)
    o.problems.push_back(std::to_string(o.negative_validity) +
                         " grant(s) with a deadline already passed");
  if (o.leaked > 0) o.problems.push_back(std::to_string(o.leaked) + " leaked key(s)");
  if (o.fence_violations > 0) {
    std::string what =
        std::to_string(o.fence_violations) + " fenced grant(s) whose token did not grow";
    if (o.expect == Expect::caught || !fencing_unjudged_.empty())
      note(what + " (not judged: " +
           (fencing_unjudged_.empty() ? std::string("a negative control") : fencing_unjudged_) +
           ")");
    else
      o.problems.push_back(what);
  }
  o.pass = o.problems.empty();
  o.seconds = elapsed();

  std::ostringstream summary;
  summary << "sections " << o.sections << ", claimed " << o.claimed << ", actual " << o.actual
          << ", lost updates " << o.lost_updates << ", counter " << counter << ", ghosts "
          << o.ghosts << ", leaked " << o.leaked << ": " << (o.pass ? "PASS" : "FAIL");
  event(summary.str());
  for (const auto& p : o.problems) event("problem: " + p);
  return o;
}

// ---------------------------------------------------------------------------------------------
// Report

namespace {

std::string failures_text(const std::map<std::string, long>& f) {
  std::string s;
  for (const auto& [k, n] : f) {
    if (!s.empty()) s += " ";
    s += k + "=" + std::to_string(n);
  }
  return s.empty() ? "-" : s;
}

}  // namespace

std::string report_header() {
  char buf[256];
  std::snprintf(buf, sizeof buf, "%-28s %8s %7s %6s %5s %5s %7s %6s %4s %-11s %-11s %-6s %6s  %s",
                "scenario", "sections", "claimed", "actual", "lost", "fence", "acq", "leaked",
                "sig", "expected", "seen", "result", "time", "failures by kind");
  return buf;
}

std::string report_line(const Outcome& o) {
  char buf[512];
  if (o.skipped) {
    std::snprintf(buf, sizeof buf, "%-28s %-65s %-11s %-11s %-6s %6s  %s", o.name.c_str(), "",
                  to_string(o.expect), "-", "SKIP", "-", o.skip_reason.c_str());
    return buf;
  }
  std::snprintf(
      buf, sizeof buf, "%-28s %8zu %7zu %6zu %5lld %5zu %7ld %6zu %4d %-11s %-11s %-6s %5.1fs  %s",
      o.name.c_str(), o.sections, o.claimed, o.actual, static_cast<long long>(o.lost_updates),
      o.fence_violations, o.acquired, o.leaked, o.signals, to_string(o.expect), o.seen.c_str(),
      o.pass ? "PASS" : "FAIL", o.seconds, failures_text(o.failures).c_str());
  return buf;
}

std::string report_total(const std::vector<Outcome>& outcomes) {
  std::size_t run = 0, passed = 0, skipped = 0, sections = 0, safe_sections = 0, claimed_safe = 0;
  std::size_t negatives = 0, caught = 0;
  int signals = 0;
  double seconds = 0;
  for (const auto& o : outcomes) {
    if (o.skipped) {
      ++skipped;
      continue;
    }
    ++run;
    passed += o.pass;
    sections += o.sections;
    signals += o.signals;
    seconds += o.seconds;
    if (o.expect == Expect::caught) {
      ++negatives;
      caught += o.claimed > 0;
    } else {
      safe_sections += o.sections;
      claimed_safe += o.claimed;
    }
  }
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "total: %zu scenarios run, %zu passed, %zu failed, %zu skipped; %zu critical "
                "sections (%zu in-assumption, %zu claimed overlaps there); negative controls "
                "caught %zu/%zu; %d died of a signal; %.0f s",
                run, passed, run - passed, skipped, sections, safe_sections, claimed_safe, caught,
                negatives, signals, seconds);
  return buf;
}

}  // namespace redlock::chaos
