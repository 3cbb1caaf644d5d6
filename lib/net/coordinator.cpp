#include "coordinator.hpp"

#include <hiredis/hiredis.h>

#include <cstdio>
#include <exception>

#include "../core/token.hpp"
#include "scripts.hpp"

namespace redlock::detail {
namespace {

using std::chrono::microseconds;

// {1} granted, {0, pttl} held by another token.
Vote classify_acquire(const redisReply* r, const Command&) {
  if (r->type != REDIS_REPLY_ARRAY || r->elements < 1 || r->element[0]->type != REDIS_REPLY_INTEGER)
    return Vote::failed;
  return r->element[0]->integer == 1 ? Vote::yes : Vote::no;
}

// 1 extended, 0 not ours.
Vote classify_extend(const redisReply* r, const Command&) {
  if (r->type != REDIS_REPLY_INTEGER) return Vote::failed;
  return r->integer == 1 ? Vote::yes : Vote::no;
}

// Number of keys deleted: yes only when every key still held our token.
Vote classify_release(const redisReply* r, const Command& c) {
  if (r->type != REDIS_REPLY_INTEGER) return Vote::failed;
  return r->integer == static_cast<long long>(c.keys.size()) ? Vote::yes : Vote::no;
}

Vote classify_text(const redisReply* r, const Command&) {
  return r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS ? Vote::yes : Vote::failed;
}

std::string ms_arg(Milliseconds d) { return std::to_string(d.count()); }

std::string info_field(const std::string& info, const std::string& field) {
  auto pos = info.find(field + ":");
  if (pos == std::string::npos) return {};
  pos += field.size() + 1;
  auto end = info.find_first_of("\r\n", pos);
  return info.substr(pos, end == std::string::npos ? end : end - pos);
}

}  // namespace

void deliver_guarded(const char* what, const std::function<void()>& call) noexcept {
  try {
    call();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "redlock: exception escaped a %s callback: %s\n", what, e.what());
  } catch (...) {
    std::fprintf(stderr, "redlock: exception escaped a %s callback\n", what);
  }
}

// ---------------------------------------------------------------------------------------------
// FanOut

FanOut::FanOut(Coordinator& coordinator, Command command, Classify classify, Decided decided,
               bool wait_all)
    : coordinator_(coordinator),
      command_(std::move(command)),
      classify_(classify),
      decided_(std::move(decided)),
      wait_all_(wait_all) {
  auto n = coordinator_.nodes().size();
  tally_.nodes = n;
  votes_.nodes.resize(n);
  votes_.addresses = coordinator_.addresses();
  votes_.quorum = tally_.quorum();
  if (wait_all_) texts_.resize(n);
  ++coordinator_.live_fanouts_;
}

FanOut::~FanOut() { coordinator_.fanout_ended(); }

void FanOut::start(Coordinator& coordinator, Command command, Classify classify, Decided decided,
                   bool wait_all) {
  auto* f = new FanOut(coordinator, std::move(command), classify, std::move(decided), wait_all);
  f->started_ = Clock::now();  // t0: before the first request leaves
  for (auto& node : coordinator.nodes()) {
    if (auto ec = node->send(f->command_, f)) {
      std::string detail = ec == node->last_error() ? node->last_error_detail() : ec.message();
      f->record(node->index(), Vote::failed, ec, detail, microseconds(0));
    } else {
      ++f->outstanding_;
    }
  }
  // Decide only once every request is on its way, so a verdict's clean-up follows them all.
  f->sending_ = false;
  f->maybe_decide();
  f->maybe_finish();
}

void FanOut::record(std::size_t node, Vote vote, std::error_code error, std::string_view detail,
                    microseconds latency) {
  auto& v = votes_.nodes[node];
  if (v.vote != Vote::pending) return;
  v.vote = vote;
  v.error = error;
  v.detail.assign(detail);
  v.latency = latency;
  switch (vote) {
    case Vote::yes:
      ++tally_.yes;
      break;
    case Vote::no:
      ++tally_.no;
      break;
    case Vote::failed:
      ++tally_.failed;
      break;
    case Vote::pending:
      break;
  }
}

void FanOut::on_node_reply(std::size_t node, const NodeReply& reply) {
  --outstanding_;
  if (reply.error) {
    record(node, Vote::failed, reply.error, reply.detail, reply.latency);
  } else {
    Vote vote = classify_(reply.reply, command_);
    if (vote == Vote::failed) {
      record(node, vote, make_error_code(Errc::protocol_error), "unexpected reply type",
             reply.latency);
    } else {
      record(node, vote, {}, {}, reply.latency);
      if (wait_all_ && reply.reply->str != nullptr)
        texts_[node].assign(reply.reply->str, reply.reply->len);
    }
  }
  maybe_decide();
  maybe_finish();
}

void FanOut::maybe_decide() {
  if (decided_called_ || sending_) return;
  Verdict v = wait_all_ ? (outstanding_ == 0 ? Verdict::won : Verdict::pending) : tally_.verdict();
  if (v == Verdict::pending) return;
  decided_called_ = true;
  verdict_ = v;
  if (decided_) decided_(*this);
}

void FanOut::maybe_finish() {
  if (!sending_ && decided_called_ && outstanding_ == 0) delete this;
}

// ---------------------------------------------------------------------------------------------
// AcquireJob: attempts, clean-up of failed attempts, and retries with jitter.

class Coordinator::AcquireJob {
 public:
  AcquireJob(Coordinator& co, AcquireRequest request, Milliseconds ttl, std::string token,
             Client::AcquireCallback done)
      : co_(co),
        resources_(std::move(request.resources)),
        keys_(co.keys_of(resources_)),
        token_(std::move(token)),
        ttl_(ttl),
        done_(std::move(done)) {
    if (!request.wait) {
      max_attempts_ = 1 + co.config().retry_count;
    } else if (request.wait->count() == 0) {
      max_attempts_ = 1;
    } else {
      max_attempts_ = 0;
      deadline_ = Clock::now() + *request.wait;
    }
    uv_timer_init(co.loop(), &timer_);
    timer_.data = this;
    co_.jobs_.insert(this);
  }

  void attempt() {
    ++attempts_;
    in_attempt_ = true;
    // Every attempt of one acquire uses the same token: a late "yes" from an earlier attempt
    // is then simply ours.
    Command command{&script_acquire, keys_, {token_, ms_arg(ttl_)}};
    FanOut::start(co_, std::move(command), classify_acquire, [this](FanOut& f) { on_attempt(f); });
  }

  // Shutdown while waiting for the next attempt.
  void cancel() {
    if (in_attempt_) return;  // the attempt's own completion finishes the job
    AcquireResult r;
    r.error = make_error_code(Errc::shutting_down);
    r.attempts = attempts_;
    finish(std::move(r));
  }

 private:
  void on_attempt(FanOut& f) {
    in_attempt_ = false;
    auto now = Clock::now();
    AcquireResult r;
    r.votes = f.votes();
    r.attempts = attempts_;
    if (f.verdict() == Verdict::won) {
      auto valid_until = validity_deadline(f.started(), ttl_, co_.config().drift_factor);
      if (still_valid(now, valid_until) && !co_.shutting_down()) {
        r.lock.resources = resources_;
        r.lock.token = token_;
        r.lock.valid_until = valid_until;
        r.lock.ttl = ttl_;
        finish(std::move(r));
        return;
      }
      r.error = make_error_code(Errc::validity_expired);
    } else {
      r.error = make_error_code(f.tally().loss_reason(Errc::not_acquired));
    }
    // A failed attempt may have left our token on some nodes, or may still do so on nodes that
    // have not answered: compare-and-delete everywhere, queued behind the acquire.
    co_.release_everywhere(keys_, token_);
    if (co_.shutting_down()) {
      r.error = make_error_code(Errc::shutting_down);
      finish(std::move(r));
      return;
    }
    auto delay = retry_delay(co_.config().retry_delay, co_.config().retry_jitter, co_.rng()());
    auto next = next_attempt(now, deadline_, attempts_, max_attempts_, delay);
    if (!next) {
      finish(std::move(r));
      return;
    }
    auto wait = std::chrono::duration_cast<Milliseconds>(*next - now);
    uv_timer_start(
        &timer_, [](uv_timer_t* t) { static_cast<AcquireJob*>(t->data)->attempt(); },
        static_cast<std::uint64_t>(wait.count()), 0);
  }

  void finish(AcquireResult r) {
    co_.jobs_.erase(this);
    auto done = std::move(done_);
    deliver_guarded("acquire", [&] { done(std::move(r)); });
    uv_close(reinterpret_cast<uv_handle_t*>(&timer_),
             [](uv_handle_t* h) { delete static_cast<AcquireJob*>(h->data); });
  }

  Coordinator& co_;
  std::vector<std::string> resources_;
  std::vector<std::string> keys_;
  std::string token_;
  Milliseconds ttl_;
  Client::AcquireCallback done_;
  int max_attempts_ = 1;
  std::optional<Clock::time_point> deadline_;
  int attempts_ = 0;
  bool in_attempt_ = false;
  uv_timer_t timer_{};
};

// ---------------------------------------------------------------------------------------------
// Coordinator

Coordinator::Coordinator(uv_loop_t* loop, const Config& config)
    : loop_(loop), config_(config), rng_(random_seed()) {
  auto addresses = std::make_shared<std::vector<std::string>>();
  for (std::size_t i = 0; i < config_.nodes.size(); ++i) {
    nodes_.push_back(std::make_unique<Node>(loop_, i, config_.nodes[i], config_, rng_()));
    addresses->push_back(nodes_.back()->address());
  }
  addresses_ = std::move(addresses);
  uv_timer_init(loop_, &drain_timer_);
  drain_timer_.data = this;
}

Coordinator::~Coordinator() = default;

void Coordinator::start() {
  for (auto& n : nodes_) n->start();
}

void Coordinator::shutdown() {
  shutting_down_ = true;
  // Jobs waiting for their next attempt end now; attempts in flight end with their fan-out.
  auto waiting = jobs_;
  for (auto* job : waiting) job->cancel();
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
  for (const auto& r : resources) keys.push_back(config_.key_prefix + r);
  return keys;
}

void Coordinator::release_everywhere(const std::vector<std::string>& keys,
                                     const std::string& token) {
  FanOut::start(*this, Command{&script_release, keys, {token}}, classify_release, nullptr);
}

void Coordinator::acquire(AcquireRequest request, Milliseconds ttl, Client::AcquireCallback done) {
  std::string token;
  if (auto ec = new_token(token)) {
    AcquireResult r;
    r.error = ec;
    r.detail = "cannot draw a random token";
    deliver_guarded("acquire", [&] { done(std::move(r)); });
    return;
  }
  auto* job = new AcquireJob(*this, std::move(request), ttl, std::move(token), std::move(done));
  job->attempt();
}

void Coordinator::extend(Lock lock, Milliseconds ttl, Client::ExtendCallback done) {
  Command command{&script_extend, keys_of(lock.resources), {lock.token, ms_arg(ttl)}};
  auto previous = lock.valid_until;
  double drift = config_.drift_factor;
  FanOut::start(*this, std::move(command), classify_extend,
                [previous, ttl, drift, done = std::move(done)](FanOut& f) {
                  ExtendResult r;
                  r.votes = f.votes();
                  r.valid_until = previous;
                  if (f.verdict() == Verdict::won) {
                    auto fresh = validity_deadline(f.started(), ttl, drift);
                    if (still_valid(Clock::now(), fresh))
                      r.valid_until = extended_deadline(previous, fresh);
                    else
                      r.error = make_error_code(Errc::validity_expired);
                  } else {
                    r.error = make_error_code(f.tally().loss_reason(Errc::not_held));
                  }
                  deliver_guarded("extend", [&] { done(std::move(r)); });
                });
}

void Coordinator::release(Lock lock, Client::ReleaseCallback done) {
  Command command{&script_release, keys_of(lock.resources), {lock.token}};
  FanOut::start(*this, std::move(command), classify_release, [done = std::move(done)](FanOut& f) {
    ReleaseResult r;
    r.votes = f.votes();
    r.released = f.tally().yes;
    if (f.verdict() != Verdict::won)
      r.error = make_error_code(f.tally().loss_reason(Errc::not_held));
    deliver_guarded("release", [&] { done(std::move(r)); });
  });
}

void Coordinator::status(Client::StatusCallback done) {
  FanOut::start(
      *this, Command{nullptr, {}, {"INFO", "server"}}, classify_text,
      [done = std::move(done)](FanOut& f) {
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
          rows.push_back(std::move(s));
        }
        deliver_guarded("status", [&] { done(std::move(rows)); });
      },
      /*wait_all=*/true);
}

}  // namespace redlock::detail
