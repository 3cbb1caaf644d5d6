// What the files of Node share (node.cpp, node_connect.cpp, node_handshake.cpp,
// node_pipeline.cpp, node_subscribe.cpp), and nothing else includes: the state of one
// connection and the helpers that name times and tell the observer. Loop thread only.
#pragma once

#include <uv.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <system_error>

#include "../core/observe.hpp"
#include "node.hpp"
#include "protocol.hpp"
#include "transport.hpp"

namespace redlock::detail {
namespace node_impl {

inline std::string ms_text(Milliseconds d) { return std::to_string(d.count()) + "ms"; }

inline std::chrono::microseconds since(std::uint64_t sent_ns) {
  return std::chrono::microseconds((uv_hrtime() - sent_ns) / 1000);
}

// Tells Config::observer, if any, that a node's connection changed state.
inline void notify_node(const Config& config, std::size_t index, const std::string& label,
                        bool subscriber, NodeState state, std::error_code error = {},
                        const std::string& detail = {}, Milliseconds backoff = Milliseconds(0)) {
  observe(config, [&](Observer& o) {
    NodeEvent e;
    e.state = state;
    e.node = index;
    e.address = &label;
    e.subscriber = subscriber;
    e.error = error;
    e.detail = &detail;
    e.backoff = backoff;
    o.on_node(e);
  });
}

}  // namespace node_impl

// One connection's session state. Its transport reports here, and the node decides.
class Node::Conn final : public TransportEvents {
 public:
  explicit Conn(Node& owner) : node(owner) {}

  Node& node;
  std::string ip;                  // the numeric address it connects to
  Transport* transport = nullptr;  // set once opened; closed (never null) when `closed`
  ReplyReader reader;
  Fifo<Pending> pending;           // issued, in order, awaiting their replies
  std::size_t handshake_left = 0;  // AUTH / SELECT replies still to come
  bool open = false;               // bytes flow
  bool in_session = false;         // open, and AUTH / SELECT succeeded
  // The server answered a command of the session with something other than an error: the
  // connection worked, so losing it is replaced at once, and the connect back-off starts again
  // from the bottom. A server that accepts and closes, answers only errors (`maxclients`) or
  // garbage, or fails the handshake never gets here.
  bool answered = false;
  bool closed = false;  // by us: nothing more is read from it (only the current one is open)

 private:
  void on_transport_open() override { node.on_open(*this); }
  void on_transport_data(const char* data, std::size_t len) override {
    node.on_data(*this, data, len);
  }
  void on_transport_error(std::error_code error, std::string_view detail) override {
    node.on_conn_error(*this, error, detail);
  }
  void on_transport_closed() override { node.on_conn_closed(*this); }
};

}  // namespace redlock::detail
