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
                   Decided decided, bool wait_all) {
  auto* f =
      new FanOut(coordinator, std::move(command), items, classify, std::move(decided), wait_all);
  f->started_ = Clock::now();  // t0: before the first request leaves
  // One reading of the loop's clocks for every node's request: they leave together.
  const auto at = Node::SendTime::now(coordinator.loop());
  for (auto& node : coordinator.nodes()) {
    if (auto ec = node->send(f->command_, f, &at)) {
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
  if (reply.error) {
    NodeVote v;
    v.vote = Vote::failed;
    v.error = reply.error;
    v.detail.assign(reply.detail);
    v.latency = reply.latency;
    for (std::size_t i = 0; i < items; ++i) record(i, node, v);
  } else {
    for (auto& s : scratch_) s = NodeVote{};
    classify_(reply.reply, command_, scratch_.data(), items);
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
// AcquireJob: drives one acquire machine (proto/acquire.hpp), which takes every decision: this
// only carries out its actions (Coordinator::run) and brings it the replies, timers and cancels.

class Coordinator::AcquireJob {
 public:
  AcquireJob(Coordinator& co, const AcquireRequest& request, Milliseconds ttl,
             Client::AcquireCallback done)
      : co_(co),
        machine_(*co.proto_, request, ttl, Clock::now(),
                 std::chrono::duration_cast<std::chrono::microseconds>(
                     std::chrono::system_clock::now().time_since_epoch())
                     .count()),
        done_(std::move(done)),
        cancel_(request.cancel) {
    observe(co.config(), [&](Observer&) { began_ = Clock::now(); });
    uv_timer_init(co.loop(), &timer_);
    timer_.data = this;
    co_.jobs_.emplace(machine_.id(), this);
  }

  void begin() {
    proto::Actions out;
    if (cancel_) {
      auto* co = &co_;
      auto id = machine_.id();
      auto post = co_.post_to_loop_;
      cancel_hook_ = cancel_state_of(*cancel_)->add([co, id, post] {
        if (post) post([co, id] { co->cancel(id); });
      });
      if (cancel_hook_ == 0) {  // cancelled before it began
        machine_.cancel(Errc::cancelled, Clock::now(), out);
        co_.run(out);
        return;
      }
    }
    machine_.start(Clock::now(), out);
    co_.run(out);
  }

  proto::AcquireMachine& machine() noexcept { return machine_; }

  void on_timer() {
    proto::Actions out;
    machine_.on_timer(timer_id_, Clock::now(), out);
    co_.run(out);
  }

  void arm(proto::TimerId id, Clock::time_point at) {
    timer_id_ = id;
    auto wait = std::chrono::ceil<Milliseconds>(at - Clock::now());
    uv_timer_start(
        &timer_, [](uv_timer_t* t) { static_cast<AcquireJob*>(t->data)->on_timer(); },
        static_cast<std::uint64_t>(std::max<Milliseconds::rep>(wait.count(), 0)), 0);
  }
  void disarm() { uv_timer_stop(&timer_); }

  // The machine began to wait for release notices (proto::WaitBegan).
  void wait_began() {
    observe(co_.config(), [&](Observer& o) {
      wait_began_ = Clock::now();
      waited_ = true;
      WaitEvent e;
      e.phase = WaitPhase::started;
      e.resources = &machine_.resources();
      o.on_wait(e);
    });
  }

  void deliver(AcquireResult r) {
    if (cancel_hook_ != 0) cancel_state_of(*cancel_)->remove(cancel_hook_);
    cancel_hook_ = 0;
    observe(co_.config(), [&](Observer& o) {
      auto now = Clock::now();
      if (waited_) {
        WaitEvent w;
        w.phase = WaitPhase::ended;
        w.resources = &machine_.resources();
        w.error = r.error;
        w.waited = std::chrono::duration_cast<microseconds>(now - wait_began_);
        o.on_wait(w);
      }
      OperationEvent e;
      e.operation = Operation::acquire;
      e.error = r.error;
      e.resources = &machine_.resources();
      e.votes = &r.votes;
      e.latency = std::chrono::duration_cast<microseconds>(now - began_);
      e.attempts = r.attempts;
      o.on_operation(e);
    });
    auto done = std::move(done_);
    if (done) deliver_guarded("acquire", [&] { done(std::move(r)); });
  }

  // Freed once its machine needs nothing more (every reply it waits for came in).
  void close() {
    uv_close(reinterpret_cast<uv_handle_t*>(&timer_),
             [](uv_handle_t* h) { delete static_cast<AcquireJob*>(h->data); });
  }

 private:
  Coordinator& co_;
  proto::AcquireMachine machine_;
  Client::AcquireCallback done_;
  std::optional<CancelToken> cancel_;
  std::uint64_t cancel_hook_ = 0;
  uv_timer_t timer_{};
  proto::TimerId timer_id_ = 0;
  Clock::time_point began_{};       // with an observer only: when the job began
  Clock::time_point wait_began_{};  // with an observer only: when it began to wait
  bool waited_ = false;             // with an observer only: on_wait(started) went out
};

// One proto::Send on its way: the command to its nodes, each reply decoded by the request's
// decoder and brought to the job that sent it. Lives until every node answered.
class Coordinator::ProtoSend final : public ReplySink {
 public:
  ProtoSend(Coordinator& co, const proto::Send& send)
      : co_(co), job_(send.job), id_(send.id), request_(send.request), wanted_(send.reply_wanted) {
    command_.script = script_of(request_->script);
    command_.keys = request_->keys;
    command_.args = request_->args;
    ++co_.live_fanouts_;
  }
  ~ProtoSend() { co_.fanout_ended(); }

  static const Script* script_of(proto::ScriptId id) {
    switch (id) {
      case proto::ScriptId::acquire:
        return &script_acquire;
      case proto::ScriptId::renew:
        return &script_renew;
      case proto::ScriptId::release:
        return &script_release;
      case proto::ScriptId::fence:
        return &script_fence;
      case proto::ScriptId::none:
        break;
    }
    return nullptr;
  }

  // Sends to every node of `send`, then reports the nodes that refused to send. May free itself.
  static void start(Coordinator& co, const proto::Send& send) {
    auto* s = new ProtoSend(co, send);
    const auto at = Node::SendTime::now(co.loop());
    std::vector<std::pair<std::size_t, std::vector<NodeVote>>> refused;
    for (auto i : send.nodes) {
      auto& node = *co.nodes()[i];
      if (auto ec = node.send(s->command_, s, &at)) {
        auto detail = ec == node.last_error() ? node.last_error_detail() : ec.message();
        refused.emplace_back(i, proto::failed_votes(send.request->items, ec, detail));
      } else {
        ++s->outstanding_;
      }
    }
    auto job = s->job_;
    auto id = s->id_;
    bool wanted = s->wanted_;
    if (s->outstanding_ == 0) delete s;
    if (!wanted) return;
    for (auto& [node, votes] : refused) co.deliver_reply(job, id, node, std::move(votes));
  }

  void on_node_reply(std::size_t node, const NodeReply& reply) override {
    --outstanding_;
    if (wanted_) {
      auto votes =
          reply.error ? proto::failed_votes(request_->items, reply.error, std::string(reply.detail))
                      : proto::decode_reply(*request_, reply.reply);
      for (auto& v : votes) v.latency = reply.latency;
      co_.deliver_reply(job_, id_, node, std::move(votes));
    }
    if (outstanding_ == 0) delete this;
  }

 private:
  Coordinator& co_;
  std::uint64_t job_;
  proto::RequestId id_;
  std::shared_ptr<const proto::Request> request_;
  bool wanted_;
  Command command_;
  std::size_t outstanding_ = 0;
};

void Coordinator::deliver_reply(std::uint64_t job, proto::RequestId id, std::size_t node,
                                std::vector<NodeVote> votes) {
  auto it = jobs_.find(job);
  if (it == jobs_.end()) return;
  proto::Actions out;
  it->second->machine().on_reply(id, node, std::move(votes), Clock::now(), out);
  reap_.push_back(job);
  run(out);
}

void Coordinator::run(proto::Actions& actions) {
  // A reply refused at once comes back inside run() (ProtoSend::start): jobs are reaped only by
  // the outermost run, once every action of theirs (their result above all) has been carried out.
  ++running_;
  for (auto& action : actions) {
    if (auto* send = std::get_if<proto::Send>(&action)) {
      ProtoSend::start(*this, *send);
    } else if (auto* arm = std::get_if<proto::ArmTimer>(&action)) {
      auto it = jobs_.find(arm->job);
      if (it != jobs_.end()) it->second->arm(arm->id, arm->at);
    } else if (auto* stop = std::get_if<proto::CancelTimer>(&action)) {
      auto it = jobs_.find(stop->job);
      if (it != jobs_.end()) it->second->disarm();
    } else if (auto* sub = std::get_if<proto::Subscribe>(&action)) {
      waiters_.subscribe(sub->channel);
    } else if (auto* unsub = std::get_if<proto::Unsubscribe>(&action)) {
      waiters_.unsubscribe(unsub->channel);
    } else if (auto* began = std::get_if<proto::WaitBegan>(&action)) {
      auto it = jobs_.find(began->job);
      if (it != jobs_.end()) it->second->wait_began();
    } else if (auto* done = std::get_if<proto::DeliverAcquire>(&action)) {
      auto it = jobs_.find(done->job);
      if (it != jobs_.end()) it->second->deliver(std::move(done->result));
      reap_.push_back(done->job);
    }
  }
  if (--running_ == 0) reap();
}

void Coordinator::reap() {
  while (!reap_.empty()) {
    auto job = reap_.back();
    reap_.pop_back();
    auto it = jobs_.find(job);
    if (it == jobs_.end() || !it->second->machine().done()) continue;
    auto* j = it->second;
    jobs_.erase(it);
    j->close();
  }
}

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
  // The protocol's decisions (proto/): tokens from the OS CSPRNG, jitter from rng_.
  proto_ = std::make_unique<proto::Context>(
      config_, nodes_.size(), turn_channel_, [](std::string& out) { return new_token(out); },
      [this] { return rng_(); }, addresses_);
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
  proto_->shut_down();
  // Jobs waiting for their next attempt end now; attempts in flight end with their fan-out.
  std::vector<std::uint64_t> jobs;
  for (auto& [id, job] : jobs_) jobs.push_back(id);
  for (auto id : jobs) {
    auto it = jobs_.find(id);
    if (it == jobs_.end()) continue;
    proto::Actions out;
    it->second->machine().cancel(Errc::shutting_down, Clock::now(), out);
    reap_.push_back(id);
    run(out);
  }
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

Command Coordinator::renew_command(const std::vector<const Lease*>& leases) {
  Command c{&script_renew, {}, {}};
  for (const auto* l : leases) add_renewal(c, l->keys, l->token, l->ttl);
  return c;
}

void Coordinator::acquire(AcquireRequest request, Milliseconds ttl, Client::AcquireCallback done) {
  (new AcquireJob(*this, request, ttl, std::move(done)))->begin();
}

void Coordinator::cancel(std::uint64_t job_id) {
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return;
  proto::Actions out;
  it->second->machine().cancel(Errc::cancelled, Clock::now(), out);
  reap_.push_back(job_id);
  run(out);
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
