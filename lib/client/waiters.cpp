#include "waiters.hpp"

namespace redlock::detail {

void Waiters::subscribe(const std::string& channel) {
  if (subscribers_.empty()) {
    if (closed_) return;
    for (std::size_t i = 0; i < config_.nodes.size(); ++i) {
      subscribers_.push_back(
          std::make_unique<Node>(loop_, i, config_.nodes[i], config_, seed_(), &listener_));
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

}  // namespace redlock::detail
