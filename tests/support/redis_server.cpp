#include "redis_server.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace redlock::test {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

std::uint16_t free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error("socket() failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ::close(fd);
    throw std::runtime_error("cannot find a free port");
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

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

// Waits for `pid` to exit, up to `limit`; true when reaped.
bool reap(pid_t pid, std::chrono::milliseconds limit) {
  auto end = Clock::now() + limit;
  for (;;) {
    int status = 0;
    pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid || (r < 0 && errno == ECHILD)) return true;
    if (Clock::now() >= end) return false;
    std::this_thread::sleep_for(2ms);
  }
}

// This process's environment with `extra` ("NAME=value") added; an extra entry replaces an
// inherited one of the same name.
std::vector<std::string> merged_environment(const std::vector<std::string>& extra) {
  auto name_of = [](const std::string& entry) { return entry.substr(0, entry.find('=')); };
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string entry = *e;
    bool replaced = false;
    for (const auto& x : extra) replaced = replaced || name_of(x) == name_of(entry);
    if (!replaced) env.push_back(std::move(entry));
  }
  env.insert(env.end(), extra.begin(), extra.end());
  return env;
}

}  // namespace

RedisServer::RedisServer(std::vector<std::string> extra_args, std::string password,
                         std::vector<std::string> env)
    : extra_args_(std::move(extra_args)), password_(std::move(password)), env_(std::move(env)) {
  char tmpl[] = "/tmp/redlock-test-XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) throw std::runtime_error("mkdtemp failed");
  dir_ = tmpl;
  for (int attempt = 0;; ++attempt) {
    port_ = free_port();
    try {
      start();
      return;
    } catch (const std::exception&) {
      if (attempt >= 4) throw;  // the port was taken between probe and bind: try another
    }
  }
}

RedisServer::RedisServer(TlsMode tls, std::vector<std::string> extra_args,
                         std::vector<std::string> env)
    : extra_args_(std::move(extra_args)), env_(std::move(env)), tls_(std::move(tls)) {
  char tmpl[] = "/tmp/redlock-test-XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) throw std::runtime_error("mkdtemp failed");
  dir_ = tmpl;
  for (int attempt = 0;; ++attempt) {
    port_ = free_port();
    do tls_port_ = free_port();
    while (tls_port_ == port_);
    try {
      start();
      return;
    } catch (const std::exception&) {
      if (attempt >= 4) throw;  // a port was taken between probe and bind: try others
    }
  }
}

std::string RedisServer::tls_url(const std::string& host) const {
  return "rediss://" + host + ":" + std::to_string(tls_port_);
}

RedisServer::~RedisServer() {
  try {
    stop();
  } catch (...) {
  }
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

std::string RedisServer::address() const { return "127.0.0.1:" + std::to_string(port_); }
std::string RedisServer::url() const { return "redis://" + address(); }

void RedisServer::start() {
  std::vector<std::string> args = {
      "redis-server", "--port",    std::to_string(port_), "--bind",      "127.0.0.1",
      "--save",       "",          "--appendonly",        "no",          "--dir",
      dir_,           "--logfile", dir_ + "/redis.log",   "--daemonize", "no"};
  if (tls_port_ != 0)
    args.insert(args.end(), {"--tls-port", std::to_string(tls_port_), "--tls-cert-file",
                             tls_.cert_file, "--tls-key-file", tls_.key_file, "--tls-ca-cert-file",
                             tls_.ca_file, "--tls-auth-clients", tls_.auth_clients ? "yes" : "no"});
  args.insert(args.end(), extra_args_.begin(), extra_args_.end());
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_strings = merged_environment(env_);
  std::vector<char*> envp;
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive the test process
    if (::getppid() != parent) ::_exit(127);
    int devnull = ::open("/dev/null", O_RDWR);
    if (devnull >= 0) {
      ::dup2(devnull, 0);
      ::dup2(devnull, 1);
    }
    ::execvpe("redis-server", argv.data(), envp.data());
    ::_exit(127);
  }
  pid_ = pid;
  paused_ = false;
  try {
    wait_ready();
  } catch (...) {
    stop();
    throw;
  }
}

void RedisServer::wait_ready() {
  auto end = Clock::now() + 10s;
  while (Clock::now() < end) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      throw std::runtime_error("redis-server exited at start (port " + std::to_string(port_) + ")");
    }
    if (command({"PING"}) == "PONG") return;
    std::this_thread::sleep_for(5ms);
  }
  throw std::runtime_error("redis-server did not answer within 10 s");
}

void RedisServer::kill9() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  reap(pid_, 5s);
  pid_ = -1;
  paused_ = false;
}

void RedisServer::stop() {
  if (pid_ <= 0) return;
  if (paused_) ::kill(pid_, SIGCONT);
  ::kill(pid_, SIGTERM);
  if (!reap(pid_, 5s)) {
    ::kill(pid_, SIGKILL);
    reap(pid_, 5s);
  }
  pid_ = -1;
  paused_ = false;
}

void RedisServer::pause() {
  if (pid_ > 0 && ::kill(pid_, SIGSTOP) == 0) paused_ = true;
}

void RedisServer::resume() {
  if (pid_ > 0 && ::kill(pid_, SIGCONT) == 0) paused_ = false;
}

void RedisServer::restart() {
  if (pid_ > 0) kill9();
  start();
}

std::string RedisServer::command(const std::vector<std::string>& argv) const {
  timeval tv{2, 0};
  redisContext* c = redisConnectWithTimeout("127.0.0.1", port_, tv);
  if (c == nullptr || c->err) {
    std::string e = c ? c->errstr : "out of memory";
    if (c) redisFree(c);
    return "(connect error) " + e;
  }
  redisSetTimeout(c, tv);
  if (!password_.empty()) {
    auto* a = static_cast<redisReply*>(redisCommand(c, "AUTH %s", password_.c_str()));
    if (a) freeReplyObject(a);
  }
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
  redisFree(c);
  return text;
}

RedisCluster::RedisCluster(std::size_t n, std::vector<std::string> extra_args, std::string password,
                           std::vector<std::vector<std::string>> env_per_node) {
  for (std::size_t i = 0; i < n; ++i)
    servers_.push_back(std::make_unique<RedisServer>(
        extra_args, password,
        i < env_per_node.size() ? env_per_node[i] : std::vector<std::string>{}));
}

RedisCluster::RedisCluster(std::size_t n, const TlsMode& tls, std::vector<std::string> extra_args) {
  for (std::size_t i = 0; i < n; ++i)
    servers_.push_back(std::make_unique<RedisServer>(tls, extra_args));
}

std::string RedisCluster::tls_node_list(const std::string& host) const {
  std::string s;
  for (const auto& srv : servers_) s += (s.empty() ? "" : ",") + srv->tls_url(host);
  return s;
}

std::string RedisCluster::node_list(const std::string& credentials) const {
  std::string s;
  for (const auto& srv : servers_) {
    if (!s.empty()) s += ",";
    s += "redis://" + (credentials.empty() ? "" : credentials + "@") + srv->address();
  }
  return s;
}

std::size_t RedisCluster::count_holding(const std::string& key, const std::string& value) const {
  // A token of ours ends in '.', which a node turns into '!' while somebody waits for the lock
  // (lib/core/token.hpp): the key holds the token in either form.
  std::string marked = value;
  if (!marked.empty() && marked.back() == '.') marked.back() = '!';
  std::size_t n = 0;
  for (const auto& srv : servers_) {
    if (!srv->running()) continue;
    auto held = srv->command({"GET", key});
    if (held == value || held == marked) ++n;
  }
  return n;
}

std::vector<std::string> RedisServer::keys_of_lock(const std::string& lock_key) const {
  std::string keys = command({"KEYS", "*"});
  const std::string aux_prefix = lock_key + std::string(1, '\0');
  std::vector<std::string> found;
  for (std::size_t at = 0; at <= keys.size();) {
    std::size_t end = std::min(keys.find('\n', at), keys.size());
    std::string key = keys.substr(at, end - at);
    at = end + 1;
    if (key == lock_key || key.compare(0, aux_prefix.size(), aux_prefix) == 0)
      found.push_back(std::move(key));
  }
  return found;
}

std::size_t RedisCluster::count_existing(const std::string& key) const {
  std::size_t n = 0;
  for (const auto& srv : servers_)
    if (srv->running() && srv->command({"EXISTS", key}) == "1") ++n;
  return n;
}

Process::Process(const std::vector<std::string>& argv, const std::vector<std::string>& env_extra) {
  int out_pipe[2], err_pipe[2];
  if (::pipe(out_pipe) != 0 || ::pipe(err_pipe) != 0) throw std::runtime_error("pipe failed");
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) env_strings.emplace_back(*e);
  env_strings.insert(env_strings.end(), env_extra.begin(), env_extra.end());
  std::vector<char*> envp, args;
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_copy = argv;
  for (auto& a : argv_copy) args.push_back(a.data());
  args.push_back(nullptr);

  pid_ = ::fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    ::dup2(out_pipe[1], 1);
    ::dup2(err_pipe[1], 2);
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    ::close(out_pipe[1]);
    ::close(err_pipe[1]);
    ::execve(args[0], args.data(), envp.data());
    ::_exit(127);
  }
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  out_ = out_pipe[0];
  err_ = err_pipe[0];
}

Process::~Process() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  if (out_ >= 0) ::close(out_);
  if (err_ >= 0) ::close(err_);
}

void Process::signal(int sig) const {
  if (pid_ > 0) ::kill(pid_, sig);
}

ProcessResult Process::wait(std::chrono::milliseconds limit) {
  ProcessResult result;
  pollfd fds[2] = {{out_, POLLIN, 0}, {err_, POLLIN, 0}};
  std::string* sinks[2] = {&result.out, &result.err};
  int open_fds = 2;
  auto end = Clock::now() + limit;
  while (open_fds > 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - Clock::now());
    if (left.count() <= 0) {
      result.timed_out = true;
      ::kill(pid_, SIGKILL);
      break;
    }
    if (::poll(fds, 2, static_cast<int>(left.count())) < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[4096];
      ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        sinks[i]->append(buf, static_cast<std::size_t>(n));
      } else {
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  int status = 0;
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
  if (!result.timed_out && WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  return result;
}

// The certificates of TlsFiles, by one shell script of openssl commands. EC P-256 keys: quick
// to make. The expired certificate needs `openssl ca` (x509 cannot date a certificate back).
TlsFiles::TlsFiles() {
  char tmpl[] = "/tmp/redlock-tls-XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) throw std::runtime_error("mkdtemp failed");
  dir = tmpl;
  ca_cert = dir + "/ca.crt";
  server_cert = dir + "/server.crt";
  server_key = dir + "/server.key";
  client_cert = dir + "/client.crt";
  client_key = dir + "/client.key";
  expired_cert = dir + "/expired.crt";
  expired_key = dir + "/expired.key";
  other_ca_cert = dir + "/other-ca.crt";
  other_cert = dir + "/other.crt";
  other_key = dir + "/other.key";
  const std::string script = R"(set -e
cd "$1"
key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }
printf 'subjectAltName=IP:127.0.0.1,IP:::1,DNS:localhost\nextendedKeyUsage=serverAuth\n' > server.ext
printf 'extendedKeyUsage=clientAuth\n' > client.ext
for ca in ca other-ca; do
  key $ca.key
  openssl req -x509 -new -key $ca.key -out $ca.crt -days 30 -subj "/CN=redlock test $ca" 2>/dev/null
done
sign() {  # name ca ext
  key $1.key
  openssl req -new -key $1.key -out $1.csr -subj "/CN=redlock test $1" 2>/dev/null
  openssl x509 -req -in $1.csr -CA $2.crt -CAkey $2.key -CAcreateserial -days 30 \
    -extfile $3 -out $1.crt 2>/dev/null
}
sign server ca server.ext
sign client ca client.ext
sign other other-ca server.ext
key expired.key
openssl req -new -key expired.key -out expired.csr -subj "/CN=redlock test expired" 2>/dev/null
mkdir -p ca-db && : > ca-db/index.txt && echo 01 > ca-db/serial
printf '[ca]\ndefault_ca=d\n[d]\ndatabase=ca-db/index.txt\nserial=ca-db/serial\nnew_certs_dir=ca-db\ndefault_md=sha256\npolicy=p\n[p]\ncommonName=supplied\n' > ca.cnf
openssl ca -batch -config ca.cnf -cert ca.crt -keyfile ca.key -in expired.csr -out expired.crt \
  -startdate 20200101000000Z -enddate 20200201000000Z -extfile server.ext -notext 2>/dev/null
)";
  auto r = run_process({"/bin/sh", "-c", script, "sh", dir}, {}, std::chrono::seconds(60));
  if (r.exit_code != 0) {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
    throw std::runtime_error("openssl could not make the test certificates: " + r.err);
  }
}

TlsFiles::~TlsFiles() {
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

ProcessResult run_process(const std::vector<std::string>& argv,
                          const std::vector<std::string>& env_extra,
                          std::chrono::milliseconds limit) {
  Process p(argv, env_extra);
  return p.wait(limit);
}

}  // namespace redlock::test
