// Test support: real redis-server processes on free loopback ports, and a subprocess runner.
//
// Every server runs in its own temporary directory without persistence, is known by its pid,
// and is stopped by that pid only (also if the test process dies: PR_SET_PDEATHSIG).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace redlock::test {

// Certificates for TLS tests, made at test time with the `openssl` command in a temporary
// directory (removed with the object): a CA; a server certificate signed by it for 127.0.0.1,
// ::1 and localhost; a client certificate signed by it; an expired server certificate; and a
// second, untrusted CA with a server certificate of its own for the same names.
struct TlsFiles {
  TlsFiles();  // throws std::runtime_error when openssl fails
  ~TlsFiles();
  TlsFiles(const TlsFiles&) = delete;
  TlsFiles& operator=(const TlsFiles&) = delete;

  std::string dir;
  std::string ca_cert;  // the trusted CA
  std::string server_cert, server_key;
  std::string client_cert, client_key;
  std::string expired_cert, expired_key;  // valid only in 2020, signed by the trusted CA
  std::string other_ca_cert;              // a CA nobody trusts
  std::string other_cert, other_key;      // signed by other_ca_cert, right names
};

// A server's TLS: the certificate it shows, the CA it checks client certificates with, and
// whether it requires one (`tls-auth-clients`).
struct TlsMode {
  // Not an aggregate: a braced list of arguments never converts to a TlsMode.
  explicit TlsMode() = default;

  std::string cert_file;
  std::string key_file;
  std::string ca_file;
  bool auth_clients = false;

  static TlsMode of(const TlsFiles& files, bool auth_clients = false) {
    TlsMode m;
    m.cert_file = files.server_cert;
    m.key_file = files.server_key;
    m.ca_file = files.ca_cert;
    m.auth_clients = auth_clients;
    return m;
  }
};

class RedisServer {
 public:
  // A TLS server: the client's port (tls_port(), tls_url()) speaks TLS only. The fixture's own
  // plain port (port(), command()) stays on the loopback for checks and set-up, and is never
  // given to the client under test.
  RedisServer(TlsMode tls, std::vector<std::string> extra_args = {},
              std::vector<std::string> env = {});

  // Extra arguments go to redis-server's command line, e.g. {"--requirepass", "pw"}; later
  // arguments override earlier ones, so {"--appendonly", "yes"} turns persistence on. `env`
  // entries ("NAME=value") are added to redis-server's environment, replacing inherited ones of
  // the same name (e.g. LD_PRELOAD for a clock shim).
  explicit RedisServer(std::vector<std::string> extra_args = {}, std::string password = {},
                       std::vector<std::string> env = {});
  ~RedisServer();
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  std::uint16_t port() const { return port_; }
  pid_t pid() const { return pid_; }
  bool running() const { return pid_ > 0; }
  std::string address() const;                          // "127.0.0.1:port"
  std::string url() const;                              // "redis://127.0.0.1:port" (no credentials)
  std::uint16_t tls_port() const { return tls_port_; }  // 0 unless TLS
  std::string tls_url(const std::string& host = "127.0.0.1") const;  // "rediss://host:tls_port"

  // Its working directory (data files, redis.log), kept across restarts.
  const std::string& dir() const { return dir_; }
  // The environment entries for the next start (restart()); the running process keeps its own.
  void set_env(std::vector<std::string> env) { env_ = std::move(env); }
  const std::vector<std::string>& env() const { return env_; }

  void kill9();    // SIGKILL and reap: the data is gone
  void stop();     // SIGTERM, then SIGKILL after 5 s; reaped
  void pause();    // SIGSTOP
  void resume();   // SIGCONT
  void restart();  // a new process on the same port, empty unless persistent:
  // restart() keeps the directory, the arguments and the environment last set, and wipes
  // nothing. With the default arguments (no persistence) the new process starts empty; started
  // with {"--appendonly", "yes", "--appendfsync", "always"} it reloads its data.

  // Runs one command on a fresh blocking connection (2 s timeout) and returns the reply as text:
  // strings and statuses as they are, integers in decimal, nil as "(nil)", errors as
  // "(error) <text>", arrays as their elements joined by '\n'.
  std::string command(const std::vector<std::string>& argv) const;
  // The keys of the lock key `lock_key` here (KEYS *): itself, and every key that begins with it
  // and NUL, its auxiliary keys (lib/core/keys.hpp). Names holding a line feed are not told apart.
  std::vector<std::string> keys_of_lock(const std::string& lock_key) const;

 private:
  void start();
  void wait_ready();

  std::vector<std::string> extra_args_;
  std::string password_;
  std::vector<std::string> env_;
  std::string dir_;
  std::uint16_t port_ = 0;
  std::uint16_t tls_port_ = 0;
  TlsMode tls_;
  pid_t pid_ = -1;
  bool paused_ = false;
};

// N independent masters.
class RedisCluster {
 public:
  // `env_per_node[i]`, when present, is node i's extra environment (see RedisServer).
  explicit RedisCluster(std::size_t n, std::vector<std::string> extra_args = {},
                        std::string password = {},
                        std::vector<std::vector<std::string>> env_per_node = {});
  // N TLS masters (RedisServer(TlsMode, ...)).
  RedisCluster(std::size_t n, const TlsMode& tls, std::vector<std::string> extra_args = {});
  std::size_t size() const { return servers_.size(); }
  RedisServer& operator[](std::size_t i) { return *servers_[i]; }
  // "redis://127.0.0.1:p1,redis://127.0.0.1:p2,..."; `credentials` ("user:pw" or ":pw") is
  // inserted in every URL when given.
  std::string node_list(const std::string& credentials = {}) const;
  // "rediss://host:t1,rediss://host:t2,..." (TLS clusters only).
  std::string tls_node_list(const std::string& host = "127.0.0.1") const;
  // How many servers hold `key` with value `value`, or with the token `value` marked where
  // somebody waits for it (stopped servers are skipped).
  std::size_t count_holding(const std::string& key, const std::string& value) const;
  // How many running servers have `key` at all.
  std::size_t count_existing(const std::string& key) const;

 private:
  std::vector<std::unique_ptr<RedisServer>> servers_;
};

// Polls `pred` every 5 ms until it holds or `limit` passes; returns its last value. For state
// that every node reaches shortly after a verdict that needed only a quorum of them.
template <typename Pred>
bool eventually(Pred pred, std::chrono::milliseconds limit = std::chrono::seconds(2)) {
  auto end = std::chrono::steady_clock::now() + limit;
  while (!pred()) {
    if (std::chrono::steady_clock::now() >= end) return pred();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

struct ProcessResult {
  int exit_code = -1;  // -1 when killed by a signal or timed out
  bool timed_out = false;
  std::string out;
  std::string err;
};

// A child process with its stdout and stderr captured; killed (SIGKILL) if still running when
// destroyed.
class Process {
 public:
  Process(const std::vector<std::string>& argv, const std::vector<std::string>& env_extra = {});
  ~Process();
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;
  pid_t pid() const { return pid_; }
  void signal(int sig) const;
  // Reads its output until it exits, up to `limit` (then SIGKILL, timed_out).
  ProcessResult wait(std::chrono::milliseconds limit = std::chrono::seconds(20));

 private:
  pid_t pid_ = -1;
  int out_ = -1;
  int err_ = -1;
};

// Runs argv[0] with `env_extra` added to the environment; kills it after `limit`.
ProcessResult run_process(const std::vector<std::string>& argv,
                          const std::vector<std::string>& env_extra = {},
                          std::chrono::milliseconds limit = std::chrono::seconds(20));

}  // namespace redlock::test
