#include "interim.hpp"

#include <algorithm>

#include "../../lib/core/quorum.hpp"

namespace redlock::sim {
namespace {

using detail::Tally;
using detail::Verdict;
using proto::Decoder;
using proto::Request;
using proto::ScriptId;

std::string ms(Milliseconds d) { return std::to_string(d.count()); }

bool is_turn(const std::string& holder) { return holder.rfind("turn:", 0) == 0; }

// The same arguments as lib/net/coordinator.cpp sends (the scripts' headers say what they mean).
Request acquire_req(const std::vector<std::string>& keys, const std::string& token,
                    Milliseconds ttl, bool fencing, const std::string& ticket,
                    const std::string& place, Milliseconds keep, Milliseconds turn) {
  Request r{ScriptId::acquire, keys, {token, ms(ttl), fencing ? "1" : "0"}, Decoder::acquire, 1};
  r.args.push_back(ticket);
  r.args.push_back(ticket.empty() ? "0" : place);
  r.args.push_back(ms(keep));
  r.args.push_back(ms(turn));
  return r;
}

Request release_req(const std::vector<std::string>& keys, const std::string& token, bool announce,
                    const std::string* ticket = nullptr, const std::string* place = nullptr,
                    Milliseconds keep = Milliseconds(0)) {
  Request r{ScriptId::release, keys, {token}, Decoder::release, 1};
  if (!announce || ticket != nullptr) r.args.push_back(announce ? "1" : "0");
  if (ticket != nullptr) {
    r.args.push_back(*ticket);
    r.args.push_back(*place);
    r.args.push_back(ms(keep));
  }
  return r;
}

Request renew_req(const std::vector<std::string>& keys, const std::string& token,
                  Milliseconds ttl) {
  return Request{
      ScriptId::renew, keys, {token, ms(ttl), std::to_string(keys.size())}, Decoder::renew, 1};
}

proto::ArmTimer arm_timer(TimerId id, Clock::time_point at) {
  proto::ArmTimer a;
  a.id = id;
  a.at = at;
  return a;
}

// How long the nodes keep the line for a waiter: the rest of its wait and a lease, at most an
// hour (lib/net/coordinator.cpp: line_kept).
template <class Job>
Milliseconds line_kept(const Job& j, Clock::time_point now) {
  Milliseconds keep = std::chrono::hours(1);
  if (j.deadline) keep = std::min(keep, std::chrono::ceil<Milliseconds>(*j.deadline - now) + j.ttl);
  return std::max(keep, Milliseconds(1));
}

void count(Tally& t, Vote v) {
  if (v == Vote::yes) ++t.yes;
  if (v == Vote::no) ++t.no;
  if (v == Vote::failed) ++t.failed;
}

}  // namespace

struct InterimBrain::Job {
  std::uint64_t id = 0;
  std::vector<std::string> resources, keys;
  Milliseconds ttl{0};
  bool fencing = false, waits = false;
  int max_attempts = 1, attempts = 0, unreachable = 0;
  std::optional<Clock::time_point> deadline;
  std::string ticket, place, token;
  // The attempt in flight.
  bool in_attempt = false, woken = false, fence_phase = false, listening = false;
  bool finished = false;
  std::optional<Errc> stop;
  RequestId request = 0;
  Clock::time_point sent{};
  Votes votes;
  Tally tally;
  bool decided = false;
  AcquireResult granted;  // the fence phase's pending grant
  TimerId timer = 0;
  bool in_line() const { return !ticket.empty() && keys.size() == 1; }
};

struct InterimBrain::Lease {
  std::uint64_t id = 0;
  std::vector<std::string> keys;
  std::string token;
  Milliseconds ttl{0};
  Clock::time_point valid_until{};
  RequestId request = 0;
  Clock::time_point sent{};
  Tally tally;
  bool in_flight = false, decided = false;
  TimerId renew_timer = 0, lost_timer = 0;
};

// A one-shot fan-out: extend or release.
struct InterimBrain::Op {
  std::uint64_t id = 0;
  bool is_extend = false;
  Clock::time_point sent{}, previous{};
  Milliseconds ttl{0};
  Votes votes;
  Tally tally;
  bool decided = false;
};

InterimBrain::InterimBrain(const Config& config, std::size_t nodes, std::string turn_channel,
                           std::function<std::string()> token,
                           std::function<std::uint64_t()> random)
    : config_(config),
      nodes_(nodes),
      turn_channel_(std::move(turn_channel)),
      token_(std::move(token)),
      random_(std::move(random)) {}

InterimBrain::~InterimBrain() = default;

std::vector<std::size_t> InterimBrain::all_nodes() const {
  std::vector<std::size_t> v(nodes_);
  for (std::size_t i = 0; i < nodes_; ++i) v[i] = i;
  return v;
}

RequestId InterimBrain::send(Request request, std::vector<std::size_t> nodes, bool reply_wanted,
                             Actions& out) {
  proto::Send s;
  s.id = ++last_id_;
  s.request = std::make_shared<const Request>(std::move(request));
  s.nodes = std::move(nodes);
  s.reply_wanted = reply_wanted;
  out.push_back(std::move(s));
  return last_id_;
}

// --- acquire ---------------------------------------------------------------------------------

std::uint64_t InterimBrain::acquire(const AcquireSpec& spec, Clock::time_point now,
                                    std::int64_t place, Actions& out) {
  auto job = std::make_unique<Job>();
  Job& j = *job;
  j.id = ++last_id_;
  j.resources = spec.resources;
  for (const auto& r : spec.resources) j.keys.push_back(config_.key_prefix + r);
  j.ttl = spec.ttl;
  j.fencing = spec.fencing;
  if (!spec.wait) {
    j.max_attempts = 1 + config_.retry_count;
  } else if (spec.wait->count() == 0) {
    j.max_attempts = 1;
  } else {
    j.max_attempts = 0;
    j.waits = true;
    j.deadline = now + *spec.wait;
    auto turn = std::max(Milliseconds(100), config_.request_timeout);
    j.ticket = turn_channel_ + "#" + std::to_string(j.id) + "@" + ms(turn);
    j.place = std::to_string(place);
  }
  jobs_.emplace(j.id, std::move(job));
  if (j.waits && !turns_subscribed_) {
    turns_subscribed_ = true;
    out.push_back(proto::Subscribe{turn_channel_});
  }
  attempt(j, now, out);
  return j.id;
}

void InterimBrain::attempt(Job& j, Clock::time_point now, Actions& out) {
  j.token = token_();
  ++j.attempts;
  j.in_attempt = true;
  j.woken = false;
  j.fence_phase = false;
  j.decided = false;
  j.sent = now;
  j.votes = Votes();
  j.votes.nodes.assign(nodes_, NodeVote());
  j.votes.quorum = detail::quorum_size(nodes_);
  j.tally = Tally{nodes_, 0, 0, 0};
  auto keep = line_kept(j, now);
  auto turn = std::max(Milliseconds(100), config_.request_timeout);
  j.request = send(acquire_req(j.keys, j.token, j.ttl, j.fencing, j.ticket, j.place, keep, turn),
                   all_nodes(), true, out);
  request_owner_[j.request] = j.id;
}

void InterimBrain::job_reply(Job& j, std::size_t node, NodeVote vote, Clock::time_point now,
                             Actions& out) {
  if (j.decided || node >= nodes_) return;
  j.votes.nodes[node] = vote;
  count(j.tally, vote.vote);
  auto verdict = j.tally.verdict();
  if (verdict == Verdict::pending) return;
  j.decided = true;
  if (j.fence_phase) {
    AcquireResult r = std::move(j.granted);
    bool valid = detail::still_valid(now, r.lock.valid_until);
    if (verdict == Verdict::won && valid && !j.stop) {
      j.in_attempt = false;
      finish(j, std::move(r), out);
      return;
    }
    r.error = make_error_code(verdict != Verdict::won ? j.tally.loss_reason(Errc::not_acquired)
                                                      : Errc::validity_expired);
    r.lock = Lock();
    attempt_failed(j, std::move(r), now, out);
    return;
  }
  AcquireResult r;
  r.votes = j.votes;
  r.attempts = j.attempts;
  if (verdict == Verdict::won) {
    auto until = detail::granted_deadline(j.sent, now, j.ttl, config_.drift_factor);
    if (until && !j.stop) {
      r.lock.resources = j.resources;
      r.lock.token = j.token;
      r.lock.valid_until = *until;
      r.lock.ttl = j.ttl;
      if (j.fencing) {
        r.lock.fencing_token = detail::fencing_token_of(j.votes.nodes);
        j.granted = std::move(r);
        j.fence_phase = true;
        j.decided = false;
        j.tally = Tally{nodes_, 0, 0, 0};
        j.request = send(Request{ScriptId::fence,
                                 j.keys,
                                 {j.token, std::to_string(j.granted.lock.fencing_token)},
                                 Decoder::fence,
                                 1},
                         all_nodes(), true, out);
        request_owner_[j.request] = j.id;
        return;
      }
      j.in_attempt = false;
      finish(j, std::move(r), out);
      return;
    }
    r.error = make_error_code(until ? *j.stop : Errc::validity_expired);
  } else {
    r.error = make_error_code(j.tally.loss_reason(Errc::not_acquired));
  }
  attempt_failed(j, std::move(r), now, out);
}

void InterimBrain::clean_up(Job& j, Clock::time_point now, Actions& out) {
  // Compare-and-delete everywhere, silently (a clean-up wakes nobody); a waiter granted on some
  // nodes takes its place in line there again.
  Milliseconds keep = line_kept(j, now);
  if (j.in_line() && !j.stop) {
    send(release_req(j.keys, j.token, false, &j.ticket, &j.place, keep), all_nodes(), false, out);
  } else {
    send(release_req(j.keys, j.token, false), all_nodes(), false, out);
  }
}

void InterimBrain::attempt_failed(Job& j, AcquireResult r, Clock::time_point now, Actions& out) {
  j.in_attempt = false;
  clean_up(j, now, out);
  if (j.stop) {
    r.error = make_error_code(*j.stop);
    finish(j, std::move(r), out);
    return;
  }
  bool restarting = false;
  for (const auto& v : r.votes.nodes) restarting = restarting || v.error == Errc::node_restarting;
  j.unreachable = r.error == Errc::no_quorum && !restarting ? j.unreachable + 1 : 0;
  if (j.unreachable > config_.retry_count && !j.waits) {
    finish(j, std::move(r), out);
    return;
  }
  auto delay = detail::retry_delay(config_.retry_delay, config_.retry_jitter, random_());
  if (j.waits && r.error == Errc::not_acquired) {
    if (!j.in_line() && !j.listening) {
      j.listening = true;
      for (const auto& k : j.keys) listen(k + ":released", &j, out);
    }
    if (j.woken) {
      delay = Milliseconds(0);
    } else {
      for (const auto& v : r.votes.nodes)
        if (v.vote == Vote::no && v.holder_ttl.count() >= 0 &&
            v.holder_ttl + Milliseconds(1) < delay && (!j.in_line() || !is_turn(v.holder)))
          delay = v.holder_ttl + Milliseconds(1);
    }
  }
  auto next = detail::next_attempt(now, j.deadline, j.attempts, j.max_attempts, delay);
  if (!next) {
    finish(j, std::move(r), out);
    return;
  }
  j.timer = ++last_id_;
  timer_owner_[j.timer] = j.id;
  out.push_back(arm_timer(j.timer, *next));
}

void InterimBrain::finish(Job& j, AcquireResult r, Actions& out) {
  j.finished = true;
  if (j.in_line() && j.attempts > 0 && (!r || r.votes.count(Vote::no) > 0))
    leave_line(j.keys[0], j.ticket, out);
  if (j.listening)
    for (const auto& k : j.keys) unlisten(k + ":released", &j, out);
  if (j.timer != 0) {
    out.push_back(proto::CancelTimer{j.timer});
    timer_owner_.erase(j.timer);
  }
  out.push_back(proto::DeliverAcquire{j.id, std::move(r)});
  jobs_.erase(j.id);  // j is gone from here on
}

void InterimBrain::cancel(std::uint64_t id, Clock::time_point, Actions& out) {
  auto it = jobs_.find(id);
  if (it == jobs_.end() || it->second->finished) return;
  Job& j = *it->second;
  if (j.in_attempt) {
    j.stop = Errc::cancelled;
    return;
  }
  AcquireResult r;
  r.error = make_error_code(Errc::cancelled);
  r.attempts = j.attempts;
  finish(j, std::move(r), out);
}

void InterimBrain::wake(Job& j, Clock::time_point now, Actions& out) {
  if (j.finished) return;
  if (j.in_attempt) {
    j.woken = true;
    return;
  }
  if (j.timer != 0) {
    out.push_back(proto::CancelTimer{j.timer});
    timer_owner_.erase(j.timer);
    j.timer = 0;
  }
  attempt(j, now, out);
}

void InterimBrain::leave_line(const std::string& key, const std::string& ticket, Actions& out) {
  std::string leave;
  send(release_req({key}, "-", false, &ticket, &leave, Milliseconds(0)), all_nodes(), false, out);
}

void InterimBrain::listen(const std::string& channel, Job* job, Actions& out) {
  auto& list = listeners_[channel];
  if (list.empty()) out.push_back(proto::Subscribe{channel});
  if (std::find(list.begin(), list.end(), job) == list.end()) list.push_back(job);
}

void InterimBrain::unlisten(const std::string& channel, Job* job, Actions& out) {
  auto it = listeners_.find(channel);
  if (it == listeners_.end()) return;
  auto& list = it->second;
  list.erase(std::remove(list.begin(), list.end(), job), list.end());
  if (list.empty()) {
    out.push_back(proto::Unsubscribe{channel});
    listeners_.erase(it);
  }
}

// --- notices ---------------------------------------------------------------------------------

void InterimBrain::on_message(std::size_t, const std::string& channel, const std::string& payload,
                              Clock::time_point now, Actions& out) {
  std::string key;
  Job* named = nullptr;
  if (channel == turn_channel_) {
    // "<name>|<ticket>|<key>" (a waiter's turn) or "<name>||<key>" (waiters for several keys).
    auto bar = payload.find('|');
    if (bar == std::string::npos) return;
    auto rest = payload.substr(bar + 1);
    if (rest.rfind(turn_channel_ + "#", 0) == 0) {
      auto end = rest.find('|', turn_channel_.size() + 1);
      if (end == std::string::npos) return;
      auto ticket = rest.substr(0, end);
      auto digits = rest.substr(turn_channel_.size() + 1, end - turn_channel_.size() - 1);
      digits = digits.substr(0, digits.find('@'));
      key = rest.substr(end + 1);
      std::uint64_t id = 0;
      for (char c : digits) {
        if (c < '0' || c > '9') return;
        id = id * 10 + static_cast<std::uint64_t>(c - '0');
      }
      auto it = jobs_.find(id);
      if (it == jobs_.end()) {
        leave_line(key, ticket, out);  // a turn for a waiter that is gone: pass it on
        return;
      }
      named = it->second.get();
    } else if (!rest.empty() && rest[0] == '|') {
      key = rest.substr(1);
    } else {
      return;
    }
    if (named != nullptr) wake(*named, now, out);
  } else {
    auto suffix = std::string(":released");
    if (channel.size() <= suffix.size()) return;
    key = channel.substr(0, channel.size() - suffix.size());
  }
  auto it = listeners_.find(key + ":released");
  if (it == listeners_.end()) return;
  auto list = it->second;  // wake() may change it
  for (auto* j : list)
    if (j != named && jobs_.count(j->id) != 0) wake(*j, now, out);
}

void InterimBrain::on_subscribed(std::size_t, const std::string&, Clock::time_point now,
                                 Actions& out) {
  // A fresh subscription may have missed a notice: every waiter asks again.
  std::vector<std::uint64_t> ids;
  for (auto& [id, j] : jobs_)
    if (j->waits) ids.push_back(id);
  for (auto id : ids) {
    auto it = jobs_.find(id);
    if (it != jobs_.end()) wake(*it->second, now, out);
  }
}

// --- extend, release, renewals ---------------------------------------------------------------

std::uint64_t InterimBrain::extend(const Lock& lock, Milliseconds ttl, Clock::time_point now,
                                   Actions& out) {
  auto op = std::make_unique<Op>();
  op->id = ++last_id_;
  op->is_extend = true;
  op->sent = now;
  op->previous = lock.valid_until;
  op->ttl = ttl;
  op->tally = Tally{nodes_, 0, 0, 0};
  std::vector<std::string> keys;
  for (const auto& r : lock.resources) keys.push_back(config_.key_prefix + r);
  auto id = op->id;
  ops_.emplace(id, std::move(op));
  request_owner_[send(renew_req(keys, lock.token, ttl), all_nodes(), true, out)] = id;
  return id;
}

std::uint64_t InterimBrain::release(const Lock& lock, Clock::time_point now, Actions& out) {
  auto op = std::make_unique<Op>();
  op->id = ++last_id_;
  op->sent = now;
  op->tally = Tally{nodes_, 0, 0, 0};
  std::vector<std::string> keys;
  for (const auto& r : lock.resources) keys.push_back(config_.key_prefix + r);
  auto id = op->id;
  ops_.emplace(id, std::move(op));
  request_owner_[send(release_req(keys, lock.token, true), all_nodes(), true, out)] = id;
  return id;
}

std::uint64_t InterimBrain::watch(const Lock& lock, Clock::time_point now, Actions& out) {
  auto lease = std::make_unique<Lease>();
  Lease& l = *lease;
  l.id = ++last_id_;
  for (const auto& r : lock.resources) l.keys.push_back(config_.key_prefix + r);
  l.token = lock.token;
  l.ttl = lock.ttl;
  l.valid_until = lock.valid_until;
  leases_.emplace(l.id, std::move(lease));
  l.renew_timer = ++last_id_;
  timer_owner_[l.renew_timer] = l.id;
  out.push_back(arm_timer(l.renew_timer, now + l.ttl / 3));
  // The watchdog's margin (lib/net/watchdog.cpp): the holder hears of the loss before its
  // deadline, never after.
  l.lost_timer = ++last_id_;
  timer_owner_[l.lost_timer] = l.id;
  out.push_back(arm_timer(l.lost_timer, l.valid_until - Milliseconds(1)));
  return l.id;
}

void InterimBrain::unwatch(std::uint64_t id, Clock::time_point, Actions&) { unwatch_(id); }

void InterimBrain::unwatch_(std::uint64_t id) {
  auto it = leases_.find(id);
  if (it == leases_.end()) return;
  timer_owner_.erase(it->second->renew_timer);
  timer_owner_.erase(it->second->lost_timer);
  leases_.erase(it);
}

void InterimBrain::renew(Lease& l, Clock::time_point now, Actions& out) {
  l.in_flight = true;
  l.decided = false;
  l.sent = now;
  l.tally = Tally{nodes_, 0, 0, 0};
  l.request = send(renew_req(l.keys, l.token, l.ttl), all_nodes(), true, out);
  request_owner_[l.request] = l.id;
}

void InterimBrain::on_timer(TimerId id, Clock::time_point now, Actions& out) {
  auto it = timer_owner_.find(id);
  if (it == timer_owner_.end()) return;
  auto owner = it->second;
  timer_owner_.erase(it);
  if (auto j = jobs_.find(owner); j != jobs_.end()) {
    if (j->second->timer == id) {
      j->second->timer = 0;
      attempt(*j->second, now, out);
    }
    return;
  }
  auto l = leases_.find(owner);
  if (l == leases_.end()) return;
  Lease& lease = *l->second;
  if (id == lease.lost_timer) {
    {
      proto::Lost lost;
      lost.lease = lease.id;
      out.push_back(lost);
    }
    unwatch_(lease.id);
    return;
  }
  if (id == lease.renew_timer && !lease.in_flight) renew(lease, now, out);
}

void InterimBrain::on_reply(RequestId id, std::size_t node, std::vector<NodeVote> votes,
                            Clock::time_point now, Actions& out) {
  auto it = request_owner_.find(id);
  if (it == request_owner_.end() || votes.empty()) return;
  auto owner = it->second;
  if (auto j = jobs_.find(owner); j != jobs_.end()) {
    if (j->second->request == id) job_reply(*j->second, node, std::move(votes[0]), now, out);
    return;
  }
  if (auto l = leases_.find(owner); l != leases_.end()) {
    Lease& lease = *l->second;
    if (lease.request != id || lease.decided) return;
    count(lease.tally, votes[0].vote);
    auto verdict = lease.tally.verdict();
    if (verdict == Verdict::pending) return;
    lease.decided = true;
    lease.in_flight = false;
    if (verdict == Verdict::won) {
      auto fresh = detail::granted_deadline(lease.sent, now, lease.ttl, config_.drift_factor);
      lease.valid_until = detail::extended_deadline(lease.valid_until, fresh);
      out.push_back(proto::Renewed{lease.id, lease.valid_until});
      out.push_back(arm_timer(lease.lost_timer, lease.valid_until - Milliseconds(1)));
      out.push_back(arm_timer(lease.renew_timer, lease.sent + lease.ttl / 3));
      timer_owner_[lease.lost_timer] = lease.id;
      timer_owner_[lease.renew_timer] = lease.id;
    } else if (lease.tally.loss_reason(Errc::not_held) == Errc::not_held) {
      {
        proto::Lost lost;
        lost.lease = lease.id;
        out.push_back(lost);
      }
      out.push_back(proto::CancelTimer{lease.lost_timer});
      out.push_back(proto::CancelTimer{lease.renew_timer});
      unwatch_(lease.id);
    } else {
      // Nodes unreachable: try again soon, until the deadline says otherwise.
      out.push_back(arm_timer(lease.renew_timer, now + std::max(lease.ttl / 10, Milliseconds(5))));
      timer_owner_[lease.renew_timer] = lease.id;
    }
    return;
  }
  auto o = ops_.find(owner);
  if (o == ops_.end()) return;
  Op& op = *o->second;
  if (op.decided) return;
  count(op.tally, votes[0].vote);
  auto verdict = op.tally.verdict();
  if (verdict == Verdict::pending) return;
  op.decided = true;
  if (op.is_extend) {
    ExtendResult r;
    r.valid_until = op.previous;
    if (verdict == Verdict::won) {
      auto fresh = detail::granted_deadline(op.sent, now, op.ttl, config_.drift_factor);
      if (fresh)
        r.valid_until = detail::extended_deadline(op.previous, fresh);
      else
        r.error = make_error_code(Errc::validity_expired);
    } else {
      r.error = make_error_code(op.tally.loss_reason(Errc::not_held));
    }
    out.push_back(proto::DeliverExtend{op.id, std::move(r)});
  } else {
    ReleaseResult r;
    r.released = op.tally.yes;
    if (verdict != Verdict::won) r.error = make_error_code(op.tally.loss_reason(Errc::not_held));
    out.push_back(proto::DeliverRelease{op.id, std::move(r)});
  }
  ops_.erase(o);
}

}  // namespace redlock::sim
