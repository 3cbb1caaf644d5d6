// Client::Impl: the client's parts (configuration, loop thread, coordinator). The handles
// (HeldLock, Mutex) reach it only as a detail::LockHost, through a ClientLink that tells them
// when the client is gone (handles.hpp).
#pragma once

#include <sched.h>
#include <cassert>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>

#include "../net/loop.hpp"
#include "coordinator.hpp"
#include "handles.hpp"
#include "handoff.hpp"
#include "lane.hpp"
#include "lease.hpp"
#include "redlock/client.hpp"

namespace redlock {

namespace detail {
struct Watcher;  // election.cpp
}

// Members are declared in destruction-safe order: the coordinator (nodes, timers) goes after
// the loop has been stopped in ~Impl; the loop next; the configuration, which nodes refer to,
// last.
// Hidden, although nested in an exported class: no part of the implementation is exported.
class __attribute__((visibility("hidden"))) Client::Impl final : public detail::LockHost {
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

  // detail::LockHost, for the handles.
  bool post(std::function<void()> task) override { return loop_.post(std::move(task)); }
  bool in_loop_thread() const override { return loop_.in_loop_thread(); }
  void check_inbox_before_sleep() override { loop_.check_inbox_before_sleep(); }
  void release_lease(const std::shared_ptr<detail::Lease>& lease,
                     Client::ReleaseCallback done) override {
    coordinator_.release_lease(lease, std::move(done));
  }
  void hold_async(AcquireRequest request, LostCallback on_lost,
                  std::function<void(HoldResult)> done) override {
    hold_with(std::move(request), std::move(on_lost), std::move(done), false);
  }
  // Client::hold, renewed whatever the request's ttl (an office of Election: its ttl is the
  // lease it is renewed with).
  void hold_with(AcquireRequest request, LostCallback on_lost, std::function<void(HoldResult)> done,
                 bool renew_always);
  const LogHandler& log() const override { return config_.log; }

  Config config_;
  detail::EventLoop loop_;
  detail::Coordinator coordinator_;
  std::shared_ptr<detail::ClientLink> link_;
  // Shared with every Mutex of this client, which may outlive it. Destroyed first: the holds
  // it may still keep then find the client gone (link_->host is null) and only let go.
  std::shared_ptr<detail::MutexTable> mutexes_;
  // The blocking calls' own lane (lane.hpp); destroyed before the coordinator, whose nodes it
  // follows, and after the loop stopped.
  std::unique_ptr<detail::Lane> lane_;
  // Leader election's observers (election.cpp), by id. Loop thread only.
  std::unordered_map<std::uint64_t, std::shared_ptr<detail::Watcher>> watchers_;
  bool watchers_hooked_ = false;  // their shutdown hook is registered with the coordinator
};

}  // namespace redlock
