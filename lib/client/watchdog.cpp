#include "watchdog.hpp"

#include <utility>

#include "../core/observe.hpp"

namespace redlock::detail {

Watchdog::Watchdog(proto::Context& context, const Config& config, LostTokens& lost)
    : context_(context), config_(config), lost_tokens_(lost), machine_(context) {}

void Watchdog::add(const std::shared_ptr<Lease>& lease, Clock::time_point now,
                   proto::Actions& out) {
  if (lease->watched()) return;
  lease->id = context_.next_job();
  leases_.emplace(lease->id, lease);
  proto::LeaseInfo info;
  info.keys = lease->keys;
  info.token = lease->token;
  info.ttl = lease->ttl;
  info.renew = lease->renew;
  info.permit = lease->permit >= 0;
  info.shared = lease->shared;
  info.valid_until = lease->valid_until();
  info.next_renewal = proto::first_renewal(now, info.valid_until, lease->ttl);
  machine_.add(lease->id, std::move(info), now, out);
  // After shutdown the machine writes it off at once (a Lost without notice).
  if (machine_.watched(lease->id))
    observe(config_, [&](Observer& o) { o.on_held(leases_.size()); });
}

void Watchdog::remove(const std::shared_ptr<Lease>& lease, Clock::time_point now,
                      proto::Actions& out) {
  if (!lease->watched()) return;
  machine_.remove(lease->id, now, out);
  leases_.erase(lease->id);
  lease->id = 0;
  observe(config_, [&](Observer& o) { o.on_held(leases_.size()); });
}

void Watchdog::shutdown(Clock::time_point now, proto::Actions& out) { machine_.shutdown(now, out); }

void Watchdog::renewed(const proto::Renewed& renewed) {
  auto it = leases_.find(renewed.lease);
  if (it != leases_.end()) it->second->set_valid_until(renewed.valid_until);
}

void Watchdog::renew_decided(const proto::RenewDecided& news) {
  auto it = leases_.find(news.lease);
  if (it == leases_.end()) return;
  notify_operation(config_, Operation::renew, news.error, news.votes, it->second->resources,
                   news.started, it->second->permit);
}

void Watchdog::lost(const proto::Lost& lost) {
  auto it = leases_.find(lost.lease);
  if (it == leases_.end()) return;
  auto lease = std::move(it->second);
  leases_.erase(it);
  lease->id = 0;  // never renewed again, whatever follows
  if (lease->lost()) return;
  lease->lost_code.store(static_cast<int>(lost.why), std::memory_order_release);
  if (!lost.notify) return;
  // Told once per lock: an extend or a release of its token (on the lane or here) may have
  // found it gone first. The holder's callback below runs in any case.
  const bool first = !config_.observer || lost_tokens_.first(lease->token);
  observe(config_, [&](Observer& o) {
    if (first) {
      LostEvent e;
      e.reason = lost.reason;
      e.error = make_error_code(lost.why);
      e.resources = &lease->resources;
      e.permit = lease->permit;
      o.on_lost(e);
    }
    o.on_held(leases_.size());
  });
  // The holder's callback may release other locks: nothing of this is held across it.
  auto callback = std::move(lease->on_lost);
  if (callback) deliver_guarded("lost", [&] { callback(make_error_code(lost.why)); });
}

}  // namespace redlock::detail
