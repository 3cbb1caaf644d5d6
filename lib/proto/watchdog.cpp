#include "watchdog.hpp"

#include <algorithm>

#include "scripts.hpp"

namespace redlock::detail::proto {

using namespace std::chrono_literals;

LeaseInfo lease_of(const Lock& lock, std::vector<std::string> keys, bool renew,
                   Clock::time_point now) {
  LeaseInfo info;
  info.keys = std::move(keys);
  info.token = lock.token;
  info.ttl = lock.ttl;
  info.renew = renew;
  info.permit = lock.permit >= 0;
  info.shared = lock.shared;
  info.valid_until = lock.valid_until;
  info.next_renewal = first_renewal(now, lock.valid_until, lock.ttl);
  return info;
}

WatchdogMachine::WatchdogMachine(Context& context) : ctx_(context), timer_(context.next_timer()) {}

Milliseconds WatchdogMachine::margin(Milliseconds ttl) { return lost_margin(ttl); }

Clock::time_point WatchdogMachine::lost_at(const LeaseInfo& lease) {
  return lease.valid_until - margin(lease.ttl);
}

Clock::time_point WatchdogMachine::next_event(const Watched& w) {
  auto at = lost_at(w.info);
  if (w.info.renew && !w.in_flight) at = std::min(at, w.info.next_renewal);
  return at;
}

std::optional<Clock::time_point> WatchdogMachine::valid_until(std::uint64_t lease) const {
  auto it = leases_.find(lease);
  if (it == leases_.end()) return std::nullopt;
  return it->second.info.valid_until;
}

void WatchdogMachine::reschedule(std::uint64_t lease, Watched& w) {
  heap_.erase({w.at, lease});
  w.at = next_event(w);
  heap_.insert({w.at, lease});
}

void WatchdogMachine::add(std::uint64_t lease, LeaseInfo info, Clock::time_point, Actions& out) {
  if (closed_) {
    out.push_back(Lost{lease, Errc::shutting_down, /*notify=*/false, LostReason::shutting_down});
    return;
  }
  if (leases_.count(lease) != 0) return;
  Watched w;
  w.info = std::move(info);
  w.at = next_event(w);
  heap_.insert({w.at, lease});
  leases_.emplace(lease, std::move(w));
  arm(out);
}

void WatchdogMachine::remove(std::uint64_t lease, Clock::time_point, Actions& out) {
  auto it = leases_.find(lease);
  if (it == leases_.end()) return;
  heap_.erase({it->second.at, lease});
  leases_.erase(it);
  // The timer may now fire for nothing, and on_timer re-arms it then; stop it only when idle.
  if (heap_.empty() && !closed_) {
    out.push_back(CancelTimer{timer_});
    armed_for_ = Clock::time_point::max();
  }
}

void WatchdogMachine::shutdown(Clock::time_point, Actions& out) {
  closed_ = true;
  waiting_.clear();
  std::vector<std::uint64_t> all;
  for (const auto& [id, w] : leases_) all.push_back(id);
  for (auto id : all) declare_lost(id, Errc::shutting_down, LostReason::shutting_down, out);
  out.push_back(CancelTimer{timer_});
}

void WatchdogMachine::declare_lost(std::uint64_t lease, Errc code, LostReason reason,
                                   Actions& out) {
  auto it = leases_.find(lease);
  if (it == leases_.end()) return;  // never renewed again, whatever follows
  heap_.erase({it->second.at, lease});
  leases_.erase(it);
  out.push_back(Lost{lease, code, true, reason});
}

void WatchdogMachine::on_timer(TimerId timer, Clock::time_point now, Actions& out) {
  if (timer != timer_ || closed_) return;
  armed_for_ = Clock::time_point::max();  // it fired
  Batch due;
  std::size_t early = 0;
  // Only the locks whose event has come: the heap's top, until that lies in the future.
  while (!heap_.empty()) {
    auto id = heap_.begin()->second;
    auto& w = leases_.at(id);
    if (now >= lost_at(w.info)) {
      // The window closes and no renewal made it: the holder must stop now.
      declare_lost(id, Errc::lock_lost, LostReason::expired, out);
      continue;
    }
    // Renewals falling due soon go out with this batch: one call per node for all of them.
    if (!w.info.renew || w.in_flight || now + w.info.ttl / 12 < w.info.next_renewal) break;
    // Early ones up to a bound: the first left behind has its renewal and its lost deadline
    // after now (the deadline is checked above), and so has every lease after it in the heap,
    // so nothing left is due yet; the timer fires again at its renewal.
    if (w.info.next_renewal > now && early++ == max_early_per_timer) break;
    w.in_flight = true;  // from now on its next event is its lost deadline
    reschedule(id, w);
    due.push_back(id);
  }
  if (!due.empty()) renew_in_batches(std::move(due), now, out);
  arm(out);
}

void WatchdogMachine::arm(Actions& out) {
  if (closed_ || heap_.empty()) return;
  auto at = heap_.begin()->first;
  if (at >= armed_for_) return;  // it fires earlier anyway, and on_timer re-arms it then
  armed_for_ = at;
  out.push_back(ArmTimer{timer_, 0, at});
}

void WatchdogMachine::renew_in_batches(Batch due, Clock::time_point now, Actions& out) {
  Batch batch;
  std::size_t keys = 0;
  for (auto id : due) {
    auto n = leases_.at(id).info.keys.size();
    if (!batch.empty() && keys + n > max_batch_keys) {
      waiting_.push_back(std::move(batch));
      batch.clear();
      keys = 0;
    }
    keys += n;
    batch.push_back(id);
  }
  if (!batch.empty()) waiting_.push_back(std::move(batch));
  pump(now, out);
}

void WatchdogMachine::pump(Clock::time_point now, Actions& out) {
  while (!closed_ && calls_in_flight_ < max_calls_in_flight && !waiting_.empty()) {
    auto batch = std::move(waiting_.front());
    waiting_.pop_front();
    renew(std::move(batch), now, out);
  }
}

void WatchdogMachine::renew(Batch batch, Clock::time_point now, Actions& out) {
  // A lease released or lost since it was picked is never renewed again.
  batch.erase(std::remove_if(batch.begin(), batch.end(),
                             [&](std::uint64_t id) { return leases_.count(id) == 0; }),
              batch.end());
  if (batch.empty()) return;
  std::vector<Renewal> renewals;
  renewals.reserve(batch.size());
  for (auto id : batch) {
    const auto& info = leases_.at(id).info;
    renewals.push_back(Renewal{&info.keys, &info.token, info.ttl, info.permit, info.shared});
  }
  Send send;
  send.id = ctx_.next_request();
  send.request = std::make_shared<const Request>(renew_request(renewals));
  auto n = batch.size();
  auto [it, inserted] =
      calls_.emplace(send.id, Call{std::move(batch), FanOutTally(ctx_.nodes(), n, now), n});
  (void)inserted;
  send.nodes = it->second.tally.targets();
  ++calls_in_flight_;
  out.push_back(std::move(send));
}

void WatchdogMachine::on_reply(RequestId request, std::size_t node, std::vector<NodeVote> votes,
                               Clock::time_point now, Actions& out) {
  auto it = calls_.find(request);
  if (it == calls_.end()) return;
  auto decided = it->second.tally.record(node, std::move(votes));
  for (auto i : decided) renewed(it->second, i, now, out);
  it->second.undecided -= decided.size();
  if (it->second.undecided > 0) return;
  calls_.erase(it);
  --calls_in_flight_;  // every lock of the call is decided: the next may go
  pump(now, out);
}

void WatchdogMachine::renewed(Call& call, std::size_t i, Clock::time_point now, Actions& out) {
  auto id = call.leases[i];
  auto it = leases_.find(id);
  if (it == leases_.end()) return;  // released or lost meanwhile
  auto& w = it->second;
  w.in_flight = false;
  const auto& f = call.tally;
  auto fresh = f.verdict(i) == Verdict::won
                   ? granted_deadline(f.started(), now, w.info.ttl, ctx_.config().drift_factor)
                   : std::nullopt;
  if (ctx_.config().observer) {
    RenewDecided news{id, {}, f.public_votes(i, ctx_.addresses()), f.started()};
    if (f.verdict(i) != Verdict::won)
      news.error = make_error_code(f.tally(i).loss_reason(Errc::not_held));
    else if (!fresh)
      news.error = make_error_code(Errc::validity_expired);
    out.push_back(std::move(news));
  }
  if (f.verdict(i) == Verdict::won) {
    if (fresh) {
      w.info.valid_until = extended_deadline(w.info.valid_until, fresh);
      w.info.next_renewal = f.started() + w.info.ttl / 3;
      reschedule(id, w);
      out.push_back(Renewed{id, w.info.valid_until});
      arm(out);
      return;
    }
  } else if (renewal_refused(f.tally(i))) {
    declare_lost(id, Errc::lock_lost, LostReason::not_held, out);
    return;
  }
  // No quorum this time (nodes down or slow): try again soon while validity remains.
  w.info.next_renewal = now + renewal_retry(w.info.valid_until - now, w.info.ttl);
  reschedule(id, w);
  arm(out);
}

}  // namespace redlock::detail::proto
