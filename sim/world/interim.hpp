// The simulated clients' protocol brain until the sans-IO core (lib/proto) runs its machines: the
// same requests, votes and decisions as lib/net/coordinator.cpp, waiters.cpp and watchdog.cpp in
// a reduced form (no quick acquire, no split-vote winner, no fill-in rounds, clean-ups sent to
// every node), speaking lib/proto's vocabulary of events and actions so that the world drives
// it exactly as it will drive the real machines. Pure: no clock, no randomness of its own, no
// I/O. One thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "../../lib/proto/actions.hpp"
#include "redlock/config.hpp"
#include "redlock/lock.hpp"

namespace redlock::sim {

namespace proto = redlock::detail::proto;

using proto::Actions;
using proto::Clock;
using proto::RequestId;
using proto::TimerId;

struct AcquireSpec {
  std::vector<std::string> resources;
  Milliseconds ttl{1000};
  std::optional<Milliseconds> wait;  // nullopt: 1 + retry_count attempts; set: wait that long
  bool fencing = false;
};

// What a simulated client runs: the protocol's decisions, fed events, answering with actions.
// Two implementations: ProtoBrain (lib/proto's machines, the library's own rules) and
// InterimBrain (below, the stand-in the simulator began with).
class Brain {
 public:
  virtual ~Brain() = default;
  // Commands of the user. Each returns the id its Deliver*/Renewed/Lost action carries.
  virtual std::uint64_t acquire(const AcquireSpec& spec, Clock::time_point now, std::int64_t place,
                                Actions& out) = 0;
  virtual void cancel(std::uint64_t job, Clock::time_point now, Actions& out) = 0;
  virtual std::uint64_t extend(const Lock& lock, Milliseconds ttl, Clock::time_point now,
                               Actions& out) = 0;
  virtual std::uint64_t release(const Lock& lock, Clock::time_point now, Actions& out) = 0;
  // Renews `lock` every ttl/3 until unwatch(); Lost at the latest at its believed deadline.
  virtual std::uint64_t watch(const Lock& lock, Clock::time_point now, Actions& out) = 0;
  virtual void unwatch(std::uint64_t lease, Clock::time_point now, Actions& out) = 0;

  // Events of the world.
  virtual void on_reply(RequestId id, std::size_t node, std::vector<NodeVote> votes,
                        Clock::time_point now, Actions& out) = 0;
  virtual void on_timer(TimerId id, Clock::time_point now, Actions& out) = 0;
  virtual void on_message(std::size_t node, const std::string& channel, const std::string& payload,
                          Clock::time_point now, Actions& out) = 0;
  virtual void on_subscribed(std::size_t node, const std::string& channel, Clock::time_point now,
                             Actions& out) = 0;
};

// The brain of lib/proto: AcquireMachine per acquire, ExtendMachine, ReleaseMachine, one
// WatchdogMachine and the Context's notice dispatch, exactly as lib/net would drive them.
std::unique_ptr<Brain> make_proto_brain(const Config& config, std::size_t nodes,
                                        std::string turn_channel,
                                        std::function<std::string()> token,
                                        std::function<std::uint64_t()> random);

class InterimBrain final : public Brain {
 public:
  // `token`: a fresh token per call; `random`: a uniform draw (both from the world's generator).
  InterimBrain(const Config& config, std::size_t nodes, std::string turn_channel,
               std::function<std::string()> token, std::function<std::uint64_t()> random);
  ~InterimBrain() override;

  std::uint64_t acquire(const AcquireSpec& spec, Clock::time_point now, std::int64_t place,
                        Actions& out) override;
  void cancel(std::uint64_t job, Clock::time_point now, Actions& out) override;
  std::uint64_t extend(const Lock& lock, Milliseconds ttl, Clock::time_point now,
                       Actions& out) override;
  std::uint64_t release(const Lock& lock, Clock::time_point now, Actions& out) override;
  std::uint64_t watch(const Lock& lock, Clock::time_point now, Actions& out) override;
  void unwatch(std::uint64_t lease, Clock::time_point now, Actions& out) override;

  void on_reply(RequestId id, std::size_t node, std::vector<NodeVote> votes, Clock::time_point now,
                Actions& out) override;
  void on_timer(TimerId id, Clock::time_point now, Actions& out) override;
  void on_message(std::size_t node, const std::string& channel, const std::string& payload,
                  Clock::time_point now, Actions& out) override;
  void on_subscribed(std::size_t node, const std::string& channel, Clock::time_point now,
                     Actions& out) override;

  struct Job;
  struct Lease;
  struct Op;

 private:
  friend struct Job;
  friend struct Lease;
  friend struct Op;
  RequestId send(proto::Request request, std::vector<std::size_t> nodes, bool reply_wanted,
                 Actions& out);
  std::vector<std::size_t> all_nodes() const;
  void listen(const std::string& channel, Job* job, Actions& out);
  void unlisten(const std::string& channel, Job* job, Actions& out);
  void leave_line(const std::string& key, const std::string& ticket, Actions& out);
  void clean_up(Job& job, Clock::time_point now, Actions& out);
  void finish(Job& job, AcquireResult r, Actions& out);
  void attempt(Job& job, Clock::time_point now, Actions& out);
  void attempt_failed(Job& job, AcquireResult r, Clock::time_point now, Actions& out);
  void job_reply(Job& job, std::size_t node, NodeVote vote, Clock::time_point now, Actions& out);
  void wake(Job& job, Clock::time_point now, Actions& out);
  void renew(Lease& lease, Clock::time_point now, Actions& out);
  void unwatch_(std::uint64_t lease);

  const Config& config_;
  std::size_t nodes_;
  std::string turn_channel_;
  std::function<std::string()> token_;
  std::function<std::uint64_t()> random_;
  std::uint64_t last_id_ = 0;
  bool turns_subscribed_ = false;
  std::map<std::uint64_t, std::unique_ptr<Job>> jobs_;
  std::map<std::uint64_t, std::unique_ptr<Lease>> leases_;
  std::map<std::uint64_t, std::unique_ptr<Op>> ops_;
  std::map<RequestId, std::uint64_t> request_owner_;  // request -> job, lease or op id
  std::map<TimerId, std::uint64_t> timer_owner_;
  std::map<std::string, std::vector<Job*>> listeners_;  // "<key>:released" -> waiters
};

}  // namespace redlock::sim
