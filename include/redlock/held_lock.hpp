/// \file
/// \brief A lock that renews itself and says when it is lost; cancellation of waits.
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

/// \brief Cancels waits from any thread: pass it in AcquireRequest::cancel, call cancel() to end
/// the wait at once with Errc::cancelled. Copies share one state.
class REDLOCK_API CancelToken {
 public:
  /// A fresh token, not cancelled.
  CancelToken();
  /// Cancels every wait given this token (or a copy), now and later. Thread-safe.
  void cancel() const;
  /// \return True once cancel() was called on this token or a copy.
  bool cancelled() const noexcept;

 private:
  friend std::shared_ptr<detail::CancelState> detail::cancel_state_of(const CancelToken&);
  std::shared_ptr<detail::CancelState> state_;
};

/// \brief A flag that long-running critical sections can poll from any thread: set once the
/// lock is no longer safe to act on (lost, expired, released).
///
/// Copies share one state and stay valid after the lock itself is gone.
class REDLOCK_API LostFlag {
 public:
  /// A flag of no lock: never set.
  LostFlag() = default;
  /// \return True once the lock is no longer safe to act on.
  bool is_set() const noexcept;
  /// \return is_set().
  explicit operator bool() const noexcept { return is_set(); }
  /// \return Why: Errc::lock_lost (a majority lost our token, or the validity window closed
  /// before a renewal), Errc::shutting_down (the client stopped renewing), or empty while not
  /// set.
  std::error_code reason() const noexcept;

 private:
  friend class HeldLock;
  explicit LostFlag(std::shared_ptr<const detail::Lease> lease) : lease_(std::move(lease)) {}
  std::shared_ptr<const detail::Lease> lease_;
};

/// \brief A held lock that the client keeps alive.
///
/// Without a ttl (Client::hold), its lease is Config::watchdog_lease and it is renewed every
/// lease/3 on the client's loop until released or destroyed; with a ttl it simply expires. Either
/// way the holder is told when it is lost, no later than its validity deadline. Move-only;
/// destroying it releases the lock (without blocking). It may outlive its Client: it is then lost
/// (Errc::shutting_down) and release() returns Errc::shutting_down.
class REDLOCK_API HeldLock {
 public:
  /// An empty HeldLock: holds nothing.
  HeldLock() = default;
  /// Takes over the lock of another HeldLock, which is left empty.
  HeldLock(HeldLock&&) noexcept = default;
  /// \brief Releases this lock, if any (without blocking), then takes over `other`'s.
  /// \param other Left empty.
  /// \return `*this`.
  HeldLock& operator=(HeldLock&& other) noexcept;
  /// Releases the lock, if still held, without blocking.
  ~HeldLock();
  HeldLock(const HeldLock&) = delete;
  HeldLock& operator=(const HeldLock&) = delete;

  /// \return True from a successful hold() until release() (also after the lock was lost).
  bool held() const noexcept;
  /// \return Safe to act on: held, not lost, and inside the validity window. Local, no network.
  bool valid() const noexcept;
  /// \return End of the current validity window (moved on by each renewal).
  Clock::time_point valid_until() const noexcept;
  /// \return A flag, pollable from any thread, set once the lock is lost.
  LostFlag lost_flag() const;
  /// \return True once the lock is lost (lost_flag() is set).
  bool lost() const noexcept { return lost_flag().is_set(); }

  /// \return The resources held (empty for an empty HeldLock).
  const std::vector<std::string>& resources() const;
  /// \return The grant's token.
  const std::string& token() const;
  /// \return The grant's fencing token (AcquireRequest::fencing), or 0.
  std::uint64_t fencing_token() const noexcept;
  /// \return The slot of a permit of a semaphore (Lock::permit); -1 for a mutex or when empty.
  int permit() const noexcept;
  /// \return True for a reader's share of a read-write lock (Lock::shared); false for a writer,
  /// a mutex or a permit, and when empty.
  bool shared() const noexcept;

  /// Stops renewal for good and runs compare-and-delete on every node. Blocking (not from a
  /// callback). When it fails while some node could not run it (Vote::failed: down, paused,
  /// timed out), our key may remain there until its ttl: the lock then stays held() (no longer
  /// renewed, never valid() again, lost() with Errc::not_held) and release() may be called
  /// again, as the destructor does once: `while (lock.held()) lock.release();` with a pause
  /// between tries. Each try reports its own votes (a node whose key an earlier try deleted
  /// says no). Otherwise it is final: a further call returns Errc::not_held without a round
  /// trip. Once the client is gone: Errc::shutting_down.
  /// \return The votes; Errc::not_held, Errc::no_quorum, Errc::would_deadlock or
  /// Errc::shutting_down on failure.
  ReleaseResult release();

 private:
  friend class Client;
  explicit HeldLock(std::shared_ptr<detail::Lease> lease) : lease_(std::move(lease)) {}
  std::shared_ptr<detail::Lease> lease_;
};

/// \brief Result of Client::hold().
struct HoldResult : Outcome {
  HeldLock lock;     ///< Held when ok().
  int attempts = 0;  ///< Attempts made, including the successful one.
};

/// Runs once, on the client's loop thread, when a held lock is lost, with the reason
/// (LostFlag::reason()): keep it short.
using LostCallback = std::function<void(std::error_code reason)>;

}  // namespace redlock
