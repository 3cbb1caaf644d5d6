// The client's lane: the blocking calls (acquire, try_acquire, extend, release) driven on the
// caller's own thread, the way the floor does it (docs/proposal-caller-lane.md). One more plain
// connection per node (LaneSocket); the caller runs the same lib/proto machine as the loop would
// (so every rule is the same: fresh tokens, the quorum verdict and the validity window, the
// clean-up of a failed attempt, the quick command and its fallback), writes its Sends at once,
// polls the lane's sockets with the machine's timers and the requests' deadlines as the timeout,
// and feeds it the replies decoded by the same decoders, until its result (a grant, an extend, a
// release: at the verdict, as the floor; the late nodes' replies stay pending on their
// connections and are read by the next calls as they come) or, for a refused acquire, until
// its clean-up was answered.
//
// One caller at a time (a mutex, tried: a second blocking caller uses the loop as before). A call
// takes the lane only when every node's loop session finished its handshake and safeguards, the
// restart guard lets it vote, and it is not TLS; the lane's connection to a node repeats AUTH and
// SELECT and must find the run_id the loop saw. The lane decides before its first Send: a call
// is served by the lane or by the loop, never both. What it hands to the loop:
// - a waiting acquire's rest: the lane runs its first attempt (the quick command) alone; refused,
//   it cleans up on the lane, then returns nullopt and the loop begins the acquire afresh;
// - a release (a clean-up's or the caller's) whose outcome the lane could not learn: the loop
//   sends it again, as it does with its own (its orphans);
// - an extend or a release made while the loop has requests on their way (a grant there returns
//   at its quorum): on the lane's connection it could overtake them on a late node;
// - every call while a node rests (its lane connection timed out or failed to open).
// Held locks (hold(), Mutex), cancel tokens and TLS nodes never come here.
// Nor does a waiting acquire of a permit of a semaphore (AcquireRequest::permits), whose first
// attempt is not the quick command; one that does not wait is served here, its slot hints and
// Errc::permits_mismatch as on the loop (the same machine).
//
// The observer hears a lane call's events on the caller's thread.
#pragma once

#include <poll.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "../net/lane_socket.hpp"
#include "../net/node.hpp"
#include "../proto/acquire.hpp"
#include "../proto/context.hpp"
#include "lost_tokens.hpp"
#include "redlock/client.hpp"

namespace redlock::detail {

// What the lanes of this process did (for tests and diagnostics).
struct LaneCounters {
  std::atomic<std::uint64_t> served{0};  // calls answered on a lane
  std::atomic<std::uint64_t> handed{0};  // waiting acquires refused on a lane, handed to the loop
  std::atomic<std::uint64_t> opened{0};  // lane connections opened
  std::atomic<std::uint64_t> open_failed{0};  // lane connections that failed to open
  std::atomic<std::uint64_t> busy{0};         // calls that found the lane taken, served by the loop
  std::atomic<std::uint64_t> behind{0};       // extends and releases sent after the loop's requests
};
LaneCounters& lane_counters() noexcept;

class Lane {
 public:
  // What the lane hands to the loop (each call posts a task to the loop thread).
  struct Loop {
    // Sends a release of unknown outcome to `node` again.
    std::function<void(std::size_t node, std::shared_ptr<const proto::Request> request)> release;
    // The lane asks `node` to vote for the first time since its session began under the restart
    // guard: the loop's node tells the observer `connected`, as its own first use would.
    std::function<void(std::size_t node)> votes;
    // Any thread: whether the loop found a node that refuses the quick acquire.
    std::function<bool()> quick_acquire_off;
    // The lane found one: the loop's machines stop sending it too.
    std::function<void()> no_quick_acquire;
    // Any thread: whether a request of the loop is still on its way to a node.
    std::function<bool()> in_flight;
  };

  // `nodes`: the loop's data nodes, whose sessions the lane follows (they outlive it). `lost`:
  // the tokens whose loss was reported, shared with the loop (they outlive it too).
  Lane(const Config& config, std::vector<const Node*> nodes, Loop loop, LostTokens& lost);
  ~Lane();
  Lane(const Lane&) = delete;
  Lane& operator=(const Lane&) = delete;

  // A valid request (checked by the caller). nullopt: not served here; the caller uses the loop.
  // A waiting acquire refused here comes back nullopt with `request.wait` cut by the time spent.
  std::optional<AcquireResult> acquire(AcquireRequest& request, Milliseconds ttl);
  std::optional<ExtendResult> extend(const Lock& lock, Milliseconds ttl);
  std::optional<ReleaseResult> release(const Lock& lock);

 private:
  using Clock = std::chrono::steady_clock;
  struct Slot;
  struct Target;
  struct Call;

  // Every node verified by the loop and its lane connection open (opened now if needed).
  bool ready(Clock::time_point now);
  // An extend or a release of `lock` on the lane: the machine `make()` builds, driven to the
  // result it leaves in `call.*result`, reported as `operation`.
  template <class Result, class Make>
  std::optional<Result> one_lock(const Lock& lock, Operation operation,
                                 std::optional<Result> Call::*result, Make make);
  // Drives one machine to its end: its result delivered, nothing of it on its way, every
  // reply read (or its connection closed at its deadline).
  void drive(Call& call, proto::Actions& first);
  bool pending() const;
  // True (and counted) when the loop has requests on their way: an extend or a release then
  // goes to the loop, behind them on each node's connection.
  bool behind_the_loop();
  // Closes node `node`'s lane connection outside a call, with what earlier calls left on it (a
  // reply there must never be matched to a request on the next connection).
  void drop(Slot& s, std::size_t node);
  // The pending replies go to nobody (their operation has its result).
  void forget_pending();
  // The quick acquire's fate, shared with the loop both ways (one client, one answer).
  void learn_quick_acquire();
  void tell_quick_acquire();
  // Reports a lost lock found by an extend or a release, once per token among both paths.
  void found_lost(const Lock& lock, Clock::time_point started, std::error_code error);
  // A node whose lane connection timed out or failed to open: calls go to the loop for a while
  // before the lane tries to open it again (opening one to a paused server costs each call that
  // tries up to the connect or request timeout).
  static void rest(Slot& s, Clock::time_point now);

  const Config& config_;
  Loop loop_;
  std::mutex mutex_;  // tried by each blocking call: held from its first Send to its result
  std::vector<std::unique_ptr<Slot>> slots_;
  std::mt19937_64 rng_;
  std::unique_ptr<proto::Context> proto_;
  std::vector<pollfd> fds_;  // scratch for poll(), kept between calls
  std::vector<std::size_t> fd_slot_;
  proto::Actions first_, out_;  // a call's actions, kept between calls (under mutex_)
  LostTokens& lost_tokens_;
  bool told_quick_off_ = false;  // the loop was told that the quick acquire is off
};

}  // namespace redlock::detail
