// Client::Impl: shared by the client and the handles (HeldLock, Mutex) that reach back to it.
#pragma once

#include <cassert>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>

#include "coordinator.hpp"
#include "lease.hpp"
#include "loop.hpp"
#include "redlock/client.hpp"

namespace redlock {

// Members are declared in destruction-safe order: the coordinator (nodes, timers) goes after
// the loop has been stopped in ~Impl; the loop next; the configuration, which nodes refer to,
// last.
class Client::Impl {
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
    auto promise = std::make_shared<std::promise<Result>>();
    auto future = promise->get_future();
    start([promise](Result r) { promise->set_value(std::move(r)); });
    return future.get();
  }

  void hold_async(AcquireRequest request, LostCallback on_lost,
                  std::function<void(HoldResult)> done);

  Config config_;
  detail::EventLoop loop_;
  detail::Coordinator coordinator_;
  std::shared_ptr<detail::ClientLink> link_;

  // Re-entry counts of Mutex, per resource: owner thread and depth.
  struct Held {
    std::thread::id owner;
    int depth = 0;
    HeldLock lock;
  };
  std::mutex held_mutex_;
  std::unordered_map<std::string, Held> held_;  // guarded by held_mutex_
};

// Runs `task` on the loop of the client behind `link`; false when that client is gone.
bool post_via(const std::weak_ptr<detail::ClientLink>& link,
              std::function<void(Client::Impl&)> task);

}  // namespace redlock
