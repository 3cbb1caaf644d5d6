// Renewal of held locks and the lost-lock deadline (the library's watchdog, without its timer):
// renewals falling due together go out as one renew.lua call per node (batches of at most
// max_batch_keys keys, at most max_calls_in_flight calls at once); a lock is never reported held
// past its validity (it is lost a margin before its deadline), and it is lost at once when more
// than N - Q nodes report its token gone. Pure; one timer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "context.hpp"
#include "fanout.hpp"
#include "rules.hpp"

namespace redlock::detail::proto {

// A lease as the watchdog sees it.
struct LeaseInfo {
  std::vector<std::string> keys;
  std::string token;
  Milliseconds ttl{0};
  bool renew = false;                // renewed (hold) or only watched for its deadline
  bool permit = false;               // a permit of a semaphore (Lock::permit)
  bool shared = false;               // a reader of a read-write lock (Lock::shared)
  Clock::time_point valid_until{};   // the deadline the holder believes
  Clock::time_point next_renewal{};  // when to renew next (a granted lock: first_renewal)
};

// The lease of a lock granted at `now` (Coordinator::hold).
LeaseInfo lease_of(const Lock& lock, std::vector<std::string> keys, bool renew,
                   Clock::time_point now);

class WatchdogMachine {
 public:
  static constexpr std::size_t max_batch_keys = 1000;
  static constexpr std::size_t max_calls_in_flight = 2;
  // Renewals not yet due that one timer takes along with those that are (ttl/12 early, so that
  // locks falling due together share a call): enough for the calls that may go at once. Without
  // a bound, a client holding a million locks took a quarter of a million in one timer, and
  // its loop thread did nothing else for longer than a request timeout (docs/performance.md,
  // "Cost at scale").
  static constexpr std::size_t max_early_per_timer = max_batch_keys * max_calls_in_flight;

  explicit WatchdogMachine(Context& context);

  // Starts watching lease `lease` (an id the driver chose, unique among its leases).
  void add(std::uint64_t lease, LeaseInfo info, Clock::time_point now, Actions& out);
  // Stops watching it without a lost signal (it is being released).
  void remove(std::uint64_t lease, Clock::time_point now, Actions& out);
  void on_timer(TimerId timer, Clock::time_point now, Actions& out);
  void on_reply(RequestId request, std::size_t node, std::vector<NodeVote> votes,
                Clock::time_point now, Actions& out);
  // Every watched lease is lost with Errc::shutting_down; later adds are lost at once.
  void shutdown(Clock::time_point now, Actions& out);

  std::size_t size() const noexcept { return leases_.size(); }
  bool watched(std::uint64_t lease) const { return leases_.count(lease) != 0; }
  std::optional<Clock::time_point> valid_until(std::uint64_t lease) const;

  // How long before its deadline a lock is declared lost: timers fire late, never early.
  static Milliseconds margin(Milliseconds ttl);
  static Clock::time_point lost_at(const LeaseInfo& lease);

 private:
  struct Watched {
    LeaseInfo info;
    bool in_flight = false;
    Clock::time_point at{};  // its key in `heap_`
  };
  struct Call {
    std::vector<std::uint64_t> leases;
    FanOutTally tally;
    std::size_t undecided;
  };
  using Batch = std::vector<std::uint64_t>;

  static Clock::time_point next_event(const Watched& w);
  void reschedule(std::uint64_t lease, Watched& w);
  void declare_lost(std::uint64_t lease, Errc code, LostReason reason, Actions& out);
  void renew_in_batches(Batch due, Clock::time_point now, Actions& out);
  void pump(Clock::time_point now, Actions& out);
  void renew(Batch batch, Clock::time_point now, Actions& out);
  void renewed(Call& call, std::size_t item, Clock::time_point now, Actions& out);
  void arm(Actions& out);

  Context& ctx_;
  TimerId timer_;
  std::map<std::uint64_t, Watched> leases_;
  std::set<std::pair<Clock::time_point, std::uint64_t>> heap_;  // next event, lease
  std::deque<Batch> waiting_;
  std::map<RequestId, Call> calls_;
  std::size_t calls_in_flight_ = 0;
  Clock::time_point armed_for_ = Clock::time_point::max();
  bool closed_ = false;
};

}  // namespace redlock::detail::proto
