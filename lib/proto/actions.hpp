// The vocabulary of the sans-IO protocol core (lib/proto): what a driver feeds the machines
// (events) and what they ask of it (actions).
//
// The machines (fanout.hpp, acquire.hpp, single.hpp, watchdog.hpp, notices.hpp) read no clock,
// draw no random number of their own and do no I/O. Every event carries `now`; every decision
// comes back as an Action appended to an Actions sink, in the order the driver must carry them
// out. lib/client drives them over lib/net (libuv, hiredis); the simulator (sim/) drives the same
// machines against simulated nodes. Pure; one thread at a time.
//
// The driver's contract, for every machine:
// - Send: send `request` to each node in `nodes`, all of them before reporting any failure
//   (one request's nodes leave together), then report each node's answer with on_reply(id,
//   node, votes, now): the reply decoded with decode_reply (scripts.hpp) by the request's
//   decoder, or failed_votes(...) when the node could not answer (down, timeout, error reply,
//   send refused; an error reply's text goes in NodeVote::detail). A Send with `reply_wanted`
//   false is fire-and-forget: its replies may be dropped (they are ignored if reported).
// - ArmTimer: call on_timer(id, now) at `at` (not before). Arming an id that is armed already
//   replaces its time. CancelTimer: forget it (a cancelled timer that fires anyway is ignored).
// - Subscribe / Unsubscribe: on every node's subscriber connection (idempotent; remembered
//   across reconnects), and report messages and confirmations to the Notices machine.
// - The Deliver* / Renewed / Lost actions: hand the result to the caller. WaitBegan and
//   RenewDecided: only news.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "redlock/config.hpp"
#include "redlock/errors.hpp"
#include "redlock/lock.hpp"
#include "redlock/observer.hpp"

namespace redlock::detail::proto {

using Clock = std::chrono::steady_clock;

// Ids the driver echoes back: a request's with each node's reply, a timer's when it fires. Drawn
// from one Context, so they are unique among all the machines of one client. 0 is never used.
using RequestId = std::uint64_t;
using TimerId = std::uint64_t;

// Which of our Lua scripts a request runs (lib/scripts/*.lua); none: a plain command.
enum class ScriptId : std::uint8_t { none, acquire, renew, release, fence, leader };

// Which decoder of lib/core/replies.hpp reads a request's reply (scripts.hpp: decode_reply).
enum class Decoder : std::uint8_t {
  acquire,
  quick_acquire,
  fence,
  release,
  renew,
  text,
  leader_write,
  leader_read
};

// One command for the nodes: EVALSHA <script> numkeys keys... args..., or, with ScriptId::none,
// the plain command whose whole argv is `args`.
struct Request {
  ScriptId script = ScriptId::none;
  std::vector<std::string> keys;
  std::vector<std::string> args;
  Decoder decoder = Decoder::text;
  std::size_t items = 1;  // votes per node's reply (renewal batches: one per lock)
};

// --- actions ---

// The nodes a Send goes to, ascending: a list of its own, or a list that is never changed and
// outlives every action (FanOutTally's every-node lists), shared rather than copied. Every
// acquire and release goes to every node: sharing saves each of them a list.
class NodeList {
 public:
  using value_type = std::size_t;
  using const_iterator = std::vector<std::size_t>::const_iterator;
  using iterator = const_iterator;

  NodeList() = default;
  NodeList(std::initializer_list<std::size_t> nodes) : own_(nodes) {}
  static NodeList shared(const std::vector<std::size_t>& nodes) {
    NodeList l;
    l.shared_ = &nodes;
    return l;
  }
  static NodeList copy(const std::vector<std::size_t>& nodes) {
    NodeList l;
    l.own_ = nodes;
    return l;
  }

  void push_back(std::size_t node) {
    if (shared_ != nullptr) {
      own_ = *shared_;
      shared_ = nullptr;
    }
    own_.push_back(node);
  }
  const std::vector<std::size_t>& list() const noexcept {
    return shared_ != nullptr ? *shared_ : own_;
  }
  const_iterator begin() const noexcept { return list().begin(); }
  const_iterator end() const noexcept { return list().end(); }
  bool empty() const noexcept { return list().empty(); }
  std::size_t size() const noexcept { return list().size(); }
  friend bool operator==(const NodeList& a, const NodeList& b) { return a.list() == b.list(); }
  friend bool operator==(const NodeList& a, const std::vector<std::size_t>& b) {
    return a.list() == b;
  }

 private:
  const std::vector<std::size_t>* shared_ = nullptr;
  std::vector<std::size_t> own_;
};

// `job` in Send, ArmTimer and CancelTimer: the acquire job that issued it (AcquireMachine::id()),
// whose on_reply / on_timer the driver calls; 0 for the machine the driver called (a watchdog, an
// extend, a release, the notices). One event may make several jobs act (a notice handed on).
struct Send {
  RequestId id = 0;
  std::uint64_t job = 0;
  std::shared_ptr<const Request> request;  // shared: the driver may keep it until every reply
  NodeList nodes;                          // node indexes, ascending
  bool reply_wanted = true;                // false: a clean-up nobody waits for
  // The `now` of the event that issued it, when the machine was given a reading (an acquire's
  // attempt): the driver may count the replies' latency from it instead of reading the clock
  // again. It is earlier than the send, so a latency counted from it is never too short.
  Clock::time_point issued_at{};
};

struct ArmTimer {
  TimerId id = 0;
  std::uint64_t job = 0;
  Clock::time_point at{};
};

struct CancelTimer {
  TimerId id = 0;
  std::uint64_t job = 0;
};

struct Subscribe {
  std::string channel;
};

struct Unsubscribe {
  std::string channel;
};

// An acquire job began to wait for release notices (once per job, with its first refusal while
// it waits): the driver may tell its host (Config::observer's on_wait). Nothing to carry out.
struct WaitBegan {
  std::uint64_t job = 0;
};

// The end of an acquire job (AcquireMachine): exactly once per job.
struct DeliverAcquire {
  std::uint64_t job = 0;
  AcquireResult result;
};

struct DeliverExtend {
  std::uint64_t op = 0;
  ExtendResult result;
};

struct DeliverRelease {
  std::uint64_t op = 0;
  ReleaseResult result;
};

// A watched lease was renewed: the holder may now believe `valid_until`.
struct Renewed {
  std::uint64_t lease = 0;
  Clock::time_point valid_until{};
};

// A watched lease is lost (Errc::lock_lost, or Errc::shutting_down): the holder must stop.
struct Lost {
  std::uint64_t lease = 0;
  Errc why = Errc::lock_lost;
  bool notify = true;  // false: mark it lost and call nobody (a lease added after shutdown)
  LostReason reason = LostReason::expired;  // why, for Config::observer
};

// A watched lease's renewal was decided (won, refused or too late), whatever follows: news for
// Config::observer's renew operation. Only when the configuration has an observer (the votes
// are copied for it); nothing to carry out.
struct RenewDecided {
  std::uint64_t lease = 0;
  std::error_code error;  // none: renewed
  Votes votes;
  Clock::time_point started{};  // when its call left
};

using Action =
    std::variant<Send, ArmTimer, CancelTimer, Subscribe, Unsubscribe, WaitBegan, DeliverAcquire,
                 DeliverExtend, DeliverRelease, Renewed, Lost, RenewDecided>;

// Where a machine writes its actions, in order.
using Actions = std::vector<Action>;

}  // namespace redlock::detail::proto
