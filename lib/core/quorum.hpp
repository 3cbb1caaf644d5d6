// The Redlock decision rules, as pure functions of their inputs.
//
// Nothing here reads a clock, draws a random number or does I/O: callers pass
// the time and the randomness in, so every rule is unit-tested exhaustively.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "redlock/config.hpp"
#include "redlock/errors.hpp"
#include "redlock/lock.hpp"

namespace redlock::detail {

using Clock = std::chrono::steady_clock;

// Majority of n nodes.
constexpr std::size_t quorum_size(std::size_t n) noexcept { return n / 2 + 1; }

enum class Verdict { pending, won, lost };

// Votes gathered so far for one fan-out to n nodes.
struct Tally {
  std::size_t nodes = 0;
  std::size_t yes = 0;
  std::size_t no = 0;      // the node answered: held by another token / not ours
  std::size_t failed = 0;  // the node did not answer usefully (down, timeout, error reply)

  std::size_t quorum() const noexcept { return quorum_size(nodes); }
  // Known as soon as Q said yes (won) or more than N - Q said no or failed (lost).
  Verdict verdict() const noexcept {
    if (yes >= quorum()) return Verdict::won;
    if (no + failed > nodes - quorum()) return Verdict::lost;
    return Verdict::pending;
  }
  // Why a lost fan-out was lost: no_quorum when fewer than Q nodes could answer at all,
  // otherwise `contended` (not_acquired for acquire, not_held for extend/release).
  Errc loss_reason(Errc contended) const noexcept {
    return failed > nodes - quorum() ? Errc::no_quorum : contended;
  }
};

// End of the validity window of a lock whose requests left at t0:
// t0 + ttl - (ttl * drift_factor + 2 ms).
inline Clock::time_point validity_deadline(Clock::time_point t0, Milliseconds ttl,
                                           double drift_factor) noexcept {
  return t0 + ttl - drift_allowance(ttl, drift_factor);
}

// A won quorum counts only if it arrived strictly before the deadline.
inline bool still_valid(Clock::time_point now, Clock::time_point deadline) noexcept {
  return now < deadline;
}

// The one validity check of every quorum that grants or prolongs a lock (acquire, extend,
// renewal): the requests left at `sent`, the quorum was complete at `now`. The deadline it
// grants, or nullopt when that deadline has already passed (then the quorum is worth nothing).
inline std::optional<Clock::time_point> granted_deadline(Clock::time_point sent,
                                                         Clock::time_point now, Milliseconds ttl,
                                                         double drift_factor) noexcept {
  auto deadline = validity_deadline(sent, ttl, drift_factor);
  if (!still_valid(now, deadline)) return std::nullopt;
  return deadline;
}

// The deadline a holder may believe after an extend or a renewal. The extend script never
// shortens a key's ttl on a node (it only raises it), so the keys that guaranteed `previous`
// still guarantee it whatever the extend did on each node (granted, refused, or reached only
// some); a won extend adds its own guarantee `fresh`. So: the later of the two. A failed extend
// keeps `previous`.
inline Clock::time_point extended_deadline(Clock::time_point previous,
                                           std::optional<Clock::time_point> fresh) noexcept {
  return fresh && *fresh > previous ? *fresh : previous;
}

// After a refused acquire: could some other holder hold a quorum of the nodes? Counts, for each
// holder named by a "no" vote, the nodes that named it, and adds every node that named nobody
// (failed, not heard from, or a "no" without a name), since any of those may hold it too.
// False means a split vote: contenders each hold some nodes and none holds a quorum, so nobody
// will publish a release; waiting for a release notice would only wait for the fallback.
inline bool held_elsewhere(const std::vector<NodeVote>& votes, std::size_t quorum) {
  std::unordered_map<std::string, std::size_t> by_holder;
  std::size_t unnamed = 0, best = 0;
  for (const auto& v : votes) {
    if (v.vote == Vote::yes) continue;
    if (v.vote == Vote::no && !v.holder.empty())
      best = std::max(best, ++by_holder[v.holder]);
    else
      ++unnamed;
  }
  return best + unnamed >= quorum;
}

// The fencing token of a won fenced acquire: the highest fence counter among the nodes that
// granted. Any quorum of them meets the write-back quorum of every earlier fenced grant in a node
// whose counter was already raised to that grant's token before our INCR, so the highest of ours
// is greater than every earlier token (docs/safety.md).
inline std::uint64_t fencing_token_of(const std::vector<NodeVote>& votes) noexcept {
  std::uint64_t token = 0;
  for (const auto& v : votes)
    if (v.vote == Vote::yes && v.fence > token) token = v.fence;
  return token;
}

// Delay before retrying after a split vote. Every contender released what it got, so the nodes
// are free again within a round trip; contenders that were closer to a quorum retry first (one
// step of `unit` per missing vote), with a random spread that doubles with every split in a row
// so that the next round tends to have one winner, capped at `cap`.
inline Milliseconds split_backoff(std::size_t yes, std::size_t quorum, int splits_in_a_row,
                                  Milliseconds unit, Milliseconds cap,
                                  std::uint64_t random) noexcept {
  auto missing = quorum > yes ? quorum - yes : 1;
  auto rank = unit * static_cast<std::int64_t>(missing - 1);
  auto window = unit;
  for (int i = 1; i < splits_in_a_row && window < cap; ++i) window *= 2;
  auto span = static_cast<std::uint64_t>(window.count()) + 1;
  auto d = rank + Milliseconds(static_cast<std::int64_t>(random % span));
  return d < cap ? d : cap;
}

// Delay before the next acquire attempt: base + uniform[0, jitter], from a random draw.
inline Milliseconds retry_delay(Milliseconds base, Milliseconds jitter,
                                std::uint64_t random) noexcept {
  auto span = static_cast<std::uint64_t>(jitter.count()) + 1;
  return base + Milliseconds(static_cast<std::int64_t>(random % span));
}

// When the next attempt may start, or nullopt when the caller's budget is spent.
// `attempts` is how many attempts were made; `max_attempts` of 0 means "bounded by the
// deadline only". An attempt is started only when it can still finish before the deadline
// is reached by its start time.
inline std::optional<Clock::time_point> next_attempt(Clock::time_point now,
                                                     std::optional<Clock::time_point> deadline,
                                                     int attempts, int max_attempts,
                                                     Milliseconds delay) noexcept {
  if (max_attempts > 0 && attempts >= max_attempts) return std::nullopt;
  auto at = now + delay;
  if (deadline) {
    if (now >= *deadline) return std::nullopt;
    if (at >= *deadline) at = *deadline - std::chrono::microseconds(1);
    if (at < now) at = now;
  }
  return at;
}

// Reconnect back-off: min * 2^failures capped at max, then a uniform draw in [half, full].
inline Milliseconds reconnect_backoff(int failures, Milliseconds min, Milliseconds max,
                                      std::uint64_t random) noexcept {
  auto d = min;
  for (int i = 0; i < failures && d < max; ++i) d *= 2;
  if (d > max) d = max;
  auto half = d / 2;
  auto span = static_cast<std::uint64_t>((d - half).count()) + 1;
  return half + Milliseconds(static_cast<std::int64_t>(random % span));
}

}  // namespace redlock::detail
