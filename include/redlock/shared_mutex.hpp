/// \file
/// \brief A read-write lock over a named resource that meets the standard Lockable,
/// TimedLockable, SharedLockable and SharedTimedLockable requirements: std::unique_lock,
/// std::shared_lock, std::lock_guard and the try_lock_for forms work with it.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <unordered_map>

#include "redlock/client.hpp"
#include "redlock/mutex.hpp"

namespace redlock {

/// \brief A read-write lock of one resource (docs/proposal-kinds.md, "The read-write lock"),
/// each hold a HeldLock renewed while held.
///
/// Readers (lock_shared()) share the resource with each other; a writer (lock()) holds it alone,
/// as a redlock::Mutex or Client::acquire of the same resource does, which it excludes and is
/// excluded by. Readers and writers wait in one line: a waiting writer holds back the readers
/// that come after it, and when it releases, the readers that waited before the next writer are
/// served together. Not reentrant: the owner of a hold is the calling thread, which holds the
/// lock at most once, shared or not (a second lock by it is Errc::would_deadlock). Not copyable.
class REDLOCK_API SharedMutex {
 public:
  /// May outlive `client`: its calls then fail as Mutex's do (Errc::shutting_down).
  /// \param client The client whose nodes hold the lock.
  /// \param resource The resource name, without the key prefix.
  /// \param options Lease, callbacks, fencing (as Mutex's).
  SharedMutex(Client& client, std::string resource, MutexOptions options = {});
  SharedMutex(const SharedMutex&) = delete;
  SharedMutex& operator=(const SharedMutex&) = delete;
  /// Releases nothing by itself: unlock what you lock.
  ~SharedMutex() = default;

  /// \name Exclusive (a writer)
  /// \{
  /// \brief Blocks until acquired (sleeping until a release notice or a turn).
  /// \throws redlock::Error when it cannot be (no quorum, shutting down, the loop thread, this
  /// thread holds it already).
  void lock();
  /// \return False when the lock is taken or no quorum answered.
  bool try_lock();
  /// \param d How long to try; zero or less tries once.
  /// \return False when the lock could not be taken.
  template <typename Rep, typename Period>
  bool try_lock_for(const std::chrono::duration<Rep, Period>& d) {
    return lock_within(wait_of(d), false, false);
  }
  /// \param t When to give up, on any clock; one in the past tries once.
  template <typename C, typename D>
  bool try_lock_until(const std::chrono::time_point<C, D>& t) {
    return try_lock_for(t - C::now());
  }
  /// Releases the calling thread's exclusive hold. Never throws; an unlock by a thread that
  /// does not hold it changes nothing and is reported (Errc::not_owner).
  void unlock() noexcept;
  /// \}

  /// \name Shared (a reader)
  /// \{
  /// \brief Blocks until acquired as a reader.
  /// \throws redlock::Error as lock() does.
  void lock_shared();
  /// \return False when a writer holds it or waits, or no quorum answered.
  bool try_lock_shared();
  /// \param d How long to try; zero or less tries once.
  template <typename Rep, typename Period>
  bool try_lock_shared_for(const std::chrono::duration<Rep, Period>& d) {
    return lock_within(wait_of(d), false, true);
  }
  /// \param t When to give up, on any clock; one in the past tries once.
  template <typename C, typename D>
  bool try_lock_shared_until(const std::chrono::time_point<C, D>& t) {
    return try_lock_shared_for(t - C::now());
  }
  /// Releases the calling thread's shared hold (never throws; Errc::not_owner as unlock()).
  void unlock_shared() noexcept;
  /// \}

  /// \return True when the calling thread holds the lock, shared or not.
  bool owns() const;
  /// \return True when the calling thread holds it as a reader.
  bool owns_shared() const;
  /// \return True when the calling thread holds it and it is still safe to act on.
  bool valid() const;
  /// \return End of the validity window of the calling thread's hold.
  Clock::time_point valid_until() const;
  /// \return The calling thread's hold's lost flag, pollable from any thread.
  LostFlag lost_flag() const;
  /// \return The fencing token of the calling thread's hold (MutexOptions::fencing), or 0. Tokens
  /// grow across readers and writers of the resource.
  std::uint64_t fencing_token() const;
  /// \return The last error an unlock reported on this object.
  std::error_code last_error() const;
  /// \return The resource name.
  const std::string& resource() const noexcept { return resource_; }

 private:
  static constexpr double kLongestWaitMs = 1099511627776.0;  // 2^40 ms, as Mutex's
  template <typename Rep, typename Period>
  static Milliseconds wait_of(const std::chrono::duration<Rep, Period>& d) {
    if (d <= d.zero()) return Milliseconds(0);
    if (std::chrono::duration<double, std::milli>(d).count() >= kLongestWaitMs) return forever;
    return std::chrono::ceil<Milliseconds>(d);
  }
  bool lock_within(Milliseconds wait, bool throws, bool shared);
  void release(bool shared) noexcept;
  void report(std::error_code ec, const std::string& what) noexcept;
  template <typename F>
  auto with_mine(F f) const;

  struct Hold {
    bool shared = false;
    HeldLock lock;
  };
  std::shared_ptr<detail::MutexTable> table_;  // the client's link (as Mutex's)
  std::string resource_;
  MutexOptions options_;
  mutable std::mutex mutex_;
  std::unordered_map<std::thread::id, Hold> holds_;  // guarded by mutex_: each thread's hold
  std::error_code last_error_;                       // guarded by mutex_
};

}  // namespace redlock
