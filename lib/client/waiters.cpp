#include "waiters.hpp"

namespace redlock::detail {

void Waiters::subscribe(const std::string& channel) {
  if (subscribers_.empty()) {
    if (closed_) return;
    for (std::size_t i = 0; i < config_.nodes.size(); ++i) {
      subscribers_.push_back(
          std::make_unique<Node>(loop_, i, config_.nodes[i], config_, seed_(), this));
      subscribers_.back()->start();
    }
  }
  for (auto& s : subscribers_) s->subscribe(channel);
}

void Waiters::unsubscribe(const std::string& channel) {
  for (auto& s : subscribers_) s->unsubscribe(channel);
}

void Waiters::shutdown() {
  closed_ = true;
  for (auto& s : subscribers_) s->shutdown();
}

void Waiters::on_message(std::size_t node, std::string_view channel, std::string_view payload) {
  listener_.on_notice(node, channel, payload);
}

void Waiters::on_subscribed(std::size_t node, std::string_view channel) {
  listener_.on_notice_subscribed(node, channel);
}

}  // namespace redlock::detail
