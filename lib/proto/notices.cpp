#include "notices.hpp"

#include <algorithm>
#include <memory>

#include "context.hpp"
#include "scripts.hpp"

namespace redlock::detail::proto {

std::string released_channel(const std::string& key) { return key + ":released"; }

namespace {

std::string_view releaser_of(std::string_view notice) { return notice.substr(0, notice.find('|')); }

// A Send of `request` to every node, nobody waiting for the answer.
Send send_to_all(Context& context, Request request) {
  Send s;
  s.id = context.next_request();
  s.request = std::make_shared<const Request>(std::move(request));
  for (std::size_t i = 0; i < context.nodes(); ++i) s.nodes.push_back(i);
  s.reply_wanted = false;
  return s;
}

}  // namespace

void Notices::add(const std::string& channel, Waiter* waiter, Actions& out) {
  if (!started_ && !context_.shutting_down()) {
    // The subscriber connections come with the first waiter, the turn channel with them.
    started_ = true;
    out.push_back(Subscribe{context_.turn_channel()});
    turns_confirmed_.assign(context_.nodes(), false);
  }
  auto& c = by_channel_[channel];
  auto& list = c.waiters;
  if (std::find(list.begin(), list.end(), waiter) != list.end()) return;
  list.push_back(waiter);
  // A waiter in line hears of its turn on the client's channel: the key's channel, where a
  // release is told only when nobody is in line, is for waiters that stand in none.
  if (!waiter->in_line() && !c.subscribed) {
    c.subscribed = true;
    c.confirmed.assign(started_ ? context_.nodes() : 0, false);
    if (started_) out.push_back(Subscribe{channel});
  }
}

void Notices::remove(const std::string& channel, Waiter* waiter, Actions& out) {
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
    if (started_) out.push_back(Unsubscribe{channel});
  }
  if (list.empty()) by_channel_.erase(it);
}

bool Notices::released(const std::string& channel, std::string_view holder) const {
  auto it = by_channel_.find(channel);
  if (it == by_channel_.end() || holder.empty()) return false;
  const auto& recent = it->second.recent;
  return std::any_of(recent.begin(), recent.end(),
                     [&](const std::string& n) { return !n.empty() && releaser_of(n) == holder; });
}

// A release is published on each of the N nodes: the first notice wakes, the others are the same
// release again. A notice without a name (a release script of an older version) wakes one waiter
// each time.
// - On a key's channel (nobody in line there): one waiter of the client.
// - On the client's turn channel, "<name>|<ticket>|<key>": the waiter whose turn it is, and the
//   client's waiters for several keys; "<name>||<key>": only those.
void Notices::on_message(std::size_t, std::string_view channel, std::string_view payload,
                         Clock::time_point now, Actions& out) {
  if (channel == context_.turn_channel()) {
    on_turn(payload, now, out);
    return;
  }
  auto it = by_channel_.find(std::string(channel));
  if (it != by_channel_.end()) on_notice(it->second, it->first, payload, now, out);
}

void Notices::on_turn(std::string_view payload, Clock::time_point now, Actions& out) {
  auto bar = payload.find('|');
  if (bar == std::string_view::npos) return;
  auto rest = payload.substr(bar + 1);
  // The ticket is one of ours, "<turn channel>#<job>@<turn's length>" ("#r<job>" for a reader);
  // the key follows it.
  std::string_view ticket;
  std::uint64_t job = 0;
  bool reader = false;  // a reader's ticket, "#r<job>" (Context::new_ticket)
  const auto& mine = context_.turn_channel();
  if (rest.substr(0, mine.size() + 1) == mine + "#") {
    auto end = rest.find('|', mine.size() + 1);
    if (end == std::string_view::npos || end == mine.size() + 1) return;
    auto digits = rest.substr(mine.size() + 1, end - mine.size() - 1);
    digits = digits.substr(0, digits.find('@'));
    reader = !digits.empty() && digits[0] == 'r';
    if (reader) digits.remove_prefix(1);
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
  std::string channel = released_channel(key);
  Waiter* named = ticket.empty() ? nullptr : context_.job(job);
  if (!ticket.empty() && named == nullptr) {
    // The turn of a waiter of ours that is gone: hand it on at once instead of letting it lapse.
    // Once: the copies that come after are that turn again.
    if (!copy)
      out.push_back(send_to_all(context_, reader ? leave_reader_request(key, std::string(ticket))
                                                 : leave_line_request(key, std::string(ticket))));
    return;
  }
  if (copy) {
    // A copy is still news to the waiter it names: the attempt that the first copy started may
    // have been refused by this node, whose release had not come yet.
    if (named != nullptr) named->wake(&channel, now, out);
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
  // Found by its job, not its channel: a waiter refused a moment ago may not listen yet, and its
  // turn must not be lost. wake() may finish it and remove the channel.
  if (named != nullptr) named->wake(&channel, now, out);
  wake_one(channel, now, out, /*in_line=*/false);
}

void Notices::on_notice(Channel& c, const std::string& name, std::string_view payload,
                        Clock::time_point now, Actions& out) {
  if (!payload.empty()) {
    if (std::find(c.recent.begin(), c.recent.end(), payload) != c.recent.end()) return;
    c.recent[c.next_recent] = std::string(payload);
    c.next_recent = (c.next_recent + 1) % c.recent.size();
  }
  c.had.clear();  // a new notice: every waiter may have it
  wake_one(name, now, out);
}

// A subscription that became active may have missed a notice: every waiter looks again, once
// when the first node confirms a new channel, and when a node confirms again after a reconnect.
void Notices::on_subscribed(std::size_t node, std::string_view channel, Clock::time_point now,
                            Actions& out) {
  if (channel == context_.turn_channel()) {
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
    for (auto* w : all) w->wake(nullptr, now, out);
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
  // A woken waiter may finish and leave the list: walk a copy. Waiters in line are told on the
  // turn channel.
  auto waiters = it->second.waiters;
  for (auto* w : waiters)
    if (!w->in_line()) w->wake(nullptr, now, out);
}

void Notices::pass(const std::string& channel, Clock::time_point now, Actions& out) {
  if (by_channel_.count(channel) != 0) wake_one(channel, now, out);
}

// Wakes the first waiter that is not already asking (or, when all are, the first): one attempt
// per release and client. Only waiters that have not had this notice. The woken one goes to the
// back of the list. With `in_line` false, only waiters that stand in no line.
void Notices::wake_one(std::string channel, Clock::time_point now, Actions& out, bool in_line) {
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
    if (w->wake(&channel, now, out)) return;
  }
}

}  // namespace redlock::detail::proto
