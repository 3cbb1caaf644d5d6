// The client: one per process (or per set of nodes), shared by all threads.
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

// A wait without end (AcquireRequest::wait): until acquired, cancelled, or the nodes stay
// unreachable.
inline constexpr Milliseconds forever = Milliseconds::max();

// What to acquire and how long to try.
struct AcquireRequest {
  AcquireRequest() = default;
  AcquireRequest(std::vector<std::string> resources_, std::optional<Milliseconds> ttl_ = {},
                 std::optional<Milliseconds> wait_ = {})
      : resources(std::move(resources_)), ttl(ttl_), wait(wait_) {}

  std::vector<std::string> resources;  // one or more; several are locked all-or-nothing per node
  std::optional<Milliseconds> ttl;     // lease; default Config::ttl; must be positive
  // How long to keep trying while the lock is taken by someone else or quorum is missing:
  //   nullopt: 1 + Config::retry_count attempts, Config::retry_delay + jitter apart;
  //   0:       exactly one attempt (try-lock);
  //   > 0:     wait until this much time has passed (or `forever`). While the lock is taken,
  //            the waiter sleeps until a release notice arrives (one subscriber connection per
  //            node per client), with a back-off bounded by the holder's ttl as a fallback.
  // Whatever the wait, more than Config::retry_count consecutive attempts that find no quorum
  // of nodes reachable end it with Errc::no_quorum.
  std::optional<Milliseconds> wait;
  // Ends the wait early with Errc::cancelled (optional).
  std::optional<CancelToken> cancel;
  // Give the lock a fencing token (Lock::fencing_token). Costs one more parallel round trip per
  // grant (the token is written back to a quorum before it is handed out); plain locks pay
  // nothing for it.
  bool fencing = false;
};

// Health of one node, as `redlock status` prints it.
struct NodeStatus {
  std::string address;
  bool up = false;
  std::chrono::microseconds round_trip{0};
  std::string server_version;
  std::error_code error;
  std::string detail;
};

class Client {
 public:
  using AcquireCallback = std::function<void(AcquireResult)>;
  using ExtendCallback = std::function<void(ExtendResult)>;
  using ReleaseCallback = std::function<void(ReleaseResult)>;
  using StatusCallback = std::function<void(std::vector<NodeStatus>)>;

  // Validates the configuration (throws redlock::Error with Errc::invalid_config naming the bad
  // part), starts the loop thread and begins connecting to every node. Never blocks on the
  // network.
  explicit Client(Config config);
  // Stops the loop: pending asynchronous operations complete with Errc::shutting_down.
  // Locks are not released (they expire with their TTL). Never throws. May be called from one
  // of the client's own callbacks: the stop then completes on another thread once that callback
  // has returned (do not touch the Client after destroying it).
  ~Client();

  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  const Config& config() const noexcept;

  // Blocking calls: callable from any thread except the client's own loop thread (there they
  // return Errc::would_deadlock). They never throw for network or contention outcomes.
  AcquireResult try_acquire(std::string_view resource);
  AcquireResult try_acquire(std::string_view resource, Milliseconds ttl);
  AcquireResult acquire(std::string_view resource, Milliseconds ttl, Milliseconds wait);
  AcquireResult acquire(AcquireRequest request);
  // On success lock.valid_until and lock.ttl are updated; on failure they are left as they were.
  ExtendResult extend(Lock& lock);
  ExtendResult extend(Lock& lock, Milliseconds ttl);
  ReleaseResult release(const Lock& lock);
  std::vector<NodeStatus> status();

  // Acquires and keeps alive: with request.ttl unset the lease is Config::watchdog_lease and
  // is renewed every lease/3, renewals of all held locks batched into one call per node.
  // `on_lost` runs once on the loop thread if the lock is lost while held.
  HoldResult hold(AcquireRequest request, LostCallback on_lost = {});
  HoldResult hold(std::string_view resource, Milliseconds wait = Milliseconds(0));

  // Asynchronous calls: callable from any thread. The callback runs exactly once, on the
  // client's loop thread; keep it short and do not block in it. An exception escaping a
  // callback is caught and reported on stderr, never propagated into the loop.
  void acquire_async(AcquireRequest request, AcquireCallback done);
  void extend_async(Lock lock, Milliseconds ttl, ExtendCallback done);
  void release_async(Lock lock, ReleaseCallback done);
  void status_async(StatusCallback done);

  // The Redis key of a resource: key_prefix + resource.
  std::string key_of(std::string_view resource) const;

  class Impl;

 private:
  friend class HeldLock;
  friend class Mutex;
  std::unique_ptr<Impl> impl_;
};

}  // namespace redlock
