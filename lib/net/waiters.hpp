// Release-notice subscriptions: one subscriber connection per node per client, shared by all
// of the client's waiters. Loop thread only.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "node.hpp"

namespace redlock::detail {

class Coordinator;

// Something that sleeps until a resource may have been released.
class Waiter {
 public:
  virtual void wake() = 0;

 protected:
  ~Waiter() = default;
};

class Waiters final : public MessageSink {
 public:
  explicit Waiters(Coordinator& coordinator) : coordinator_(coordinator) {}
  // Subscribes on every node on the first waiter of a channel.
  void add(const std::string& channel, Waiter* waiter);
  // Unsubscribes on the last.
  void remove(const std::string& channel, Waiter* waiter);
  void shutdown();
  std::size_t channels() const noexcept { return by_channel_.size(); }

 private:
  void on_message(std::size_t node, std::string_view channel) override;
  void on_subscribed(std::size_t node, std::string_view channel) override;
  void wake(std::string_view channel);

  Coordinator& coordinator_;
  std::vector<std::unique_ptr<Node>> subscribers_;  // created with the first waiter
  std::unordered_map<std::string, std::vector<Waiter*>> by_channel_;
};

}  // namespace redlock::detail
