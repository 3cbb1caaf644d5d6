// The acquire job's rules that used to live inline in lib/net's AcquireJob, each a named pure
// function in the style of lib/core/quorum.hpp: time and randomness passed in.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include "../core/keys.hpp"
#include "../core/quorum.hpp"

namespace redlock::detail::proto {

// The holder name acquire.lua gives a free key that is a waiter's turn ("turn:<digest>").
inline bool is_turn(const std::string& holder) { return holder.rfind("turn:", 0) == 0; }

// An acquire of one key without fencing is one plain command (SET NX PX GET) instead of the
// script, while no node has refused that command's form: always for one that does not wait, and
// for one that waits on its first attempt (`first`), before it stands in line. The command takes
// only a key that is free and holds no waiter's turn (acquire.lua, TURN), so it passes nobody who
// is served in turn; a waiter it refuses asks again at once through the script, which puts it in
// line (AcquireMachine::attempt_failed).
inline bool quick_acquire_applies(bool waits, bool first, bool fencing, std::size_t keys,
                                  bool quick_acquire_works) noexcept {
  return (!waits || first) && !fencing && keys == 1 && quick_acquire_works;
}

// The nodes a failed attempt's clean-up may leave out, when the attempt sent each node one acquire
// round only: those that refused it hold nothing of its token (the script answers "no" before it
// writes anything, and every attempt has a token of its own). A "no" that names our own token
// (`own`, its digest) is a server asked twice under two addresses: that key is ours.
inline std::vector<bool> cleanup_spared(const std::vector<NodeVote>& votes,
                                        const std::string& own) {
  std::vector<bool> spare(votes.size(), false);
  for (std::size_t i = 0; i < votes.size(); ++i)
    spare[i] = votes[i].vote == Vote::no && votes[i].holder != own;
  return spare;
}

// Before a refused first round may make us a split winner: no "no" names a waiter's turn (nobody's
// key to release) and none names a holder the previous attempt met too (`last_names`: a key
// nobody releases).
inline bool split_to_settle(const std::vector<NodeVote>& votes,
                            const std::vector<std::string>& last_names) {
  for (const auto& v : votes) {
    if (v.vote != Vote::no) continue;
    if (is_turn(v.holder)) return false;
    if (std::find(last_names.begin(), last_names.end(), v.holder) != last_names.end()) return false;
  }
  return true;
}

// After a failed attempt: did it find no quorum of reachable nodes? A node kept out by the restart
// guard is not unreachable: it will vote at a known time. More than Config::retry_count such
// attempts in a row end the job.
inline bool unreachable_round(std::error_code error, const std::vector<NodeVote>& votes) {
  bool restarting = std::any_of(votes.begin(), votes.end(),
                                [](const NodeVote& v) { return v.error == Errc::node_restarting; });
  return error == Errc::no_quorum && !restarting;
}

// A split vote: contenders each hold some nodes, none can hold a quorum, and each is releasing
// what it got. Only when this attempt got some yes, for one resource (the script names only the
// first conflicting key's holder), and when no holder named now was named by the previous
// attempt too (tokens are fresh every attempt: a name seen twice is a key nobody releases, worth
// waiting for) and none is a waiter's turn. Replaces `last_names` with the names of this attempt.
inline bool split_suspected(const std::vector<NodeVote>& votes, std::size_t quorum,
                            std::size_t keys, std::vector<std::string>& last_names) {
  std::vector<std::string> names;
  std::size_t yes = 0;
  for (const auto& v : votes) {
    if (v.vote == Vote::yes) ++yes;
    if (v.vote == Vote::no && !v.holder.empty()) names.push_back(v.holder);
  }
  bool persistent = false;
  for (const auto& n : names)
    persistent = persistent || is_turn(n) ||
                 std::find(last_names.begin(), last_names.end(), n) != last_names.end();
  last_names = std::move(names);
  return yes > 0 && keys == 1 && !persistent && !held_elsewhere(votes, quorum);
}

// A refused waiter's fallback when a notice is lost: no later than the holder's lease runs out
// (plus 1 ms), but not when a waiter's turn ends if we stand in line ourselves (then we are told
// when ours comes).
inline Milliseconds waiter_fallback(Milliseconds delay, const std::vector<NodeVote>& votes,
                                    bool in_line) {
  using namespace std::chrono_literals;
  for (const auto& v : votes)
    if (v.vote == Vote::no && v.holder_ttl.count() >= 0 && v.holder_ttl + 1ms < delay &&
        (!in_line || !is_turn(v.holder)))
      delay = v.holder_ttl + 1ms;
  return delay;
}

// A waiter for several keys asks again at least every kSignUpRefresh, so that its sign-ups (kept
// kSignUpLife on the nodes past its latest refused attempt) never lapse while it waits.
inline Milliseconds sign_up_refresh(Milliseconds delay, bool waits, std::size_t keys) noexcept {
  if (waits && keys > 1 && delay > kSignUpRefresh) delay = kSignUpRefresh;
  return delay;
}

// The slot the next attempt at a permit of a semaphore of `permits` asks for
// (docs/guide-semaphore.md): the free slot that most nodes of the refused attempt named
// (NodeVote::free_permit), ties drawn at random; with no hint, a slot drawn at random, so that
// acquirers spread over the slots. `random` a uniform draw.
inline unsigned next_permit_slot(const std::vector<NodeVote>& votes, unsigned permits,
                                 std::uint64_t random) {
  if (permits == 0) return 0;
  std::vector<unsigned> hints(permits, 0);
  unsigned best = 0;
  for (const auto& v : votes)
    if (v.vote == Vote::no && v.free_permit >= 0 && static_cast<unsigned>(v.free_permit) < permits)
      best = std::max(best, ++hints[static_cast<unsigned>(v.free_permit)]);
  if (best == 0) return static_cast<unsigned>(random % permits);
  unsigned ties = 0;
  for (auto h : hints) ties += h == best ? 1 : 0;
  auto pick = random % ties;
  for (unsigned slot = 0; slot < permits; ++slot)
    if (hints[slot] == best && pick-- == 0) return slot;
  return 0;  // not reached
}

// True when a refused attempt at a permit was told of a free slot: the next asks at once.
inline bool permit_hinted(const std::vector<NodeVote>& votes) {
  for (const auto& v : votes)
    if (v.vote == Vote::no && v.free_permit >= 0) return true;
  return false;
}

// How long the nodes keep the queue for a waiter: the rest of its wait and a lease (a waiter that
// stops without a word is forgotten by then), at most an hour, at least 1 ms.
inline Milliseconds line_keep(std::optional<Clock::time_point> deadline, Clock::time_point now,
                              Milliseconds ttl) {
  Milliseconds keep = std::chrono::hours(1);
  if (deadline) keep = std::min(keep, std::chrono::ceil<Milliseconds>(*deadline - now) + ttl);
  return std::max(keep, Milliseconds(1));
}

// A renewal is refused for good when more than N - Q nodes say our token is gone: fewer than a
// quorum can still hold it, so the lock is lost at once, whatever its deadline.
inline bool renewal_refused(const Tally& t) noexcept { return t.no > t.nodes - t.quorum(); }

// How long before its deadline a held lock is declared lost (the watchdog gives up): timers fire
// late, never early. A twentieth of the ttl, between 2 and 100 ms.
inline Milliseconds lost_margin(Milliseconds ttl) {
  return std::clamp(ttl / 20, Milliseconds(2), Milliseconds(100));
}

// When a lock just granted (or watched) is first renewed: after a third of its ttl, as every
// renewal after it, but never later than halfway to the moment the watchdog would give it up
// (its deadline less lost_margin). A grant may come back with little of its ttl left (down to
// Config::min_validity_ratio): renewed only after a third of the ttl, it would be declared lost
// with its keys intact on every node; renewed halfway to its deadline, its renewal would have
// only the margin's half for its round trip.
inline Clock::time_point first_renewal(Clock::time_point now, Clock::time_point valid_until,
                                       Milliseconds ttl) {
  auto give_up = valid_until - lost_margin(ttl);
  return std::min(now + ttl / 3, std::max(now, now + (give_up - now) / 2));
}

// After a renewal that found no quorum (nodes down or slow): try again after a quarter of the
// validity left, at least 5 ms, at most a tenth of the ttl (or 5 ms).
inline Milliseconds renewal_retry(Clock::duration left, Milliseconds ttl) {
  using namespace std::chrono_literals;
  auto retry = std::chrono::duration_cast<Milliseconds>(left / 4);
  return std::clamp(retry, Milliseconds(5), std::max(ttl / 10, Milliseconds(5)));
}

}  // namespace redlock::detail::proto
