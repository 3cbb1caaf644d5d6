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
      subscribers_.back()->subscribe(coordinator_.turn_channel());
    }
    turns_confirmed_.assign(subscribers_.size(), false);
  }
  auto& c = by_channel_[channel];
  auto& list = c.waiters;
  if (std::find(list.begin(), list.end(), waiter) != list.end()) return;
  list.push_back(waiter);
  // A waiter in line hears of its turn on the client's channel: the key's channel, where a
  // release is told only when nobody is in line, is for waiters that stand in none.
  if (!waiter->in_line() && !c.subscribed) {
    c.subscribed = true;
    c.confirmed.assign(subscribers_.size(), false);
    for (auto& s : subscribers_) s->subscribe(channel);
  }
}

void Waiters::remove(const std::string& channel, Waiter* waiter) {
  auto it = by_channel_.find(channel);
  if (it == by_channel_.end()) return;
  auto& c = it->second;
  auto& list = c.waiters;
  list.erase(std::remove(list.begin(), list.end(), waiter), list.end());
  auto& had = c.had;
  had.erase(std::remove(had.begin(), had.end(), waiter), had.end());
  bool listens =
      std::any_of(list.begin(), list.end(), [](const Waiter* w) { return !w->in_line(); });
  if (c.subscribed && !listens) {
    c.subscribed = false;
    for (auto& s : subscribers_) s->unsubscribe(channel);
  }
  if (list.empty()) by_channel_.erase(it);
}

void Waiters::shutdown() {
  for (auto& s : subscribers_) s->shutdown();
}

namespace {

std::string_view releaser_of(std::string_view notice) { return notice.substr(0, notice.find('|')); }

}  // namespace

bool Waiters::released(const std::string& channel, std::string_view holder) const {
  auto it = by_channel_.find(channel);
  if (it == by_channel_.end() || holder.empty()) return false;
  const auto& recent = it->second.recent;
  return std::any_of(recent.begin(), recent.end(),
                     [&](const std::string& n) { return !n.empty() && releaser_of(n) == holder; });
}

// A release is published on each of the N nodes: the first notice wakes, the others are the same
// release again (the same words; where nodes' queues differ they name different waiters, and
// each of those is woken). A notice without a name (a release script of an older version) wakes
// one waiter each time.
// - On a key's channel (nobody in line there): one waiter of the client.
// - On the client's turn channel, "<name>|<ticket>|<key>": the waiter whose turn it is, and the
//   client's waiters for several keys (they stand in no line and take their chance at every
//   release); "<name>||<key>": only those.
void Waiters::on_message(std::size_t, std::string_view channel, std::string_view payload) {
  if (channel == coordinator_.turn_channel()) {
    on_turn(payload);
    return;
  }
  auto it = by_channel_.find(std::string(channel));
  if (it != by_channel_.end()) on_notice(it->second, it->first, payload);
}

void Waiters::on_turn(std::string_view payload) {
  auto bar = payload.find('|');
  if (bar == std::string_view::npos) return;
  auto rest = payload.substr(bar + 1);
  // The ticket is one of ours, "<turn channel>#<job>@<turn's length>"; the key follows it.
  std::string_view ticket;
  std::uint64_t job = 0;
  const auto& mine = coordinator_.turn_channel();
  if (rest.substr(0, mine.size() + 1) == mine + "#") {
    auto end = rest.find('|', mine.size() + 1);
    if (end == std::string_view::npos || end == mine.size() + 1) return;
    auto digits = rest.substr(mine.size() + 1, end - mine.size() - 1);
    digits = digits.substr(0, digits.find('@'));
    if (digits.empty()) return;
    for (char ch : digits) {
      if (ch < '0' || ch > '9') return;
      job = job * 10 + static_cast<std::uint64_t>(ch - '0');
    }
    ticket = rest.substr(0, end);
    rest = rest.substr(end + 1);
  } else if (!rest.empty() && rest[0] == '|') {
    rest = rest.substr(1);
  } else {
    return;
  }
  // The same turn comes from every node that gave it, each as the release arrives there.
  bool copy = std::find(recent_turns_.begin(), recent_turns_.end(), payload) != recent_turns_.end();
  if (!copy) {
    recent_turns_[next_turn_] = std::string(payload);
    next_turn_ = (next_turn_ + 1) % recent_turns_.size();
  }
  std::string key(rest);
  std::string channel = key + ":released";
  Waiter* named = ticket.empty() ? nullptr : coordinator_.waiter(job);
  if (!ticket.empty() && named == nullptr) {
    // The turn of a waiter of ours that is gone (it ended while a node still had it in line):
    // hand it on at once instead of letting it lapse. Once: the copies that come after its
    // waiter was served are that turn again, and the waiter left the line where it had to when
    // it finished (AcquireJob::finish); leaving it again on every node for each copy cost the
    // servers up to N - 1 scripts a node per hand-off.
    if (!copy) coordinator_.leave_line(key, std::string(ticket));
    return;
  }
  if (copy) {
    // A copy is still news to the waiter it names: the attempt that the first copy started may
    // have been refused by this node, whose release had not come yet, and the waiter's quick
    // retries may be over. The line there now waits for it: it asks again (at once if it is
    // asking now). Waiters for several keys took their chance at the first copy.
    if (named != nullptr) named->wake(&channel);
    return;
  }

  auto it = by_channel_.find(channel);
  if (it != by_channel_.end()) {
    auto& c = it->second;
    c.recent[c.next_recent] = std::string(payload);  // for released()
    c.next_recent = (c.next_recent + 1) % c.recent.size();
    c.had.clear();
    if (named != nullptr) c.had.push_back(named);
  }
  // Found by its job, not its channel: a waiter that was refused a moment ago may not listen
  // yet, and its turn must not be lost. wake() may finish it and remove the channel.
  if (named != nullptr) named->wake(&channel);
  wake_one(channel, /*in_line=*/false);
}

void Waiters::on_notice(Channel& c, const std::string& name, std::string_view payload) {
  if (!payload.empty()) {
    if (std::find(c.recent.begin(), c.recent.end(), payload) != c.recent.end()) return;
    c.recent[c.next_recent] = std::string(payload);
    c.next_recent = (c.next_recent + 1) % c.recent.size();
  }
  c.had.clear();  // a new notice: every waiter may have it
  wake_one(name);
}

// A subscription that became active may have missed a notice: every waiter looks again, once
// when the first node confirms a new channel (a release is published on every node: from then
// on, one of them tells us), and when a node confirms again after a reconnect (with N = 1 the
// only one; otherwise rare).
void Waiters::on_subscribed(std::size_t node, std::string_view channel) {
  if (channel == coordinator_.turn_channel()) {
    // The same for the turn channel, with every waiter of the client.
    if (node >= turns_confirmed_.size()) return;
    bool again = turns_confirmed_[node];
    bool first =
        std::find(turns_confirmed_.begin(), turns_confirmed_.end(), true) == turns_confirmed_.end();
    turns_confirmed_[node] = true;
    if (!again && !first) return;
    std::vector<Waiter*> all;
    for (auto& [name, c] : by_channel_)
      for (auto* w : c.waiters)
        if (std::find(all.begin(), all.end(), w) == all.end()) all.push_back(w);
    for (auto* w : all) w->wake(nullptr);
    return;
  }
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
  // later loop phase (uv_close), so every pointer here is still alive. Waiters in line are told
  // on the turn channel.
  auto waiters = it->second.waiters;
  for (auto* w : waiters)
    if (!w->in_line()) w->wake(nullptr);
}

void Waiters::pass(const std::string& channel) {
  if (by_channel_.count(channel) != 0) wake_one(channel);
}

// Wakes the first waiter that is not already asking (or, when all are, the first, which then
// asks again at once): one attempt per release and client, instead of every waiter racing its
// neighbours. Only waiters that have not had this notice: a notice handed on (pass) ends once
// every waiter had it. The woken one goes to the back of the list, so every waiter of the client
// gets its turn.
// With `in_line` false, only waiters that stand in no line.
void Waiters::wake_one(std::string channel, bool in_line) {
  for (int tries = 0; tries < 64; ++tries) {
    auto it = by_channel_.find(channel);
    if (it == by_channel_.end()) return;
    auto& list = it->second.waiters;
    auto& had = it->second.had;
    auto fresh = [&](const Waiter* w) {
      return (in_line || !w->in_line()) && std::find(had.begin(), had.end(), w) == had.end();
    };
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
