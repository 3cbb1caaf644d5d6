#include "status.hpp"

#include <hiredis/hiredis.h>

#include <utility>

#include "../core/keys.hpp"
#include "../core/observe.hpp"
#include "../core/replies.hpp"
#include "../net/scripts.hpp"

namespace redlock::detail {

std::string info_field(const std::string& info, const std::string& field) {
  auto pos = info.find(field + ":");
  if (pos == std::string::npos) return {};
  pos += field.size() + 1;
  auto end = info.find_first_of("\r\n", pos);
  return info.substr(pos, end == std::string::npos ? end : end - pos);
}

StatusQuery::StatusQuery(const std::vector<std::unique_ptr<Node>>& nodes, const std::string& prefix,
                         Client::StatusCallback done)
    : nodes_(nodes), done_(std::move(done)), rows_(nodes.size()), answered_(nodes.size(), 0) {
  for (std::size_t i = 0; i < nodes.size(); ++i) rows_[i].address = nodes[i]->address();
  probe_.script = &script_probe;
  probe_.keys = {aux_key(prefix, kProbe)};
}

void StatusQuery::start(const std::vector<std::unique_ptr<Node>>& nodes, uv_loop_t* loop,
                        const std::string& prefix, Client::StatusCallback done) {
  auto* q = new StatusQuery(nodes, prefix, std::move(done));
  static const Command info{nullptr, {}, {"INFO", "server"}};
  const auto at = Node::SendTime::now(loop);
  for (auto& node : nodes) {
    if (auto ec = node->send(info, q, &at)) {
      auto& row = q->rows_[node->index()];
      row.error = ec;
      row.detail = ec == node->last_error() ? node->last_error_detail() : ec.message();
      continue;
    }
    ++q->outstanding_;
    // Behind INFO on the same connection: its reply comes second.
    if (!node->send(q->probe_, q, &at)) ++q->outstanding_;
  }
  q->sending_ = false;
  q->maybe_finish();
}

void StatusQuery::on_node_reply(std::size_t node, const NodeReply& reply) {
  --outstanding_;
  auto& row = rows_[node];
  if (answered_[node]++ == 1) {
    // The write probe: a node that answered INFO and refuses a write cannot vote.
    if (reply.error && row.up) {
      row.up = false;
      row.error = reply.error;
      row.detail = "a write is refused, so no vote can be granted: " + std::string(reply.detail);
    }
    maybe_finish();
    return;
  }
  row.round_trip = reply.latency;
  if (reply.error) {
    row.error = reply.error;
    row.detail.assign(reply.detail);
  } else {
    NodeVote v;
    text_vote(reply.reply, v);
    if (v.vote == Vote::yes) {
      row.up = true;
      row.answered = true;
      row.server_version =
          info_field(std::string(reply.reply->str, reply.reply->len), "redis_version");
    } else {
      row.error = make_error_code(Errc::protocol_error);
      row.detail = "unexpected reply";
    }
  }
  maybe_finish();
}

void StatusQuery::maybe_finish() {
  if (sending_ || outstanding_ != 0) return;
  for (std::size_t i = 0; i < rows_.size(); ++i) rows_[i].warnings = nodes_[i]->warnings();
  auto done = std::move(done_);
  auto rows = std::move(rows_);
  delete this;
  deliver_guarded("status", [&] { done(std::move(rows)); });
}

}  // namespace redlock::detail
