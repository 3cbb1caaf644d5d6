// Out-of-band look at a Redis node (hiredis, blocking, 2 s timeouts): its pid, how many commands
// it has processed, its CPU time. The lock figures never go through here: this only observes
// the servers, like a monitoring agent would.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

struct redisContext;

namespace bench {

class ServerProbe {
 public:
  explicit ServerProbe(std::uint16_t port);
  ~ServerProbe();
  ServerProbe(const ServerProbe&) = delete;
  ServerProbe& operator=(const ServerProbe&) = delete;

  std::uint16_t port() const { return port_; }
  pid_t pid() const { return pid_; }
  // `INFO stats` total_commands_processed (this probe's own INFO calls included); -1 on error.
  long long commands_processed();
  // `INFO commandstats`: calls of one command (e.g. "evalsha"); -1 on error.
  long long command_calls(const std::string& command);
  double cpu_seconds() const;

 private:
  std::string info(const char* section);
  std::uint16_t port_;
  redisContext* ctx_ = nullptr;
  pid_t pid_ = -1;
};

// CPU seconds of a set of servers together; negative when one is unreadable.
double servers_cpu_seconds(const std::vector<pid_t>& pids);
// Pids of the servers on these ports (INFO server), -1 where unknown.
std::vector<pid_t> server_pids(const std::vector<std::uint16_t>& ports);

// A blocking hiredis connection to 127.0.0.1:port (2 s to connect); throws std::runtime_error
// naming `who` when it cannot be made. The caller frees it with redisFree.
redisContext* connect_local(std::uint16_t port, const std::string& who);

}  // namespace bench
