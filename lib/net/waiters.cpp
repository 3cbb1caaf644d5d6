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
  auto [it, created] = by_channel_.try_emplace(channel);
  auto& list = it->second.waiters;
  if (std::find(list.begin(), list.end(), waiter) != list.end()) return;
  list.push_back(waiter);
  if (created) {
    it->second.confirmed.assign(subscribers_.size(), false);
    for (auto& s : subscribers_) s->subscribe(channel);
  }
}

void Waiters::remove(const std::string& channel, Waiter* waiter) {
  auto it = by_channel_.find(channel);
  if (it == by_channel_.end()) return;
  auto& list = it->second.waiters;
  list.erase(std::remove(list.begin(), list.end(), waiter), list.end());
  auto& had = it->second.had;
  had.erase(std::remove(had.begin(), had.end(), waiter), had.end());
  if (!list.empty()) return;
  by_channel_.erase(it);
  for (auto& s : subscribers_) s->unsubscribe(channel);
}

void Waiters::shutdown() {
  for (auto& s : subscribers_) s->shutdown();
}

bool Waiters::released(const std::string& channel, std::string_view holder) const {
  auto it = by_channel_.find(channel);
  if (it == by_channel_.end() || holder.empty()) return false;
  const auto& recent = it->second.recent;
  return std::find(recent.begin(), recent.end(), holder) != recent.end();
}

// One release publishes on each of the N nodes: the first notice that names a releaser wakes one
// waiter, the others are the same release again. A notice without a name (a release script of
// an older version) wakes one waiter each time.
void Waiters::on_message(std::size_t, std::string_view channel, std::string_view payload) {
  auto it = by_channel_.find(std::string(channel));
  if (it == by_channel_.end()) return;
  auto& c = it->second;
  if (!payload.empty()) {
    if (std::find(c.recent.begin(), c.recent.end(), payload) != c.recent.end()) return;
    c.recent[c.next_recent] = std::string(payload);
    c.next_recent = (c.next_recent + 1) % c.recent.size();
  }
  c.had.clear();  // a new notice: every waiter may have it
  wake_one(it->first);
}

// A subscription that became active may have missed a notice: every waiter looks again, once
// when the first node confirms a new channel (a release is published on every node: from then
// on, one of them tells us), and when a node confirms again after a reconnect (with N = 1 the
// only one; otherwise rare).
void Waiters::on_subscribed(std::size_t node, std::string_view channel) {
  auto it = by_channel_.find(std::string(channel));
  if (it == by_channel_.end()) return;
  auto& confirmed = it->second.confirmed;
  if (node < confirmed.size()) {
    bool again = confirmed[node];
    bool first = std::find(confirmed.begin(), confirmed.end(), true) == confirmed.end();
    confirmed[node] = true;
    if (!again && !first) return;
  }
  // A woken waiter may finish and leave the list: walk a copy. Waiters are freed only in a
  // later loop phase (uv_close), so every pointer here is still alive.
  auto waiters = it->second.waiters;
  for (auto* w : waiters) w->wake(nullptr);
}

void Waiters::pass(const std::string& channel) {
  if (by_channel_.count(channel) != 0) wake_one(channel);
}

// Wakes the first waiter that is not already asking (or, when all are, the first, which then
// asks again at once): one attempt per release and client, instead of every waiter racing its
// neighbours. Only waiters that have not had this notice: a notice handed on (pass) ends once
// every waiter had it. The woken one goes to the back of the list, so every waiter of the client
// gets its turn.
void Waiters::wake_one(std::string channel) {
  for (int tries = 0; tries < 64; ++tries) {
    auto it = by_channel_.find(channel);
    if (it == by_channel_.end()) return;
    auto& list = it->second.waiters;
    auto& had = it->second.had;
    auto fresh = [&](const Waiter* w) { return std::find(had.begin(), had.end(), w) == had.end(); };
    auto pick =
        std::find_if(list.begin(), list.end(), [&](Waiter* w) { return fresh(w) && !w->busy(); });
    if (pick == list.end()) pick = std::find_if(list.begin(), list.end(), fresh);
    if (pick == list.end()) return;  // every waiter had it
    Waiter* w = *pick;
    had.push_back(w);
    list.erase(pick);
    list.push_back(w);
    // wake() may finish the waiter and remove it (and the channel): nothing of `it` is used after.
    if (w->wake(&channel)) return;
  }
}

}  // namespace redlock::detail
