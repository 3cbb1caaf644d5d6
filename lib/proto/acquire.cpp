#include "acquire.hpp"

#include <algorithm>

#include "../core/token.hpp"
#include "notices.hpp"

namespace redlock::detail::proto {
using namespace std::chrono_literals;

AcquireMachine::AcquireMachine(Context& context, const AcquireRequest& request, Milliseconds ttl,
                               Clock::time_point now, std::int64_t place)
    : AcquireMachine(context, request, request.resources, ttl, now, place) {}

AcquireMachine::AcquireMachine(Context& context, AcquireRequest&& request, Milliseconds ttl,
                               Clock::time_point now, std::int64_t place)
    : AcquireMachine(context, request, std::move(request.resources), ttl, now, place) {}

AcquireMachine::AcquireMachine(Context& context, const AcquireRequest& request,
                               std::vector<std::string> resources, Milliseconds ttl,
                               Clock::time_point now, std::int64_t place)
    : ctx_(context),
      id_(context.next_job()),
      resources_(std::move(resources)),
      keys_(context.keys_of(resources_)),
      ttl_(ttl),
      fencing_(request.fencing),
      shared_(request.shared),
      timer_(context.next_timer()) {
  if (!request.wait) {
    max_attempts_ = 1 + ctx_.config().retry_count;
  } else if (request.wait->count() == 0) {
    max_attempts_ = 1;
  } else {
    max_attempts_ = 0;
    waits_ = true;
    // A wait longer than the client can time is a wait without end.
    if (*request.wait <= longest_duration) deadline_ = now + *request.wait;
    // A waiter for one key stands in line: its place is when it began to wait, the same number
    // on every node (microseconds since the epoch; ties go by ticket). A waiter for several
    // keys is told of their releases on the same channel.
    ticket_ = ctx_.new_ticket(id_, shared_);
    place_ = std::to_string(place);
  }
  // A reader is never a permit (the client refuses both at once: Errc::invalid_argument).
  if (request.permits > 0 && keys_.size() == 1 && !shared_) {
    // A permit: each attempt asks for one slot, a mutex of its own (docs/guide-semaphore.md).
    permits_ = request.permits;
    semaphore_ = keys_;
    slot_keys_.reserve(permits_);
    for (unsigned i = 0; i < permits_; ++i) slot_keys_.push_back(slot_key(semaphore_[0], i));
    ask_slot(next_permit_slot({}, permits_, ctx_.random()));
  }
  ctx_.add_job(id_, this);
}

void AcquireMachine::ask_slot(unsigned slot) {
  slot_ = slot;
  keys_.assign(1, slot_keys_[slot]);
}

AcquireMachine::~AcquireMachine() {
  if (finished_) return;
  ctx_.remove_job(id_);
  Actions ignored;
  if (listening_)
    for (const auto& k : waits_on()) ctx_.notices().remove(released_channel(k), this, ignored);
}

void AcquireMachine::start(Clock::time_point now, Actions& out) {
  if (started_ || finished_) return;
  started_ = true;
  attempt(nullptr, now, out);
}

void AcquireMachine::cancel(Errc why, Clock::time_point now, Actions& out) {
  if (finished_) return;
  if (!started_) {  // cancelled before it began
    started_ = true;
    AcquireResult r;
    r.error = make_error_code(why);
    finish(std::move(r), now, out);
    return;
  }
  if (in_attempt_) {
    stop_reason_ = why;  // the attempt's completion finishes the job
    // Between two fill-in rounds no request is on its way to end the attempt: clean up now.
    if (fill_pending_) {
      out.push_back(CancelTimer{timer_, id_});
      timed_ = Timed::none;
      fill_in(now, out);
    }
    return;
  }
  AcquireResult r;
  r.error = make_error_code(why);
  r.attempts = attempts_;
  r.votes = last_votes_;
  finish(std::move(r), now, out);
}

bool AcquireMachine::wake(const std::string* channel, Clock::time_point now, Actions& out) {
  if (finished_) return false;
  noticed_ = true;
  // A turn on a slot of our semaphore is told on that slot's channel (release.lua): the next
  // attempt asks for that slot, even when the notice comes while an attempt is on its way.
  if (permits_ > 0 && channel != nullptr)
    for (unsigned i = 0; i < permits_; ++i)
      if (*channel == released_channel(slot_keys_[i])) noticed_slot_ = static_cast<int>(i);
  if (in_attempt_) {
    woken_ = true;
    return true;
  }
  if (timed_ != Timed::none) {
    out.push_back(CancelTimer{timer_, id_});
    timed_ = Timed::none;
  }
  attempt(channel, now, out);
  return true;
}

void AcquireMachine::on_timer(TimerId timer, Clock::time_point now, Actions& out) {
  if (timer != timer_ || timed_ == Timed::none || finished_) return;
  auto what = timed_;
  timed_ = Timed::none;
  if (what == Timed::attempt)
    attempt(nullptr, now, out);
  else
    fill_in(now, out);
}

void AcquireMachine::arm(Clock::time_point at, Actions& out) {
  out.push_back(ArmTimer{timer_, id_, at});
}

const std::string& AcquireMachine::digest() {
  if (digest_.empty()) digest_ = token_digest(token_);
  return digest_;
}

// `notice`: the channel whose release notice started this attempt, if one did.
void AcquireMachine::attempt(const std::string* notice, Clock::time_point now, Actions& out) {
  notice_ = notice != nullptr ? *notice : std::string();
  // A waiter for a permit told of its turn on a slot asks for that slot.
  if (noticed_slot_ >= 0) ask_slot(static_cast<unsigned>(noticed_slot_));
  noticed_slot_ = -1;
  // Every attempt has a token of its own: a failed attempt's clean-up may still be on its way
  // when a later attempt is granted, and with one token for both it would delete that grant.
  if (auto ec = ctx_.new_token(token_)) {
    AcquireResult r;
    r.error = ec;
    r.detail = "cannot draw a random token";
    r.attempts = attempts_;
    r.votes = last_votes_;
    finish(std::move(r), now, out);
    return;
  }
  digest_.clear();
  ++attempts_;
  in_attempt_ = true;
  woken_ = false;
  noticed_ = false;  // this attempt answers the notice
  kept_ = false;
  send_acquire(nullptr, now, out);
}

// The acquire script to every node; with `known`, only to the nodes not already ours.
void AcquireMachine::send_acquire(const std::vector<NodeVote>* known, Clock::time_point now,
                                  Actions& out) {
  auto id = ctx_.next_request();
  current_ = id;
  // A map node: the tally stays where it is while later rounds are added.
  Live& live =
      live_.emplace(id, Live(Round::acquire, FanOutTally(ctx_.nodes(), 1, now, false, known)))
          .first->second;
  Send send;
  send.id = id;
  send.job = id_;
  send.issued_at = now;
  // An acquire that does not wait, of one key and without fencing, is one plain command instead
  // (docs/guide-waiting.md); a server too old for it gets the script, built only then (on_reply).
  // A waiter's first attempt, unless a release notice began it (then somebody waits).
  bool first = attempts_ == 1 && notice_.empty();
  // A reader never asks with the quick command: it is the script's reader form or nothing.
  quick_ = permits_ == 0 && !shared_ &&
           quick_acquire_applies(waits_, first, fencing_, keys_.size(), ctx_.quick_acquire());
  if (quick_) {
    live.quick = true;
    live.sent = now;
    auto request = ctx_.request(Context::Reused::quick_acquire);  // filled in whole
    fill_quick_acquire(*request, keys_[0], token_, ttl_);
    send.request = std::move(request);
  } else if (shared_) {
    send.request = std::make_shared<const Request>(reader_request(
        keys_[0], token_, ttl_, fencing_, ticket_, place_, line_kept(now), ctx_.turn_length()));
  } else if (permits_ > 0) {
    send.request = std::make_shared<const Request>(
        permit_request(slot_keys_, token_, ttl_, fencing_, ticket_, place_, line_kept(now),
                       ctx_.turn_length(), PermitAsk{permits_, slot_}));
  } else {
    send.request = std::make_shared<const Request>(acquire_request(
        keys_, token_, ttl_, fencing_, ticket_, place_, line_kept(now), ctx_.turn_length()));
  }
  send.nodes = live.tally.targets();
  bool decided = live.tally.decides_now();  // by the known votes alone, or nobody to ask
  if (!send.nodes.empty()) out.push_back(std::move(send));
  after_decided(id, decided, now, out);
}

// What follows a round's news: its verdict if `decided`, then its end once every node answered.
void AcquireMachine::after_decided(RequestId id, bool decided, Clock::time_point now,
                                   Actions& out) {
  if (decided) on_decided(id, now, out);
  // on_decided may add rounds (a fill-in), never take this one away; looked up again all the same.
  auto it = live_.find(id);
  if (it != live_.end() && it->second.tally.settled()) on_settled(id, now, out);
}

void AcquireMachine::on_reply(RequestId request, std::size_t node, std::vector<NodeVote> votes,
                              Clock::time_point now, Actions& out) {
  RequestId id = request;
  bool from_fallback = false;
  if (auto v = via_.find(request); v != via_.end()) {
    id = v->second;
    from_fallback = true;
    via_.erase(v);
  }
  auto it = live_.find(id);
  if (it == live_.end()) return;
  Live& live = it->second;
  if (node >= live.tally.nodes() || live.tally.answered(node)) return;
  if (live.quick && !from_fallback && !votes.empty() && is_syntax_error(votes[0])) {
    // The server does not know the command's form: no acquire uses it again. The command did not
    // run, so the fallback may go in its place while nothing of ours went behind it that it could
    // overtake: the clean-up of an attempt follows its verdict, here still open.
    ctx_.no_quick_acquire();
    if (!live.tally.decided()) {
      // An undecided round is the current attempt's (an attempt ends only on a verdict): token_
      // is still the one the command carried.
      if (!live.fallback)
        live.fallback = std::make_shared<const Request>(
            acquire_request(keys_, token_, ttl_, fencing_, ticket_, place_, line_kept(live.sent),
                            ctx_.turn_length()));
      Send send;
      send.id = ctx_.next_request();
      send.job = id_;
      send.request = live.fallback;
      send.nodes = {node};
      via_.emplace(send.id, id);
      out.push_back(std::move(send));
      return;
    }
  }
  bool decided = live.tally.record_decides(node, std::move(votes));
  after_decided(id, decided, now, out);
}

void AcquireMachine::on_decided(RequestId id, Clock::time_point now, Actions& out) {
  auto& live = live_.at(id);
  if (live.round == Round::fence) {
    on_fenced(id, now, out);
    return;
  }
  const auto& f = live.tally;
  // A refusal that may be a split vote is judged on the whole picture: every contender then sees
  // the same one and they agree on a winner.
  if (f.verdict() == Verdict::lost && !f.settled() && may_be_split(f)) {
    live.settle = Settle::judge;
    return;
  }
  on_attempt(id, now, out);
}

void AcquireMachine::on_settled(RequestId id, Clock::time_point now, Actions& out) {
  auto it = live_.find(id);
  if (it == live_.end()) return;
  auto settle = it->second.settle;
  it->second.settle = Settle::none;
  if (settle == Settle::judge) {
    on_attempt(id, now, out);
  } else if (settle == Settle::leave_if_refused) {
    const auto& nodes = it->second.tally.votes();
    if (std::any_of(nodes.begin(), nodes.end(),
                    [](const NodeVote& v) { return v.vote == Vote::no; }))
      leave_waiting(out);
  }
  live_.erase(id);
}

bool AcquireMachine::may_be_split(const FanOutTally& f) const {
  return keys_.size() == 1 && f.tally().yes > 0 && f.tally().failed == 0 && !stop_reason_ &&
         !ctx_.shutting_down() && !holder_has_quorum(f.votes(), f.tally().quorum());
}

void AcquireMachine::on_attempt(RequestId id, Clock::time_point now, Actions& out) {
  auto& live = live_.at(id);
  const auto& f = live.tally;
  AcquireResult r;
  // A settled round is dropped once this returns (on_settled, the only one to read its votes
  // after, reads them only for a round not yet settled here): its votes move out.
  r.votes = f.settled() ? live.tally.take_public_votes(ctx_.addresses())
                        : f.public_votes(0, ctx_.addresses());
  r.attempts = attempts_ + fills_;
  if (!kept_) round_start_ = f.started();
  if (f.verdict() == Verdict::won && !ticket_.empty() && !f.settled()) {
    // A node whose vote is still on its way may refuse us (its release came later than the
    // others'): then we stand in its line there (or signed up there, for several keys), and
    // leave once every vote is in.
    live.settle = Settle::leave_if_refused;
  }
  if (f.verdict() == Verdict::won) {
    // A split winner's first keys were set in its first round: its validity counts from there.
    // Kept only with enough validity left to be of use (Config::min_validity_ratio).
    auto valid_until =
        granted_deadline(round_start_, now, ttl_, ctx_.config().drift_factor, least_validity());
    if (valid_until && !ctx_.shutting_down() && !stop_reason_) {
      r.lock.valid_until = *valid_until;
      r.lock.ttl = ttl_;
      if (permits_ > 0) r.lock.permit = static_cast<int>(slot_);
      r.lock.shared = shared_;
      if (fencing_) {
        r.lock.resources = resources_;
        r.lock.token = token_;
        write_back(std::move(r), now, out);
        return;
      }
      // The job ends here, and what may still come (a late vote, leaving the line) uses its keys
      // and ticket: the grant takes the token and the resources rather than copies of them. An
      // observer reads the resources when the result is delivered (AcquireJob::deliver): they
      // are copied for it.
      r.lock.token = std::move(token_);
      if (ctx_.config().observer)
        r.lock.resources = resources_;
      else
        r.lock.resources = std::move(resources_);
      in_attempt_ = false;
      finish(std::move(r), now, out);
      return;
    }
    r.error = make_error_code(valid_until ? Errc::shutting_down : Errc::validity_expired);
  } else {
    r.error = make_error_code(f.tally().loss_reason(Errc::not_acquired));
  }
  attempt_failed(std::move(r), now, out, /*one_round=*/!kept_);
}

// A fenced grant: the fencing token is the highest counter among the granting nodes, handed out
// only once a quorum has raised its counters to it while still holding our token, inside the
// validity window.
void AcquireMachine::write_back(AcquireResult granted, Clock::time_point now, Actions& out) {
  granted.lock.fencing_token = fencing_token_of(granted.votes.nodes);
  auto id = ctx_.next_request();
  Live& live =
      live_.emplace(id, Live(Round::fence, FanOutTally(ctx_.nodes(), 1, now))).first->second;
  Send send;
  send.id = id;
  send.job = id_;
  send.request = std::make_shared<const Request>(
      fence_request(keys_, token_, granted.lock.fencing_token, shared_));
  send.nodes = live.tally.targets();
  live.granted = std::move(granted);
  current_ = id;
  out.push_back(std::move(send));
}

void AcquireMachine::on_fenced(RequestId id, Clock::time_point now, Actions& out) {
  auto& live = live_.at(id);
  const auto& f = live.tally;
  AcquireResult r = std::move(live.granted);
  bool valid = enough_left(now, r.lock.valid_until, least_validity());
  if (f.verdict() == Verdict::won && valid && !ctx_.shutting_down() && !stop_reason_) {
    in_attempt_ = false;
    finish(std::move(r), now, out);
    return;
  }
  r.votes = f.public_votes(0, ctx_.addresses());
  if (f.verdict() != Verdict::won)
    r.error = make_error_code(f.tally().loss_reason(Errc::not_acquired));
  else
    r.error = make_error_code(valid ? Errc::shutting_down : Errc::validity_expired);
  r.lock = Lock();
  attempt_failed(std::move(r), now, out);
}

// After a refused round: true when we keep our keys and ask the nodes we lack again, as the
// winner of a split vote (split_winner) or while a fill-in may still win (fill_in_may_win), a few
// times, within the validity window of the first round.
bool AcquireMachine::keep_going(const AcquireResult& r, Clock::time_point now, Actions& out) {
  if (r.error != Errc::not_acquired || ctx_.shutting_down() || stop_reason_ || keys_.size() != 1)
    return false;
  const auto& nodes = r.votes.nodes;
  if (!kept_) {
    if (!split_to_settle(nodes, last_names_)) return false;
    if (!split_winner(nodes, r.votes.quorum, digest())) return false;
    beaten_.clear();
    for (const auto& v : nodes)
      if (v.vote == Vote::no && v.holder != digest()) beaten_.push_back(v.holder);
    kept_ = true;
    fills_in_a_row_ = 0;
  } else if (!fill_in_may_win(nodes, r.votes.quorum, beaten_, digest())) {
    return false;
  }
  auto deadline = validity_deadline(round_start_, ttl_, ctx_.config().drift_factor);
  if (fills_in_a_row_ >= kMaxFills || !enough_left(now, deadline, least_validity())) return false;
  ++fills_in_a_row_;
  ++fills_;
  in_attempt_ = true;
  kept_votes_ = r.votes;
  // The first asks go out at once (each takes a round trip, in which the losers' clean-ups land);
  // the last a millisecond later.
  if (fills_in_a_row_ <= 3) {
    send_acquire(&kept_votes_.nodes, now, out);
  } else {
    fill_pending_ = true;
    timed_ = Timed::fill_in;
    arm(now + 1ms, out);
  }
  return true;
}

void AcquireMachine::fill_in(Clock::time_point now, Actions& out) {
  fill_pending_ = false;
  if (ctx_.shutting_down() || stop_reason_) {
    // Ends like a failed round: clean up, then finish.
    AcquireResult r;
    r.votes = kept_votes_;
    r.attempts = attempts_ + fills_;
    r.error = make_error_code(Errc::not_acquired);
    attempt_failed(std::move(r), now, out);
    return;
  }
  send_acquire(&kept_votes_.nodes, now, out);
}

void AcquireMachine::clean_up(const std::vector<std::string>& keys, const std::string& token,
                              const Line* line, const std::vector<bool>* spare, Actions& out) {
  Send send;
  send.id = ctx_.next_request();
  send.job = id_;
  // A permit's clean-up lets the semaphore's k go where it leaves no slot held (scripts.hpp).
  // A reader's takes out its own entry alone (scripts.hpp).
  send.request = std::make_shared<const Request>(
      shared_        ? reader_release_request(keys[0], token, /*announce=*/false, line)
      : permits_ > 0 ? permit_release_request(keys[0], token, /*announce=*/false, line)
                     : release_request(keys, token, /*announce=*/false, line));
  for (std::size_t i = 0; i < ctx_.nodes(); ++i)
    if (spare == nullptr || i >= spare->size() || !(*spare)[i]) send.nodes.push_back(i);
  send.reply_wanted = false;
  if (!send.nodes.empty()) out.push_back(std::move(send));
}

// A waiter that stops, or that was granted where some node refused it, leaves the line (one key)
// or its sign-ups (several keys) on every node.
void AcquireMachine::leave_waiting(Actions& out) {
  Send send;
  send.id = ctx_.next_request();
  send.job = id_;
  send.request =
      std::make_shared<const Request>(shared_        ? leave_reader_request(keys_[0], ticket_)
                                      : permits_ > 0 ? leave_permit_request(slot_keys_, ticket_)
                                                     : leave_waiting_request(keys_, ticket_));
  for (std::size_t i = 0; i < ctx_.nodes(); ++i) send.nodes.push_back(i);
  send.reply_wanted = false;
  out.push_back(std::move(send));
}

// `one_round`: r.votes are those of the attempt's only round of acquire scripts (no fill-in
// round, no fencing round after it).
void AcquireMachine::attempt_failed(AcquireResult r, Clock::time_point now, Actions& out,
                                    bool one_round) {
  // Nodes that refused the only request this attempt sent them hold nothing of its token
  // (cleanup_spared). Computed before keep_going, which may go on to a fill-in round.
  std::vector<bool> spare;
  if (one_round) spare = cleanup_spared(r.votes.nodes, digest());
  // A node that keeps another number of permits ends the acquire: k is refused, not waited out.
  if (permits_ > 0 && !stop_reason_)
    for (const auto& v : r.votes.nodes)
      if (v.error == Errc::permits_mismatch) {
        stop_reason_ = Errc::permits_mismatch;
        r.detail = v.detail;
      }
  if (keep_going(r, now, out)) return;
  std::string notice;
  notice.swap(notice_);  // answered: a later attempt is the timer's, not this notice's
  in_attempt_ = false;
  kept_ = false;
  // A failed attempt may have left its token on some nodes: compare-and-delete there, silently
  // (a clean-up is no release and must wake no waiter). A waiter granted on some nodes left the
  // line there: it takes its place again, unless it stops now (finish() then takes it out).
  Line line{ticket_, place_, line_kept(now)};
  bool keep_place = in_line() && !ctx_.shutting_down() && !stop_reason_;
  clean_up(keys_, token_, keep_place ? &line : nullptr, spare.empty() ? nullptr : &spare, out);
  last_votes_ = r.votes;
  if (ctx_.shutting_down() || stop_reason_) {
    r.error = make_error_code(ctx_.shutting_down() ? Errc::shutting_down : *stop_reason_);
    finish(std::move(r), now, out);
    return;
  }
  // Unreachable nodes are not worth waiting for without end; a node kept out by the restart
  // guard is not unreachable (unreachable_round).
  unreachable_ = unreachable_round(r.error, r.votes.nodes) ? unreachable_ + 1 : 0;
  if (unreachable_ > ctx_.config().retry_count) {
    finish(std::move(r), now, out);
    return;
  }
  const auto& config = ctx_.config();
  auto delay = retry_delay(config.retry_delay, config.retry_jitter, ctx_.random());
  bool split = r.error == Errc::not_acquired && looks_split(r.votes);
  splits_ = split ? splits_ + 1 : 0;
  if (waits_ && r.error == Errc::not_acquired) listen(out);
  bool freed = false;  // a "no" named a holder whose release notice we have seen
  if (waits_ && r.error == Errc::not_acquired && keys_.size() == 1)
    for (const auto& v : r.votes.nodes)
      freed = freed || (v.vote == Vote::no &&
                        ctx_.notices().released(released_channel(waits_on()[0]), v.holder));
  freed_in_a_row_ = freed ? freed_in_a_row_ + 1 : 0;
  // Woken by a notice and refused because of another of our keys: the resource that was
  // released may be free, and another waiter of this client may want only it.
  if (!notice.empty() && r.error == Errc::not_acquired && keys_.size() > 1 && listening_)
    ctx_.notices().pass(notice, now, out);
  if (split) {
    // Nobody holds a quorum: every contender is releasing what it got. Retry soon, those closer
    // to a quorum first, spread at random; when the picture was whole, give the agreed winner a
    // few round trips first.
    auto cap = std::max(config.retry_delay + config.retry_jitter, Milliseconds(2));
    bool agreed = r.votes.count(Vote::pending) == 0 && r.votes.count(Vote::failed) == 0;
    auto unit = agreed ? kWinnerUnit : Milliseconds(1);
    delay = std::max(split_backoff(r.votes.yes(), r.votes.quorum, splits_, unit,
                                   std::max(cap, unit), ctx_.random()),
                     unit);
  } else if (permits_ > 0 && r.error == Errc::not_acquired && permit_hinted(r.votes.nodes) &&
             hinted_in_a_row_ < 3) {
    // Nodes named a free slot: ask for it at once. Such an attempt does not count against an
    // acquire that does not wait (a try at a semaphore with a free permit is not refused because
    // it first asked for a taken slot); three in a row at most.
    ++hinted_in_a_row_;
    if (max_attempts_ > 0) ++max_attempts_;
    delay = Milliseconds(0);
  } else if (waits_ && r.error == Errc::not_acquired) {
    if (woken_ || quick_ || (freed && freed_in_a_row_ <= 3)) {
      // A notice came in while we were asking, the quick command asked without standing in line
      // (the script then puts us there), or the holder we met is being released: ask again at
      // once.
      delay = Milliseconds(0);
    } else {
      delay = waiter_fallback(delay, r.votes.nodes, in_line());
    }
  }
  // A waiter for several keys asks again before its sign-ups end on the nodes (keys.hpp).
  delay = sign_up_refresh(delay, waits_, keys_.size());
  if (permits_ > 0) {
    if (!permit_hinted(r.votes.nodes)) hinted_in_a_row_ = 0;
    ask_slot(noticed_slot_ >= 0 ? static_cast<unsigned>(noticed_slot_)
                                : next_permit_slot(r.votes.nodes, permits_, ctx_.random()));
  }
  auto next = next_attempt(now, deadline_, attempts_, max_attempts_, delay);
  if (!next) {
    finish(std::move(r), now, out);
    return;
  }
  timed_ = Timed::attempt;
  arm(now + std::chrono::ceil<Milliseconds>(*next - now), out);
}

// A split vote: contenders each hold some nodes, none can hold a quorum, and each is releasing
// what it got (see split_suspected, which also remembers the names for the next attempt).
bool AcquireMachine::looks_split(const Votes& votes) {
  return split_suspected(votes.nodes, votes.quorum, keys_.size(), last_names_);
}

void AcquireMachine::listen(Actions& out) {
  if (listening_) return;
  listening_ = true;
  if (!waited_) {
    waited_ = true;
    out.push_back(WaitBegan{id_});
  }
  for (const auto& k : waits_on()) ctx_.notices().add(released_channel(k), this, out);
}

// The least validity a grant of ours must have left (quorum.hpp).
std::chrono::microseconds AcquireMachine::least_validity() const {
  return redlock::detail::least_validity(ttl_, ctx_.config().min_validity_ratio);
}

Milliseconds AcquireMachine::line_kept(Clock::time_point now) const {
  return line_keep(deadline_, now, ttl_);
}

void AcquireMachine::finish(AcquireResult r, Clock::time_point now, Actions& out) {
  finished_ = true;
  // A waiter leaves the line when it stops waiting, and when nodes refused it as it was granted
  // (it took a place there; where the vote is still on its way, it will be granted, or its place
  // there ends with a turn it misses). So does a waiter for several keys, from the sign-ups that
  // refused nodes keep. The token "-" is no token: nothing is deleted.
  if (!ticket_.empty() && attempts_ > 0 && (!r || r.votes.count(Vote::no) > 0)) leave_waiting(out);
  if (listening_)
    for (const auto& k : waits_on()) ctx_.notices().remove(released_channel(k), this, out);
  // Woken by a notice we did not use (cancelled, out of time): another waiter of this client may
  // use it.
  if (listening_ && noticed_ && !r)
    for (const auto& k : waits_on()) ctx_.notices().pass(released_channel(k), now, out);
  listening_ = false;
  ctx_.remove_job(id_);
  if (timed_ != Timed::none) {
    out.push_back(CancelTimer{timer_, id_});
    timed_ = Timed::none;
  }
  out.push_back(DeliverAcquire{id_, std::move(r)});
}

}  // namespace redlock::detail::proto
