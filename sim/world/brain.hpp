// A simulated client's protocol brain as the world sees it: commands of the user and events of
// the world in, lib/proto's actions out. The one implementation (proto_brain.cpp) runs lib/proto's
// machines. Pure: no clock, no randomness of its own, no I/O. One thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
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
  unsigned permits = 0;  // a permit of a semaphore of that many (AcquireRequest::permits)
  bool shared = false;   // a reader of a read-write lock (AcquireRequest::shared)
};

// What a simulated client runs: the protocol's decisions, fed events, answering with actions.
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
  // A request id of this client's Context, for a request the user sends itself (leader.lua's,
  // as lib/client/election.cpp broadcasts them): unique among the machines' ids. Its replies
  // are the user's, never given to on_reply.
  virtual RequestId new_request() = 0;

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

}  // namespace redlock::sim
