#include "watchdog.hpp"

#include <algorithm>

#include "coordinator.hpp"

namespace redlock::detail {

using namespace std::chrono_literals;

Watchdog::Watchdog(Coordinator& coordinator) : coordinator_(coordinator) {}

void Watchdog::start() {
  uv_timer_init(coordinator_.loop(), &timer_);
  timer_.data = this;
}

Milliseconds Watchdog::margin(const Lease& lease) {
  return std::clamp(lease.ttl / 20, Milliseconds(2), Milliseconds(100));
}

void Watchdog::add(std::shared_ptr<Lease> lease) {
  if (closed_) {
    lease->lost_code = static_cast<int>(Errc::shutting_down);
    return;
  }
  lease->watched = true;
  leases_.push_back(std::move(lease));
  schedule();
}

void Watchdog::remove(const std::shared_ptr<Lease>& lease) {
  if (!lease->watched) return;
  lease->watched = false;
  leases_.erase(std::remove(leases_.begin(), leases_.end(), lease), leases_.end());
  schedule();
}

void Watchdog::shutdown() {
  closed_ = true;
  auto all = leases_;
  for (auto& l : all) declare_lost(l, Errc::shutting_down);
  uv_close(reinterpret_cast<uv_handle_t*>(&timer_), nullptr);
}

void Watchdog::declare_lost(const std::shared_ptr<Lease>& lease, Errc code) {
  if (lease->lost()) return;
  lease->lost_code.store(static_cast<int>(code), std::memory_order_release);
  lease->watched = false;
  leases_.erase(std::remove(leases_.begin(), leases_.end(), lease), leases_.end());
  auto callback = std::move(lease->on_lost);
  if (callback) deliver_guarded("lost", [&] { callback(make_error_code(code)); });
}

void Watchdog::tick() {
  auto now = Clock::now();
  std::vector<std::shared_ptr<Lease>> due;
  auto snapshot = leases_;
  for (auto& l : snapshot) {
    if (!l->watched) continue;
    if (now >= l->valid_until() - margin(*l)) {
      // The window closes and no renewal made it: the holder must stop now.
      declare_lost(l, Errc::lock_lost);
      continue;
    }
    // Renewals falling due soon go out with this batch: one call per node for all of them.
    if (l->renew && !l->in_flight && now + l->ttl / 12 >= l->next_renewal) due.push_back(l);
  }
  if (!due.empty()) renew(std::move(due));
  schedule();
}

void Watchdog::schedule() {
  if (closed_) return;
  auto earliest = Clock::time_point::max();
  for (const auto& l : leases_) {
    earliest = std::min(earliest, l->valid_until() - margin(*l));
    if (l->renew && !l->in_flight) earliest = std::min(earliest, l->next_renewal);
  }
  if (earliest == Clock::time_point::max()) {
    uv_timer_stop(&timer_);
    return;
  }
  auto wait = std::chrono::ceil<Milliseconds>(earliest - Clock::now());
  uv_timer_start(
      &timer_, [](uv_timer_t* t) { static_cast<Watchdog*>(t->data)->tick(); },
      static_cast<std::uint64_t>(std::max<Milliseconds::rep>(wait.count(), 0)), 0);
}

void Watchdog::renew(std::vector<std::shared_ptr<Lease>> batch) {
  std::vector<const Lease*> leases;
  for (auto& l : batch) {
    l->in_flight = true;
    leases.push_back(l.get());
  }
  auto shared = std::make_shared<std::vector<std::shared_ptr<Lease>>>(std::move(batch));
  auto n = shared->size();
  FanOut::start(coordinator_, Coordinator::renew_command(leases), n, classify_renew,
                [this, shared](FanOut& f, std::size_t i) {
                  auto& lease = (*shared)[i];
                  lease->in_flight = false;
                  if (!lease->watched) return;  // released or lost meanwhile
                  auto now = Clock::now();
                  const auto& config = coordinator_.config();
                  if (f.verdict(i) == Verdict::won) {
                    auto fresh =
                        granted_deadline(f.started(), now, lease->ttl, config.drift_factor);
                    if (fresh) {
                      lease->set_valid_until(extended_deadline(lease->valid_until(), fresh));
                      lease->next_renewal = f.started() + lease->ttl / 3;
                      schedule();
                      return;
                    }
                  } else if (f.tally(i).no > f.tally(i).nodes - f.tally(i).quorum()) {
                    // More than N - Q nodes say our token is gone: fewer than a quorum can still
                    // hold it.
                    declare_lost(lease, Errc::lock_lost);
                    schedule();
                    return;
                  }
                  // No quorum this time (nodes down or slow): try again soon while validity
                  // remains.
                  auto left = lease->valid_until() - now;
                  auto retry = std::chrono::duration_cast<Milliseconds>(left / 4);
                  lease->next_renewal =
                      now + std::clamp(retry, Milliseconds(5), std::max(lease->ttl / 10, 5ms));
                  schedule();
                });
}

}  // namespace redlock::detail
