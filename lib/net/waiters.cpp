#include "waiters.hpp"

#include <algorithm>

#include "coordinator.hpp"

namespace redlock::detail {

void Waiters::add(const std::string& channel, Waiter* waiter) {
  if (subscribers_.empty() && !coordinator_.shutting_down()) {
    const auto& config = coordinator_.config();
    for (std::size_t i = 0; i < config.nodes.size(); ++i) {
      subscribers_.push_back(std::make_unique<Node>(coordinator_.loop(), i, config.nodes[i], config,
                                                    coordinator_.rng()(), this));
      subscribers_.back()->start();
    }
  }
  auto& list = by_channel_[channel];
  if (std::find(list.begin(), list.end(), waiter) != list.end()) return;
  list.push_back(waiter);
  if (list.size() == 1)
    for (auto& s : subscribers_) s->subscribe(channel);
}

void Waiters::remove(const std::string& channel, Waiter* waiter) {
  auto it = by_channel_.find(channel);
  if (it == by_channel_.end()) return;
  auto& list = it->second;
  list.erase(std::remove(list.begin(), list.end(), waiter), list.end());
  if (!list.empty()) return;
  by_channel_.erase(it);
  for (auto& s : subscribers_) s->unsubscribe(channel);
}

void Waiters::shutdown() {
  for (auto& s : subscribers_) s->shutdown();
}

void Waiters::on_message(std::size_t, std::string_view channel) { wake(channel); }

// A subscription that became active (first time, or after a reconnect) may have missed a
// notice: let the waiters look again.
void Waiters::on_subscribed(std::size_t, std::string_view channel) { wake(channel); }

void Waiters::wake(std::string_view channel) {
  auto it = by_channel_.find(std::string(channel));
  if (it == by_channel_.end()) return;
  // A woken waiter may finish and leave the list: walk a copy. Waiters are freed only in a
  // later loop phase (uv_close), so every pointer here is still alive.
  auto waiters = it->second;
  for (auto* w : waiters) w->wake();
}

}  // namespace redlock::detail
