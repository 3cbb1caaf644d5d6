// A configuration for tests against a RedisCluster: short timeouts so failures show quickly.
#pragma once

#include "redis_server.hpp"
#include "redlock/config.hpp"

namespace redlock::test {

inline Config fast_config(const RedisCluster& cluster, const std::string& credentials = {}) {
  using namespace std::chrono_literals;
  Config c = Config::from_node_list(cluster.node_list(credentials));
  c.request_timeout = 200ms;
  c.connect_timeout = 500ms;
  c.reconnect_min = 20ms;
  c.reconnect_max = 100ms;
  c.retry_delay = 20ms;
  c.retry_jitter = 10ms;
  return c;
}

}  // namespace redlock::test
