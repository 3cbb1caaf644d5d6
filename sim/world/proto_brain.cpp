// A simulated client's brain on lib/proto's machines: the driver part that lib/net plays in the
// library (which machine an event goes to), and nothing else. Every decision is the machines'.
#include <map>
#include <memory>

#include "../../lib/proto/acquire.hpp"
#include "../../lib/proto/context.hpp"
#include "../../lib/proto/notices.hpp"
#include "../../lib/proto/single.hpp"
#include "../../lib/proto/watchdog.hpp"
#include "brain.hpp"

namespace redlock::sim {
namespace {

using proto::AcquireMachine;
using proto::Context;
using proto::ExtendMachine;
using proto::ReleaseMachine;
using proto::WatchdogMachine;

class ProtoBrain final : public Brain {
 public:
  ProtoBrain(const Config& config, std::size_t nodes, std::string turn_channel,
             std::function<std::string()> token, std::function<std::uint64_t()> random)
      : ctx_(
            config, nodes, std::move(turn_channel),
            [token = std::move(token)](std::string& out) {
              out = token();
              return std::error_code();
            },
            std::move(random)),
        watchdog_(ctx_) {
    // As the library's loop does (one thread here too): the simulation covers the reuse.
    ctx_.reuse_requests();
  }

  std::uint64_t acquire(const AcquireSpec& spec, Clock::time_point now, std::int64_t place,
                        Actions& out) override {
    AcquireRequest request;
    request.resources = spec.resources;
    request.ttl = spec.ttl;
    request.wait = spec.wait;
    request.fencing = spec.fencing;
    request.permits = spec.permits;
    request.shared = spec.shared;
    auto job = std::make_unique<AcquireMachine>(ctx_, request, spec.ttl, now, place);
    auto id = job->id();
    auto* j = job.get();
    jobs_.emplace(id, std::move(job));
    auto from = out.size();
    j->start(now, out);
    route(out, from, Owner{Kind::job, id});
    return id;
  }

  void cancel(std::uint64_t id, Clock::time_point now, Actions& out) override {
    auto it = jobs_.find(id);
    if (it == jobs_.end()) return;
    auto from = out.size();
    it->second->cancel(Errc::cancelled, now, out);
    route(out, from, Owner{Kind::job, id});
  }

  std::uint64_t extend(const Lock& lock, Milliseconds ttl, Clock::time_point now,
                       Actions& out) override {
    auto id = ++last_op_;
    auto m = std::make_unique<ExtendMachine>(ctx_, id, lock, ttl);
    auto* p = m.get();
    extends_.emplace(id, std::move(m));
    auto from = out.size();
    p->start(now, out);
    route(out, from, Owner{Kind::extend, id});
    return id;
  }

  std::uint64_t release(const Lock& lock, Clock::time_point now, Actions& out) override {
    auto id = ++last_op_;
    auto m = std::make_unique<ReleaseMachine>(ctx_, id, lock);
    auto* p = m.get();
    releases_.emplace(id, std::move(m));
    auto from = out.size();
    p->start(now, out);
    route(out, from, Owner{Kind::release, id});
    return id;
  }

  std::uint64_t watch(const Lock& lock, Clock::time_point now, Actions& out) override {
    auto id = ++last_op_;
    auto from = out.size();
    watchdog_.add(id, proto::lease_of(lock, ctx_.held_keys(lock), true, now), now, out);
    route(out, from, Owner{Kind::watchdog, 0});
    return id;
  }

  void unwatch(std::uint64_t lease, Clock::time_point now, Actions& out) override {
    auto from = out.size();
    watchdog_.remove(lease, now, out);
    route(out, from, Owner{Kind::watchdog, 0});
  }

  RequestId new_request() override { return ctx_.next_request(); }

  void on_reply(RequestId id, std::size_t node, std::vector<NodeVote> votes, Clock::time_point now,
                Actions& out) override {
    auto it = requests_.find(id);
    if (it == requests_.end()) return;
    Owner owner = it->second;
    auto from = out.size();
    switch (owner.kind) {
      case Kind::job:
        if (auto j = jobs_.find(owner.id); j != jobs_.end()) {
          j->second->on_reply(id, node, std::move(votes), now, out);
          route(out, from, owner);
          if (j->second->done()) jobs_.erase(j);
        }
        return;
      case Kind::extend:
        if (auto e = extends_.find(owner.id); e != extends_.end()) {
          e->second->on_reply(id, node, std::move(votes), now, out);
          route(out, from, owner);
          if (e->second->finished()) extends_.erase(e);
        }
        return;
      case Kind::release:
        if (auto r = releases_.find(owner.id); r != releases_.end()) {
          r->second->on_reply(id, node, std::move(votes), now, out);
          route(out, from, owner);
          if (r->second->finished()) releases_.erase(r);
        }
        return;
      case Kind::watchdog:
        watchdog_.on_reply(id, node, std::move(votes), now, out);
        route(out, from, owner);
        return;
      case Kind::notices:
        return;  // the notices' sends are clean-ups nobody waits for
    }
  }

  void on_timer(TimerId id, Clock::time_point now, Actions& out) override {
    auto it = timers_.find(id);
    if (it == timers_.end()) return;
    Owner owner = it->second;
    auto from = out.size();
    if (owner.kind == Kind::job) {
      auto j = jobs_.find(owner.id);
      if (j == jobs_.end()) return;
      j->second->on_timer(id, now, out);
      route(out, from, owner);
      if (j->second->done()) jobs_.erase(j);
    } else if (owner.kind == Kind::watchdog) {
      watchdog_.on_timer(id, now, out);
      route(out, from, owner);
    }
  }

  void on_message(std::size_t node, const std::string& channel, const std::string& payload,
                  Clock::time_point now, Actions& out) override {
    auto from = out.size();
    ctx_.notices().on_message(node, channel, payload, now, out);
    route(out, from, Owner{Kind::notices, 0});
  }

  void on_subscribed(std::size_t node, const std::string& channel, Clock::time_point now,
                     Actions& out) override {
    auto from = out.size();
    ctx_.notices().on_subscribed(node, channel, now, out);
    route(out, from, Owner{Kind::notices, 0});
  }

 private:
  enum class Kind { job, extend, release, watchdog, notices };
  struct Owner {
    Kind kind;
    std::uint64_t id;
  };

  // Remembers who issued each request and timer among the actions from `from` on: the acquire
  // job a Send or timer names, else the machine that was called.
  void route(Actions& out, std::size_t from, Owner caller) {
    for (std::size_t i = from; i < out.size(); ++i) {
      if (auto* s = std::get_if<proto::Send>(&out[i])) {
        requests_[s->id] = s->job != 0 ? Owner{Kind::job, s->job} : caller;
      } else if (auto* t = std::get_if<proto::ArmTimer>(&out[i])) {
        timers_[t->id] = t->job != 0 ? Owner{Kind::job, t->job} : caller;
      }
    }
  }

  Context ctx_;
  WatchdogMachine watchdog_;
  std::uint64_t last_op_ = 1ull << 40;  // apart from the jobs' ids
  std::map<std::uint64_t, std::unique_ptr<AcquireMachine>> jobs_;
  std::map<std::uint64_t, std::unique_ptr<ExtendMachine>> extends_;
  std::map<std::uint64_t, std::unique_ptr<ReleaseMachine>> releases_;
  std::map<RequestId, Owner> requests_;
  std::map<TimerId, Owner> timers_;
};

}  // namespace

std::unique_ptr<Brain> make_proto_brain(const Config& config, std::size_t nodes,
                                        std::string turn_channel,
                                        std::function<std::string()> token,
                                        std::function<std::uint64_t()> random) {
  return std::make_unique<ProtoBrain>(config, nodes, std::move(turn_channel), std::move(token),
                                      std::move(random));
}

}  // namespace redlock::sim
