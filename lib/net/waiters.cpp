#include "waiters.hpp"

#include "../proto/notices.hpp"
#include "coordinator.hpp"

namespace redlock::detail {

void Waiters::subscribe(const std::string& channel) {
  if (subscribers_.empty()) {
    if (coordinator_.shutting_down()) return;
    const auto& config = coordinator_.config();
    for (std::size_t i = 0; i < config.nodes.size(); ++i) {
      subscribers_.push_back(std::make_unique<Node>(coordinator_.loop(), i, config.nodes[i], config,
                                                    coordinator_.rng()(), this));
      subscribers_.back()->start();
    }
  }
  for (auto& s : subscribers_) s->subscribe(channel);
}

void Waiters::unsubscribe(const std::string& channel) {
  for (auto& s : subscribers_) s->unsubscribe(channel);
}

void Waiters::shutdown() {
  for (auto& s : subscribers_) s->shutdown();
}

void Waiters::on_message(std::size_t node, std::string_view channel, std::string_view payload) {
  proto::Actions out;
  coordinator_.proto().notices().on_message(node, channel, payload, Clock::now(), out);
  coordinator_.run(out);
}

void Waiters::on_subscribed(std::size_t node, std::string_view channel) {
  proto::Actions out;
  coordinator_.proto().notices().on_subscribed(node, channel, Clock::now(), out);
  coordinator_.run(out);
}

}  // namespace redlock::detail
