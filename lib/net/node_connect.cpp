// Node: opening connections (resolving a name, trying its addresses, the connect timeout) and
// losing them (closing the current one, failing what it had in flight, reconnecting at once or
// after back-off). Loop thread only.
#include "node.hpp"

#include <algorithm>
#include <utility>

#include "../core/quorum.hpp"
#include "../core/safeguards.hpp"
#include "node_conn.hpp"
#include "redlock/errors.hpp"
#include "tls.hpp"

namespace redlock::detail {

using node_impl::ms_text;
using node_impl::notify_node;
using node_impl::since;

// ---------------------------------------------------------------------------------------------
// Connecting

void Node::connect() {
  state_ = State::connecting;
  if (numeric_host_) {
    connect_to(address_.host);
    return;
  }
  if (next_address_ < resolved_.size()) {
    connect_to(resolved_[next_address_]);
    return;
  }
  // Resolved in libuv's thread pool: getaddrinfo would block the loop.
  uv_timer_start(&connect_timer_, &Node::on_connect_timer,
                 static_cast<std::uint64_t>(config_.connect_timeout.count()), 0);
  if (resolving_) return;  // an earlier lookup is still running: its answer continues from here
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  if (uv_getaddrinfo(loop_, &resolve_, &Node::on_resolved, address_.host.c_str(), nullptr,
                     &hints) == 0)
    resolving_ = true;
  else
    connection_gone(make_error_code(Errc::connect_failed), "cannot resolve " + address_.host);
}

void Node::on_resolved(uv_getaddrinfo_t* req, int status, addrinfo* res) {
  auto* self = static_cast<Node*>(req->data);
  self->resolving_ = false;
  std::vector<std::string> addresses;
  for (addrinfo* a = status == 0 ? res : nullptr; a != nullptr; a = a->ai_next) {
    char text[INET6_ADDRSTRLEN] = {0};
    if (uv_ip_name(a->ai_addr, text, sizeof text) != 0) continue;
    if (std::find(addresses.begin(), addresses.end(), text) == addresses.end())
      addresses.emplace_back(text);
  }
  if (res != nullptr) uv_freeaddrinfo(res);
  if (self->state_ == State::shut_down || status == UV_ECANCELED) return;
  // Gave up waiting for it (back-off under way), or already connected some other way.
  if (self->state_ != State::connecting || self->current_ != nullptr) return;
  if (addresses.empty()) {
    self->connection_gone(make_error_code(Errc::connect_failed),
                          "cannot resolve " + self->address_.host + ": " +
                              (status != 0 ? uv_strerror(status) : "no address"));
    return;
  }
  self->resolved_ = std::move(addresses);
  self->next_address_ = 0;
  self->connect_to(self->resolved_[0]);
}

void Node::connect_to(const std::string& ip) {
  sockaddr_storage addr{};
  if (uv_ip4_addr(ip.c_str(), address_.port, reinterpret_cast<sockaddr_in*>(&addr)) != 0 &&
      uv_ip6_addr(ip.c_str(), address_.port, reinterpret_cast<sockaddr_in6*>(&addr)) != 0) {
    connection_gone(make_error_code(Errc::connect_failed), "not an address: " + ip);
    return;
  }
  auto conn = std::make_unique<Conn>(*this);
  conn->ip = ip;
  run_id_.clear();  // this connection's INFO tells it
  std::string error;
  // rediss://: TLS (tls.hpp), whose handshake ends before the transport opens; else plain TCP.
  std::error_code pump_error;
  auto pump = make_pump(address_, config_.tls, pump_error, error);
  if (pump == nullptr) {
    connection_gone(pump_error, std::move(error));
    return;
  }
  conn->transport = Transport::open(loop_, reinterpret_cast<const sockaddr*>(&addr),
                                    std::move(pump), conn.get(), error);
  if (conn->transport == nullptr) {
    connection_gone(make_error_code(Errc::connect_failed), std::move(error));
    return;
  }
  current_ = std::move(conn);
  state_ = State::connecting;
  uv_timer_start(&connect_timer_, &Node::on_connect_timer,
                 static_cast<std::uint64_t>(config_.connect_timeout.count()), 0);
  // AUTH, SELECT and INFO go first, as soon as the connection is open. Callers' commands wait
  // until all succeeded and INFO passed the safeguards (begin_session).
  for (const Command* hs : {&auth_, &select_, &info_}) {
    if (hs->args.empty()) continue;
    Pending p{hs,
              nullptr,
              uv_now(loop_) + static_cast<std::uint64_t>(config_.connect_timeout.count()),
              uv_hrtime(),
              Kind::handshake,
              false,
              false};
    if (!issue(*current_, p)) {
      close_current(make_error_code(Errc::connect_failed), "out of memory");
      return;
    }
    ++current_->handshake_left;
  }
}

void Node::on_open(Conn& conn) {
  if (conn.closed) return;
  conn.open = true;
  uv_timer_stop(&connect_timer_);  // from here the handshake's own deadlines bound it
  if (conn.handshake_left == 0) begin_session(conn);
}

// ---------------------------------------------------------------------------------------------
// Losing connections

void Node::on_conn_error(Conn& conn, std::error_code error, std::string_view detail) {
  if (!conn.closed) close_current(error, std::string(detail));
}

void Node::on_conn_closed(Conn& conn) {
  auto it = std::find_if(closing_.begin(), closing_.end(),
                         [&](const std::unique_ptr<Conn>& c) { return c.get() == &conn; });
  if (it != closing_.end()) closing_.erase(it);
}

void Node::close_current(std::error_code reason, std::string detail) {
  if (server_ids_ != nullptr) server_ids_->release(index_);
  publish_session(false);  // the lane stops using it before anything else is said
  Conn& old = *current_;
  old.closed = true;
  old.transport->close();  // freed when its transport is gone (on_conn_closed)
  closing_.push_back(std::move(current_));
  if (old.in_session && old.answered) {
    // It worked: open the replacement first, so that requests sent while the old connection's
    // requests fail (a release after a timed-out acquire) already wait for the new one.
    note_error(reason, detail);
    notify_node(config_, index_, label_, subscriber_ != nullptr, NodeState::reconnecting, reason,
                detail);
    connect();
  } else {
    connection_gone(reason, detail);
  }
  // Everything it had in flight fails; a late reply can never be matched to a later request.
  Fifo<Pending> in_flight;
  std::swap(in_flight, old.pending);
  for (auto& o : orphans_) o.sent = false;  // sent again on the next session
  for (auto& p : in_flight) {
    if (p.kind != Kind::user) continue;
    keep_orphan(*p.command);  // it may or may not have run: a release runs again harmlessly
    NodeReply out;
    std::string late;
    if (p.timed_out) {
      out.error = make_error_code(Errc::request_timeout);
      late = "no reply within " + ms_text(config_.request_timeout);
      out.detail = late;
    } else {
      out.error = reason;
      out.detail = detail;
    }
    out.latency = since(p.sent_ns);
    p.sink->on_node_reply(index_, out);
  }
}

void Node::connection_gone(std::error_code reason, std::string detail) {
  note_error(reason, std::move(detail));
  uv_timer_stop(&connect_timer_);
  if (state_ == State::shut_down) return;
  // A name with more addresses: try the next one at once; commands keep waiting. Otherwise
  // back off exponentially (with jitter, capped; reset by a connection that worked), and fail
  // what waits: nobody will connect before the back-off ends.
  Milliseconds delay{0};
  if (++next_address_ < resolved_.size()) {
    state_ = State::connecting;
  } else {
    resolved_.clear();  // every address was tried: resolve the name again next time
    next_address_ = 0;
    delay = reconnect_backoff(failures_, config_.reconnect_min, config_.reconnect_max, rng_());
    ++failures_;
    state_ = State::backoff;
  }
  // Always through the loop: this may run deep inside a callback.
  uv_timer_start(&reconnect_timer_, &Node::on_reconnect_timer,
                 static_cast<std::uint64_t>(delay.count()), 0);
  if (state_ == State::backoff) {
    notify_node(config_, index_, label_, subscriber_ != nullptr, NodeState::backoff, last_error_,
                last_error_detail_, delay);
    fail_held(last_error_, last_error_detail_);
  }
}

void Node::fail_held(std::error_code error, const std::string& detail) {
  if (held_.empty()) return;
  Fifo<Pending> held;
  std::swap(held, held_);
  std::string text = detail;  // `detail` may change under the callbacks
  for (auto& p : held) {
    if (state_ != State::shut_down) keep_orphan(*p.command);
    NodeReply out;
    out.error = error;
    out.detail = text;
    out.latency = since(p.sent_ns);
    p.sink->on_node_reply(index_, out);
  }
}

void Node::on_reconnect_timer(uv_timer_t* timer) {
  auto* self = static_cast<Node*>(timer->data);
  if ((self->state_ == State::backoff || self->state_ == State::connecting) &&
      self->current_ == nullptr)
    self->connect();
}

void Node::on_connect_timer(uv_timer_t* timer) {
  auto* self = static_cast<Node*>(timer->data);
  if (self->resolving_ && self->current_ == nullptr) {
    uv_cancel(reinterpret_cast<uv_req_t*>(&self->resolve_));
    self->connection_gone(make_error_code(Errc::connect_timeout),
                          "resolving " + self->address_.host + " took longer than " +
                              ms_text(self->config_.connect_timeout));
    return;
  }
  if (self->current_ == nullptr || self->current_->open) return;
  // Connected, but the TLS handshake did not end: most often a rediss:// address on a port that
  // speaks plain text, which answers nothing to a TLS hello. Named as TLS, not as a timeout.
  if (self->address_.tls && self->current_->transport->connected()) {
    self->close_current(make_error_code(Errc::tls_handshake_failed),
                        "TLS handshake not finished within " +
                            ms_text(self->config_.connect_timeout) + " (is port " +
                            std::to_string(self->address_.port) + " a TLS port?)");
    return;
  }
  self->close_current(make_error_code(Errc::connect_timeout),
                      "no connection within " + ms_text(self->config_.connect_timeout));
}

// Why a command that waited for a session was not sent: what the connection was doing.
std::string Node::not_ready_reason() const {
  std::string why = "no connection to the node was ready";
  if (current_ != nullptr && !current_->closed) {
    if (!current_->open && address_.tls && current_->transport->connected())
      why += ": its TLS handshake had not finished (is port " + std::to_string(address_.port) +
             " a TLS port?)";
    else if (!current_->open)
      why += address_.tls ? ": TCP connect (then TLS) still under way" : ": still connecting";
    else
      why += ": AUTH, SELECT or INFO not answered yet";
  }
  if (last_error_ && last_error_ != Errc::not_connected)
    why += "; last attempt: " + last_error_.message() + ": " + last_error_detail_;
  return why;
}
}  // namespace redlock::detail
