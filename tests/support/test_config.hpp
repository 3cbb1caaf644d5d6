// A configuration for tests against a RedisCluster: short timeouts so failures show quickly.
#pragma once

#include "redis_server.hpp"
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

}  // namespace redlock::test
