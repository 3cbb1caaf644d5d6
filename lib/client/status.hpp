// Client::status(): INFO server to every node at once, one row per node once all answered.
// Not a protocol decision, so no proto machine: nothing but I/O and the report. Loop thread only.
#pragma once

#include <uv.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "../net/node.hpp"
#include "redlock/client.hpp"

namespace redlock::detail {

class StatusQuery final : public ReplySink {
 public:
  // `done` runs once, when every node answered (or failed), possibly before start() returns.
  static void start(const std::vector<std::unique_ptr<Node>>& nodes, uv_loop_t* loop,
                    Client::StatusCallback done);

 private:
  StatusQuery(const std::vector<std::unique_ptr<Node>>& nodes, Client::StatusCallback done);
  void on_node_reply(std::size_t node, const NodeReply& reply) override;
  void maybe_finish();

  const std::vector<std::unique_ptr<Node>>& nodes_;
  Client::StatusCallback done_;
  std::vector<NodeStatus> rows_;
  bool sending_ = true;
  std::size_t outstanding_ = 0;
};

// The value of `field` in an INFO reply's text ("field:value" lines), or empty.
std::string info_field(const std::string& info, const std::string& field);

}  // namespace redlock::detail
