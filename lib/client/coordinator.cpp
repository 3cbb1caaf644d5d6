#include "coordinator.hpp"

#include <algorithm>
#include <cstdio>

#include "../core/observe.hpp"
#include "../core/recycled.hpp"
#include "../core/token.hpp"
#include "../net/scripts.hpp"
#include "../proto/notices.hpp"
#include "status.hpp"

namespace redlock::detail {

// Client::extend() and Client::release(): a machine each, with its caller's callback.
// What an extend or a release needs to report its lock lost (with an observer only): the
// lock's token and validity, and its lease when it is a held lock.
struct Coordinator::LockNote {
  LockNote(const Config& config, const Lock& lock, std::shared_ptr<Lease> held,
           Clock::time_point call_left)
      : resources(config.observer ? lock.resources : std::vector<std::string>{}),
        token(config.observer ? lock.token : std::string()),
        valid_until(lock.valid_until),
        permit(lock.permit),
        lease(std::move(held)),
        started(call_left) {}
  std::vector<std::string> resources;
  std::string token;
  Clock::time_point valid_until;
  int permit = -1;
  std::shared_ptr<Lease> lease;  // null for a Lock of acquire()
  // When its call left: an extend's validity counts from it; a release's is read by the observer
  // alone (a release decides nothing by the clock).
  Clock::time_point started;
};

struct Coordinator::ExtendOp : LockNote {
  ExtendOp(proto::Context& context, std::uint64_t id, Lock lock, Milliseconds ttl,
           Client::ExtendCallback callback)
      : LockNote(context.config(), lock, nullptr, Clock::now()),
        machine(context, id, std::move(lock), ttl),
        done(std::move(callback)) {}
  proto::ExtendMachine machine;
  Client::ExtendCallback done;
};

// Made and freed once per release (its block recycled: Recycled).
struct Coordinator::ReleaseOp : LockNote, Recycled<ReleaseOp> {
  ReleaseOp(proto::Context& context, std::uint64_t id, Lock lock, Client::ReleaseCallback callback,
            std::shared_ptr<Lease> lease)
      // Without an observer nobody reads when a release began: no clock reading.
      : LockNote(context.config(), lock, std::move(lease),
                 context.config().observer ? Clock::now() : Clock::time_point{}),
        machine(context, id, std::move(lock)),
        done(std::move(callback)) {}
  proto::ReleaseMachine machine;
  Client::ReleaseCallback done;
};

Coordinator::Coordinator(uv_loop_t* loop, const Config& config)
    : loop_(loop),
      config_(config),
      rng_(random_seed()),
      waiters_(
          loop, config, [this] { return rng_(); }, *this) {
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
  // The protocol's decisions (proto/): tokens from the OS CSPRNG, jitter from rng_; the turn
  // channel is random, so that this client's waiters are told apart from others'.
  auto channel = proto::turn_channel_name(config_.key_prefix, rng_());
  proto_ = std::make_unique<proto::Context>(
      config_, nodes_.size(), std::move(channel), [](std::string& out) { return new_token(out); },
      [this] { return rng_(); }, addresses_);
  // Every request of this context is sent and dropped on the loop thread: it may reuse them.
  proto_->reuse_requests();
  watchdog_ = std::make_unique<Watchdog>(*proto_, config_, lost_tokens_);
  uv_timer_init(loop_, &drain_timer_);
  drain_timer_.data = this;
  uv_timer_init(loop_, &watchdog_timer_);
  watchdog_timer_.data = this;
}

Coordinator::~Coordinator() = default;

void Coordinator::start() {
  set_thread_config(&config_);  // on the loop thread: deliver_guarded reports to our log
  for (auto& n : nodes_) n->start();
}

// ---------------------------------------------------------------------------------------------
// Carrying out the machines' actions

namespace {

// An extend's or a release's result goes to its caller once, after the observer heard of it; a
// result for an operation already answered (or never started here) is dropped.
template <typename Ops, typename Result, typename Found>
void deliver_once(const Config& config, Ops& ops, std::uint64_t id, Operation kind,
                  const char* what, Result& result, Found&& found_lost) {
  auto it = ops.find(id);
  if (it == ops.end()) return;
  auto op = std::move(it->second);
  ops.erase(it);
  notify_operation(config, kind, result.error, result.votes, op->resources, op->started,
                   op->permit);
  if (result.error == Errc::not_held) found_lost(*op);
  deliver_guarded(what, [&] { op->done(std::move(result)); });
}

}  // namespace

// An extend or a release found that a quorum no longer holds the lock: it was lost, and
// nothing may have said so (a lock of acquire() has no watchdog). Reported once per token; a
// held lock whose loss the watchdog already reported is not reported again.
void Coordinator::found_lost(const LockNote& note) {
  if (note.lease != nullptr && note.lease->lost()) return;
  report_found_lost(config_, lost_tokens_, note.token, note.valid_until, note.started,
                    note.resources, note.permit);
}

void Coordinator::run(proto::Actions& actions, Route caller) {
  // A reply refused at once comes back inside run() (InFlight::start): jobs are reaped only by
  // the outermost run, once every action of theirs (their result above all) has been carried out.
  ++running_;
  for (auto& action : actions) {
    if (auto* send = std::get_if<proto::Send>(&action)) {
      ++live_requests_;
      InFlight::start(nodes_, loop_, *send,
                      send->job != 0 ? Route{Route::To::acquire, send->job} : caller, *this);
    } else if (auto* arm = std::get_if<proto::ArmTimer>(&action)) {
      if (arm->job != 0) {
        if (auto it = jobs_.find(arm->job); it != jobs_.end()) it->second->arm(arm->id, arm->at);
      } else if (caller.to == Route::To::watchdog) {
        watchdog_timer_id_ = arm->id;
        arm_watchdog(arm->at);
      }
    } else if (auto* stop = std::get_if<proto::CancelTimer>(&action)) {
      if (stop->job != 0) {
        if (auto it = jobs_.find(stop->job); it != jobs_.end()) it->second->disarm();
      } else if (caller.to == Route::To::watchdog && !watchdog_timer_closed_) {
        uv_timer_stop(&watchdog_timer_);
      }
    } else if (auto* sub = std::get_if<proto::Subscribe>(&action)) {
      notice_channels_.insert(sub->channel);
      waiters_.subscribe(sub->channel);
    } else if (auto* unsub = std::get_if<proto::Unsubscribe>(&action)) {
      notice_channels_.erase(unsub->channel);
      if (!listened(unsub->channel)) waiters_.unsubscribe(unsub->channel);
    } else if (auto* began = std::get_if<proto::WaitBegan>(&action)) {
      if (auto it = jobs_.find(began->job); it != jobs_.end()) it->second->wait_began();
    } else if (auto* done = std::get_if<proto::DeliverAcquire>(&action)) {
      if (auto it = jobs_.find(done->job); it != jobs_.end())
        it->second->deliver(std::move(done->result));
      reap_.push_back(done->job);
    } else if (auto* ext = std::get_if<proto::DeliverExtend>(&action)) {
      deliver_once(config_, extends_, ext->op, Operation::extend, "extend", ext->result,
                   [this](const LockNote& note) { found_lost(note); });
    } else if (auto* rel = std::get_if<proto::DeliverRelease>(&action)) {
      deliver_once(config_, releases_, rel->op, Operation::release, "release", rel->result,
                   [this](const LockNote& note) { found_lost(note); });
    } else if (auto* renewed = std::get_if<proto::Renewed>(&action)) {
      watchdog_->renewed(*renewed);
    } else if (auto* news = std::get_if<proto::RenewDecided>(&action)) {
      watchdog_->renew_decided(*news);
    } else if (auto* lost = std::get_if<proto::Lost>(&action)) {
      watchdog_->lost(*lost);
    }
  }
  if (--running_ == 0) {
    reap();
    if (!proto_->quick_acquire() && !quick_off_.load(std::memory_order_relaxed))
      quick_off_.store(true, std::memory_order_release);
  }
}

void Coordinator::on_votes(Route route, proto::RequestId id, std::size_t node,
                           std::vector<NodeVote> votes) {
  Scratch scratch(*this);
  auto& out = scratch.out;
  // A release decides nothing by the clock (ReleaseMachine::on_reply reads no time): its replies
  // cost no reading. Every other machine gets one taken now, after the reply came.
  auto now = route.to == Route::To::release ? Clock::time_point{} : Clock::now();
  switch (route.to) {
    case Route::To::acquire: {
      auto it = jobs_.find(route.id);
      if (it == jobs_.end()) return;
      it->second->machine().on_reply(id, node, std::move(votes), now, out);
      reap_.push_back(route.id);
      break;
    }
    case Route::To::extend: {
      auto it = extends_.find(route.id);
      if (it == extends_.end()) return;
      it->second->machine.on_reply(id, node, std::move(votes), now, out);
      break;
    }
    case Route::To::release: {
      auto it = releases_.find(route.id);
      if (it == releases_.end()) return;
      it->second->machine.on_reply(id, node, std::move(votes), now, out);
      break;
    }
    case Route::To::watchdog:
      watchdog_->machine().on_reply(id, node, std::move(votes), now, out);
      break;
    case Route::To::broadcast: {
      auto it = broadcasts_.find(route.id);
      if (it == broadcasts_.end()) return;
      auto on_vote = it->second.on_vote;  // may start another broadcast
      if (--it->second.outstanding == 0) broadcasts_.erase(it);
      deliver_guarded("broadcast", [&] { on_vote(node, std::move(votes.front())); });
      return;
    }
  }
  run(out, route);
}

void Coordinator::on_request_ended() {
  if (--live_requests_ == 0 && shutting_down_) close_nodes();
}

void Coordinator::on_message(std::size_t node, std::string_view channel, std::string_view payload) {
  if (!listeners_.empty()) tell_listeners(channel, true);
  Scratch scratch(*this);
  auto& out = scratch.out;
  proto_->notices().on_message(node, channel, payload, Clock::now(), out);
  run(out, Route{});
}

void Coordinator::on_subscribed(std::size_t node, std::string_view channel) {
  if (!listeners_.empty()) tell_listeners(channel, false);
  Scratch scratch(*this);
  auto& out = scratch.out;
  proto_->notices().on_subscribed(node, channel, Clock::now(), out);
  run(out, Route{});
}

void Coordinator::arm_watchdog(Clock::time_point at) {
  if (watchdog_timer_closed_) return;
  auto wait = std::chrono::ceil<Milliseconds>(at - Clock::now());
  uv_timer_start(
      &watchdog_timer_,
      [](uv_timer_t* t) { static_cast<Coordinator*>(t->data)->on_watchdog_timer(); },
      static_cast<std::uint64_t>(std::max<Milliseconds::rep>(wait.count(), 0)), 0);
}

void Coordinator::on_watchdog_timer() {
  proto::Actions out;
  watchdog_->machine().on_timer(watchdog_timer_id_, Clock::now(), out);
  run(out, Route{Route::To::watchdog, 0});
}

proto::Actions Coordinator::take_actions() {
  if (spare_actions_.empty()) return {};
  proto::Actions a = std::move(spare_actions_.back());
  spare_actions_.pop_back();
  return a;
}

void Coordinator::recycle(proto::Actions& actions) {
  actions.clear();
  // A few are enough: one per nested event. A list that grew large (a renewal round) is let go.
  if (actions.capacity() == 0 || actions.capacity() > 64 || spare_actions_.size() >= 8) return;
  spare_actions_.push_back(std::move(actions));
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
// Operations

void Coordinator::acquire(AcquireRequest request, Milliseconds ttl, Client::AcquireCallback done) {
  auto* job = new AcquireJob(*this, *proto_, loop_, std::move(request), ttl, std::move(done));
  jobs_.emplace(job->id(), job);
  job->begin();
}

void Coordinator::cancel_job(std::uint64_t id) {
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return;
  Scratch scratch(*this);
  auto& out = scratch.out;
  it->second->machine().cancel(Errc::cancelled, Clock::now(), out);
  reap_.push_back(id);
  run(out, Route{});
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
            lease->keys = proto_->held_keys(r.lock);
            lease->token = r.lock.token;
            lease->fencing_token = r.lock.fencing_token;
            lease->permit = r.lock.permit;
            lease->shared = r.lock.shared;
            lease->ttl = r.lock.ttl;
            lease->renew = renew;
            lease->link = std::move(link);
            lease->on_lost = std::move(on_lost);
            lease->set_valid_until(r.lock.valid_until);
            proto::Actions out;
            watchdog_->add(lease, Clock::now(), out);
            run(out, Route{Route::To::watchdog, 0});
            done(std::move(r), std::move(lease));
          });
}

void Coordinator::extend(Lock lock, Milliseconds ttl, Client::ExtendCallback done) {
  auto id = proto_->next_job();
  auto& op = extends_[id];
  op = std::make_unique<ExtendOp>(*proto_, id, std::move(lock), ttl, std::move(done));
  Scratch scratch(*this);
  auto& out = scratch.out;
  op->machine.start(op->started, out);
  run(out, Route{Route::To::extend, id});
}

void Coordinator::release(Lock lock, Client::ReleaseCallback done, std::shared_ptr<Lease> lease) {
  auto id = proto_->next_job();
  auto& op = releases_[id];
  op = std::make_unique<ReleaseOp>(*proto_, id, std::move(lock), std::move(done), std::move(lease));
  Scratch scratch(*this);
  auto& out = scratch.out;
  op->machine.start(op->started, out);
  run(out, Route{Route::To::release, id});
}

void Coordinator::release_lease(const std::shared_ptr<Lease>& lease, Client::ReleaseCallback done) {
  if (lease->released.exchange(true)) {
    ReleaseResult r;
    r.error = make_error_code(Errc::not_held);
    r.detail = "already released";
    deliver_guarded("release", [&] { done(std::move(r)); });
    return;
  }
  proto::Actions out;
  watchdog_->remove(lease, Clock::now(), out);  // no renewal can follow the release
  run(out, Route{Route::To::watchdog, 0});
  Lock lock;
  lock.resources = lease->resources;
  lock.token = lease->token;
  lock.permit = lease->permit;
  lock.shared = lease->shared;
  lock.valid_until = lease->valid_until();
  release(std::move(lock), std::move(done), lease);
}

void Coordinator::send_release(std::size_t node, std::shared_ptr<const proto::Request> request) {
  if (nodes_closed_ || node >= nodes_.size()) return;
  proto::Send send;
  send.id = proto_->next_request();
  send.request = std::move(request);
  send.nodes = {node};
  send.reply_wanted = false;
  ++live_requests_;
  InFlight::start(nodes_, loop_, send, Route{Route::To::release, 0}, *this);
}

void Coordinator::status(Client::StatusCallback done) {
  StatusQuery::start(nodes_, loop_, config_.key_prefix, std::move(done));
}

void Coordinator::broadcast(proto::Request request, NodeVoteCallback on_vote) {
  proto::Send send;
  send.id = proto_->next_request();
  send.request = std::make_shared<const proto::Request>(std::move(request));
  for (std::size_t i = 0; i < nodes_.size(); ++i) send.nodes.push_back(i);
  auto id = proto_->next_job();
  broadcasts_[id] = Broadcast{std::move(on_vote), nodes_.size()};
  ++live_requests_;
  InFlight::start(nodes_, loop_, send, Route{Route::To::broadcast, id}, *this);
}

Votes Coordinator::empty_votes() const {
  Votes v;
  v.nodes.resize(nodes_.size());
  v.addresses = addresses_;
  v.quorum = nodes_.size() / 2 + 1;
  return v;
}

std::uint64_t Coordinator::listen(const std::string& channel, ChannelCallback heard) {
  auto id = ++last_listener_;
  listeners_[id] = Listener{channel, std::move(heard)};
  waiters_.subscribe(channel);
  return id;
}

void Coordinator::unlisten(std::uint64_t id) {
  auto it = listeners_.find(id);
  if (it == listeners_.end()) return;
  auto channel = std::move(it->second.channel);
  listeners_.erase(it);
  if (!listened(channel) && notice_channels_.count(channel) == 0) waiters_.unsubscribe(channel);
}

bool Coordinator::listened(const std::string& channel) const {
  for (const auto& [id, l] : listeners_)
    if (l.channel == channel) return true;
  return false;
}

void Coordinator::tell_listeners(std::string_view channel, bool message) {
  std::vector<ChannelCallback> told;  // a callback may unlisten
  for (const auto& [id, l] : listeners_)
    if (l.channel == channel) told.push_back(l.heard);
  for (auto& heard : told) deliver_guarded("leader notice", [&] { heard(message); });
}

// ---------------------------------------------------------------------------------------------
// Shutdown

void Coordinator::shutdown() {
  shutting_down_ = true;
  auto hooks = std::move(shutdown_hooks_);
  for (auto& hook : hooks) hook();
  proto_->shut_down();
  // Jobs waiting for their next attempt end now; attempts in flight end with their requests.
  std::vector<std::uint64_t> jobs;
  for (auto& [id, job] : jobs_) jobs.push_back(id);
  for (auto id : jobs) {
    auto it = jobs_.find(id);
    if (it == jobs_.end()) continue;
    proto::Actions out;
    it->second->machine().cancel(Errc::shutting_down, Clock::now(), out);
    reap_.push_back(id);
    run(out, Route{});
  }
  proto::Actions out;
  watchdog_->shutdown(Clock::now(), out);
  run(out, Route{Route::To::watchdog, 0});
  watchdog_timer_closed_ = true;
  uv_close(reinterpret_cast<uv_handle_t*>(&watchdog_timer_), nullptr);
  waiters_.shutdown();
  // Drain: requests in flight (releases after a verdict that needed only a quorum, clean-up of
  // a failed attempt) still reach every server. Nodes close when the last one ends, or when the
  // timer says the wait has lasted one request timeout.
  if (live_requests_ == 0) {
    close_nodes();
    return;
  }
  uv_timer_start(
      &drain_timer_, [](uv_timer_t* t) { static_cast<Coordinator*>(t->data)->close_nodes(); },
      static_cast<std::uint64_t>(config_.request_timeout.count()), 0);
}

void Coordinator::close_nodes() {
  if (nodes_closed_) return;
  nodes_closed_ = true;
  uv_close(reinterpret_cast<uv_handle_t*>(&drain_timer_), nullptr);
  // Fails whatever is still pending with Errc::shutting_down (extends and releases included).
  for (auto& n : nodes_) n->shutdown();
}

}  // namespace redlock::detail
