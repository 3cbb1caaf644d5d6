// A configuration for tests against a RedisCluster: short timeouts so failures show quickly.
#pragma once

#include <algorithm>

#include "redis_server.hpp"
#include "redlock/client.hpp"
#include "redlock/config.hpp"

namespace redlock::test {

inline Config fast_config(const std::string& node_list) {
  using namespace std::chrono_literals;
  Config c = Config::from_node_list(node_list);
  c.request_timeout = 200ms;
  c.connect_timeout = 500ms;
  c.reconnect_min = 20ms;
  c.reconnect_max = 100ms;
  c.retry_delay = 20ms;
  c.retry_jitter = 10ms;
  return c;
}

inline Config fast_config(const RedisCluster& cluster, const std::string& credentials = {}) {
  return fast_config(cluster.node_list(credentials));
}

// True once `client` has a session with every node: a grant then reaches every node, not only
// the quorum that answered first (a node still connecting gets none of it). A node in session
// that refuses writes (a test's OOM or ACL) counts: it answered.
inline bool connected_to_all(Client& client) {
  auto rows = client.status();
  return std::all_of(rows.begin(), rows.end(), [](const NodeStatus& n) { return n.answered; });
}

}  // namespace redlock::test
