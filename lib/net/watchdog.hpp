// Renewal of held locks and the lost-lock signal. One timer for the whole client; renewals that
// fall due together go out as one script call per node. Loop thread only.
#pragma once

#include <uv.h>

#include <memory>
#include <string>
#include <vector>

#include "lease.hpp"

namespace redlock::detail {

class Coordinator;

class Watchdog {
 public:
  explicit Watchdog(Coordinator& coordinator);
  void start();
  // Starts watching: renewals (when lease->renew) and the validity deadline.
  void add(std::shared_ptr<Lease> lease);
  // Stops watching without a lost signal (the lock is being released).
  void remove(const std::shared_ptr<Lease>& lease);
  // Every watched lock is lost with Errc::shutting_down: nobody renews it any more.
  void shutdown();
  std::size_t size() const noexcept { return leases_.size(); }

 private:
  void tick();
  void schedule();
  void renew(std::vector<std::shared_ptr<Lease>> batch);
  void declare_lost(const std::shared_ptr<Lease>& lease, Errc code);
  // How long before its deadline a lock is declared lost: timers fire late, never early, so the
  // holder must hear it a little before the window closes.
  static Milliseconds margin(const Lease& lease);

  Coordinator& coordinator_;
  std::vector<std::shared_ptr<Lease>> leases_;
  uv_timer_t timer_{};
  bool closed_ = false;
};

}  // namespace redlock::detail
