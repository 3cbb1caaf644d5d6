// Client::status(): INFO server to every node at once, then a write probe (probe.lua: a write
// that changes nothing, refused as a vote's would be: OOM, READONLY, NOPERM...), one row per
// node once all answered. A node that answers INFO and refuses the probe is not up: it cannot
// vote. Not a protocol decision, so no proto machine: nothing but I/O and the report. Loop
// thread only.
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
  // `prefix`: the key prefix, whose own auxiliary key the probe names.
  static void start(const std::vector<std::unique_ptr<Node>>& nodes, uv_loop_t* loop,
                    const std::string& prefix, Client::StatusCallback done);

 private:
  StatusQuery(const std::vector<std::unique_ptr<Node>>& nodes, const std::string& prefix,
              Client::StatusCallback done);
  void on_node_reply(std::size_t node, const NodeReply& reply) override;
  void maybe_finish();

  const std::vector<std::unique_ptr<Node>>& nodes_;
  Client::StatusCallback done_;
  std::vector<NodeStatus> rows_;
  std::vector<int> answered_;  // per node: 0 before INFO's reply, 1 before the probe's
  Command probe_;              // kept until every reply came
  bool sending_ = true;
  std::size_t outstanding_ = 0;
};

// The value of `field` in an INFO reply's text ("field:value" lines), or empty.
std::string info_field(const std::string& info, const std::string& field);

}  // namespace redlock::detail
