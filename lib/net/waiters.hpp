// Release-notice subscriptions: one subscriber connection per node per client, shared by all of
// the client's waiters. Which waiter a notice or a turn wakes is the protocol core's decision
// (proto/notices.hpp); this keeps the connections, subscribes what it asks for, and brings it
// every message and every confirmed subscription. Loop thread only.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "node.hpp"

namespace redlock::detail {

class Coordinator;

class Waiters final : public MessageSink {
 public:
  explicit Waiters(Coordinator& coordinator) : coordinator_(coordinator) {}
  // On every node; the first call opens the subscriber connections.
  void subscribe(const std::string& channel);
  void unsubscribe(const std::string& channel);
  void shutdown();

 private:
  void on_message(std::size_t node, std::string_view channel, std::string_view payload) override;
  void on_subscribed(std::size_t node, std::string_view channel) override;

  Coordinator& coordinator_;
  std::vector<std::unique_ptr<Node>> subscribers_;  // created with the first subscription
};

}  // namespace redlock::detail
