/// \file
/// \brief A reentrant mutex over a named resource that meets the standard BasicLockable,
/// Lockable and TimedLockable requirements: std::lock_guard, std::unique_lock,
/// std::scoped_lock, try_lock_for and try_lock_until work with it.
#pragma once

#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>

#include "redlock/client.hpp"

namespace redlock {

namespace detail {
struct MutexTable;
}  // namespace detail

/// \brief Options of a Mutex.
struct MutexOptions {
  /// Lease of each hold; unset: Config::watchdog_lease, renewed for as long as it is held.
  std::optional<Milliseconds> lease;
  /// Runs on the loop thread when the lock is lost while held.
  LostCallback on_lost;
  /// Reports what unlock() cannot throw (not the owner, release failed). Default: stderr.
  std::function<void(std::error_code, const std::string&)> on_error;
  /// Give each hold a fencing token (Mutex::fencing_token()); one more round trip per lock().
  bool fencing = false;
};

/// \brief A reentrant, std-compatible lock of one resource, held with renewal (a HeldLock).
///
/// Owner: the calling thread of this Client. The same thread may lock again without a round
/// trip (the client counts re-entries); only the last unlock() releases on the nodes. Several
/// Mutex objects for the same resource on one Client share that count. Not copyable.
class REDLOCK_API Mutex {
 public:
  /// May outlive `client`. Once the client is destroyed, lock() and the try_lock forms throw
  /// redlock::Error with Errc::shutting_down, unlock() reports Errc::shutting_down (a hold left
  /// on the nodes expires with its lease), and owns(), valid() and the rest stay safe to call.
  /// \param client The client whose nodes hold the lock.
  /// \param resource The resource name, without the key prefix.
  /// \param options Lease, callbacks, fencing.
  Mutex(Client& client, std::string resource, MutexOptions options = {});
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;
  /// Releases nothing by itself: unlock what you lock.
  ~Mutex() = default;

  /// \brief Blocks until acquired (sleeping until a release notice).
  /// \throws redlock::Error (a std::system_error) when it cannot be: no quorum of nodes
  /// reachable, client shutting down, or called from the client's loop thread.
  void lock();
  /// \brief One attempt.
  /// \return False when the lock is taken or no quorum answered.
  /// \throws redlock::Error as lock() does for the other failures.
  bool try_lock();
  /// \brief As the standard's TimedLockable: a duration of zero or less tries once (like
  /// try_lock); a duration beyond the longest wait the client can time (about 34 years) waits
  /// without end.
  /// \param d How long to try.
  /// \return False when the lock could not be taken.
  /// \throws redlock::Error as try_lock() does.
  template <typename Rep, typename Period>
  bool try_lock_for(const std::chrono::duration<Rep, Period>& d) {
    if (d <= d.zero()) return lock_within(Milliseconds(0), false);
    if (std::chrono::duration<double, std::milli>(d).count() >= kLongestWaitMs)
      return lock_within(forever, false);
    return lock_within(std::chrono::ceil<Milliseconds>(d), false);
  }
  /// \brief As try_lock_for(), until a time point; one in the past tries once.
  /// \param t When to give up, on any clock.
  /// \return False when the lock could not be taken.
  /// \throws redlock::Error as try_lock() does.
  template <typename C, typename D>
  bool try_lock_until(const std::chrono::time_point<C, D>& t) {
    auto now = C::now();
    if (t <= now) return lock_within(Milliseconds(0), false);
    return try_lock_for(t - now);
  }
  /// Leaves one level of re-entry; the last one releases on the nodes. Never throws. Unlock by
  /// a thread that does not own the lock changes nothing and is reported (on_error,
  /// last_error()) as Errc::not_owner.
  void unlock() noexcept;

  /// \return True when the calling thread holds the lock.
  bool owns() const;
  /// \return True when the calling thread holds the lock and it is still safe to act on.
  bool valid() const;
  /// \return End of the validity window of the calling thread's hold.
  Clock::time_point valid_until() const;
  /// \return The calling thread's hold's lost flag, pollable from any thread.
  LostFlag lost_flag() const;
  /// \return Depth of re-entry of the calling thread (0 when it does not hold the lock).
  int depth() const;
  /// \return The fencing token of the calling thread's hold (MutexOptions::fencing), or 0.
  std::uint64_t fencing_token() const;
  /// \return The last error unlock() reported on this object (thread-safe copy).
  std::error_code last_error() const;

  /// \return The resource name.
  const std::string& resource() const noexcept { return resource_; }

 private:
  static constexpr double kLongestWaitMs = 1099511627776.0;  // 2^40 ms
  // Waits up to `wait` (forever: no end). With `throws`, failures other than contention throw.
  bool lock_within(Milliseconds wait, bool throws);
  void report(std::error_code ec, const std::string& what) noexcept;

  std::shared_ptr<detail::MutexTable> table_;  // shared with the client; outlives it if need be
  std::string resource_;
  MutexOptions options_;
  mutable std::mutex error_mutex_;
  std::error_code last_error_;
};

}  // namespace redlock
