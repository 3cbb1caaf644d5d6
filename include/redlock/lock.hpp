/// \file
/// \brief Values that lock operations hand back: the lock itself, per-node votes, and results.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include "redlock/config.hpp"
#include "redlock/errors.hpp"

namespace redlock {

/// The clock of every deadline: monotonic, never the wall clock.
using Clock = std::chrono::steady_clock;

/// \brief A held lock, as far as this client knows.
///
/// A plain value: copy it, store it, pass it to Client::extend() and Client::release(). It can
/// also be rebuilt from a resource and a token (as the CLI does).
struct REDLOCK_API Lock {
  std::vector<std::string> resources;  ///< One or more resource names, without the key prefix.
  std::string token;                   ///< 32 hex digits and a `.`, unique to this grant.
  Clock::time_point valid_until{};     ///< End of the validity window (drift already subtracted).
  Milliseconds ttl{0};                 ///< The lease the lock was last acquired or extended with.
  /// With AcquireRequest::fencing: a number greater than the fencing token of every earlier
  /// fenced grant of the same resource(s), as long as the nodes keep their data (see
  /// docs/safety.md). Pass it to the storage you protect, which rejects writes carrying a lower
  /// one. 0 when fencing was not asked for. Extends keep it.
  std::uint64_t fencing_token = 0;
  /// A permit of a semaphore (AcquireRequest::permits): the slot it holds, 0 to k - 1. -1 for a
  /// mutex. Release, extend and renewal act on that slot's key alone.
  int permit = -1;
  /// A reader of the resource's read-write lock (AcquireRequest::shared); false for a writer or
  /// a mutex. Release, extend and renewal act on the reader's entry alone.
  bool shared = false;

  /// An empty lock: no resource, never valid.
  Lock() = default;
  /// \brief A lock rebuilt from what a holder kept, to extend or release it.
  /// \param resource The resource name, without the key prefix.
  /// \param token_value The token of the grant. valid_until stays in the past.
  Lock(std::string resource, std::string token_value)
      : resources{std::move(resource)}, token(std::move(token_value)) {}

  /// \return The first resource (the only one, for a single-resource lock).
  const std::string& resource() const { return resources.front(); }
  /// \return True while the validity window is open. Local arithmetic, no network.
  bool valid() const noexcept { return Clock::now() < valid_until; }
  /// \return Time left in the validity window (zero when it has closed).
  Milliseconds validity_left() const noexcept;
};

/// \brief How one node answered one operation.
enum class Vote : std::uint8_t {
  pending,  ///< No answer (yet): the verdict was reached without it.
  yes,      ///< The node granted / still held our token.
  no,       ///< The node answered: held by another token, or not ours any more.
  failed,   ///< The node could not answer: down, timed out, or an error reply.
};

/// \param v A vote.
/// \return Its name: "pending", "yes", "no" or "failed".
REDLOCK_API const char* to_string(Vote v) noexcept;

/// \brief One node's vote in an operation, with why and how fast.
struct NodeVote {
  Vote vote = Vote::pending;  ///< The vote.
  /// Why it failed (Vote::failed); for Vote::no, set when the node found something other than a
  /// token under the key (Errc::redis_wrongtype). See docs/errors.md.
  std::error_code error;
  std::string detail;                    ///< The server's error text or the connection error.
  std::chrono::microseconds latency{0};  ///< Request to answer, when it answered.
  /// Acquire, Vote::no: the other holder's ttl left; -1 when unknown (the quick acquire of an
  /// acquire that does not wait, one plain SET, does not ask for it).
  Milliseconds holder_ttl{-1};
  /// Acquire, Vote::no: an opaque name of the other holder (a digest of its token, never the
  /// token), the same on every node it holds: tells a real holder from a split vote. A name
  /// that begins with `turn:` is a free key that is a waiter's turn (docs/guide-waiting.md).
  /// holder_ttl is then what is left of the turn.
  std::string holder;
  /// Acquire with fencing, Vote::yes: this node's fence counter for the grant.
  std::uint64_t fence = 0;
  /// Acquire of a permit (AcquireRequest::permits), Vote::no: a slot this node saw free, which
  /// the next attempt asks for; -1 when none was free.
  int free_permit = -1;
};

/// \brief Per-node votes of the last attempt of an operation, in the order of Config::nodes.
struct REDLOCK_API Votes {
  std::vector<NodeVote> nodes;  ///< One per node, in the order of Config::nodes.
  std::shared_ptr<const std::vector<std::string>> addresses;  ///< "host:port" per node.
  std::size_t quorum = 0;                                     ///< Votes needed: N/2 + 1.

  /// \param v A vote.
  /// \return How many nodes voted `v`.
  std::size_t count(Vote v) const noexcept;
  /// \return How many nodes voted Vote::yes.
  std::size_t yes() const noexcept { return count(Vote::yes); }
  /// \return How many nodes voted Vote::no.
  std::size_t no() const noexcept { return count(Vote::no); }
  /// \return How many nodes voted Vote::failed.
  std::size_t failed() const noexcept { return count(Vote::failed); }
  /// \param i Index of a node, as in #nodes.
  /// \return Its "host:port" (never credentials).
  const std::string& address(std::size_t i) const;
  /// \return One line, e.g. "3/5 yes (quorum 3): 127.0.0.1:7001 yes 0.1ms, 127.0.0.1:7002
  /// failed (request_timeout: ...)".
  std::string to_string() const;
};

/// \brief Common part of every result: an empty #error means success.
///
/// Contention is reported as Errc::not_acquired / Errc::not_held, never thrown.
struct REDLOCK_API Outcome {
  std::error_code error;  ///< Empty on success; an Errc otherwise (docs/errors.md).
  std::string detail;     ///< What was wrong, for errors that no vote explains (a bad argument).
  Votes votes;            ///< Each node's vote in the last attempt.

  /// \return True when #error is empty.
  bool ok() const noexcept { return !error; }
  /// \return ok().
  explicit operator bool() const noexcept { return ok(); }
  /// \return One line for logs: the error and the votes that led to it.
  std::string message() const;
};

/// \brief Result of Client::acquire() and Client::try_acquire().
struct AcquireResult : Outcome {
  Lock lock;         ///< The lock; meaningful when ok().
  int attempts = 0;  ///< Attempts made, including the successful one.
};

/// \brief Result of Client::extend().
struct ExtendResult : Outcome {
  Clock::time_point valid_until{};  ///< The deadline the holder may rely on (never shortened).
};

/// \brief Result of Client::release() and HeldLock::release().
struct ReleaseResult : Outcome {
  std::size_t released = 0;  ///< Nodes on which our token was found and deleted.
};

}  // namespace redlock
