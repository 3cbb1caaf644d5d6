// State shared between a HeldLock (any thread) and the loop that renews and watches it.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "redlock/client.hpp"

namespace redlock::detail {

struct ClientLink;  // handles.hpp

struct Lease {
  // Set when created on the loop, then read-only.
  std::vector<std::string> resources;
  std::vector<std::string> keys;
  std::string token;
  std::uint64_t fencing_token = 0;
  int permit = -1;      // Lock::permit
  bool shared = false;  // Lock::shared
  Milliseconds ttl{0};
  bool renew = false;
  std::weak_ptr<ClientLink> link;

  // Loop thread only.
  LostCallback on_lost;
  // Its id in the watchdog (proto::WatchdogMachine), 0 when not watched (released, lost, never
  // added).
  std::uint64_t id = 0;
  bool watched() const noexcept { return id != 0; }

  // Any thread.
  std::atomic<Clock::rep> valid_until_ticks{0};
  std::atomic<int> lost_code{0};  // an Errc value once lost
  std::atomic<bool> released{false};

  Clock::time_point valid_until() const noexcept {
    return Clock::time_point(Clock::duration(valid_until_ticks.load(std::memory_order_acquire)));
  }
  void set_valid_until(Clock::time_point t) noexcept {
    valid_until_ticks.store(t.time_since_epoch().count(), std::memory_order_release);
  }
  bool lost() const noexcept { return lost_code.load(std::memory_order_acquire) != 0; }
};

struct CancelState {
  std::mutex mutex;
  bool cancelled = false;                                              // guarded by mutex
  std::uint64_t next_id = 1;                                           // guarded by mutex
  std::vector<std::pair<std::uint64_t, std::function<void()>>> hooks;  // guarded by mutex

  // Registers `hook` to run on cancel(); returns 0 (and does not register) if already cancelled.
  std::uint64_t add(std::function<void()> hook) {
    std::lock_guard<std::mutex> lock(mutex);
    if (cancelled) return 0;
    hooks.emplace_back(next_id, std::move(hook));
    return next_id++;
  }
  void remove(std::uint64_t id) {
    std::lock_guard<std::mutex> lock(mutex);
    for (auto it = hooks.begin(); it != hooks.end(); ++it)
      if (it->first == id) {
        hooks.erase(it);
        return;
      }
  }
};

}  // namespace redlock::detail
