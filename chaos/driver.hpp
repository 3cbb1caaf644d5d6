// How a scenario's node faults reach the nodes: the four verbs of a fault driver.
//
// The harness applies every crash, restart, pause and resume through one NodeDriver, whoever
// runs the nodes: its own redis-server processes (LocalDriver, signals to their pids), or a
// deployment it did not start (CommandDriver: an executable run as `DRIVER VERB INDEX`, such as
// chaos/drivers/compose for the repository's docker-compose.yml). docs/chaos.md, "Your own
// deployment", describes the interface for driver writers.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "redis_server.hpp"
#include "redlock/config.hpp"

namespace redlock::chaos {

// The verbs, as a driver command spells them.
enum class Fault {
  kill,     // the node dies at once (SIGKILL) and stays down
  pause,    // the node stops running but keeps its connections (SIGSTOP, docker pause)
  resume,   // a paused node runs again (SIGCONT, docker unpause)
  restart,  // a killed node starts again, with whatever its persistence kept
};
const char* to_string(Fault verb);

class NodeDriver {
 public:
  virtual ~NodeDriver() = default;
  // Applies `verb` to node `i` (its position in the node list, from 0). False, with `why`, when
  // the fault could not be applied: the scenario then fails, as it no longer tests what it says.
  virtual bool apply(Fault verb, std::size_t i, std::string& why) = 0;
  // How `verb` is applied, for the events log ("kill -9", "chaos/drivers/compose kill").
  virtual std::string how(Fault verb) const = 0;
};

// The runner's own redis-server processes: signals to their pids, restart on the same port.
class LocalDriver : public NodeDriver {
 public:
  explicit LocalDriver(std::vector<std::unique_ptr<test::RedisServer>>& nodes) : nodes_(nodes) {}
  bool apply(Fault verb, std::size_t i, std::string& why) override;
  std::string how(Fault verb) const override;

 private:
  std::vector<std::unique_ptr<test::RedisServer>>& nodes_;
};

// An executable run as `PROGRAM VERB INDEX` (VERB one of kill, pause, resume, restart; INDEX
// from 0), exit status 0 on success. It gets the node's URL in REDLOCK_CHAOS_NODE and the
// number of nodes in REDLOCK_CHAOS_NODE_COUNT; its output goes to `log_path`. It runs in a
// process group of its own, which is killed when it takes longer than `limit`.
class CommandDriver : public NodeDriver {
 public:
  CommandDriver(std::string program, std::vector<std::string> urls, std::string log_path,
                std::chrono::milliseconds limit);
  bool apply(Fault verb, std::size_t i, std::string& why) override;
  std::string how(Fault verb) const override;

 private:
  std::string program_;
  std::vector<std::string> urls_;
  std::string log_path_;
  std::chrono::milliseconds limit_;
};

// One command on a fresh blocking connection to a node of a deployment (AUTH and SELECT as its
// URL says), every step bounded by `limit`; the reply as text, as test::RedisServer::command
// gives it ("(connect error) ..." when it cannot be reached). A rediss:// node is only probed
// for an open port (the runner has no TLS of its own): "(tls)" when it accepts, else an error.
std::string node_command(const NodeAddress& node, const std::vector<std::string>& argv,
                         std::chrono::milliseconds limit = std::chrono::milliseconds(2000));

}  // namespace redlock::chaos
