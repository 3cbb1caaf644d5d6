// What the handles (HeldLock, Mutex), used from any thread, may ask of their client: the
// interface LockHost, which Client::Impl implements, and the link through which they reach it
// while it lives. Handles include this, never the client's own parts.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>

#include "lease.hpp"
#include "redlock/client.hpp"

namespace redlock::detail {

class LockHost {
 public:
  // Runs `task` on the loop thread; false when the loop is gone.
  virtual bool post(std::function<void()> task) = 0;
  virtual bool in_loop_thread() const = 0;
  // Loop thread: the caller woken next makes its next call without a wake-up of the loop.
  virtual void check_inbox_before_sleep() = 0;
  // Loop thread: stops watching `lease`, then releases it.
  virtual void release_lease(const std::shared_ptr<Lease>& lease, Client::ReleaseCallback done) = 0;
  // Any thread: Client::hold in its asynchronous form.
  virtual void hold_async(AcquireRequest request, LostCallback on_lost,
                          std::function<void(HoldResult)> done) = 0;
  virtual const LogHandler& log() const = 0;

 protected:
  ~LockHost() = default;
};

// Lets a handle reach its client from any thread, and know when the client is gone.
struct ClientLink {
  std::mutex mutex;
  LockHost* host = nullptr;  // guarded by mutex; null once the client is being destroyed
};

// Runs `task` on the loop of the client behind `link`; false when that client is gone.
bool post_via(const std::weak_ptr<ClientLink>& link, std::function<void(LockHost&)> task);

// Runs `f(host)` on this thread while the client behind `link` cannot begin its destruction
// (its link is locked: keep `f` short, never block in it); false, without calling `f`, when
// that client is gone or going.
template <typename F>
bool with_client(const std::weak_ptr<ClientLink>& link, F&& f) {
  auto l = link.lock();
  if (!l) return false;
  std::lock_guard<std::mutex> lock(l->mutex);
  if (l->host == nullptr) return false;
  f(*l->host);
  return true;
}

// What the Mutex objects of one client share: the re-entry count of each resource (owner
// thread, depth, the hold itself) and the way back to the client. Held by the client and by
// each Mutex, so that a Mutex used after its client was destroyed finds this table and a dead
// link (every call then fails with Errc::shutting_down), never freed memory.
struct MutexTable {
  explicit MutexTable(std::weak_ptr<ClientLink> client) : link(std::move(client)) {}

  struct Held {
    std::thread::id owner;
    int depth = 0;
    HeldLock lock;
  };
  const std::weak_ptr<ClientLink> link;
  std::mutex mutex;
  std::unordered_map<std::string, Held> held;  // guarded by mutex
};

// Client::hold in its blocking form, reached through the table's link: a Mutex or SharedMutex
// never touches the Client object, which may be gone (Errc::shutting_down, "the client of this
// <what> is gone"); from the loop thread, Errc::would_deadlock. mutex.cpp.
HoldResult hold_via(const MutexTable& table, AcquireRequest request, LostCallback on_lost,
                    const char* what);
// An error of a Mutex or SharedMutex that no call returns (an unlock's): to `on_error` when set,
// else to the client's log while the client is there. Never throws. mutex.cpp.
void report_error(const MutexTable& table,
                  const std::function<void(std::error_code, const std::string&)>& on_error,
                  std::error_code ec, const std::string& what) noexcept;

}  // namespace redlock::detail
