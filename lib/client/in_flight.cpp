#include "in_flight.hpp"

#include <string>
#include <utility>

#include "../net/scripts.hpp"
#include "../proto/scripts.hpp"

namespace redlock::detail {

const Script* script_of(proto::ScriptId id) {
  switch (id) {
    case proto::ScriptId::acquire:
      return &script_acquire;
    case proto::ScriptId::renew:
      return &script_renew;
    case proto::ScriptId::release:
      return &script_release;
    case proto::ScriptId::fence:
      return &script_fence;
    case proto::ScriptId::leader:
      return &script_leader;
    case proto::ScriptId::none:
      break;
  }
  return nullptr;
}

InFlight::InFlight(const proto::Send& send, Route route, VoteSink& sink)
    : sink_(sink), route_(route), id_(send.id), request_(send.request), wanted_(send.reply_wanted) {
  command_.script = script_of(request_->script);
  command_.keys_of = &request_->keys;  // the request lives as long as this: nothing is copied
  command_.args_of = &request_->args;
}

InFlight::~InFlight() { sink_.on_request_ended(); }

void InFlight::start(std::vector<std::unique_ptr<Node>>& nodes, uv_loop_t* loop,
                     const proto::Send& send, Route route, VoteSink& sink) {
  auto* s = new InFlight(send, route, sink);
  // One reading of the loop's clocks for every node's request: they leave together. An acquire's
  // attempt brings the reading its machine was given, taken just before (no second reading).
  const auto at = send.issued_at != proto::Clock::time_point{}
                      ? Node::SendTime::now(loop, send.issued_at)
                      : Node::SendTime::now(loop);
  std::vector<std::pair<std::size_t, std::vector<NodeVote>>> refused;
  for (auto i : send.nodes) {
    auto& node = *nodes[i];
    if (auto ec = node.send(s->command_, s, &at)) {
      auto detail = ec == node.last_error() ? node.last_error_detail() : ec.message();
      refused.emplace_back(i, proto::failed_votes(send.request->items, ec, detail));
    } else {
      ++s->outstanding_;
    }
  }
  auto id = s->id_;
  bool wanted = s->wanted_;
  if (s->outstanding_ == 0) delete s;
  if (!wanted) return;
  for (auto& [node, votes] : refused) sink.on_votes(route, id, node, std::move(votes));
}

void InFlight::on_node_reply(std::size_t node, const NodeReply& reply) {
  --outstanding_;
  if (wanted_) {
    auto votes = reply.error
                     ? proto::failed_votes(request_->items, reply.error, std::string(reply.detail))
                     : proto::decode_reply(*request_, reply.reply);
    for (auto& v : votes) v.latency = reply.latency;
    sink_.on_votes(route_, id_, node, std::move(votes));
  }
  if (outstanding_ == 0) delete this;
}

}  // namespace redlock::detail
