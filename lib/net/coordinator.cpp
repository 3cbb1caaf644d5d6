#include "coordinator.hpp"

#include <hiredis/hiredis.h>

#include <algorithm>
#include <cstdio>
#include <exception>

#include "../core/keys.hpp"
#include "../core/replies.hpp"
#include "../core/token.hpp"
#include "observe.hpp"
#include "scripts.hpp"

namespace redlock::detail {
namespace {

using std::chrono::microseconds;
using namespace std::chrono_literals;

// The fan-outs' view of the decoders in core/replies.hpp (one vote per item).
// The reply is decoded as what was sent: the script, or the quick acquire (a plain SET).
void classify_acquire(const redisReply* r, const Command& c, NodeVote* votes, std::size_t) {
  if (c.script != nullptr)
    acquire_vote(r, votes[0]);
  else
    quick_acquire_vote(r, votes[0]);
}

void classify_fence(const redisReply* r, const Command&, NodeVote* votes, std::size_t) {
  fence_vote(r, votes[0]);
}

void classify_release(const redisReply* r, const Command& c, NodeVote* votes, std::size_t) {
  release_vote(r, c.keys.size(), votes[0]);
}

void classify_text(const redisReply* r, const Command&, NodeVote* votes, std::size_t) {
  text_vote(r, votes[0]);
}

std::string ms_arg(Milliseconds d) { return std::to_string(d.count()); }

// The vote of a node that refused to send a request: its error, with its text when it has one.
NodeVote send_failed_vote(const Node& node, std::error_code ec) {
  NodeVote v;
  v.vote = Vote::failed;
  v.error = ec;
  v.detail = ec == node.last_error() ? node.last_error_detail() : ec.message();
  return v;
}

// The holder name acquire.lua gives a free key that is a waiter's turn.
bool is_turn(const std::string& holder) { return holder.rfind("turn:", 0) == 0; }

void add_renewal(Command& c, const std::vector<std::string>& keys, const std::string& token,
                 Milliseconds ttl) {
  c.keys.insert(c.keys.end(), keys.begin(), keys.end());
  c.args.push_back(token);
  c.args.push_back(ms_arg(ttl));
  c.args.push_back(std::to_string(keys.size()));
}

std::string info_field(const std::string& info, const std::string& field) {
  auto pos = info.find(field + ":");
  if (pos == std::string::npos) return {};
  pos += field.size() + 1;
  auto end = info.find_first_of("\r\n", pos);
  return info.substr(pos, end == std::string::npos ? end : end - pos);
}

}  // namespace

void classify_renew(const redisReply* r, const Command&, NodeVote* votes, std::size_t items) {
  renew_votes(r, votes, items);
}

void deliver_guarded(const char* what, const std::function<void()>& call) noexcept {
  try {
    call();
  } catch (const std::exception& e) {
    log_message(thread_config(), LogLevel::error,
                std::string("exception escaped a ") + what + " callback: " + e.what());
  } catch (...) {
    log_message(thread_config(), LogLevel::error,
                std::string("exception escaped a ") + what + " callback");
  }
}

// ---------------------------------------------------------------------------------------------
// FanOut

FanOut::FanOut(Coordinator& coordinator, Command command, std::size_t items, Classify classify,
               Decided decided, bool wait_all)
    : coordinator_(coordinator),
      command_(std::move(command)),
      classify_(classify),
      decided_(std::move(decided)),
      wait_all_(wait_all) {
  auto n = coordinator_.nodes().size();
  tallies_.assign(items, Tally{n, 0, 0, 0});
  votes_.resize(items);
  for (auto& v : votes_) {
    v.nodes.resize(n);
    v.addresses = coordinator_.addresses();
    v.quorum = quorum_size(n);
  }
  verdicts_.assign(items, Verdict::pending);
  announced_.assign(items, false);
  scratch_.resize(items);
  if (wait_all_) texts_.resize(n);
  ++coordinator_.live_fanouts_;
}

FanOut::~FanOut() { coordinator_.fanout_ended(); }

void FanOut::start(Coordinator& coordinator, Command command, std::size_t items, Classify classify,
                   Decided decided, bool wait_all, const std::vector<NodeVote>* known,
                   std::optional<Command> fallback) {
  auto* f =
      new FanOut(coordinator, std::move(command), items, classify, std::move(decided), wait_all);
  f->fallback_ = std::move(fallback);
  f->started_ = Clock::now();  // t0: before the first request leaves
  // One reading of the loop's clocks for every node's request: they leave together.
  const auto at = Node::SendTime::now(coordinator.loop());
  for (auto& node : coordinator.nodes()) {
    if (known != nullptr && items == 1 && node->index() < known->size() &&
        (*known)[node->index()].vote == Vote::yes) {
      f->record(0, node->index(), (*known)[node->index()]);
    } else if (auto ec = node->send(f->command_, f, &at)) {
      auto v = send_failed_vote(*node, ec);
      for (std::size_t i = 0; i < items; ++i) f->record(i, node->index(), v);
    } else {
      ++f->outstanding_;
    }
  }
  // Decide only once every request is on its way, so a verdict's clean-up follows them all.
  f->sending_ = false;
  f->maybe_decide();
  f->maybe_finish();
}

void FanOut::record(std::size_t item, std::size_t node, NodeVote vote) {
  auto& slot = votes_[item].nodes[node];
  if (slot.vote != Vote::pending) return;
  auto& t = tallies_[item];
  switch (vote.vote) {
    case Vote::yes:
      ++t.yes;
      break;
    case Vote::no:
      ++t.no;
      break;
    case Vote::failed:
      ++t.failed;
      break;
    case Vote::pending:
      return;
  }
  slot = std::move(vote);
}

void FanOut::on_node_reply(std::size_t node, const NodeReply& reply) {
  --outstanding_;
  std::size_t items = votes_.size();
  const bool fell_back = !fell_back_.empty() && fell_back_[node];
  if (reply.error && fallback_ && !fell_back && reply.detail.rfind("ERR syntax error", 0) == 0) {
    // The server does not know the command's form: no fan-out uses it again. The command did
    // not run, so the fallback may go in its place while nothing of ours went behind it that
    // it could overtake: the clean-up of an attempt follows its verdict, here still open.
    coordinator_.no_quick_acquire();
    if (!announced_[0]) {
      if (fell_back_.empty()) fell_back_.assign(votes_[0].nodes.size(), false);
      fell_back_[node] = true;
      auto& target = *coordinator_.nodes()[node];
      auto ec = target.send(*fallback_, this);
      if (!ec) {
        ++outstanding_;
        return;
      }
      auto v = send_failed_vote(target, ec);
      for (std::size_t i = 0; i < items; ++i) record(i, node, v);
      maybe_decide();
      maybe_finish();
      return;
    }
  }
  if (reply.error) {
    NodeVote v;
    v.vote = Vote::failed;
    v.error = reply.error;
    v.detail.assign(reply.detail);
    v.latency = reply.latency;
    for (std::size_t i = 0; i < items; ++i) record(i, node, v);
  } else {
    for (auto& s : scratch_) s = NodeVote{};
    classify_(reply.reply, fell_back ? *fallback_ : command_, scratch_.data(), items);
    for (std::size_t i = 0; i < items; ++i) {
      NodeVote v = std::move(scratch_[i]);
      if (v.vote == Vote::pending) {
        v.vote = Vote::failed;
        v.error = make_error_code(Errc::protocol_error);
        v.detail = "unexpected reply";
      }
      v.latency = reply.latency;
      record(i, node, std::move(v));
    }
    if (wait_all_ && reply.reply->str != nullptr)
      texts_[node].assign(reply.reply->str, reply.reply->len);
  }
  maybe_decide();
  maybe_finish();
}

void FanOut::maybe_decide() {
  if (sending_) return;
  for (std::size_t i = 0; i < votes_.size(); ++i) {
    if (announced_[i]) continue;
    Verdict v =
        wait_all_ ? (outstanding_ == 0 ? Verdict::won : Verdict::pending) : tallies_[i].verdict();
    if (v == Verdict::pending) continue;
    announced_[i] = true;
    verdicts_[i] = v;
    if (decided_) decided_(*this, i);
  }
}

void FanOut::maybe_finish() {
  if (sending_ || outstanding_ != 0) return;
  if (settled_) {
    auto settled = std::move(settled_);
    settled_ = nullptr;
    settled(*this);
  }
  delete this;  // every item is decided by then
}

// ---------------------------------------------------------------------------------------------
// AcquireJob: attempts, clean-up of failed attempts, retries, and sleeping until a release.

class Coordinator::AcquireJob final : public Waiter {
 public:
  AcquireJob(Coordinator& co, AcquireRequest request, Milliseconds ttl,
             Client::AcquireCallback done)
      : co_(co),
        id_(co.next_job_id_++),
        resources_(std::move(request.resources)),
        keys_(co.keys_of(resources_)),
        ttl_(ttl),
        done_(std::move(done)),
        cancel_(std::move(request.cancel)),
        fencing_(request.fencing) {
    observe(co.config(), [&](Observer&) { began_ = Clock::now(); });
    if (!request.wait) {
      max_attempts_ = 1 + co.config().retry_count;
    } else if (request.wait->count() == 0) {
      max_attempts_ = 1;
    } else {
      max_attempts_ = 0;
      waits_ = true;
      // A wait longer than the client can time is a wait without end.
      if (*request.wait <= longest_duration) deadline_ = Clock::now() + *request.wait;
      // A waiter for one key stands in line: its place is when it began to wait, the same
      // number on every node (microseconds since the epoch; ties go by ticket). A waiter for
      // several keys is told of their releases on the same channel.
      ticket_ = co.new_ticket(id_);
      place_ = std::to_string(std::chrono::duration_cast<std::chrono::microseconds>(
                                  std::chrono::system_clock::now().time_since_epoch())
                                  .count());
    }
    uv_timer_init(co.loop(), &timer_);
    timer_.data = this;
    co_.jobs_.emplace(id_, this);
  }

  void begin() {
    if (cancel_) {
      auto* co = &co_;
      auto id = id_;
      auto post = co_.post_to_loop_;
      cancel_hook_ = cancel_state_of(*cancel_)->add([co, id, post] {
        if (post) post([co, id] { co->cancel(id); });
      });
      if (cancel_hook_ == 0) {  // cancelled before it began
        AcquireResult r;
        r.error = make_error_code(Errc::cancelled);
        finish(std::move(r));
        return;
      }
    }
    attempt();
  }

  // A release notice (or a fresh subscription) on one of our resources.
  bool wake(const std::string* channel) override {
    if (finished_) return false;
    noticed_ = true;
    if (in_attempt_) {
      woken_ = true;
      return true;
    }
    uv_timer_stop(&timer_);
    attempt(channel);
    return true;
  }

  bool busy() const override { return in_attempt_; }
  const std::string& ticket() const override { return ticket_; }
  bool in_line() const override { return !ticket_.empty() && keys_.size() == 1; }

  // Shutdown or cancel token.
  void stop(Errc why) {
    if (finished_) return;
    if (in_attempt_) {
      stop_reason_ = why;  // the attempt's completion finishes the job
      // Between two fill-in rounds no request is on its way to end the attempt: clean up now,
      // while the nodes are still open (a shutdown closes them once no fan-out is live).
      if (fill_pending_) {
        uv_timer_stop(&timer_);
        fill_in();
      }
      return;
    }
    AcquireResult r;
    r.error = make_error_code(why);
    r.attempts = attempts_;
    r.votes = last_votes_;
    finish(std::move(r));
  }

 private:
  // `notice`: the channel whose release notice started this attempt, if one did.
  void attempt(const std::string* notice = nullptr) {
    notice_ = notice != nullptr ? *notice : std::string();
    // Every attempt has a token of its own. A failed attempt's clean-up may still be on its way
    // (on a connection being replaced, or behind a slow node) when a later attempt is granted;
    // with one token for both it would delete that grant, and the holder would believe in a
    // quorum that no longer exists.
    if (auto ec = new_token(token_)) {
      AcquireResult r;
      r.error = ec;
      r.detail = "cannot draw a random token";
      r.attempts = attempts_;
      r.votes = last_votes_;
      finish(std::move(r));
      return;
    }
    digest_.clear();  // worked out when a refusal is to be read (digest())
    ++attempts_;
    in_attempt_ = true;
    woken_ = false;
    noticed_ = false;  // this attempt answers the notice
    kept_ = false;
    send_acquire(nullptr);
  }

  // The acquire script to every node; with `known`, only to the nodes not already ours (a split
  // winner asking again for what it lacks).
  void send_acquire(const std::vector<NodeVote>* known) {
    Command command{&script_acquire, keys_, {token_, ms_arg(ttl_), fencing_ ? "1" : "0"}};
    // Every acquire of one key through the script keeps to the line; only a waiter takes a
    // place in it.
    command.args.push_back(ticket_);
    command.args.push_back(ticket_.empty() ? "0" : place_);
    command.args.push_back(ms_arg(line_kept()));
    command.args.push_back(ms_arg(co_.turn_length()));
    // An acquire that does not wait, of one key and without fencing, is one plain command
    // instead: it takes a free key whatever the line (docs/guide-waiting.md), for a fraction of
    // the script's cost on the servers. A server too old for it gets the script (FanOut).
    std::optional<Command> script;
    if (!waits_ && !fencing_ && keys_.size() == 1 && co_.quick_acquire()) {
      script = std::move(command);
      command = Command{nullptr, {}, {"SET", keys_[0], token_, "NX", "PX", ms_arg(ttl_), "GET"}};
    }
    FanOut::start(
        co_, std::move(command), 1, classify_acquire,
        [this](FanOut& f, std::size_t) {
          // A refusal that may be a split vote is judged on the whole picture: every contender
          // then sees the same one and they agree on a winner. The rest of the replies come
          // within a request timeout, usually within microseconds of the verdict.
          if (f.verdict() == Verdict::lost && !f.settled() && may_be_split(f)) {
            f.when_settled([this](FanOut& whole) { on_attempt(whole); });
            return;
          }
          on_attempt(f);
        },
        false, known, std::move(script));
  }

  bool may_be_split(const FanOut& f) const {
    return keys_.size() == 1 && f.tally().yes > 0 && f.tally().failed == 0 && !stop_reason_ &&
           !co_.shutting_down() && !holder_has_quorum(f.votes().nodes, f.tally().quorum());
  }

  void on_attempt(FanOut& f) {
    auto now = Clock::now();
    AcquireResult r;
    r.votes = f.votes();
    r.attempts = attempts_ + fills_;
    if (!kept_) round_start_ = f.started();
    if (f.verdict() == Verdict::won && !ticket_.empty() && !f.settled()) {
      // A node whose vote is still on its way may refuse us (its release came later than the
      // others'): then we stand in its line there (or signed up there, for several keys), and
      // leave once every vote is in.
      auto* co = &co_;
      f.when_settled([co, keys = keys_, ticket = ticket_](FanOut& whole) {
        const auto& nodes = whole.votes().nodes;
        if (std::any_of(nodes.begin(), nodes.end(),
                        [](const NodeVote& v) { return v.vote == Vote::no; }))
          co->leave_waiting(keys, ticket);
      });
    }
    if (f.verdict() == Verdict::won) {
      // A split winner's first keys were set in its first round: its validity counts from there.
      // Kept only with enough validity left to be of use (Config::min_validity_ratio).
      auto valid_until =
          granted_deadline(round_start_, now, ttl_, co_.config().drift_factor, least_validity());
      if (valid_until && !co_.shutting_down() && !stop_reason_) {
        r.lock.resources = resources_;
        r.lock.token = token_;
        r.lock.valid_until = *valid_until;
        r.lock.ttl = ttl_;
        if (fencing_) {
          write_back(std::move(r));
          return;
        }
        in_attempt_ = false;
        finish(std::move(r));
        return;
      }
      r.error = make_error_code(valid_until ? Errc::shutting_down : Errc::validity_expired);
    } else {
      r.error = make_error_code(f.tally().loss_reason(Errc::not_acquired));
    }
    attempt_failed(std::move(r), now, /*one_round=*/!kept_);
  }

  // A fenced grant: the fencing token is the highest counter among the granting nodes, and it
  // is handed out only once a quorum has raised its counters to it while still holding our
  // token, inside the validity window. Otherwise the attempt failed like any other.
  void write_back(AcquireResult granted) {
    granted.lock.fencing_token = fencing_token_of(granted.votes.nodes);
    Command command{&script_fence, keys_, {token_, std::to_string(granted.lock.fencing_token)}};
    auto shared = std::make_shared<AcquireResult>(std::move(granted));
    FanOut::start(
        co_, std::move(command), 1, classify_fence, [this, shared](FanOut& f, std::size_t) {
          auto now = Clock::now();
          AcquireResult r = std::move(*shared);
          bool valid = enough_left(now, r.lock.valid_until, least_validity());
          if (f.verdict() == Verdict::won && valid && !co_.shutting_down() && !stop_reason_) {
            in_attempt_ = false;
            finish(std::move(r));
            return;
          }
          r.votes = f.votes();
          if (f.verdict() != Verdict::won)
            r.error = make_error_code(f.tally().loss_reason(Errc::not_acquired));
          else
            r.error = make_error_code(valid ? Errc::shutting_down : Errc::validity_expired);
          r.lock = Lock();
          attempt_failed(std::move(r), now);
        });
  }

  // After a refused round: true when we keep our keys and ask the nodes we lack again, as the
  // winner of a split vote (quorum.hpp: split_winner) or while a fill-in may still win
  // (fill_in_may_win), a few times, within the validity window of the first round.
  bool keep_going(const AcquireResult& r, Clock::time_point now) {
    if (r.error != Errc::not_acquired || co_.shutting_down() || stop_reason_ || keys_.size() != 1)
      return false;
    const auto& nodes = r.votes.nodes;
    if (!kept_) {
      // A waiter's turn is nobody's key to release: no split to settle.
      if (std::any_of(nodes.begin(), nodes.end(),
                      [](const NodeVote& v) { return v.vote == Vote::no && is_turn(v.holder); }))
        return false;
      // A name the previous attempt met too is a key nobody releases (see looks_split): no
      // split to settle.
      for (const auto& v : nodes)
        if (v.vote == Vote::no &&
            std::find(last_names_.begin(), last_names_.end(), v.holder) != last_names_.end())
          return false;
      if (!split_winner(nodes, r.votes.quorum, digest())) return false;
      beaten_.clear();
      for (const auto& v : nodes)
        if (v.vote == Vote::no && v.holder != digest()) beaten_.push_back(v.holder);
      kept_ = true;
      fills_in_a_row_ = 0;
    } else if (!fill_in_may_win(nodes, r.votes.quorum, beaten_, digest())) {
      return false;
    }
    auto deadline = validity_deadline(round_start_, ttl_, co_.config().drift_factor);
    if (fills_in_a_row_ >= kMaxFills || !enough_left(now, deadline, least_validity())) return false;
    ++fills_in_a_row_;
    ++fills_;
    in_attempt_ = true;
    kept_votes_ = r.votes;
    // The first asks go out at once (each takes a round trip, in which the losers' clean-ups
    // land, sent when they saw the same picture as we did); the last a millisecond later.
    if (fills_in_a_row_ <= 3) {
      send_acquire(&kept_votes_.nodes);
    } else {
      fill_pending_ = true;
      uv_timer_start(
          &timer_, [](uv_timer_t* t) { static_cast<AcquireJob*>(t->data)->fill_in(); }, 1, 0);
    }
    return true;
  }

  void fill_in() {
    fill_pending_ = false;
    if (co_.shutting_down() || stop_reason_) {
      // Ends like a failed round: clean up, then finish.
      AcquireResult r;
      r.votes = kept_votes_;
      r.attempts = attempts_ + fills_;
      r.error = make_error_code(Errc::not_acquired);
      attempt_failed(std::move(r), Clock::now());
      return;
    }
    send_acquire(&kept_votes_.nodes);
  }

  // `one_round`: r.votes are those of the attempt's only round of acquire scripts (no fill-in
  // round, no fencing round after it).
  void attempt_failed(AcquireResult r, Clock::time_point now, bool one_round = false) {
    // Nodes that refused the only request this attempt sent them hold nothing of its token: the
    // script answers "no" before it writes anything (acquire.lua), and every attempt has a token
    // of its own. A "no" that names our own token is a server asked twice under two addresses:
    // that key is ours. Computed before keep_going, which may go on to a fill-in round.
    std::vector<bool> spare;
    if (one_round) {
      spare.assign(r.votes.nodes.size(), false);
      for (std::size_t i = 0; i < spare.size(); ++i) {
        const auto& v = r.votes.nodes[i];
        spare[i] = v.vote == Vote::no && v.holder != digest();
      }
    }
    if (keep_going(r, now)) return;
    std::string notice;
    notice.swap(notice_);  // answered: a later attempt is the timer's, not this notice's
    in_attempt_ = false;
    kept_ = false;
    // A failed attempt may have left its token on some nodes, or may still do so on nodes that
    // have not answered: compare-and-delete everywhere, queued behind the acquire. Silently: a
    // clean-up is no release, and must wake no waiter (this one included).
    // A waiter granted on some nodes left the line there: it takes its place again, unless it
    // stops now (then finish() takes it out of the line everywhere).
    Coordinator::Line line{ticket_, place_, line_kept()};
    bool keep_place = in_line() && !co_.shutting_down() && !stop_reason_;
    // Only where the attempt may have left its token: a node that refused it kept the waiter in
    // line too (acquire.lua), so the clean-up has nothing to do there.
    co_.release_everywhere(keys_, token_, /*announce=*/false, keep_place ? &line : nullptr,
                           spare.empty() ? nullptr : &spare);
    last_votes_ = r.votes;
    if (co_.shutting_down() || stop_reason_) {
      r.error = make_error_code(co_.shutting_down() ? Errc::shutting_down : *stop_reason_);
      finish(std::move(r));
      return;
    }
    // Unreachable nodes are not worth waiting for without end.
    // A node kept out by the restart guard is not unreachable: it will vote at a known time.
    bool restarting =
        std::any_of(r.votes.nodes.begin(), r.votes.nodes.end(),
                    [](const NodeVote& v) { return v.error == Errc::node_restarting; });
    unreachable_ = r.error == Errc::no_quorum && !restarting ? unreachable_ + 1 : 0;
    if (unreachable_ > co_.config().retry_count) {
      finish(std::move(r));
      return;
    }
    const auto& config = co_.config();
    auto delay = retry_delay(config.retry_delay, config.retry_jitter, co_.rng()());
    bool split = r.error == Errc::not_acquired && looks_split(r.votes);
    splits_ = split ? splits_ + 1 : 0;
    if (waits_ && r.error == Errc::not_acquired) listen();
    bool freed = false;  // a "no" named a holder whose release notice we have seen
    if (waits_ && r.error == Errc::not_acquired && keys_.size() == 1)
      for (const auto& v : r.votes.nodes)
        freed = freed ||
                (v.vote == Vote::no && co_.waiters().released(keys_[0] + ":released", v.holder));
    freed_in_a_row_ = freed ? freed_in_a_row_ + 1 : 0;
    // Woken by a notice and refused because of another of our keys: the resource that was
    // released may be free, and another waiter of this client may want only it.
    if (!notice.empty() && r.error == Errc::not_acquired && keys_.size() > 1 && listening_)
      co_.waiters().pass(notice);
    if (split) {
      // Nobody holds a quorum: every contender is releasing what it got, and no release notice
      // will come. Retry soon, those closer to a quorum first, spread at random. When the
      // picture was whole, the contenders agreed on a winner that is asking for the rest of
      // the nodes now (keep_going): give it a few round trips before asking again.
      auto cap = std::max(config.retry_delay + config.retry_jitter, 2ms);
      bool agreed = r.votes.count(Vote::pending) == 0 && r.votes.count(Vote::failed) == 0;
      auto unit = agreed ? kWinnerUnit : 1ms;
      delay = std::max(split_backoff(r.votes.yes(), r.votes.quorum, splits_, unit,
                                     std::max(cap, unit), co_.rng()()),
                       unit);
    } else if (waits_ && r.error == Errc::not_acquired) {
      if (woken_ || (freed && freed_in_a_row_ <= 3)) {
        // A notice came in while we were asking, or the holder we met is being released (its
        // notice came from another node first): ask again at once.
        delay = Milliseconds(0);
      } else {
        // Fallback when a notice is lost: no later than the holder's lease runs out. (Not
        // when a waiter's turn ends: by then it has taken the key, or lost its turn to the
        // first who asks; we are in line and told when ours comes.)
        for (const auto& v : r.votes.nodes)
          if (v.vote == Vote::no && v.holder_ttl.count() >= 0 && v.holder_ttl + 1ms < delay &&
              (!in_line() || !is_turn(v.holder)))
            delay = v.holder_ttl + 1ms;
      }
    }
    // A waiter for several keys asks again before its sign-ups end on the nodes (keys.hpp).
    if (waits_ && keys_.size() > 1 && delay > kSignUpRefresh) delay = kSignUpRefresh;
    auto next = next_attempt(now, deadline_, attempts_, max_attempts_, delay);
    if (!next) {
      finish(std::move(r));
      return;
    }
    auto wait = std::chrono::ceil<Milliseconds>(*next - now);
    uv_timer_start(
        &timer_, [](uv_timer_t* t) { static_cast<AcquireJob*>(t->data)->attempt(); },
        static_cast<std::uint64_t>(wait.count()), 0);
  }

  // A split vote: contenders each hold some nodes, none can hold a quorum, and each is releasing
  // what it got. Only when this attempt got some yes (a contender with none changed nothing), for
  // one resource (the script names only the first conflicting key's holder), and when no holder
  // named now was named by the previous attempt too: contenders' tokens are fresh every attempt,
  // so a name seen twice is a key nobody releases (a crashed client's, a ghost), whose ttl is
  // worth waiting for instead of retrying fast.
  bool looks_split(const Votes& votes) {
    std::vector<std::string> names;
    for (const auto& v : votes.nodes)
      if (v.vote == Vote::no && !v.holder.empty()) names.push_back(v.holder);
    // A waiter's turn is no contender releasing what it got: it is worth its wait.
    bool persistent = false;
    for (const auto& n : names)
      persistent = persistent || is_turn(n) ||
                   std::find(last_names_.begin(), last_names_.end(), n) != last_names_.end();
    last_names_ = std::move(names);
    return votes.yes() > 0 && keys_.size() == 1 && !persistent &&
           !held_elsewhere(votes.nodes, votes.quorum);
  }

  // The least validity a grant of ours must have left (quorum.hpp).
  std::chrono::microseconds least_validity() const {
    return redlock::detail::least_validity(ttl_, co_.config().min_validity_ratio);
  }

  void listen() {
    if (listening_) return;
    listening_ = true;
    observe(co_.config(), [&](Observer& o) {
      wait_began_ = Clock::now();
      WaitEvent e;
      e.phase = WaitPhase::started;
      e.resources = &resources_;
      o.on_wait(e);
    });
    for (const auto& k : keys_) co_.waiters().add(k + ":released", this);
  }

  // How long the nodes keep the queue for us: the rest of the wait and a lease (a waiter that
  // stops without a word is forgotten by then), at most an hour (an endless wait asks again
  // long before).
  Milliseconds line_kept() const {
    Milliseconds keep = std::chrono::hours(1);
    if (deadline_)
      keep = std::min(keep, std::chrono::ceil<Milliseconds>(*deadline_ - Clock::now()) + ttl_);
    return std::max(keep, Milliseconds(1));
  }

  void finish(AcquireResult r) {
    finished_ = true;
    // A waiter leaves the line when it stops waiting, and when nodes refused it as it was
    // granted (it took a place there; where the vote is still on its way, it will be granted,
    // or its place there ends with a turn it misses). The token "-" is no token: nothing is
    // deleted.
    // So does a waiter for several keys, from the sign-ups that refused nodes keep.
    if (!ticket_.empty() && attempts_ > 0 && (!r || r.votes.count(Vote::no) > 0))
      co_.leave_waiting(keys_, ticket_);
    if (listening_)
      for (const auto& k : keys_) co_.waiters().remove(k + ":released", this);
    // Woken by a notice we did not use (cancelled, out of time): another waiter of this client
    // may use it.
    if (listening_ && noticed_ && !r)
      for (const auto& k : keys_) co_.waiters().pass(k + ":released");
    if (cancel_hook_ != 0) cancel_state_of(*cancel_)->remove(cancel_hook_);
    co_.jobs_.erase(id_);
    observe(co_.config(), [&](Observer& o) {
      auto now = Clock::now();
      if (listening_) {
        WaitEvent w;
        w.phase = WaitPhase::ended;
        w.resources = &resources_;
        w.error = r.error;
        w.waited = std::chrono::duration_cast<microseconds>(now - wait_began_);
        o.on_wait(w);
      }
      OperationEvent e;
      e.operation = Operation::acquire;
      e.error = r.error;
      e.resources = &resources_;
      e.votes = &r.votes;
      e.latency = std::chrono::duration_cast<microseconds>(now - began_);
      e.attempts = r.attempts;
      o.on_operation(e);
    });
    auto done = std::move(done_);
    deliver_guarded("acquire", [&] { done(std::move(r)); });
    uv_close(reinterpret_cast<uv_handle_t*>(&timer_),
             [](uv_handle_t* h) { delete static_cast<AcquireJob*>(h->data); });
  }

  Coordinator& co_;
  std::uint64_t id_;
  std::vector<std::string> resources_;
  std::vector<std::string> keys_;
  std::string token_;
  std::string ticket_;  // a waiter for one key: its name in the key's queue (else empty)
  std::string place_;   // and its place there
  Milliseconds ttl_;
  Client::AcquireCallback done_;
  std::optional<CancelToken> cancel_;
  bool fencing_ = false;
  std::uint64_t cancel_hook_ = 0;
  int max_attempts_ = 1;
  bool waits_ = false;
  std::optional<Clock::time_point> deadline_;
  int attempts_ = 0;
  int unreachable_ = 0;
  int splits_ = 0;                       // split votes in a row
  std::vector<std::string> last_names_;  // holders named by the previous attempt
  bool in_attempt_ = false;
  bool woken_ = false;
  bool noticed_ = false;       // woken by a notice that no attempt has answered yet
  std::string notice_;         // the channel whose release notice started the attempt in flight
  bool fill_pending_ = false;  // a split winner's next round waits on timer_
  bool listening_ = false;
  // A split winner (keep_going): it keeps the keys of its first round, asks again the nodes it
  // lacks, and counts its validity from round_start_.
  static constexpr int kMaxFills = 4;
  static constexpr Milliseconds kWinnerUnit{5};
  bool kept_ = false;
  Clock::time_point round_start_{};
  std::string digest_;  // token_digest(token_) once asked for; empty until then
  // Our name in the scripts' replies. Only a refusal is read by it: a SHA-1 for every attempt
  // cost an uncontended lock about 4 % of the client's CPU (docs/performance.md).
  const std::string& digest() {
    if (digest_.empty()) digest_ = token_digest(token_);
    return digest_;
  }
  std::vector<std::string> beaten_;  // the contenders the split winner beat
  Votes kept_votes_;
  int fills_in_a_row_ = 0;
  int fills_ = 0;  // fill-in rounds so far (reported in AcquireResult::attempts)
  int freed_in_a_row_ = 0;
  bool finished_ = false;
  std::optional<Errc> stop_reason_;
  Votes last_votes_;
  Clock::time_point began_{};       // with an observer only: when the job began
  Clock::time_point wait_began_{};  // with an observer only: when it began to wait
  uv_timer_t timer_{};
};

// ---------------------------------------------------------------------------------------------
// Coordinator

Coordinator::Coordinator(uv_loop_t* loop, const Config& config)
    : loop_(loop), config_(config), rng_(random_seed()), waiters_(*this), watchdog_(*this) {
  auto addresses = std::make_shared<std::vector<std::string>>();
  for (std::size_t i = 0; i < config_.nodes.size(); ++i) {
    nodes_.push_back(
        std::make_unique<Node>(loop_, i, config_.nodes[i], config_, rng_(), nullptr,
                               std::vector<const Script*>{&script_acquire, &script_renew,
                                                          &script_release, &script_fence}));
    nodes_.back()->set_server_ids(&server_ids_);
    addresses->push_back(nodes_.back()->address());
  }
  addresses_ = std::move(addresses);
  char prefix[17];
  std::snprintf(prefix, sizeof prefix, "%016llx", static_cast<unsigned long long>(rng_()));
  turn_channel_ = config_.key_prefix + "turn:" + prefix;
  uv_timer_init(loop_, &drain_timer_);
  drain_timer_.data = this;
  watchdog_.start();
}

Coordinator::~Coordinator() = default;

void Coordinator::start() {
  set_thread_config(&config_);  // on the loop thread: deliver_guarded reports to our log
  for (auto& n : nodes_) n->start();
}

void Coordinator::shutdown() {
  shutting_down_ = true;
  // Jobs waiting for their next attempt end now; attempts in flight end with their fan-out.
  std::vector<AcquireJob*> jobs;
  for (auto& [id, job] : jobs_) jobs.push_back(job);
  for (auto* job : jobs) job->stop(Errc::shutting_down);
  watchdog_.shutdown();
  waiters_.shutdown();
  // Drain: fan-outs in flight (releases after a verdict that needed only a quorum, clean-up of
  // a failed attempt) still reach every server. Nodes close when the last one ends, or when the
  // timer says the wait has lasted one request timeout.
  if (live_fanouts_ == 0) {
    close_nodes();
    return;
  }
  uv_timer_start(
      &drain_timer_, [](uv_timer_t* t) { static_cast<Coordinator*>(t->data)->close_nodes(); },
      static_cast<std::uint64_t>(config_.request_timeout.count()), 0);
}

void Coordinator::fanout_ended() {
  if (--live_fanouts_ == 0 && shutting_down_) close_nodes();
}

void Coordinator::close_nodes() {
  if (nodes_closed_) return;
  nodes_closed_ = true;
  uv_close(reinterpret_cast<uv_handle_t*>(&drain_timer_), nullptr);
  // Fails whatever is still pending with Errc::shutting_down.
  for (auto& n : nodes_) n->shutdown();
}

std::vector<std::string> Coordinator::keys_of(const std::vector<std::string>& resources) const {
  std::vector<std::string> keys;
  keys.reserve(resources.size());
  for (const auto& r : resources) keys.push_back(lock_key(config_.key_prefix, r));
  return keys;
}

void Coordinator::release_everywhere(const std::vector<std::string>& keys, const std::string& token,
                                     bool announce, const Line* line,
                                     const std::vector<bool>* spare) {
  // A real release of no line is the token alone (scripts/release.lua).
  Command command{&script_release, keys, {token}};
  if (!announce || line != nullptr) command.args.push_back(announce ? "1" : "0");
  if (line != nullptr) {
    command.args.push_back(line->ticket);
    command.args.push_back(line->place);
    command.args.push_back(ms_arg(line->keep));
  }
  if (spare == nullptr) {
    FanOut::start(*this, std::move(command), 1, classify_release, nullptr);
    return;
  }
  // A spared node counts as done: FanOut asks only the nodes whose vote is not yet yes.
  std::vector<NodeVote> done(nodes_.size());
  for (std::size_t i = 0; i < done.size() && i < spare->size(); ++i)
    if ((*spare)[i]) done[i].vote = Vote::yes;
  FanOut::start(*this, std::move(command), 1, classify_release, nullptr, false, &done);
}

std::string Coordinator::new_ticket(std::uint64_t job_id) const {
  return turn_channel_ + "#" + std::to_string(job_id) + "@" + ms_arg(turn_length());
}

Command Coordinator::renew_command(const std::vector<const Lease*>& leases) {
  Command c{&script_renew, {}, {}};
  for (const auto* l : leases) add_renewal(c, l->keys, l->token, l->ttl);
  return c;
}

void Coordinator::acquire(AcquireRequest request, Milliseconds ttl, Client::AcquireCallback done) {
  (new AcquireJob(*this, std::move(request), ttl, std::move(done)))->begin();
}

Waiter* Coordinator::waiter(std::uint64_t job_id) const {
  auto it = jobs_.find(job_id);
  return it == jobs_.end() ? nullptr : it->second;
}

void Coordinator::leave_line(const std::string& key, const std::string& ticket) {
  Line line{ticket, "", Milliseconds(0)};
  release_everywhere({key}, "-", /*announce=*/false, &line);
}

void Coordinator::leave_sign_ups(const std::vector<std::string>& keys, const std::string& ticket) {
  Line line{ticket, "", Milliseconds(0)};
  release_everywhere(keys, "-", /*announce=*/false, &line);
}

void Coordinator::leave_waiting(const std::vector<std::string>& keys, const std::string& ticket) {
  if (keys.size() == 1)
    leave_line(keys[0], ticket);
  else
    leave_sign_ups(keys, ticket);
}

void Coordinator::cancel(std::uint64_t job_id) {
  auto it = jobs_.find(job_id);
  if (it != jobs_.end()) it->second->stop(Errc::cancelled);
}

void Coordinator::hold(AcquireRequest request, Milliseconds ttl, bool renew, LostCallback on_lost,
                       std::weak_ptr<ClientLink> link,
                       std::function<void(AcquireResult, std::shared_ptr<Lease>)> done) {
  acquire(std::move(request), ttl,
          [this, renew, on_lost = std::move(on_lost), link = std::move(link),
           done = std::move(done)](AcquireResult r) mutable {
            if (!r) {
              done(std::move(r), nullptr);
              return;
            }
            auto lease = std::make_shared<Lease>();
            lease->resources = r.lock.resources;
            lease->keys = keys_of(r.lock.resources);
            lease->token = r.lock.token;
            lease->fencing_token = r.lock.fencing_token;
            lease->ttl = r.lock.ttl;
            lease->renew = renew;
            lease->link = std::move(link);
            lease->on_lost = std::move(on_lost);
            lease->set_valid_until(r.lock.valid_until);
            lease->next_renewal = Clock::now() + r.lock.ttl / 3;
            watchdog_.add(lease);
            done(std::move(r), std::move(lease));
          });
}

void Coordinator::extend(Lock lock, Milliseconds ttl, Client::ExtendCallback done) {
  Command command{&script_renew, {}, {}};
  add_renewal(command, keys_of(lock.resources), lock.token, ttl);
  auto previous = lock.valid_until;
  double drift = config_.drift_factor;
  FanOut::start(*this, std::move(command), 1, classify_renew,
                [this, resources = std::move(lock.resources), previous, ttl, drift,
                 done = std::move(done)](FanOut& f, std::size_t) {
                  ExtendResult r;
                  r.votes = f.votes();
                  r.valid_until = previous;
                  if (f.verdict() == Verdict::won) {
                    auto fresh = granted_deadline(f.started(), Clock::now(), ttl, drift);
                    if (fresh)
                      r.valid_until = extended_deadline(previous, fresh);
                    else
                      r.error = make_error_code(Errc::validity_expired);
                  } else {
                    r.error = make_error_code(f.tally().loss_reason(Errc::not_held));
                  }
                  notify_operation(Operation::extend, r.error, r.votes, resources, f.started());
                  deliver_guarded("extend", [&] { done(std::move(r)); });
                });
}

void Coordinator::release(Lock lock, Client::ReleaseCallback done) {
  Command command{&script_release, keys_of(lock.resources), {lock.token}};
  FanOut::start(*this, std::move(command), 1, classify_release,
                [this, resources = std::move(lock.resources), done = std::move(done)](FanOut& f,
                                                                                      std::size_t) {
                  ReleaseResult r;
                  r.votes = f.votes();
                  r.released = f.tally().yes;
                  if (f.verdict() != Verdict::won)
                    r.error = make_error_code(f.tally().loss_reason(Errc::not_held));
                  notify_operation(Operation::release, r.error, r.votes, resources, f.started());
                  deliver_guarded("release", [&] { done(std::move(r)); });
                });
}

void Coordinator::notify_operation(Operation op, std::error_code error, const Votes& votes,
                                   const std::vector<std::string>& resources,
                                   Clock::time_point started) const {
  observe(config_, [&](Observer& o) {
    OperationEvent e;
    e.operation = op;
    e.error = error;
    e.resources = &resources;
    e.votes = &votes;
    e.latency = std::chrono::duration_cast<microseconds>(Clock::now() - started);
    o.on_operation(e);
  });
}

void Coordinator::release_lease(const std::shared_ptr<Lease>& lease, Client::ReleaseCallback done) {
  if (lease->released.exchange(true)) {
    ReleaseResult r;
    r.error = make_error_code(Errc::not_held);
    r.detail = "already released";
    deliver_guarded("release", [&] { done(std::move(r)); });
    return;
  }
  watchdog_.remove(lease);  // no renewal can follow the release
  Lock lock;
  lock.resources = lease->resources;
  lock.token = lease->token;
  release(std::move(lock), std::move(done));
}

void Coordinator::status(Client::StatusCallback done) {
  FanOut::start(
      *this, Command{nullptr, {}, {"INFO", "server"}}, 1, classify_text,
      [this, done = std::move(done)](FanOut& f, std::size_t) {
        std::vector<NodeStatus> rows;
        for (std::size_t i = 0; i < f.votes().nodes.size(); ++i) {
          const auto& v = f.votes().nodes[i];
          NodeStatus s;
          s.address = f.votes().address(i);
          s.up = v.vote == Vote::yes;
          s.round_trip = v.latency;
          s.server_version = info_field(f.texts()[i], "redis_version");
          s.error = v.error;
          s.detail = v.detail;
          s.warnings = nodes_[i]->warnings();
          rows.push_back(std::move(s));
        }
        deliver_guarded("status", [&] { done(std::move(rows)); });
      },
      /*wait_all=*/true);
}

}  // namespace redlock::detail
