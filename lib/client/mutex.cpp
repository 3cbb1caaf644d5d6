// Mutex: a reentrant, std-compatible lock over HeldLock, with re-entry counted in a table that
// the client shares with its Mutex objects (they may outlive it).
#include "redlock/mutex.hpp"

#include <cstdio>

#include "../core/observe.hpp"
#include "handles.hpp"
#include "handoff.hpp"

namespace redlock {

namespace detail {

HoldResult hold_via(const MutexTable& table, AcquireRequest request, LostCallback on_lost,
                    const char* what) {
  auto handoff = std::make_shared<detail::Handoff<HoldResult>>();
  bool loop_thread = false;
  bool alive = detail::with_client(table.link, [&](detail::LockHost& host) {
    if (host.in_loop_thread()) {
      loop_thread = true;
      return;
    }
    // Only queued here: a client destroyed meanwhile ends it with Errc::shutting_down.
    host.hold_async(std::move(request), std::move(on_lost),
                    [handoff](HoldResult r) { handoff->put(std::move(r)); });
  });
  HoldResult r;
  if (!alive) {
    r.error = make_error_code(Errc::shutting_down);
    r.detail = std::string("the client of this ") + what + " is gone";
  } else if (loop_thread) {
    r.error = make_error_code(Errc::would_deadlock);
    r.detail = "a blocking call was made from a callback; use the asynchronous form";
  } else {
    r = handoff->take();
  }
  return r;
}

}  // namespace detail

bool Mutex::lock_within(Milliseconds wait, bool throws) {
  const auto me = std::this_thread::get_id();
  {
    std::lock_guard<std::mutex> guard(table_->mutex);
    auto it = table_->held.find(resource_);
    if (it != table_->held.end() && it->second.owner == me) {
      if (!it->second.lock.valid()) {
        if (!throws) return false;
        bool gone = it->second.lock.lost_flag().reason() == Errc::shutting_down;
        throw Error(make_error_code(gone ? Errc::shutting_down : Errc::lock_lost),
                    "'" + resource_ + "' is held by this thread but its lock was lost" +
                        (gone ? " (the client stopped)" : ""));
      }
      ++it->second.depth;  // re-entry: no round trip
      return true;
    }
  }
  AcquireRequest request;
  request.resources = {resource_};
  request.ttl = options_.lease;
  request.wait = wait;
  request.fencing = options_.fencing;
  auto r = detail::hold_via(*table_, std::move(request), options_.on_lost, "mutex");
  if (!r) {
    {
      std::lock_guard<std::mutex> guard(error_mutex_);
      last_error_ = r.error;
    }
    bool transient = r.error == Errc::not_acquired || r.error == Errc::no_quorum ||
                     r.error == Errc::validity_expired;
    if (!throws && (transient || r.error == Errc::cancelled)) return false;
    throw Error(r.error, "cannot lock '" + resource_ + "': " + r.message());
  }
  std::lock_guard<std::mutex> guard(table_->mutex);
  auto& held = table_->held[resource_];
  held.owner = me;
  held.depth = 1;
  held.lock = std::move(r.lock);
  return true;
}

void Mutex::lock() { lock_within(forever, true); }

bool Mutex::try_lock() { return lock_within(Milliseconds(0), false); }

void Mutex::unlock() noexcept {
  try {
    HeldLock last;
    {
      std::lock_guard<std::mutex> guard(table_->mutex);
      auto it = table_->held.find(resource_);
      if (it == table_->held.end() || it->second.owner != std::this_thread::get_id()) {
        report(make_error_code(Errc::not_owner),
               "unlock of '" + resource_ + "' by a thread that does not hold it");
        return;
      }
      if (--it->second.depth > 0) return;
      last = std::move(it->second.lock);
      table_->held.erase(it);
    }
    auto r = last.release();
    if (!r) report(r.error, "release of '" + resource_ + "': " + r.message());
  } catch (const std::exception& e) {
    report(make_error_code(Errc::redis_error), std::string("unlock failed: ") + e.what());
  } catch (...) {
    report(make_error_code(Errc::redis_error), "unlock failed");
  }
}

namespace detail {

void report_error(const MutexTable& table,
                  const std::function<void(std::error_code, const std::string&)>& on_error,
                  std::error_code ec, const std::string& what) noexcept {
  try {
    if (on_error) {
      on_error(ec, what);
      return;
    }
    // The client's log, when the client is still there (copied: it is called outside the lock).
    LogHandler log;
    with_client(table.link, [&](LockHost& host) { log = host.log(); });
    write_log(&log, LogLevel::error, what + " (" + ec.message() + ")");
  } catch (...) {
  }
}

}  // namespace detail

void Mutex::report(std::error_code ec, const std::string& what) noexcept {
  try {
    std::lock_guard<std::mutex> guard(error_mutex_);
    last_error_ = ec;
  } catch (...) {
  }
  detail::report_error(*table_, options_.on_error, ec, what);
}

namespace {
template <typename F>
auto with_entry(detail::MutexTable& table, const std::string& resource, F f) {
  std::lock_guard<std::mutex> guard(table.mutex);
  auto it = table.held.find(resource);
  bool mine = it != table.held.end() && it->second.owner == std::this_thread::get_id();
  return f(mine ? &it->second : nullptr);
}
}  // namespace

bool Mutex::owns() const {
  return with_entry(*table_, resource_, [](auto* h) { return h != nullptr; });
}

bool Mutex::valid() const {
  return with_entry(*table_, resource_, [](auto* h) { return h && h->lock.valid(); });
}

Clock::time_point Mutex::valid_until() const {
  return with_entry(*table_, resource_,
                    [](auto* h) { return h ? h->lock.valid_until() : Clock::time_point{}; });
}

LostFlag Mutex::lost_flag() const {
  return with_entry(*table_, resource_,
                    [](auto* h) { return h ? h->lock.lost_flag() : LostFlag(); });
}

int Mutex::depth() const {
  return with_entry(*table_, resource_, [](auto* h) { return h ? h->depth : 0; });
}

std::uint64_t Mutex::fencing_token() const {
  return with_entry(*table_, resource_,
                    [](auto* h) { return h ? h->lock.fencing_token() : std::uint64_t{0}; });
}

std::error_code Mutex::last_error() const {
  std::lock_guard<std::mutex> guard(error_mutex_);
  return last_error_;
}

}  // namespace redlock
