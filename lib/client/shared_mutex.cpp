// SharedMutex: a std-compatible read-write lock over HeldLock (Client::hold with
// AcquireRequest::shared for a reader), one hold per thread, reached through the client's link
// as Mutex is (it may outlive the client).
#include "redlock/shared_mutex.hpp"

#include "../core/observe.hpp"
#include "handles.hpp"

namespace redlock {

bool SharedMutex::lock_within(Milliseconds wait, bool throws, bool shared) {
  const auto me = std::this_thread::get_id();
  {
    std::lock_guard<std::mutex> guard(mutex_);
    if (holds_.count(me) != 0) {
      // Not reentrant: a second hold by the same thread would wait for itself.
      if (!throws) return false;
      throw Error(make_error_code(Errc::would_deadlock),
                  "'" + resource_ + "' is held by this thread already");
    }
  }
  AcquireRequest request;
  request.resources = {resource_};
  request.ttl = options_.lease;
  request.wait = wait;
  request.fencing = options_.fencing;
  request.shared = shared;
  auto r = detail::hold_via(*table_, std::move(request), options_.on_lost, "shared mutex");
  if (!r) {
    {
      std::lock_guard<std::mutex> guard(mutex_);
      last_error_ = r.error;
    }
    bool transient = r.error == Errc::not_acquired || r.error == Errc::no_quorum ||
                     r.error == Errc::validity_expired;
    if (!throws && (transient || r.error == Errc::cancelled)) return false;
    throw Error(r.error,
                "cannot lock '" + resource_ + "'" + (shared ? " shared" : "") + ": " + r.message());
  }
  std::lock_guard<std::mutex> guard(mutex_);
  auto& hold = holds_[me];
  hold.shared = shared;
  hold.lock = std::move(r.lock);
  return true;
}

void SharedMutex::lock() { lock_within(forever, true, false); }
bool SharedMutex::try_lock() { return lock_within(Milliseconds(0), false, false); }
void SharedMutex::lock_shared() { lock_within(forever, true, true); }
bool SharedMutex::try_lock_shared() { return lock_within(Milliseconds(0), false, true); }
void SharedMutex::unlock() noexcept { release(false); }
void SharedMutex::unlock_shared() noexcept { release(true); }

void SharedMutex::release(bool shared) noexcept {
  try {
    HeldLock last;
    {
      std::lock_guard<std::mutex> guard(mutex_);
      auto it = holds_.find(std::this_thread::get_id());
      if (it == holds_.end() || it->second.shared != shared) {
        last_error_ = make_error_code(Errc::not_owner);
      } else {
        last = std::move(it->second.lock);
        holds_.erase(it);
      }
    }
    if (!last.held()) {
      report(make_error_code(Errc::not_owner), std::string(shared ? "unlock_shared" : "unlock") +
                                                   " of '" + resource_ +
                                                   "' by a thread that does not hold it so");
      return;
    }
    auto r = last.release();
    if (!r) report(r.error, "release of '" + resource_ + "': " + r.message());
  } catch (const std::exception& e) {
    report(make_error_code(Errc::redis_error), std::string("unlock failed: ") + e.what());
  } catch (...) {
    report(make_error_code(Errc::redis_error), "unlock failed");
  }
}

void SharedMutex::report(std::error_code ec, const std::string& what) noexcept {
  try {
    std::lock_guard<std::mutex> guard(mutex_);
    last_error_ = ec;
  } catch (...) {
  }
  detail::report_error(*table_, options_.on_error, ec, what);
}

template <typename F>
auto SharedMutex::with_mine(F f) const {
  std::lock_guard<std::mutex> guard(mutex_);
  auto it = holds_.find(std::this_thread::get_id());
  return f(it != holds_.end() ? &it->second : nullptr);
}

bool SharedMutex::owns() const {
  return with_mine([](const Hold* h) { return h != nullptr; });
}

bool SharedMutex::owns_shared() const {
  return with_mine([](const Hold* h) { return h != nullptr && h->shared; });
}

bool SharedMutex::valid() const {
  return with_mine([](const Hold* h) { return h != nullptr && h->lock.valid(); });
}

Clock::time_point SharedMutex::valid_until() const {
  return with_mine([](const Hold* h) { return h ? h->lock.valid_until() : Clock::time_point{}; });
}

LostFlag SharedMutex::lost_flag() const {
  return with_mine([](const Hold* h) { return h ? h->lock.lost_flag() : LostFlag(); });
}

std::uint64_t SharedMutex::fencing_token() const {
  return with_mine([](const Hold* h) { return h ? h->lock.fencing_token() : std::uint64_t{0}; });
}

std::error_code SharedMutex::last_error() const {
  std::lock_guard<std::mutex> guard(mutex_);
  return last_error_;
}

}  // namespace redlock
