#include "lane.hpp"

#include <hiredis/hiredis.h>
#include <poll.h>

#include <algorithm>
#include <utility>
#include <variant>

#include "../core/observe.hpp"
#include "../core/session.hpp"
#include "../core/token.hpp"
#include "../proto/acquire.hpp"
#include "../proto/scripts.hpp"
#include "../proto/single.hpp"
#include "in_flight.hpp"

namespace redlock::detail {

using std::chrono::microseconds;

LaneCounters& lane_counters() noexcept {
  static LaneCounters counters;
  return counters;
}

namespace {

std::string ms_text(Milliseconds d) { return std::to_string(d.count()) + "ms"; }

// How long a node whose lane connection timed out or failed to open rests before the lane tries
// to open it again: the first time, then doubled each time it fails again, up to the longest.
// A reply in time, or a new loop session with the node, ends the rest.
constexpr Milliseconds kFirstRest{500};
constexpr Milliseconds kLongestRest{8'000};
// An idle lane connection is checked for a close by the server (a poll at each call) only when
// it has not been heard from for this long: a server closes an idle client after `timeout`
// seconds (1 at least), and what closes it sooner (a kill, a restart) may as well come between
// the check and the write. A connection found closed mid-call fails that call's request (a
// waiting acquire and a release then go to the loop). Saves a system call per call.
constexpr Milliseconds kCheckIdleAfter{500};

// True on a thread inside a lane call (an observer that makes a blocking call from there must
// not try the lane's mutex again: it uses the loop).
thread_local bool in_lane_call = false;

// Takes the lane's mutex if it is free and this thread is not inside a lane call already.
std::unique_lock<std::mutex> take(std::mutex& m) {
  if (in_lane_call) return {};
  std::unique_lock<std::mutex> lock(m, std::try_to_lock);
  if (!lock.owns_lock()) lane_counters().busy.fetch_add(1, std::memory_order_relaxed);
  return lock;
}

// Marks this thread as inside a lane call for its lifetime.
struct InLaneCall {
  InLaneCall() { in_lane_call = true; }
  ~InLaneCall() { in_lane_call = false; }
};

}  // namespace

// One request on a lane connection, awaiting its reply (replies come in order).
struct LanePending {
  proto::RequestId id = 0;
  std::shared_ptr<const proto::Request> request;  // null: SCRIPT LOAD (its reply is not needed)
  bool wanted = true;
  bool as_eval = false;
  std::chrono::steady_clock::time_point sent{};
  std::chrono::steady_clock::time_point deadline{};
};

// One node: the loop's session it follows, and the lane's connection to it.
struct Lane::Slot {
  const Node* node = nullptr;
  const NodeAddress* address = nullptr;
  std::uint64_t epoch = ~std::uint64_t{0};  // of the session view below
  bool usable = false;                      // in session, verified (run_id known), not TLS
  std::string ip, run_id;
  Clock::time_point eligible_from{};
  bool guarded = false;  // its session began under the restart guard: the loop tells `connected`
  LaneSocket socket;
  std::deque<LanePending> pending;
  bool dirty = false;             // output waits for flush
  Clock::time_point reopen_at{};  // resting (Lane::rest) until then
  Clock::duration resting{};      // the last rest; zero when the node answers in time
  Clock::time_point heard{};      // the last reply read on this connection (or its opening)
};

// The machine a call drives: its replies, its timers, and whether it needs anything more.
struct Lane::Target {
  std::function<void(proto::RequestId, std::size_t, std::vector<NodeVote>, Clock::time_point,
                     proto::Actions&)>
      reply;
  std::function<void(proto::TimerId, Clock::time_point, proto::Actions&)> timer;
  std::function<bool()> done;
};

// One call's state while it is driven.
struct Lane::Call {
  Target target;
  // When set and true, the call returns before every reply was read: the rest stays pending on
  // its connection, wanted by nobody, and is read by the next calls as it comes (the floor too
  // returns at the quorum).
  std::function<bool()> stop;
  std::vector<std::pair<proto::TimerId, Clock::time_point>> timers;
  // Votes of nodes that failed, reported after the actions that caused them were carried out.
  struct Failure {
    proto::RequestId id;
    std::size_t node;
    std::vector<NodeVote> votes;
  };
  std::vector<Failure> failures;
  std::optional<AcquireResult> acquired;
  std::optional<ExtendResult> extended;
  std::optional<ReleaseResult> released;
};

Lane::Lane(const Config& config, std::vector<const Node*> nodes, Loop loop, LostTokens& lost)
    : config_(config), loop_(std::move(loop)), rng_(random_seed()), lost_tokens_(lost) {
  auto addresses = std::make_shared<std::vector<std::string>>();
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    auto slot = std::make_unique<Slot>();
    slot->node = nodes[i];
    slot->address = &config_.nodes[i];
    addresses->push_back(nodes[i]->address());
    slots_.push_back(std::move(slot));
  }
  // A context of its own: the loop's is the loop thread's. Its ids never meet the loop's; its
  // quick-acquire switch learns on its own (the fallback is the machine's, as on the loop).
  auto channel = proto::turn_channel_name(config_.key_prefix, rng_());
  proto_ = std::make_unique<proto::Context>(
      config_, nodes.size(), std::move(channel), [](std::string& out) { return new_token(out); },
      [this] { return rng_(); }, std::move(addresses));
}

Lane::~Lane() = default;

bool Lane::ready(Clock::time_point now) {
  // The loop's sessions: cheap to check (an atomic per node) unless one changed.
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    auto& s = slots_[i];
    auto epoch = s->node->session_epoch();
    if (epoch != s->epoch) {
      auto view = s->node->session_view();
      s->epoch = epoch;
      s->usable = view.in_session && !view.run_id.empty() && !s->address->tls;
      s->ip = std::move(view.ip);
      s->run_id = std::move(view.run_id);
      s->eligible_from = view.eligible_from;
      s->guarded = view.guarded;
      // The loop's connection was lost or replaced: whatever did it (the server killed its
      // clients, a restart, another address) may have hit the lane's too. Open it again, at
      // once: the loop's new session found the server answering.
      if (s->socket.is_open()) drop(*s, i);
      s->reopen_at = {};
      s->resting = {};
    }
    if (!s->usable || now < s->eligible_from) return false;
  }
  for (std::size_t i = 0; i < slots_.size(); ++i)
    if (slots_[i]->guarded) {
      slots_[i]->guarded = false;
      loop_.votes(i);
    }
  // An idle lane connection (no reply of an earlier call still to come) that is readable was
  // closed by the server (or is out of step): it is opened again below rather than failing this
  // call's request.
  fds_.clear();
  fd_slot_.clear();
  for (std::size_t i = 0; i < slots_.size(); ++i)
    if (slots_[i]->socket.is_open() && slots_[i]->pending.empty() &&
        now - slots_[i]->heard >= kCheckIdleAfter) {
      fds_.push_back(pollfd{slots_[i]->socket.fd(), POLLIN, 0});
      fd_slot_.push_back(i);
    }
  if (!fds_.empty() && ::poll(fds_.data(), fds_.size(), 0) > 0)
    for (std::size_t k = 0; k < fds_.size(); ++k)
      if (fds_[k].revents != 0) slots_[fd_slot_[k]]->socket.close();
  const auto open_within = std::min(config_.connect_timeout, config_.request_timeout);
  for (auto& s : slots_) {
    if (s->socket.is_open()) continue;
    // Resting (it timed out or failed to open a moment ago): this call goes to the loop without
    // trying, so that a paused server costs no call of the lane its timeout again and again.
    if (now < s->reopen_at) return false;
    std::string detail;
    if (s->socket.open(*s->address, s->ip, s->run_id, Clock::now() + open_within, detail)) {
      lane_counters().open_failed.fetch_add(1, std::memory_order_relaxed);
      rest(*s, Clock::now());
      return false;  // this call goes to the loop; a call after the rest tries again
    }
    s->heard = Clock::now();
    lane_counters().opened.fetch_add(1, std::memory_order_relaxed);
  }
  return true;
}

void Lane::drive(Call& call, proto::Actions& first) {
  const auto timeout = config_.request_timeout;
  // Closes a node's connection and fails what it had on the way: a release of unknown outcome
  // goes to the loop, which sends it again.
  auto fail_slot = [&](std::size_t i, std::error_code error, const std::string& detail) {
    auto& s = *slots_[i];
    s.socket.close();
    s.dirty = false;
    auto pending = std::move(s.pending);
    s.pending.clear();
    for (auto& p : pending) {
      if (p.request == nullptr) continue;
      if (p.request->script == proto::ScriptId::release) loop_.release(i, p.request);
      if (p.wanted) {
        auto votes = proto::failed_votes(p.request->items, error, detail);
        for (auto& v : votes)
          v.latency = std::chrono::duration_cast<microseconds>(Clock::now() - p.sent);
        call.failures.push_back({p.id, i, std::move(votes)});
      }
    }
  };
  auto write = [&](std::size_t i, const proto::Request& request, bool as_eval) {
    Command command;
    command.script = script_of(request.script);
    command.keys_of = &request.keys;
    command.args_of = &request.args;
    return format_command(slots_[i]->socket.output(), command, as_eval);
  };
  auto flush = [&] {
    for (std::size_t i = 0; i < slots_.size(); ++i) {
      auto& s = *slots_[i];
      if (!s.dirty) continue;
      s.dirty = false;
      std::string detail;
      if (auto ec = s.socket.flush(Clock::now() + timeout, detail)) fail_slot(i, ec, detail);
    }
  };
  // Carries out a machine's actions, in order; every Send's nodes are written before any
  // failure is reported.
  auto run = [&](proto::Actions& actions) {
    for (auto& action : actions) {
      if (auto* send = std::get_if<proto::Send>(&action)) {
        const auto now = Clock::now();
        for (auto i : send->nodes) {
          auto& s = *slots_[i];
          if (!s.socket.is_open() || !write(i, *send->request, false)) {
            if (send->request->script == proto::ScriptId::release) loop_.release(i, send->request);
            if (send->reply_wanted)
              call.failures.push_back(
                  {send->id, i,
                   proto::failed_votes(send->request->items, make_error_code(Errc::connection_lost),
                                       "the lane's connection failed earlier in this call")});
            continue;
          }
          s.pending.push_back(
              LanePending{send->id, send->request, send->reply_wanted, false, now, now + timeout});
          s.dirty = true;
        }
      } else if (auto* arm = std::get_if<proto::ArmTimer>(&action)) {
        auto it = std::find_if(call.timers.begin(), call.timers.end(),
                               [&](const auto& t) { return t.first == arm->id; });
        if (it != call.timers.end())
          it->second = arm->at;
        else
          call.timers.emplace_back(arm->id, arm->at);
      } else if (auto* stop = std::get_if<proto::CancelTimer>(&action)) {
        call.timers.erase(std::remove_if(call.timers.begin(), call.timers.end(),
                                         [&](const auto& t) { return t.first == stop->id; }),
                          call.timers.end());
      } else if (auto* got = std::get_if<proto::DeliverAcquire>(&action)) {
        call.acquired = std::move(got->result);
      } else if (auto* ext = std::get_if<proto::DeliverExtend>(&action)) {
        call.extended = std::move(ext->result);
      } else if (auto* rel = std::get_if<proto::DeliverRelease>(&action)) {
        call.released = std::move(rel->result);
      }
      // Subscribe, Unsubscribe, WaitBegan: only a waiter's, which never runs here. Renewed,
      // Lost, RenewDecided: the watchdog's, on the loop.
    }
    actions.clear();
    flush();
  };

  // Kept between calls (cleared, not freed): no allocation for the actions of each call.
  proto::Actions& out = out_;
  out.clear();
  run(first);
  auto& fds = fds_;
  auto& fd_slot = fd_slot_;
  for (;;) {
    while (!call.failures.empty()) {
      std::vector<Call::Failure> failures;
      std::swap(failures, call.failures);
      for (auto& f : failures) {
        call.target.reply(f.id, f.node, std::move(f.votes), Clock::now(), out);
        run(out);
      }
    }
    if (call.stop && call.stop()) break;
    const bool done = call.target.done();
    bool waiting = false;
    auto wake = Clock::time_point::max();
    for (auto& s : slots_)
      for (auto& p : s->pending) {
        waiting = true;
        wake = std::min(wake, p.deadline);
      }
    if (!done)
      for (auto& t : call.timers) wake = std::min(wake, t.second);
    if (!waiting && (done || call.timers.empty())) break;  // nothing more can happen

    auto now = Clock::now();
    if (!done) {
      auto due = std::find_if(call.timers.begin(), call.timers.end(),
                              [&](const auto& t) { return t.second <= now; });
      if (due != call.timers.end()) {
        auto id = due->first;
        call.timers.erase(due);
        call.target.timer(id, now, out);
        run(out);
        continue;
      }
    }
    // A deadline passed: first read what already arrived (a reply of an earlier call may have
    // waited in its socket while the lane was not used), then judge.
    const bool late = std::any_of(slots_.begin(), slots_.end(), [&](const auto& slot) {
      return std::any_of(slot->pending.begin(), slot->pending.end(),
                         [&](const LanePending& p) { return p.deadline <= now; });
    });

    fds.clear();
    fd_slot.clear();
    for (std::size_t i = 0; i < slots_.size(); ++i)
      if (!slots_[i]->pending.empty()) {
        fds.push_back(pollfd{slots_[i]->socket.fd(), POLLIN, 0});
        fd_slot.push_back(i);
      }
    auto left = std::chrono::ceil<Milliseconds>(wake - now).count();
    int rc = ::poll(fds.data(), fds.size(),
                    late ? 0 : static_cast<int>(std::clamp<long long>(left, 0, 1 << 30)));
    if (rc <= 0 && !late) continue;  // a timer or a deadline is due (or EINTR): judged above
    for (std::size_t k = 0; k < fds.size(); ++k) {
      if (fds[k].revents == 0) continue;
      const std::size_t i = fd_slot[k];
      auto& s = *slots_[i];
      std::string detail;
      if (auto ec = s.socket.receive(detail)) {
        // The connection is gone: what it had on the way fails (as on the loop's node).
        fail_slot(i, ec, detail);
        continue;
      }
      const auto received = Clock::now();
      ReplyPtr reply;
      while (s.socket.is_open()) {
        auto status = s.socket.reader().next(reply);
        if (status == ReplyReader::Status::more) break;
        if (status == ReplyReader::Status::error) {
          fail_slot(i, make_error_code(Errc::protocol_error),
                    std::string("not a Redis reply: ") + s.socket.reader().error_text());
          break;
        }
        if (s.pending.empty()) {
          fail_slot(i, make_error_code(Errc::protocol_error), "a reply nobody asked for");
          break;
        }
        LanePending p = std::move(s.pending.front());
        s.pending.pop_front();
        s.heard = received;
        if (received <= p.deadline) s.resting = {};  // in time: its next rest is the first
        if (p.request == nullptr) continue;          // SCRIPT LOAD
        const redisReply* r = reply.get();
        std::vector<NodeVote> votes;
        if (r->type == REDIS_REPLY_ERROR) {
          std::string_view text(r->str, r->len);
          auto error = error_from_reply_text(text);
          const Script* script = script_of(p.request->script);
          if (error == Errc::redis_noscript && script != nullptr && !p.as_eval) {
            // As the loop's node does (lib/core/session.hpp): the body now when nothing was sent
            // behind it or its order does not matter; else fail it and load the script.
            if (after_noscript(script->order_free, !s.pending.empty()) ==
                NoscriptStep::resend_eval) {
              if (write(i, *p.request, true)) {
                p.as_eval = true;
                p.deadline = received + timeout;
                s.pending.push_back(std::move(p));
                s.dirty = true;
                flush();
                continue;
              }
            } else {
              Argv argv;
              argv.push("SCRIPT");
              argv.push("LOAD");
              argv.push(script->body);
              if (append_command(s.socket.output(), argv)) {
                s.pending.push_back(
                    LanePending{0, nullptr, false, false, received, received + timeout});
                s.dirty = true;
              }
            }
          }
          // A release that did not run (NOSCRIPT, not sent again here): the loop sends it.
          if (error == Errc::redis_noscript && p.request->script == proto::ScriptId::release)
            loop_.release(i, p.request);
          votes = proto::failed_votes(p.request->items, error, std::string(text));
          // A late "syntax error" to the quick command, after its call returned at the verdict:
          // the server predates it (the machine's rule, proto/scripts.hpp), so no more of it.
          if (!p.wanted && p.request->decoder == proto::Decoder::quick_acquire && !votes.empty() &&
              proto::is_syntax_error(votes[0]))
            proto_->no_quick_acquire();
          if (!p.wanted) continue;
        } else {
          if (!p.wanted) continue;
          votes = proto::decode_reply(*p.request, r);
        }
        for (auto& v : votes)
          v.latency = std::chrono::duration_cast<microseconds>(received - p.sent);
        call.target.reply(p.id, i, std::move(votes), received, out);
        run(out);
      }
    }
    if (late) {
      const auto after = Clock::now();
      for (std::size_t i = 0; i < slots_.size(); ++i) {
        auto& s = *slots_[i];
        if (std::any_of(s.pending.begin(), s.pending.end(),
                        [&](const LanePending& p) { return p.deadline <= after; })) {
          // Replies come in order: once one is late, nothing more on this connection is trusted.
          fail_slot(i, make_error_code(Errc::request_timeout),
                    "no reply within " + ms_text(timeout));
          rest(s, after);
        }
      }
    }
  }
}

std::optional<AcquireResult> Lane::acquire(AcquireRequest& request, Milliseconds ttl) {
  if (request.cancel) return std::nullopt;  // its cancel hook is the loop's
  // A reader of a read-write lock never takes the lane: its script form is the loop's, and it
  // never asks with the quick command (AcquireMachine).
  if (request.shared) return std::nullopt;
  const bool waits = request.wait && request.wait->count() > 0;
  auto lock = take(mutex_);
  if (!lock.owns_lock()) return std::nullopt;
  InLaneCall inside;
  // A waiter's first attempt is the quick command, alone: anything else waits on the loop.
  learn_quick_acquire();
  // A waiting permit of a semaphore never asks with the quick command: it waits on the loop
  // from its first attempt (a permit that does not wait is served here, hints and all).
  if (waits && (request.resources.size() != 1 || request.fencing || request.permits > 0 ||
                !proto_->quick_acquire()))
    return std::nullopt;
  const auto began = Clock::now();
  if (!ready(began)) return std::nullopt;

  std::optional<Milliseconds> wait = request.wait;
  if (waits) request.wait = Milliseconds(0);  // one attempt here
  const auto place =
      std::chrono::duration_cast<microseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  proto::AcquireMachine machine(*proto_, request, ttl, Clock::now(), place);
  request.wait = wait;
  Call call;
  call.target.reply = [&](proto::RequestId id, std::size_t node, std::vector<NodeVote> votes,
                          Clock::time_point now, proto::Actions& out) {
    machine.on_reply(id, node, std::move(votes), now, out);
  };
  call.target.timer = [&](proto::TimerId id, Clock::time_point now, proto::Actions& out) {
    machine.on_timer(id, now, out);
  };
  call.target.done = [&] { return machine.done(); };
  // A grant returns at once; a refusal waits for its clean-up's replies (a waiter's before its
  // hand-over to the loop above all).
  call.stop = [&] { return call.acquired && call.acquired->ok(); };
  proto::Actions& out = first_;
  out.clear();
  machine.start(Clock::now(), out);
  drive(call, out);
  tell_quick_acquire();
  // A grant returned at its verdict: the late nodes' replies are read by the next calls, as they
  // come, and wanted by nobody (after a grant they could only turn the quick command off,
  // which the reply loop does itself).
  forget_pending();
  if (!call.acquired) {  // cannot happen: the machine always delivers; the loop then decides
    call.acquired.emplace();
    call.acquired->error = make_error_code(Errc::connection_lost);
    call.acquired->detail = "the lane ended without a result";
  }
  AcquireResult& r = *call.acquired;
  if (waits && !r.ok()) {
    // Refused (or no quorum) on its quick command, cleaned up: the loop waits for the rest.
    auto spent = std::chrono::ceil<Milliseconds>(Clock::now() - began);
    request.wait = std::max(Milliseconds(0), *wait - spent);
    lane_counters().handed.fetch_add(1, std::memory_order_relaxed);
    return std::nullopt;
  }
  observe(config_, [&](Observer& o) {
    OperationEvent e;
    e.operation = Operation::acquire;
    e.error = r.error;
    e.resources = &machine.resources();
    e.votes = &r.votes;
    e.latency = std::chrono::duration_cast<microseconds>(Clock::now() - began);
    e.attempts = r.attempts;
    e.permits = machine.permits();
    e.shared = machine.shared();
    e.permit = r ? r.lock.permit : -1;
    o.on_operation(e);
  });
  lane_counters().served.fetch_add(1, std::memory_order_relaxed);
  return std::move(r);
}

// An extend or a release of a lock may follow its acquire's requests (or an extend's) that the
// loop still has on their way to a late node: on another connection, the lane's would overtake
// them there (a release run before the acquire leaves the key on that node until its ttl). The
// loop sends it behind them, on the same connection.
bool Lane::behind_the_loop() {
  if (!loop_.in_flight || !loop_.in_flight()) return false;
  lane_counters().behind.fetch_add(1, std::memory_order_relaxed);
  return true;
}

template <class Result, class Make>
std::optional<Result> Lane::one_lock(const Lock& lock, Operation operation,
                                     std::optional<Result> Call::*result, Make make) {
  if (behind_the_loop()) return std::nullopt;
  auto guard = take(mutex_);
  if (!guard.owns_lock()) return std::nullopt;
  InLaneCall inside;
  const auto began = Clock::now();
  if (!ready(began)) return std::nullopt;
  auto machine = make();
  Call call;
  call.target.reply = [&](proto::RequestId id, std::size_t node, std::vector<NodeVote> votes,
                          Clock::time_point now, proto::Actions& out) {
    if (!machine.finished()) machine.on_reply(id, node, std::move(votes), now, out);
  };
  call.target.timer = [](proto::TimerId, Clock::time_point, proto::Actions&) {};
  call.target.done = [&] { return machine.finished(); };
  call.stop = [&] { return (call.*result).has_value(); };
  proto::Actions& out = first_;
  out.clear();
  machine.start(began, out);
  drive(call, out);
  forget_pending();  // the late nodes' replies: read by the next calls, wanted by nobody
  auto& r = call.*result;
  if (!r) return std::nullopt;  // cannot happen; the loop then answers
  notify_operation(config_, operation, r->error, r->votes, lock.resources, began, lock.permit);
  if (r->error == Errc::not_held) found_lost(lock, began, r->error);
  lane_counters().served.fetch_add(1, std::memory_order_relaxed);
  return std::move(r);
}

std::optional<ExtendResult> Lane::extend(const Lock& lock, Milliseconds ttl) {
  return one_lock(lock, Operation::extend, &Call::extended,
                  [&] { return proto::ExtendMachine(*proto_, proto_->next_job(), lock, ttl); });
}

std::optional<ReleaseResult> Lane::release(const Lock& lock) {
  return one_lock(lock, Operation::release, &Call::released,
                  [&] { return proto::ReleaseMachine(*proto_, proto_->next_job(), lock); });
}

void Lane::drop(Slot& s, std::size_t node) {
  // What earlier calls left on its way is wanted by nobody (each call ends with
  // forget_pending()), but a release among it has an unknown outcome: the loop sends it again.
  for (auto& p : s.pending)
    if (p.request != nullptr && p.request->script == proto::ScriptId::release)
      loop_.release(node, p.request);
  s.pending.clear();
  s.dirty = false;
  s.socket.close();
}

bool Lane::pending() const {
  return std::any_of(slots_.begin(), slots_.end(),
                     [](const std::unique_ptr<Slot>& s) { return !s->pending.empty(); });
}

void Lane::forget_pending() {
  for (auto& s : slots_)
    for (auto& p : s->pending) p.wanted = false;
}

void Lane::learn_quick_acquire() {
  if (proto_->quick_acquire() && loop_.quick_acquire_off && loop_.quick_acquire_off())
    proto_->no_quick_acquire();
}

void Lane::tell_quick_acquire() {
  if (proto_->quick_acquire() || told_quick_off_) return;
  told_quick_off_ = true;
  if (loop_.no_quick_acquire) loop_.no_quick_acquire();
}

void Lane::rest(Slot& s, Clock::time_point now) {
  s.resting = s.resting == Clock::duration{}
                  ? Clock::duration(kFirstRest)
                  : std::min<Clock::duration>(s.resting * 2, kLongestRest);
  s.reopen_at = now + s.resting;
}

void Lane::found_lost(const Lock& lock, Clock::time_point started, std::error_code) {
  // The coordinator's rule (Coordinator::found_lost) for a Lock of acquire(): reported once per
  // token, whichever path (this lane, the loop's calls, its watchdog) found it first.
  report_found_lost(config_, lost_tokens_, lock.token, lock.valid_until, started, lock.resources,
                    lock.permit);
}

}  // namespace redlock::detail
