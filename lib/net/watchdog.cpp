#include "watchdog.hpp"

#include <algorithm>
#include <utility>

#include "coordinator.hpp"
#include "observe.hpp"

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

Clock::time_point Watchdog::lost_at(const Lease& lease) {
  return lease.valid_until() - margin(lease);
}

Clock::time_point Watchdog::next_event(const Lease& lease) {
  auto at = lost_at(lease);
  if (lease.renew && !lease.in_flight) at = std::min(at, lease.next_renewal);
  return at;
}

void Watchdog::add(std::shared_ptr<Lease> lease) {
  if (closed_) {
    lease->lost_code = static_cast<int>(Errc::shutting_down);
    return;
  }
  if (lease->watched()) return;
  auto at = next_event(*lease);
  heap_.push(std::move(lease), at);
  arm();
  observe(coordinator_.config(), [&](Observer& o) { o.on_held(heap_.size()); });
}

void Watchdog::remove(const std::shared_ptr<Lease>& lease) {
  if (!lease->watched()) return;
  heap_.erase(*lease);
  observe(coordinator_.config(), [&](Observer& o) { o.on_held(heap_.size()); });
  // The timer may now fire for nothing, and tick() re-arms it then; stop it only when idle.
  if (heap_.empty() && !closed_) {
    uv_timer_stop(&timer_);
    armed_for_ = Clock::time_point::max();
  }
}

void Watchdog::shutdown() {
  closed_ = true;
  waiting_.clear();
  for (auto& l : heap_.leases()) declare_lost(l, Errc::shutting_down);
  uv_close(reinterpret_cast<uv_handle_t*>(&timer_), nullptr);
}

void Watchdog::declare_lost(const std::shared_ptr<Lease>& lease, Errc code) {
  bool was_watched = lease->watched();
  if (was_watched) heap_.erase(*lease);  // never renewed again, whatever follows
  if (lease->lost()) return;
  lease->lost_code.store(static_cast<int>(code), std::memory_order_release);
  observe(coordinator_.config(), [&](Observer& o) {
    LostEvent e;
    // lock_lost is declared at the lost deadline (tick) or when a quorum said no (renewed).
    e.reason = code == Errc::shutting_down       ? LostReason::shutting_down
               : Clock::now() >= lost_at(*lease) ? LostReason::expired
                                                 : LostReason::not_held;
    e.error = make_error_code(code);
    e.resources = &lease->resources;
    o.on_lost(e);
    if (was_watched) o.on_held(heap_.size());
  });
  auto callback = std::move(lease->on_lost);
  if (callback) deliver_guarded("lost", [&] { callback(make_error_code(code)); });
}

void Watchdog::tick() {
  armed_for_ = Clock::time_point::max();  // it fired
  auto now = Clock::now();
  Batch due;
  // Only the locks whose event has come: the heap's top, until that lies in the future.
  while (!heap_.empty()) {
    auto lease = heap_.top();
    if (now >= lost_at(*lease)) {
      // The window closes and no renewal made it: the holder must stop now. (Its callback may
      // release other locks: nothing of the heap is held across it.)
      declare_lost(lease, Errc::lock_lost);
      continue;
    }
    // Renewals falling due soon go out with this batch: one call per node for all of them.
    if (!lease->renew || lease->in_flight || now + lease->ttl / 12 < lease->next_renewal) break;
    lease->in_flight = true;  // from now on its next event is its lost deadline
    heap_.update(*lease, next_event(*lease));
    due.push_back(std::move(lease));
  }
  if (!due.empty()) renew_in_batches(std::move(due));
  arm();
}

void Watchdog::arm() {
  if (closed_ || heap_.empty()) return;
  auto at = heap_.top_at();
  if (at >= armed_for_) return;  // it fires earlier anyway, and tick() re-arms it then
  armed_for_ = at;
  auto wait = std::chrono::ceil<Milliseconds>(at - Clock::now());
  uv_timer_start(
      &timer_, [](uv_timer_t* t) { static_cast<Watchdog*>(t->data)->tick(); },
      static_cast<std::uint64_t>(std::max<Milliseconds::rep>(wait.count(), 0)), 0);
}

void Watchdog::renew_in_batches(Batch due) {
  Batch batch;
  std::size_t keys = 0;
  for (auto& l : due) {
    if (!batch.empty() && keys + l->keys.size() > max_batch_keys) {
      waiting_.push_back(std::move(batch));
      batch.clear();
      keys = 0;
    }
    keys += l->keys.size();
    batch.push_back(std::move(l));
  }
  if (!batch.empty()) waiting_.push_back(std::move(batch));
  pump();
}

void Watchdog::pump() {
  if (pumping_) return;  // a batch was decided while being sent: the loop below goes on
  pumping_ = true;
  while (!closed_ && calls_in_flight_ < max_calls_in_flight && !waiting_.empty()) {
    auto batch = std::move(waiting_.front());
    waiting_.pop_front();
    renew(std::move(batch));
  }
  pumping_ = false;
}

void Watchdog::renew(Batch batch) {
  // A lease released or lost since it was picked is never renewed again.
  batch.erase(std::remove_if(batch.begin(), batch.end(),
                             [](const std::shared_ptr<Lease>& l) {
                               if (l->watched()) return false;
                               l->in_flight = false;
                               return true;
                             }),
              batch.end());
  if (batch.empty()) return;
  std::vector<const Lease*> leases;
  leases.reserve(batch.size());
  for (const auto& l : batch) leases.push_back(l.get());
  struct Call {
    Batch leases;
    std::size_t undecided;
  };
  auto n = batch.size();
  auto call = std::make_shared<Call>(Call{std::move(batch), n});
  ++calls_in_flight_;
  FanOut::start(coordinator_, Coordinator::renew_command(leases), n, classify_renew,
                [this, call](FanOut& f, std::size_t i) {
                  renewed(f, i, call->leases[i]);
                  if (--call->undecided > 0) return;
                  --calls_in_flight_;  // every lock of the call is decided: the next may go
                  pump();
                });
}

void Watchdog::renewed(FanOut& f, std::size_t i, const std::shared_ptr<Lease>& lease) {
  lease->in_flight = false;
  if (!lease->watched()) return;  // released or lost meanwhile
  auto now = Clock::now();
  const auto& config = coordinator_.config();
  if (config.observer) {
    std::error_code error;
    if (f.verdict(i) != Verdict::won)
      error = make_error_code(f.tally(i).loss_reason(Errc::not_held));
    else if (!granted_deadline(f.started(), now, lease->ttl, config.drift_factor))
      error = make_error_code(Errc::validity_expired);
    coordinator_.notify_operation(Operation::renew, error, f.votes(i), lease->resources,
                                  f.started());
  }
  if (f.verdict(i) == Verdict::won) {
    auto fresh = granted_deadline(f.started(), now, lease->ttl, config.drift_factor);
    if (fresh) {
      lease->set_valid_until(extended_deadline(lease->valid_until(), fresh));
      lease->next_renewal = f.started() + lease->ttl / 3;
      heap_.update(*lease, next_event(*lease));
      arm();
      return;
    }
  } else if (f.tally(i).no > f.tally(i).nodes - f.tally(i).quorum()) {
    // More than N - Q nodes say our token is gone: fewer than a quorum can still hold it.
    declare_lost(lease, Errc::lock_lost);
    return;
  }
  // No quorum this time (nodes down or slow): try again soon while validity remains.
  auto left = lease->valid_until() - now;
  auto retry = std::chrono::duration_cast<Milliseconds>(left / 4);
  lease->next_renewal = now + std::clamp(retry, Milliseconds(5), std::max(lease->ttl / 10, 5ms));
  heap_.update(*lease, next_event(*lease));
  arm();
}

}  // namespace redlock::detail
