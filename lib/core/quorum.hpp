// The Redlock decision rules, as pure functions of their inputs.
//
// Nothing here reads a clock, draws a random number or does I/O: callers pass
// the time and the randomness in, so every rule is unit-tested exhaustively.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "redlock/config.hpp"
#include "redlock/errors.hpp"
#include "redlock/lock.hpp"
#include "token.hpp"

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

// The least validity a grant of a lease of `ttl` must have left to be kept
// (Config::min_validity_ratio): ttl * ratio, and never less than 1 ms, so that a grant that
// arrives with nothing left to use is no grant.
inline std::chrono::microseconds least_validity(Milliseconds ttl, double ratio) noexcept {
  auto share = std::chrono::microseconds(static_cast<std::int64_t>(
      static_cast<double>(std::chrono::microseconds(ttl).count()) * (ratio > 0 ? ratio : 0)));
  return std::max<std::chrono::microseconds>(share, Milliseconds(1));
}

// True when more than `least` is left at `now` before `deadline`.
inline bool enough_left(Clock::time_point now, Clock::time_point deadline,
                        std::chrono::microseconds least) noexcept {
  return still_valid(now + least, deadline);
}

// The one validity check of every quorum that grants or prolongs a lock (acquire, extend,
// renewal): the requests left at `sent`, the quorum was complete at `now`. The deadline it
// grants, or nullopt when that deadline has already passed (then the quorum is worth nothing),
// or when no more than `least` is left of it (an acquire's minimum: least_validity).
inline std::optional<Clock::time_point> granted_deadline(
    Clock::time_point sent, Clock::time_point now, Milliseconds ttl, double drift_factor,
    std::chrono::microseconds least = std::chrono::microseconds(0)) noexcept {
  auto deadline = validity_deadline(sent, ttl, drift_factor) - least;
  if (!still_valid(now, deadline)) return std::nullopt;
  return deadline + least;
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

// True when the votes already in show one named holder on a quorum of the nodes: whatever the
// rest say, this is no split vote, and waiting for them would only delay the refusal.
inline bool holder_has_quorum(const std::vector<NodeVote>& votes, std::size_t quorum) {
  std::unordered_map<std::string, std::size_t> by_holder;
  for (const auto& v : votes)
    if (v.vote == Vote::no && !v.holder.empty() && ++by_holder[v.holder] >= quorum) return true;
  return false;
}

// The name acquire.lua gives a holder in its "no" reply, and release.lua in its release notice:
// the first 16 hex digits of the SHA-1 of its token (redis.sha1hex), so that the holder can be
// named without showing its token. A contender computes its own name the same way.
inline std::string token_digest(std::string_view token) {
  auto rotl = [](std::uint32_t x, int n) { return (x << n) | (x >> (32 - n)); };
  std::uint32_t h[5] = {0x67452301u, 0xEFCDAB89u, 0x98BADCFEu, 0x10325476u, 0xC3D2E1F0u};
  std::string m(token);
  std::uint64_t bits = static_cast<std::uint64_t>(m.size()) * 8;
  m.push_back(static_cast<char>(0x80));
  while (m.size() % 64 != 56) m.push_back('\0');
  for (int i = 7; i >= 0; --i) m.push_back(static_cast<char>((bits >> (8 * i)) & 0xff));
  for (std::size_t block = 0; block < m.size(); block += 64) {
    std::uint32_t w[80];
    for (int t = 0; t < 16; ++t) {
      w[t] = 0;
      for (int b = 0; b < 4; ++b)
        w[t] = (w[t] << 8) | static_cast<unsigned char>(m[block + 4 * t + b]);
    }
    for (int t = 16; t < 80; ++t) w[t] = rotl(w[t - 3] ^ w[t - 8] ^ w[t - 14] ^ w[t - 16], 1);
    std::uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
    for (int t = 0; t < 80; ++t) {
      std::uint32_t f, k;
      if (t < 20) {
        f = (b & c) | (~b & d), k = 0x5A827999u;
      } else if (t < 40) {
        f = b ^ c ^ d, k = 0x6ED9EBA1u;
      } else if (t < 60) {
        f = (b & c) | (b & d) | (c & d), k = 0x8F1BBCDCu;
      } else {
        f = b ^ c ^ d, k = 0xCA62C1D6u;
      }
      std::uint32_t next = rotl(a, 5) + f + e + k + w[t];
      e = d, d = c, c = rotl(b, 30), b = a, a = next;
    }
    h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e;
  }
  static const char hex[] = "0123456789abcdef";
  std::string out;
  for (int i = 0; i < 2; ++i)
    for (int shift = 28; shift >= 0; shift -= 4) out.push_back(hex[(h[i] >> shift) & 0xf]);
  return out;
}

// The name the scripts give whatever holds a key, from the key's value (acquire.lua,
// holder_name): a waiter's turn is "turn:" and 11 hex digits of its ticket's digest; a token is
// its digest, read with its mark undone (token.hpp). The client's refusals, `redlock show` and
// `redlock list` name holders so.
inline std::string holder_of_value(std::string_view value) {
  if (is_turn_value(value))
    return "turn:" + token_digest(value.substr(kTurnPrefix.size())).substr(0, 11);
  return token_digest(token_of_value(value));
}

// After a split vote seen whole (every node answered yes or no, each "no" naming its holder, and
// no holder with a quorum), every contender sees the same picture, so all of them can agree on
// one winner without a message: the holder with the smallest name. Names are digests of tokens
// drawn fresh for every attempt, so the winner is a fair draw among the contenders that got a
// node (favouring the one with the most nodes would crown, round after round, the contender that
// asked first: the one that just released, whose next acquire follows its release on every
// connection). True when that is us (`own` is our name, token_digest of our token): we keep our
// keys and ask again only the nodes we lack, while the others clean up. A "no" that names us (one
// server listed under two addresses) is a node we can never win, so it counts for nobody.
// False when the picture is not whole, when we hold nothing, or when a holder has a quorum.
inline bool split_winner(const std::vector<NodeVote>& votes, std::size_t quorum,
                         const std::string& own) {
  std::unordered_map<std::string, std::size_t> by_holder;
  std::size_t mine = 0;
  for (const auto& v : votes) {
    if (v.vote == Vote::yes) {
      ++mine;
    } else if (v.vote == Vote::no && !v.holder.empty()) {
      if (v.holder != own) ++by_holder[v.holder];
    } else {
      return false;  // failed, pending or unnamed: somebody may hold more than we can see
    }
  }
  if (mine == 0 || mine >= quorum) return false;
  for (const auto& [name, count] : by_holder) {
    if (count >= quorum) return false;
    if (name < own) return false;
  }
  return true;
}

// While a split winner asks the nodes it lacks again: keep asking while every node it lacks is
// held by a contender it beat (their clean-ups are on their way) or names us, and while the
// nodes it holds plus those can still make a quorum. A node that names us (one server under
// two addresses) will never say yes: it counts for nothing.
inline bool fill_in_may_win(const std::vector<NodeVote>& votes, std::size_t quorum,
                            const std::vector<std::string>& beaten, const std::string& own) {
  std::size_t reachable = 0;
  for (const auto& v : votes) {
    if (v.vote == Vote::yes) {
      ++reachable;
    } else if (v.vote == Vote::no && v.holder == own) {
      continue;
    } else if (v.vote == Vote::no && !v.holder.empty()) {
      bool loser = false;
      for (const auto& b : beaten) loser = loser || b == v.holder;
      if (!loser) return false;  // somebody new: a real holder, or a contender we never saw
      ++reachable;
    } else {
      return false;
    }
  }
  return reachable >= quorum;
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
