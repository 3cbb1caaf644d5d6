// A reentrant mutex over a named resource that meets the standard BasicLockable, Lockable and
// TimedLockable requirements: std::lock_guard, std::unique_lock, std::scoped_lock,
// try_lock_for and try_lock_until work with it.
#pragma once

#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>

#include "redlock/client.hpp"

namespace redlock {

struct MutexOptions {
  // Lease of each hold; unset: Config::watchdog_lease, renewed for as long as it is held.
  std::optional<Milliseconds> lease;
  // Runs on the loop thread when the lock is lost while held.
  LostCallback on_lost;
  // Reports what unlock() cannot throw (not the owner, release failed). Default: stderr.
  std::function<void(std::error_code, const std::string&)> on_error;
  // Give each hold a fencing token (fencing_token()); one more round trip per lock().
  bool fencing = false;
};

// Owner: the calling thread of this Client. The same thread may lock again without a round
// trip (the client counts re-entries); only the last unlock() releases on the nodes. Several
// Mutex objects for the same resource on one Client share that count. Not copyable.
class Mutex {
 public:
  Mutex(Client& client, std::string resource, MutexOptions options = {});
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;
  // Releases nothing by itself: unlock what you lock.
  ~Mutex() = default;

  // Blocks until acquired (sleeping until a release notice). Throws redlock::Error (a
  // std::system_error) when it cannot be: no quorum of nodes reachable, client shutting down,
  // or called from the client's loop thread.
  void lock();
  bool try_lock();
  // As the standard's TimedLockable: a duration of zero or less, or a time in the past, tries
  // once (like try_lock); a duration beyond the longest wait the client can time (about 34
  // years) waits without end. Both return false when the lock could not be taken.
  template <typename Rep, typename Period>
  bool try_lock_for(const std::chrono::duration<Rep, Period>& d) {
    if (d <= d.zero()) return lock_within(Milliseconds(0), false);
    if (std::chrono::duration<double, std::milli>(d).count() >= kLongestWaitMs)
      return lock_within(forever, false);
    return lock_within(std::chrono::ceil<Milliseconds>(d), false);
  }
  template <typename C, typename D>
  bool try_lock_until(const std::chrono::time_point<C, D>& t) {
    auto now = C::now();
    if (t <= now) return lock_within(Milliseconds(0), false);
    return try_lock_for(t - now);
  }
  // Never throws. Unlock by a thread that does not own the lock changes nothing and is
  // reported (on_error, last_error()) as Errc::not_owner.
  void unlock() noexcept;

  // For the calling thread: does it hold the lock, and is it still safe to act on?
  bool owns() const;
  bool valid() const;
  Clock::time_point valid_until() const;
  LostFlag lost_flag() const;
  // Depth of re-entry of the calling thread (0 when it does not hold the lock).
  int depth() const;
  // The fencing token of the calling thread's hold (MutexOptions::fencing), or 0.
  std::uint64_t fencing_token() const;
  // The last error unlock() reported on this object (thread-safe copy).
  std::error_code last_error() const;

  const std::string& resource() const noexcept { return resource_; }

 private:
  static constexpr double kLongestWaitMs = 1099511627776.0;  // 2^40 ms
  // Waits up to `wait` (forever: no end). With `throws`, failures other than contention throw.
  bool lock_within(Milliseconds wait, bool throws);
  void report(std::error_code ec, const std::string& what) noexcept;

  Client& client_;
  std::string resource_;
  MutexOptions options_;
  mutable std::mutex error_mutex_;
  std::error_code last_error_;
};

}  // namespace redlock
