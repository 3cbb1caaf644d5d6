// Release-notice subscriptions: one subscriber connection per node per client, shared by all of
// the client's waiters. Which waiter a notice or a turn wakes is the protocol core's decision
// (proto/notices.hpp); this keeps the connections, subscribes what it is asked to, and brings
// every message and every confirmed subscription to its listener. Loop thread only.
#pragma once

#include <uv.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "../net/node.hpp"

namespace redlock::detail {

// Hears what the subscriber connections bring (the coordinator, for proto::Notices).
class NoticeListener {
 public:
  virtual void on_notice(std::size_t node, std::string_view channel, std::string_view payload) = 0;
  virtual void on_notice_subscribed(std::size_t node, std::string_view channel) = 0;

 protected:
  ~NoticeListener() = default;
};

class Waiters final : public MessageSink {
 public:
  // `seed`: a fresh random number per connection (reconnect jitter).
  Waiters(uv_loop_t* loop, const Config& config, std::function<std::uint64_t()> seed,
          NoticeListener& listener)
      : loop_(loop), config_(config), seed_(std::move(seed)), listener_(listener) {}
  // On every node; the first call opens the subscriber connections.
  void subscribe(const std::string& channel);
  void unsubscribe(const std::string& channel);
  // Closes the connections; later subscriptions open none.
  void shutdown();

 private:
  void on_message(std::size_t node, std::string_view channel, std::string_view payload) override;
  void on_subscribed(std::size_t node, std::string_view channel) override;

  uv_loop_t* loop_;
  const Config& config_;
  std::function<std::uint64_t()> seed_;
  NoticeListener& listener_;
  bool closed_ = false;
  std::vector<std::unique_ptr<Node>> subscribers_;  // created with the first subscription
};

}  // namespace redlock::detail
