// Release notices and turns (what lib/net's Waiters decides, without its subscriber connections):
// which waiter a message wakes. A release publishes on every node it deleted from, naming the
// releaser and, when waiters stand in the key's queue, the one whose turn it now is: only that
// waiter asks (in whichever client it is). A notice that names no waiter is counted once and wakes
// one waiter of each client. Pure; the machines of one Context.
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "actions.hpp"

namespace redlock::detail::proto {

class Context;
class Waiter;

// The channel a key's release notices go to when nobody stands in its line.
std::string released_channel(const std::string& key);

class Notices {
 public:
  explicit Notices(Context& context) : context_(context) {}

  // Subscribes the turn channel with the first waiter ever, and `channel` with its first waiter
  // that stands in no line.
  void add(const std::string& channel, Waiter* waiter, Actions& out);
  // Unsubscribes `channel` once no waiter that stands in no line is left on it.
  void remove(const std::string& channel, Waiter* waiter, Actions& out);
  // A waiter woken by a notice of `channel` ended without using it: wake one that has not had
  // this notice yet.
  void pass(const std::string& channel, Clock::time_point now, Actions& out);
  // True when a release notice on `channel` named `holder` lately: a "no" naming it is a node
  // about to be free, not a lock held.
  bool released(const std::string& channel, std::string_view holder) const;
  std::size_t channels() const noexcept { return by_channel_.size(); }

  // Events from the subscriber connections: a message (a notice on a key's channel, or a turn on
  // the client's turn channel), and a confirmed subscription (also after every reconnect).
  void on_message(std::size_t node, std::string_view channel, std::string_view payload,
                  Clock::time_point now, Actions& out);
  void on_subscribed(std::size_t node, std::string_view channel, Clock::time_point now,
                     Actions& out);

 private:
  struct Channel {
    std::vector<Waiter*> waiters;         // the next to wake first; a woken one goes to the back
    std::array<std::string, 4> recent{};  // the latest notices: "<releaser>[|<ticket>]"
    std::size_t next_recent = 0;
    bool subscribed = false;         // to the key's channel: some waiter stands in no line
    std::vector<bool> confirmed;     // nodes that confirmed the subscription
    std::vector<const Waiter*> had;  // woken for the latest notice
  };
  void on_notice(Channel& c, const std::string& name, std::string_view payload,
                 Clock::time_point now, Actions& out);
  void on_turn(std::string_view payload, Clock::time_point now, Actions& out);
  void wake_one(std::string channel, Clock::time_point now, Actions& out, bool in_line = true);

  Context& context_;
  bool started_ = false;  // the turn channel is subscribed
  std::unordered_map<std::string, Channel> by_channel_;
  std::vector<bool> turns_confirmed_;
  std::array<std::string, 8> recent_turns_{};
  std::size_t next_turn_ = 0;
};

}  // namespace redlock::detail::proto
