#include "single.hpp"

#include "scripts.hpp"

namespace redlock::detail::proto {

ExtendResult extend_result(const FanOutTally& f, Clock::time_point previous, Milliseconds ttl,
                           double drift_factor, Clock::time_point now) {
  ExtendResult r;
  r.votes = f.public_votes();
  r.valid_until = previous;
  if (f.verdict() == Verdict::won) {
    auto fresh = granted_deadline(f.started(), now, ttl, drift_factor);
    if (fresh)
      r.valid_until = extended_deadline(previous, fresh);
    else
      r.error = make_error_code(Errc::validity_expired);
  } else {
    r.error = make_error_code(f.tally().loss_reason(Errc::not_held));
  }
  return r;
}

namespace {

ReleaseResult release_result_of(const FanOutTally& f, Votes votes) {
  ReleaseResult r;
  r.votes = std::move(votes);
  r.released = f.tally().yes;
  if (f.verdict() != Verdict::won) r.error = make_error_code(f.tally().loss_reason(Errc::not_held));
  return r;
}

}  // namespace

ReleaseResult release_result(const FanOutTally& f) {
  return release_result_of(f, f.public_votes());
}

ReleaseResult release_result(FanOutTally&& f) {
  auto votes = f.take_public_votes();
  return release_result_of(f, std::move(votes));
}

namespace {

Send send_to_all(std::shared_ptr<const Request> request, const FanOutTally& tally, RequestId id) {
  Send s;
  s.id = id;
  s.request = std::move(request);
  s.nodes = tally.targets();
  return s;
}

}  // namespace

ExtendMachine::ExtendMachine(Context& context, std::uint64_t op, Lock lock, Milliseconds ttl)
    : ctx_(context), op_(op), lock_(std::move(lock)), ttl_(ttl) {}

void ExtendMachine::start(Clock::time_point now, Actions& out) {
  if (tally_) return;
  auto keys = ctx_.held_keys(lock_);
  tally_.emplace(ctx_.nodes(), 1, now);
  id_ = ctx_.next_request();
  out.push_back(send_to_all(std::make_shared<const Request>(renew_request({Renewal{
                                &keys, &lock_.token, ttl_, lock_.permit >= 0, lock_.shared}})),
                            *tally_, id_));
}

void ExtendMachine::on_reply(RequestId request, std::size_t node, std::vector<NodeVote> votes,
                             Clock::time_point now, Actions& out) {
  if (request != id_ || !tally_ || finished_) return;
  if (!tally_->record_decides(node, std::move(votes))) return;
  finished_ = true;
  auto r = extend_result(*tally_, lock_.valid_until, ttl_, ctx_.config().drift_factor, now);
  r.votes.addresses = ctx_.addresses();
  out.push_back(DeliverExtend{op_, std::move(r)});
}

ReleaseMachine::ReleaseMachine(Context& context, std::uint64_t op, Lock lock)
    : ctx_(context), op_(op), lock_(std::move(lock)) {}

void ReleaseMachine::start(Clock::time_point now, Actions& out) {
  if (tally_) return;
  tally_.emplace(ctx_.nodes(), 1, now);
  id_ = ctx_.next_request();
  std::shared_ptr<const Request> request;
  if (lock_.shared) {
    request = std::make_shared<const Request>(
        reader_release_request(ctx_.held_keys(lock_)[0], lock_.token));
  } else if (lock_.permit >= 0) {
    request = std::make_shared<const Request>(
        permit_release_request(ctx_.held_keys(lock_)[0], lock_.token));
  } else {
    // A mutex's, the common release: release_request(held_keys, token), in a request that may be
    // reused (Context::request), its keys written in place.
    auto fill = ctx_.request(Context::Reused::release);
    ctx_.keys_into(lock_.resources, fill->keys);
    fill_release(*fill, lock_.token);
    request = std::move(fill);
  }
  out.push_back(send_to_all(std::move(request), *tally_, id_));
}

void ReleaseMachine::on_reply(RequestId request, std::size_t node, std::vector<NodeVote> votes,
                              Clock::time_point, Actions& out) {
  if (request != id_ || !tally_ || finished_) return;
  if (!tally_->record_decides(node, std::move(votes))) return;
  finished_ = true;
  // Finished: the tally is asked nothing again (a later reply stops at finished_ above).
  auto r = release_result(std::move(*tally_));
  r.votes.addresses = ctx_.addresses();
  out.push_back(DeliverRelease{op_, std::move(r)});
}

}  // namespace redlock::detail::proto
