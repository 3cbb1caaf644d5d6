// Release-notice subscriptions: one subscriber connection per node per client, shared by all of
// the client's waiters. Which waiter a notice or a turn wakes is the protocol core's decision
// (proto/notices.hpp); this keeps the connections and subscribes what it is asked to; the
// connections bring every message and every confirmed subscription straight to the listener
// (the coordinator). Loop thread only.
#pragma once

#include <uv.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "../net/node.hpp"

namespace redlock::detail {

class Waiters {
 public:
  // `seed`: a fresh random number per connection (reconnect jitter).
  Waiters(uv_loop_t* loop, const Config& config, std::function<std::uint64_t()> seed,
          MessageSink& listener)
      : loop_(loop), config_(config), seed_(std::move(seed)), listener_(listener) {}
  // On every node; the first call opens the subscriber connections.
  void subscribe(const std::string& channel);
  void unsubscribe(const std::string& channel);
  // Closes the connections; later subscriptions open none.
  void shutdown();

 private:
  uv_loop_t* loop_;
  const Config& config_;
  std::function<std::uint64_t()> seed_;
  MessageSink& listener_;
  bool closed_ = false;
  std::vector<std::unique_ptr<Node>> subscribers_;  // created with the first subscription
};

}  // namespace redlock::detail
