/// \file
/// \brief The client: one per process (or per set of nodes), shared by all threads.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "redlock/config.hpp"
#include "redlock/errors.hpp"
#include "redlock/held_lock.hpp"
#include "redlock/lock.hpp"

namespace redlock {

/// A wait without end (AcquireRequest::wait): until acquired, cancelled, or the nodes stay
/// unreachable.
inline constexpr Milliseconds forever = Milliseconds::max();

/// \brief What to acquire and how long to try.
struct AcquireRequest {
  /// An empty request: set #resources before use.
  AcquireRequest() = default;
  /// \param resources_ The resources (#resources).
  /// \param ttl_ The lease (#ttl); unset: Config::ttl.
  /// \param wait_ How long to try (#wait); unset: Config::retry_count retries.
  AcquireRequest(std::vector<std::string> resources_, std::optional<Milliseconds> ttl_ = {},
                 std::optional<Milliseconds> wait_ = {})
      : resources(std::move(resources_)), ttl(ttl_), wait(wait_) {}

  /// One or more resource names; several are locked all-or-nothing per node.
  std::vector<std::string> resources;
  std::optional<Milliseconds> ttl;  ///< Lease; default Config::ttl; must be positive.
  /// How long to keep trying while the lock is taken by someone else or quorum is missing:
  /// - nullopt: 1 + Config::retry_count attempts, Config::retry_delay + jitter apart;
  /// - 0: exactly one attempt (try-lock);
  /// - more: wait until this much time has passed (or #forever). While the lock is taken, the
  ///   waiter sleeps until a release notice arrives (one subscriber connection per node per
  ///   client), with a back-off bounded by the holder's ttl as a fallback.
  ///
  /// Whatever the wait, more than Config::retry_count consecutive attempts that find no quorum
  /// of nodes reachable end it with Errc::no_quorum.
  std::optional<Milliseconds> wait;
  /// Ends the wait early with Errc::cancelled (optional).
  std::optional<CancelToken> cancel;
  /// Give the lock a fencing token (Lock::fencing_token). Costs one more parallel round trip per
  /// grant (the token is written back to a quorum before it is handed out); plain locks pay
  /// nothing for it.
  bool fencing = false;
  /// A permit of a counting semaphore instead of a mutex (docs/guide-semaphore.md): at most this
  /// many holders of the one resource at once, each with a permit (Lock::permit). 0: a mutex.
  /// At most #max_permits; one resource only. Every client of one semaphore gives the same
  /// number: an acquire with another number while a permit of the first is held or waited for
  /// ends with Errc::permits_mismatch.
  unsigned permits = 0;
  /// The largest #permits.
  static constexpr unsigned max_permits = 1024;
  /// A reader of the resource's read-write lock (docs/proposal-kinds.md, "The read-write lock";
  /// redlock::SharedMutex): readers share it with each other, never with a writer. A writer is
  /// any other acquire of the resource (a mutex). One resource only, and not with #permits
  /// (Errc::invalid_argument otherwise). Waiting readers and writers stand in one line: a
  /// waiting writer holds back readers that come after it (Lock::shared).
  bool shared = false;
};

/// \brief Health of one node, as `redlock status` prints it.
struct NodeStatus {
  std::string address;  ///< "host:port" (never credentials).
  /// True when the node answered, and accepted a write probe that changes nothing: it can vote
  /// (a node at maxmemory with noeviction, or whose ACL denies a write, answers but cannot).
  bool up = false;
  /// True when the node answered INFO (its connection is in session), whether or not it can vote.
  bool answered = false;
  std::chrono::microseconds round_trip{0};  ///< Request to answer, when it answered.
  std::string server_version;               ///< The server's `redis_version`, when it answered.
  std::error_code error;                    ///< Why it did not answer (docs/errors.md).
  std::string detail;                       ///< The server's error text or the connection error.
  /// What the restart safeguards warned about the node (e.g. persistence), each once.
  std::vector<std::string> warnings;
};

/// \brief A connection to the N nodes, and every lock operation on them.
///
/// One libuv loop thread per Client owns every connection and timer; the public API is
/// thread-safe and hands work to that thread. Callbacks run on it.
class REDLOCK_API Client {
 public:
  /// Receives the result of acquire_async().
  using AcquireCallback = std::function<void(AcquireResult)>;
  /// Receives the result of extend_async().
  using ExtendCallback = std::function<void(ExtendResult)>;
  /// Receives the result of release_async().
  using ReleaseCallback = std::function<void(ReleaseResult)>;
  /// Receives the result of status_async(): one entry per node, in the order of Config::nodes.
  using StatusCallback = std::function<void(std::vector<NodeStatus>)>;

  /// \brief Validates the configuration, starts the loop thread and begins connecting to every
  /// node. Never blocks on the network.
  /// \param config The nodes and options.
  /// \throws redlock::Error with Errc::invalid_config naming the bad part.
  explicit Client(Config config);
  /// Stops the loop: pending asynchronous operations complete with Errc::shutting_down.
  /// Locks are not released (they expire with their TTL). Never throws. May be called from one
  /// of the client's own callbacks: the stop then completes on another thread once that callback
  /// has returned (do not touch the Client after destroying it).
  ~Client();

  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  /// \return The configuration, as validated.
  const Config& config() const noexcept;

  /// \name Blocking calls
  /// Callable from any thread except the client's own loop thread (there they return
  /// Errc::would_deadlock). They never throw for network or contention outcomes.
  /// \{

  /// \brief One attempt, with the lease Config::ttl.
  /// \param resource The resource name, without the key prefix.
  /// \return The lock, or why not (Errc::not_acquired under contention).
  AcquireResult try_acquire(std::string_view resource);
  /// \brief One attempt.
  /// \param resource The resource name, without the key prefix.
  /// \param ttl The lease.
  /// \return The lock, or why not (Errc::not_acquired under contention).
  AcquireResult try_acquire(std::string_view resource, Milliseconds ttl);
  /// \brief Tries until `wait` has passed, sleeping until release notices.
  /// \param resource The resource name, without the key prefix.
  /// \param ttl The lease.
  /// \param wait How long to try (AcquireRequest::wait; #forever for no end).
  /// \return The lock, or why not.
  AcquireResult acquire(std::string_view resource, Milliseconds ttl, Milliseconds wait);
  /// \brief The general form: several resources, fencing, cancellation.
  /// \param request What to acquire and how long to try.
  /// \return The lock, or why not. A grant whose validity ended before this call could return
  ///         it (the calling thread was descheduled that long) is released and reported as
  ///         Errc::validity_expired: no blocking acquire returns a lock that is not valid().
  AcquireResult acquire(AcquireRequest request);
  /// \brief Extends by the lock's own ttl (compare-and-pexpire on every node).
  /// \param lock On success its valid_until is updated; on failure it is left as it was.
  /// \return The deadline the holder may rely on, or why not (Errc::not_held).
  ExtendResult extend(Lock& lock);
  /// \brief Extends to a new lease (compare-and-pexpire on every node; never shortens a key).
  /// \param lock On success its valid_until and ttl are updated; on failure they are left as
  /// they were.
  /// \param ttl The new lease, counted from now.
  /// \return The deadline the holder may rely on, or why not (Errc::not_held).
  ExtendResult extend(Lock& lock, Milliseconds ttl);
  /// \brief Compare-and-delete on every node.
  /// \param lock The lock (its resources and token).
  /// \return How many nodes still held it; Errc::not_held when fewer than a quorum did.
  ReleaseResult release(const Lock& lock);
  /// \return Each node's health, in the order of Config::nodes (empty when called on the
  /// loop thread).
  std::vector<NodeStatus> status();

  /// \brief Acquires and keeps alive: with request.ttl unset the lease is
  /// Config::watchdog_lease and is renewed every lease/3, renewals of all held locks batched
  /// into one call per node.
  /// \param request What to acquire and how long to try.
  /// \param on_lost Runs once on the loop thread if the lock is lost while held.
  /// \return The held lock, or why not.
  HoldResult hold(AcquireRequest request, LostCallback on_lost = {});
  /// \brief Acquires one resource with a renewed Config::watchdog_lease.
  /// \param resource The resource name, without the key prefix.
  /// \param wait How long to try (0: once).
  /// \return The held lock, or why not.
  HoldResult hold(std::string_view resource, Milliseconds wait = Milliseconds(0));
  /// \}

  /// \name Asynchronous calls
  /// Callable from any thread. The callback runs exactly once, on the client's loop thread;
  /// keep it short and do not block in it. An exception escaping a callback is caught and
  /// reported on stderr, never propagated into the loop.
  /// \{

  /// \param request What to acquire and how long to try.
  /// \param done Receives the result, as acquire() returns it.
  void acquire_async(AcquireRequest request, AcquireCallback done);
  /// \param lock The lock to extend (not updated: use the result's valid_until).
  /// \param ttl The new lease, counted from now.
  /// \param done Receives the result, as extend() returns it.
  void extend_async(Lock lock, Milliseconds ttl, ExtendCallback done);
  /// \param lock The lock to release.
  /// \param done Receives the result, as release() returns it.
  void release_async(Lock lock, ReleaseCallback done);
  /// \param done Receives each node's health, as status() returns it.
  void status_async(StatusCallback done);
  /// \}

  /// \param resource A resource name.
  /// \return The Redis key of the resource: key_prefix + resource.
  std::string key_of(std::string_view resource) const;

  class Impl;

 private:
  friend class HeldLock;
  friend class Mutex;
  friend class SharedMutex;
  AcquireResult arrived(AcquireResult r);
  friend class Election;
  friend class LeaderWatch;
  std::unique_ptr<Impl> impl_;
};

}  // namespace redlock
