// Mutex: a reentrant, std-compatible lock over HeldLock, with re-entry counted in the client.
#include "redlock/mutex.hpp"

#include <cstdio>

#include "client_impl.hpp"

namespace redlock {

Mutex::Mutex(Client& client, std::string resource, MutexOptions options)
    : client_(client), resource_(std::move(resource)), options_(std::move(options)) {}

bool Mutex::lock_within(Milliseconds wait, bool throws) {
  auto& impl = *client_.impl_;
  const auto me = std::this_thread::get_id();
  {
    std::lock_guard<std::mutex> guard(impl.held_mutex_);
    auto it = impl.held_.find(resource_);
    if (it != impl.held_.end() && it->second.owner == me) {
      if (!it->second.lock.valid()) {
        if (throws)
          throw Error(make_error_code(Errc::lock_lost),
                      "'" + resource_ + "' is held by this thread but its lock was lost");
        return false;
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
  auto r = client_.hold(std::move(request), options_.on_lost);
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
  std::lock_guard<std::mutex> guard(impl.held_mutex_);
  auto& held = impl.held_[resource_];
  held.owner = me;
  held.depth = 1;
  held.lock = std::move(r.lock);
  return true;
}

void Mutex::lock() { lock_within(forever, true); }

bool Mutex::try_lock() { return lock_within(Milliseconds(0), false); }

void Mutex::unlock() noexcept {
  try {
    auto& impl = *client_.impl_;
    HeldLock last;
    {
      std::lock_guard<std::mutex> guard(impl.held_mutex_);
      auto it = impl.held_.find(resource_);
      if (it == impl.held_.end() || it->second.owner != std::this_thread::get_id()) {
        report(make_error_code(Errc::not_owner),
               "unlock of '" + resource_ + "' by a thread that does not hold it");
        return;
      }
      if (--it->second.depth > 0) return;
      last = std::move(it->second.lock);
      impl.held_.erase(it);
    }
    auto r = last.release();
    if (!r) report(r.error, "release of '" + resource_ + "': " + r.message());
  } catch (const std::exception& e) {
    report(make_error_code(Errc::redis_error), std::string("unlock failed: ") + e.what());
  } catch (...) {
    report(make_error_code(Errc::redis_error), "unlock failed");
  }
}

void Mutex::report(std::error_code ec, const std::string& what) noexcept {
  try {
    {
      std::lock_guard<std::mutex> guard(error_mutex_);
      last_error_ = ec;
    }
    if (options_.on_error)
      options_.on_error(ec, what);
    else
      std::fprintf(stderr, "redlock: %s (%s)\n", what.c_str(), ec.message().c_str());
  } catch (...) {
  }
}

namespace {
template <typename F>
auto with_entry(Client::Impl& impl, const std::string& resource, F f) {
  std::lock_guard<std::mutex> guard(impl.held_mutex_);
  auto it = impl.held_.find(resource);
  bool mine = it != impl.held_.end() && it->second.owner == std::this_thread::get_id();
  return f(mine ? &it->second : nullptr);
}
}  // namespace

bool Mutex::owns() const {
  return with_entry(*client_.impl_, resource_, [](auto* h) { return h != nullptr; });
}

bool Mutex::valid() const {
  return with_entry(*client_.impl_, resource_, [](auto* h) { return h && h->lock.valid(); });
}

Clock::time_point Mutex::valid_until() const {
  return with_entry(*client_.impl_, resource_,
                    [](auto* h) { return h ? h->lock.valid_until() : Clock::time_point{}; });
}

LostFlag Mutex::lost_flag() const {
  return with_entry(*client_.impl_, resource_,
                    [](auto* h) { return h ? h->lock.lost_flag() : LostFlag(); });
}

int Mutex::depth() const {
  return with_entry(*client_.impl_, resource_, [](auto* h) { return h ? h->depth : 0; });
}

std::uint64_t Mutex::fencing_token() const {
  return with_entry(*client_.impl_, resource_,
                    [](auto* h) { return h ? h->lock.fencing_token() : std::uint64_t{0}; });
}

std::error_code Mutex::last_error() const {
  std::lock_guard<std::mutex> guard(error_mutex_);
  return last_error_;
}

}  // namespace redlock
