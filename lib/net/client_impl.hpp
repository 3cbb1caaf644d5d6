// Client::Impl: shared by the client and the handles (HeldLock, Mutex) that reach back to it
// through a ClientLink, which tells them when the client is gone.
#pragma once

#include <sched.h>
#include <cassert>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>

#include "coordinator.hpp"
#include "handoff.hpp"
#include "lease.hpp"
#include "loop.hpp"
#include "redlock/client.hpp"

namespace redlock {

namespace detail {

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

}  // namespace detail

// Members are declared in destruction-safe order: the coordinator (nodes, timers) goes after
// the loop has been stopped in ~Impl; the loop next; the configuration, which nodes refer to,
// last.
// Hidden, although nested in an exported class: no part of the implementation is exported.
class __attribute__((visibility("hidden"))) Client::Impl {
 public:
  explicit Impl(Config config);
  ~Impl();

  // Runs `work` on the loop thread; if the loop is gone, runs `fail` on this thread.
  template <typename Work, typename Fail>
  void submit(Work&& work, Fail&& fail) {
    if (!loop_.post(std::forward<Work>(work))) fail();
  }

  // Blocking form of an asynchronous call.
  template <typename Result, typename Start>
  Result wait(Start&& start) {
    if (loop_.in_loop_thread()) {
      Result r;
      r.error = make_error_code(Errc::would_deadlock);
      r.detail = "a blocking call was made from a callback; use the asynchronous form";
      return r;
    }
    auto handoff = std::make_shared<detail::Handoff<Result>>();
    start([this, handoff](Result r) {
      loop_.check_inbox_before_sleep();  // the caller's next call needs no wake-up
      handoff->put(std::move(r));
      // The caller, woken, often shares this thread's CPU (one client CPU in the benchmarks;
      // the scheduler's wake-affine placement elsewhere): let it run now rather than after the
      // rest of this loop turn. 14 µs of the 5-node acquire+release p50 (docs/performance.md).
      sched_yield();
    });
    return handoff->take();
  }

  void hold_async(AcquireRequest request, LostCallback on_lost,
                  std::function<void(HoldResult)> done);

  Config config_;
  detail::EventLoop loop_;
  detail::Coordinator coordinator_;
  std::shared_ptr<detail::ClientLink> link_;
  // Shared with every Mutex of this client, which may outlive it. Destroyed first: the holds
  // it may still keep then find the client gone (link_->impl is null) and only let go.
  std::shared_ptr<detail::MutexTable> mutexes_;
};

// Runs `task` on the loop of the client behind `link`; false when that client is gone.
bool post_via(const std::weak_ptr<detail::ClientLink>& link,
              std::function<void(Client::Impl&)> task);

// Runs `f(impl)` on this thread while the client behind `link` cannot begin its destruction
// (its link is locked: keep `f` short, never block in it); false, without calling `f`, when
// that client is gone or going.
template <typename F>
bool with_client(const std::weak_ptr<detail::ClientLink>& link, F&& f) {
  auto l = link.lock();
  if (!l) return false;
  std::lock_guard<std::mutex> lock(l->mutex);
  if (l->impl == nullptr) return false;
  f(*l->impl);
  return true;
}

}  // namespace redlock
