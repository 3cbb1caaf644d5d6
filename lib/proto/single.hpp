// Extend and release: one fan-out each, with their result rules. Pure.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "context.hpp"
#include "fanout.hpp"

namespace redlock::detail::proto {

// The result of an extend whose fan-out is decided at `now`: a won quorum within its validity
// extends the deadline (never past what the quorum guarantees, never shortening `previous`); a
// quorum too late is Errc::validity_expired; a lost one not_held or no_quorum. Either way the
// holder keeps `previous`.
ExtendResult extend_result(const FanOutTally& f, Clock::time_point previous, Milliseconds ttl,
                           double drift_factor, Clock::time_point now);
// The result of a release whose fan-out is decided: released on how many nodes; an error
// (not_held / no_quorum) without a quorum.
ReleaseResult release_result(const FanOutTally& f);
// The same, moving the votes out of a tally nobody asks again (FanOutTally::take_public_votes).
ReleaseResult release_result(FanOutTally&& f);

// Client::extend(): renew.lua for one lock.
class ExtendMachine {
 public:
  ExtendMachine(Context& context, std::uint64_t op, Lock lock, Milliseconds ttl);
  void start(Clock::time_point now, Actions& out);
  void on_reply(RequestId request, std::size_t node, std::vector<NodeVote> votes,
                Clock::time_point now, Actions& out);
  bool finished() const noexcept { return finished_; }

 private:
  Context& ctx_;
  std::uint64_t op_;
  Lock lock_;
  Milliseconds ttl_;
  RequestId id_ = 0;
  std::optional<FanOutTally> tally_;
  bool finished_ = false;
};

// Client::release(): release.lua with the token alone (a real, announced release). It decides
// nothing by the clock: its events' times are never read (a driver may pass any).
class ReleaseMachine {
 public:
  ReleaseMachine(Context& context, std::uint64_t op, Lock lock);
  void start(Clock::time_point now, Actions& out);
  void on_reply(RequestId request, std::size_t node, std::vector<NodeVote> votes,
                Clock::time_point now, Actions& out);
  bool finished() const noexcept { return finished_; }

 private:
  Context& ctx_;
  std::uint64_t op_;
  Lock lock_;
  RequestId id_ = 0;
  std::optional<FanOutTally> tally_;
  bool finished_ = false;
};

}  // namespace redlock::detail::proto
