// Release-notice subscriptions: one subscriber connection per node per client, shared by all
// of the client's waiters. A release publishes on every node it deleted from, naming the
// releaser and, when waiters stand in the key's queue, the one whose turn it now is: only that
// waiter asks (in whichever client it is). A notice that names no waiter is counted once and
// wakes one waiter of each client. Loop thread only.
#pragma once

#include <array>
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
  // A release notice on `channel` (null: a fresh subscription, on any of its channels). False
  // when it can no longer use it (it is finishing), so that the notice goes to another waiter.
  virtual bool wake(const std::string* channel) = 0;
  // True while an attempt of its own is on its way (a notice then only makes it try again).
  virtual bool busy() const = 0;
  // Its name in the nodes' queues ("<turn channel>#<n>@<turn's length in ms>").
  virtual const std::string& ticket() const = 0;
  // True when it stands in its key's queue (one key): it asks only when its turn comes.
  virtual bool in_line() const = 0;

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
  // A waiter woken by a notice of `channel` ended without using it: wake one that has not had
  // this notice yet (each notice visits each waiter at most once, so two waiters that both
  // cannot use it never hand it back and forth).
  void pass(const std::string& channel);
  // True when a release notice on `channel` named `holder` lately: that holder's keys are being
  // deleted, so a "no" naming it is a node about to be free, not a lock held.
  bool released(const std::string& channel, std::string_view holder) const;
  void shutdown();
  std::size_t channels() const noexcept { return by_channel_.size(); }

 private:
  struct Channel {
    std::vector<Waiter*> waiters;         // the next to wake first; a woken one goes to the back
    std::array<std::string, 4> recent{};  // the latest notices: "<releaser>[|<ticket>]"
    std::size_t next_recent = 0;
    bool subscribed = false;         // to the key's channel: some waiter stands in no line
    std::vector<bool> confirmed;     // nodes that confirmed the subscription
    std::vector<const Waiter*> had;  // woken for the latest notice
  };
  void on_notice(Channel& c, const std::string& name, std::string_view payload);
  void on_turn(std::string_view payload);
  void on_message(std::size_t node, std::string_view channel, std::string_view payload) override;
  void on_subscribed(std::size_t node, std::string_view channel) override;
  void wake_one(std::string channel, bool in_line = true);

  Coordinator& coordinator_;
  std::vector<std::unique_ptr<Node>> subscribers_;  // created with the first waiter
  std::unordered_map<std::string, Channel> by_channel_;
  std::vector<bool> turns_confirmed_;          // nodes that confirmed the client's turn channel
  std::array<std::string, 8> recent_turns_{};  // the latest messages on it
  std::size_t next_turn_ = 0;
};

}  // namespace redlock::detail
