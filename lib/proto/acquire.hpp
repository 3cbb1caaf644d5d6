// One acquire job as a state machine (what lib/net's AcquireJob decides, without its I/O):
// attempts with a fresh token each, the quick acquire, the quorum verdict and validity, the split
// vote's fill-in rounds, the clean-up of a failed attempt, retries with jitter and back-off,
// waiting for release notices and turns (tickets and places for one-key waiters), leaving the
// line, cancel, and the fencing write-back round. Pure: `now` comes with every event, tokens and
// jitter from the Context.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "../core/recycled.hpp"
#include "context.hpp"
#include "fanout.hpp"
#include "redlock/client.hpp"
#include "rules.hpp"
#include "scripts.hpp"

namespace redlock::detail::proto {

class AcquireMachine final : public Waiter {
 public:
  // A split winner asks the nodes it lacks again at most this often in a row, and waits this
  // unit per missing vote between contenders' retries when the picture was whole.
  static constexpr int kMaxFills = 4;
  static constexpr Milliseconds kWinnerUnit{5};

  // `request.cancel` is the driver's (it calls cancel()); `ttl` the lease (request.ttl or the
  // configured one); `place` a waiter's place in line: microseconds since the epoch on the wall
  // clock when it began to wait (the same number on every node). The job registers with the
  // Context under id().
  AcquireMachine(Context& context, const AcquireRequest& request, Milliseconds ttl,
                 Clock::time_point now, std::int64_t place);
  // The same, taking the request's resources rather than copying them (the rest is read only).
  AcquireMachine(Context& context, AcquireRequest&& request, Milliseconds ttl,
                 Clock::time_point now, std::int64_t place);
  ~AcquireMachine();
  AcquireMachine(const AcquireMachine&) = delete;
  AcquireMachine& operator=(const AcquireMachine&) = delete;

  std::uint64_t id() const noexcept { return id_; }
  const std::vector<std::string>& resources() const noexcept { return resources_; }
  // The first attempt.
  void start(Clock::time_point now, Actions& out);
  // A node's votes for a request of this job.
  void on_reply(RequestId request, std::size_t node, std::vector<NodeVote> votes,
                Clock::time_point now, Actions& out);
  void on_timer(TimerId timer, Clock::time_point now, Actions& out);
  // Cancel token or shutdown (Errc::cancelled / Errc::shutting_down): ends the job now, or, with
  // an attempt on its way, when it is answered (after its clean-up). Before start(): at once.
  void cancel(Errc why, Clock::time_point now, Actions& out);

  // Waiter (Notices).
  bool wake(const std::string* channel, Clock::time_point now, Actions& out) override;
  bool busy() const override { return in_attempt_; }
  const std::string& ticket() const override { return ticket_; }
  bool in_line() const override { return !ticket_.empty() && keys_.size() == 1; }

  // The result was delivered.
  bool finished() const noexcept { return finished_; }
  // Finished and nothing of it is on its way that it still has to answer: the driver may drop it.
  bool done() const noexcept { return finished_ && live_.empty(); }
  // The token of the current attempt.
  const std::string& token() const noexcept { return token_; }
  int attempts() const noexcept { return attempts_; }
  // A permit of a semaphore: its number of permits (AcquireRequest::permits); 0 for a mutex.
  unsigned permits() const noexcept { return permits_; }
  // A reader of a read-write lock (AcquireRequest::shared).
  bool shared() const noexcept { return shared_; }

 private:
  // `resources`: the request's, copied or moved in; request.resources is not read.
  AcquireMachine(Context& context, const AcquireRequest& request,
                 std::vector<std::string> resources, Milliseconds ttl, Clock::time_point now,
                 std::int64_t place);
  enum class Round { acquire, fence };
  // What to do once every node of a round answered.
  enum class Settle {
    none,
    judge,             // a refusal that may be a split vote: judge it on the whole picture
    leave_if_refused,  // a waiter granted: leave the line where a late vote refused it
  };
  struct Live {
    Live(Round r, FanOutTally t) : round(r), tally(std::move(t)) {}
    Round round = Round::acquire;
    FanOutTally tally;         // in the map's node: stays put until the entry is erased
    bool quick = false;        // the quick acquire: the script is its fallback (built when needed)
    Clock::time_point sent{};  // when it went out (the fallback's line_kept)
    std::shared_ptr<const Request> fallback;  // the script, once a node refused the command
    Settle settle = Settle::none;
    AcquireResult granted;  // the fence round: the grant it writes back
  };

  void attempt(const std::string* notice, Clock::time_point now, Actions& out);
  void send_acquire(const std::vector<NodeVote>* known, Clock::time_point now, Actions& out);
  void on_decided(RequestId id, Clock::time_point now, Actions& out);
  void after_decided(RequestId id, bool decided, Clock::time_point now, Actions& out);
  void on_settled(RequestId id, Clock::time_point now, Actions& out);
  bool may_be_split(const FanOutTally& f) const;
  void on_attempt(RequestId id, Clock::time_point now, Actions& out);
  void write_back(AcquireResult granted, Clock::time_point now, Actions& out);
  void on_fenced(RequestId id, Clock::time_point now, Actions& out);
  bool keep_going(const AcquireResult& r, Clock::time_point now, Actions& out);
  void fill_in(Clock::time_point now, Actions& out);
  void attempt_failed(AcquireResult r, Clock::time_point now, Actions& out, bool one_round = false);
  bool looks_split(const Votes& votes);
  void listen(Actions& out);
  Milliseconds line_kept(Clock::time_point now) const;
  void finish(AcquireResult r, Clock::time_point now, Actions& out);
  void clean_up(const std::vector<std::string>& keys, const std::string& token, const Line* line,
                const std::vector<bool>* spare, Actions& out);
  void leave_waiting(Actions& out);
  std::chrono::microseconds least_validity() const;
  void arm(Clock::time_point at, Actions& out);
  const std::string& digest();
  // The keys whose releases it listens for and whose line or sign-ups it stands in: its keys,
  // or a permit's semaphore's lock key.
  const std::vector<std::string>& waits_on() const noexcept {
    return permits_ > 0 ? semaphore_ : keys_;
  }
  void ask_slot(unsigned slot);

  Context& ctx_;
  std::uint64_t id_;
  std::vector<std::string> resources_;
  std::vector<std::string> keys_;
  std::string token_;
  std::string ticket_;  // a waiter: its name in the key's queue (one key) or sign-ups (several)
  std::string place_;   // and its place in the queue
  Milliseconds ttl_;
  bool fencing_ = false;
  bool shared_ = false;  // a reader of a read-write lock (AcquireRequest::shared)
  int max_attempts_ = 1;
  bool waits_ = false;
  std::optional<Clock::time_point> deadline_;
  bool started_ = false;
  int attempts_ = 0;
  int unreachable_ = 0;
  int splits_ = 0;
  std::vector<std::string> last_names_;
  bool in_attempt_ = false;
  bool woken_ = false;
  bool quick_ = false;  // the latest round sent the quick command
  bool noticed_ = false;
  std::string notice_;
  bool fill_pending_ = false;
  bool listening_ = false;
  bool waited_ = false;  // it began to wait (WaitBegan went out)
  bool kept_ = false;
  Clock::time_point round_start_{};
  std::string digest_;
  std::vector<std::string> beaten_;
  Votes kept_votes_;
  int fills_in_a_row_ = 0;
  int fills_ = 0;
  int freed_in_a_row_ = 0;
  bool finished_ = false;
  std::optional<Errc> stop_reason_;
  Votes last_votes_;
  TimerId timer_;
  enum class Timed { none, attempt, fill_in } timed_ = Timed::none;
  RequestId current_ = 0;  // the acquire or fence round in flight
  // Fan-outs whose replies still matter (one entry per acquire: its node is recycled).
  std::map<RequestId, Live, std::less<RequestId>,
           RecyclingAllocator<std::pair<const RequestId, Live>>>
      live_;
  std::map<RequestId, RequestId> via_;  // a fallback request's id -> its fan-out's id
  // A permit of a semaphore (AcquireRequest::permits): k, the slot keys, the semaphore's lock key
  // (as a list of one, waits_on), the slot the attempt asks for (keys_ is its key) and how many
  // attempts in a row went at once to a slot that nodes named free.
  unsigned permits_ = 0;
  std::vector<std::string> slot_keys_;
  std::vector<std::string> semaphore_;
  int noticed_slot_ = -1;  // the slot of a turn we were told of, for the next attempt
  unsigned slot_ = 0;
  int hinted_in_a_row_ = 0;
};

}  // namespace redlock::detail::proto
