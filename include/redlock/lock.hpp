// Values that lock operations hand back: the lock itself, per-node votes, and results.
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

using Clock = std::chrono::steady_clock;

// A held lock, as far as this client knows. A plain value: copy it, store it, pass it to
// extend() and release(). It can also be rebuilt from a resource and a token (as the CLI does).
struct Lock {
  std::vector<std::string> resources;  // one or more resource names, without the key prefix
  std::string token;                   // 32 hex digits, unique to this grant
  Clock::time_point valid_until{};     // end of the validity window (drift already subtracted)
  Milliseconds ttl{0};                 // the lease the lock was last acquired or extended with
  // With AcquireRequest::fencing: a number greater than the fencing token of every earlier
  // fenced grant of the same resource(s), as long as the nodes keep their data (see
  // docs/safety.md). Pass it to the storage you protect, which rejects writes carrying a lower
  // one. 0 when fencing was not asked for. Extends keep it.
  std::uint64_t fencing_token = 0;

  Lock() = default;
  Lock(std::string resource, std::string token_value)
      : resources{std::move(resource)}, token(std::move(token_value)) {}

  const std::string& resource() const { return resources.front(); }
  // True while the validity window is open. Local arithmetic, no network.
  bool valid() const noexcept { return Clock::now() < valid_until; }
  // Time left in the validity window (zero when it has closed).
  Milliseconds validity_left() const noexcept;
};

enum class Vote : std::uint8_t {
  pending,  // no answer (yet): the verdict was reached without it
  yes,      // the node granted / still held our token
  no,       // the node answered: held by another token, or not ours any more
  failed,   // the node could not answer: down, timed out, or an error reply
};

const char* to_string(Vote v) noexcept;

struct NodeVote {
  Vote vote = Vote::pending;
  // Why it failed (Vote::failed); for Vote::no, set when the node found something other than a
  // token under the key (Errc::redis_wrongtype).
  std::error_code error;
  std::string detail;                    // the server's error text or the connection error
  std::chrono::microseconds latency{0};  // request to answer, when it answered
  Milliseconds holder_ttl{-1};           // acquire, Vote::no: the other holder's remaining ttl
  // Acquire, Vote::no: an opaque name of the other holder (a digest of its token, never the
  // token), the same on every node it holds: tells a real holder from a split vote.
  std::string holder;
  // Acquire with fencing, Vote::yes: this node's fence counter for the grant.
  std::uint64_t fence = 0;
};

// Per-node votes of the last attempt of an operation, in the order of Config::nodes.
struct Votes {
  std::vector<NodeVote> nodes;
  std::shared_ptr<const std::vector<std::string>> addresses;  // "host:port" per node
  std::size_t quorum = 0;

  std::size_t count(Vote v) const noexcept;
  std::size_t yes() const noexcept { return count(Vote::yes); }
  std::size_t no() const noexcept { return count(Vote::no); }
  std::size_t failed() const noexcept { return count(Vote::failed); }
  const std::string& address(std::size_t i) const;
  // "3/5 yes (quorum 3): 127.0.0.1:7001 yes 0.1ms, 127.0.0.1:7002 failed (request_timeout: ...)"
  std::string to_string() const;
};

// Common part of every result: empty `error` means success. Contention is reported as
// Errc::not_acquired / Errc::not_held, never thrown.
struct Outcome {
  std::error_code error;
  std::string detail;  // what was wrong, for errors that no vote explains (a bad argument)
  Votes votes;

  bool ok() const noexcept { return !error; }
  explicit operator bool() const noexcept { return ok(); }
  // One line for logs: the error and the votes that led to it.
  std::string message() const;
};

struct AcquireResult : Outcome {
  Lock lock;         // meaningful when ok()
  int attempts = 0;  // attempts made, including the successful one
};

struct ExtendResult : Outcome {
  Clock::time_point valid_until{};  // the deadline the holder may rely on (never shortened)
};

struct ReleaseResult : Outcome {
  std::size_t released = 0;  // nodes on which our token was found and deleted
};

}  // namespace redlock
