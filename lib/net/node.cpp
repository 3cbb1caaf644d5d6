// Node: its construction, start and shutdown, and what the other parts share (the last error,
// the request deadline). The session itself is in node_connect.cpp (connecting and losing
// connections), node_handshake.cpp (AUTH, SELECT, INFO and the restart safeguards),
// node_pipeline.cpp (requests in order, their timeouts, NOSCRIPT, orphaned releases) and
// node_subscribe.cpp (pub/sub). Loop thread only.
#include "node.hpp"

#include <arpa/inet.h>

#include <utility>

#include "../core/safeguards.hpp"
#include "node_conn.hpp"
#include "redlock/errors.hpp"

namespace redlock::detail {

using node_impl::ms_text;
using node_impl::notify_node;
using node_impl::since;

Node::Node(uv_loop_t* loop, std::size_t index, NodeAddress address, const Config& config,
           std::uint64_t seed, MessageSink* subscriber, std::vector<const Script*> preload)
    : loop_(loop),
      index_(index),
      address_(std::move(address)),
      label_(address_.to_string()),
      config_(config),
      rng_(seed),
      subscriber_(subscriber),
      preload_(std::move(preload)) {
  uv_timer_init(loop_, &request_timer_);
  uv_timer_init(loop_, &connect_timer_);
  uv_timer_init(loop_, &reconnect_timer_);
  request_timer_.data = connect_timer_.data = reconnect_timer_.data = this;
  uv_idle_init(loop_, &poll_now_);
  uv_check_init(loop_, &after_poll_);
  after_poll_.data = this;
  auth_.args = auth_argv(address_);
  select_.args = select_argv(address_);
  // A subscriber only hears release notices: the safeguards are for the nodes that vote.
  if (subscriber_ == nullptr &&
      (config_.check_role || config_.check_duplicates || config_.check_persistence ||
       config_.restart_guard > Milliseconds::zero()))
    info_.args = {"INFO"};
  unsigned char buf[sizeof(in6_addr)];
  numeric_host_ = inet_pton(AF_INET, address_.host.c_str(), buf) == 1 ||
                  inet_pton(AF_INET6, address_.host.c_str(), buf) == 1;
  resolve_.data = this;
  last_error_ = make_error_code(Errc::not_connected);
  last_error_detail_ = "not connected yet";
}

// shutdown() ran and the loop has finished: every transport is gone.
Node::~Node() = default;

void Node::start() {
  if (state_ == State::idle) connect();
}

void Node::note_error(std::error_code ec, std::string detail) {
  last_error_ = ec;
  last_error_detail_ = std::move(detail);
}

std::uint64_t Node::request_deadline() const {
  return SendTime::now(loop_).loop_ms + static_cast<std::uint64_t>(config_.request_timeout.count());
}

// ---------------------------------------------------------------------------------------------
// Shutdown

SessionView Node::session_view() const {
  std::lock_guard<std::mutex> lock(view_mutex_);
  return view_;
}

void Node::publish_session(bool open) {
  SessionView view;
  if (open && subscriber_ == nullptr && current_ != nullptr) {
    view.in_session = true;
    view.ip = current_->ip;
    view.run_id = run_id_;
    const auto now = uv_now(loop_);
    view.eligible_from = std::chrono::steady_clock::now() +
                         Milliseconds(eligible_at_ > now ? eligible_at_ - now : 0);
    view.guarded = eligible_at_ > now;
  }
  std::lock_guard<std::mutex> lock(view_mutex_);
  view_ = std::move(view);
  view_epoch_.fetch_add(1, std::memory_order_release);
}

void Node::shutdown() {
  if (state_ == State::shut_down) return;
  state_ = State::shut_down;
  publish_session(false);
  if (server_ids_ != nullptr) server_ids_->release(index_);
  if (resolving_) uv_cancel(reinterpret_cast<uv_req_t*>(&resolve_));
  uv_timer_stop(&request_timer_);
  uv_timer_stop(&connect_timer_);
  uv_timer_stop(&reconnect_timer_);
  uv_close(reinterpret_cast<uv_handle_t*>(&request_timer_), nullptr);
  uv_close(reinterpret_cast<uv_handle_t*>(&connect_timer_), nullptr);
  uv_close(reinterpret_cast<uv_handle_t*>(&reconnect_timer_), nullptr);
  uv_close(reinterpret_cast<uv_handle_t*>(&poll_now_), nullptr);
  uv_close(reinterpret_cast<uv_handle_t*>(&after_poll_), nullptr);
  const std::string why = "client is shutting down";
  const auto code = make_error_code(Errc::shutting_down);
  note_error(code, why);
  if (current_ != nullptr) {
    Conn& old = *current_;
    old.closed = true;
    old.transport->close();
    closing_.push_back(std::move(current_));
    Fifo<Pending> in_flight;
    std::swap(in_flight, old.pending);
    for (auto& p : in_flight) {
      if (p.kind != Kind::user) continue;
      NodeReply out;
      out.error = code;
      out.detail = why;
      out.latency = since(p.sent_ns);
      p.sink->on_node_reply(index_, out);
    }
  }
  fail_held(code, why);
}
}  // namespace redlock::detail
