// One proto::Send on its way: the command to its nodes, each node's reply decoded by the
// request's decoder (proto/scripts.hpp) and brought, with the route it came with, to the sink
// that sent it. Lives until every node answered (or failed). Loop thread only.
#pragma once

#include <uv.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "../core/recycled.hpp"
#include "../net/node.hpp"
#include "../proto/actions.hpp"

namespace redlock::detail {

// The script a request runs on a node (null: a plain command).
const Script* script_of(proto::ScriptId id);

// Whose request it is: an acquire job, an extend, a release (by id), the watchdog, or a
// broadcast (Coordinator::broadcast, by id).
struct Route {
  enum class To : std::uint8_t { acquire, extend, release, watchdog, broadcast };
  To to = To::acquire;
  std::uint64_t id = 0;
};

// Where the replies go (the coordinator).
class VoteSink {
 public:
  // Node `node`'s votes for request `id` (one per item of the request).
  virtual void on_votes(Route route, proto::RequestId id, std::size_t node,
                        std::vector<NodeVote> votes) = 0;
  // A request's last node answered: nothing of it is left on the way.
  virtual void on_request_ended() = 0;

 protected:
  ~VoteSink() = default;
};

// Made and freed once per request (its block recycled: Recycled).
class InFlight final : public ReplySink, public Recycled<InFlight> {
 public:
  // Sends to every node of `send` (all of them before reporting any failure: one request's nodes
  // leave together), then reports the nodes that refused to send. The sink hears
  // on_request_ended once, possibly before start() returns.
  static void start(std::vector<std::unique_ptr<Node>>& nodes, uv_loop_t* loop,
                    const proto::Send& send, Route route, VoteSink& sink);

 private:
  InFlight(const proto::Send& send, Route route, VoteSink& sink);
  ~InFlight();
  void on_node_reply(std::size_t node, const NodeReply& reply) override;

  VoteSink& sink_;
  Route route_;
  proto::RequestId id_;
  std::shared_ptr<const proto::Request> request_;
  bool wanted_;
  Command command_;
  std::size_t outstanding_ = 0;
};

}  // namespace redlock::detail
