// A lock that renews itself and says when it is lost; cancellation of waits.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include "redlock/lock.hpp"

namespace redlock {

class CancelToken;
namespace detail {
struct Lease;
struct CancelState;
std::shared_ptr<CancelState> cancel_state_of(const CancelToken& token);
}  // namespace detail

// Cancels waits from any thread: pass it in AcquireRequest::cancel, call cancel() to end the
// wait at once with Errc::cancelled. Copies share one state.
class CancelToken {
 public:
  CancelToken();
  void cancel() const;
  bool cancelled() const noexcept;

 private:
  friend std::shared_ptr<detail::CancelState> detail::cancel_state_of(const CancelToken&);
  std::shared_ptr<detail::CancelState> state_;
};

// A flag that long-running critical sections can poll from any thread: set once the lock is
// no longer safe to act on (lost, expired, released). Copies share one state and stay valid
// after the lock itself is gone.
class LostFlag {
 public:
  LostFlag() = default;
  bool is_set() const noexcept;
  explicit operator bool() const noexcept { return is_set(); }
  // Why: Errc::lock_lost (a majority lost our token, or the validity window closed before a
  // renewal), Errc::shutting_down (the client stopped renewing), or empty while not set.
  std::error_code reason() const noexcept;

 private:
  friend class HeldLock;
  explicit LostFlag(std::shared_ptr<const detail::Lease> lease) : lease_(std::move(lease)) {}
  std::shared_ptr<const detail::Lease> lease_;
};

// A held lock that the client keeps alive. Without a ttl (Client::hold), its lease is
// Config::watchdog_lease and it is renewed every lease/3 on the client's loop until released
// or destroyed; with a ttl it simply expires. Either way the holder is told when it is lost,
// no later than its validity deadline. Move-only; destroying it releases the lock (without
// blocking). It must not outlive its Client.
class HeldLock {
 public:
  HeldLock() = default;
  HeldLock(HeldLock&&) noexcept = default;
  HeldLock& operator=(HeldLock&& other) noexcept;
  ~HeldLock();
  HeldLock(const HeldLock&) = delete;
  HeldLock& operator=(const HeldLock&) = delete;

  // True from a successful hold() until release() (also after the lock was lost).
  bool held() const noexcept;
  // Safe to act on: held, not lost, and inside the validity window. Local, no network.
  bool valid() const noexcept;
  Clock::time_point valid_until() const noexcept;
  LostFlag lost_flag() const;
  bool lost() const noexcept { return lost_flag().is_set(); }

  const std::vector<std::string>& resources() const;
  const std::string& token() const;
  // The grant's fencing token (AcquireRequest::fencing), or 0.
  std::uint64_t fencing_token() const noexcept;

  // Stops renewal and runs compare-and-delete on every node. Blocking (not from a callback);
  // idempotent: a second call returns Errc::not_held without a round trip.
  ReleaseResult release();

 private:
  friend class Client;
  explicit HeldLock(std::shared_ptr<detail::Lease> lease) : lease_(std::move(lease)) {}
  std::shared_ptr<detail::Lease> lease_;
};

struct HoldResult : Outcome {
  HeldLock lock;  // held when ok()
  int attempts = 0;
};

// Runs once, on the client's loop thread, when a held lock is lost: keep it short.
using LostCallback = std::function<void(std::error_code reason)>;

}  // namespace redlock
