#include "node.hpp"

#include <hiredis/adapters/libuv.h>
#include <hiredis/async.h>
#include <hiredis/hiredis.h>

#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <cassert>
#include <charconv>
#include <cstring>

#include "../core/quorum.hpp"
#include "redlock/errors.hpp"

namespace redlock::detail {
namespace {

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && s.compare(0, prefix.size(), prefix) == 0;
}

// Small argv with inline room for the common case; spills to the heap for many keys.
class Argv {
 public:
  void push(const char* p, std::size_t n) {
    if (size_ < kInline) {
      ptrs_[size_] = p;
      lens_[size_] = n;
    } else {
      if (more_ptrs_.empty()) {
        more_ptrs_.assign(ptrs_.begin(), ptrs_.end());
        more_lens_.assign(lens_.begin(), lens_.end());
      }
      more_ptrs_.push_back(p);
      more_lens_.push_back(n);
    }
    ++size_;
  }
  void push(std::string_view s) { push(s.data(), s.size()); }
  int argc() const { return static_cast<int>(size_); }
  const char** argv() { return more_ptrs_.empty() ? ptrs_.data() : more_ptrs_.data(); }
  const std::size_t* lens() { return more_lens_.empty() ? lens_.data() : more_lens_.data(); }

 private:
  static constexpr std::size_t kInline = 16;
  std::array<const char*, kInline> ptrs_{};
  std::array<std::size_t, kInline> lens_{};
  std::vector<const char*> more_ptrs_;
  std::vector<std::size_t> more_lens_;
  std::size_t size_ = 0;
};

std::string ms_text(Milliseconds d) { return std::to_string(d.count()) + "ms"; }

// Debian's hiredis 0.14 libuv adapter returns early when uv_poll reports an error. libuv reports
// a socket error (connection refused, reset) exactly that way, and stops the handle, so hiredis
// would never learn of it and every request would end only at our timeout. We keep the adapter's
// attach and cleanup, and install read/write hooks whose poll callback hands errors to hiredis:
// reading or writing the socket then surfaces the error as a failed connect or a disconnect.
void on_poll(uv_poll_t* handle, int status, int events) {
  auto* p = static_cast<redisLibuvEvents*>(handle->data);
  if (status < 0) events = UV_READABLE | UV_WRITABLE;
  if (p->context != nullptr && (events & UV_READABLE)) redisAsyncHandleRead(p->context);
  if (p->context != nullptr && (events & UV_WRITABLE)) redisAsyncHandleWrite(p->context);
}

void update_poll(redisLibuvEvents* p) {
  if (p->events != 0)
    uv_poll_start(&p->handle, p->events, &on_poll);
  else
    uv_poll_stop(&p->handle);
}

void add_read(void* data) {
  auto* p = static_cast<redisLibuvEvents*>(data);
  p->events |= UV_READABLE;
  update_poll(p);
}

void del_read(void* data) {
  auto* p = static_cast<redisLibuvEvents*>(data);
  p->events &= ~UV_READABLE;
  update_poll(p);
}

void add_write(void* data) {
  auto* p = static_cast<redisLibuvEvents*>(data);
  p->events |= UV_WRITABLE;
  update_poll(p);
}

void del_write(void* data) {
  auto* p = static_cast<redisLibuvEvents*>(data);
  p->events &= ~UV_WRITABLE;
  update_poll(p);
}

}  // namespace

std::error_code error_from_reply_text(std::string_view text) noexcept {
  struct Prefix {
    std::string_view prefix;
    Errc code;
  };
  static constexpr Prefix table[] = {
      {"WRONGTYPE", Errc::redis_wrongtype},
      {"OOM", Errc::redis_oom},
      {"READONLY", Errc::redis_readonly},
      {"NOPERM", Errc::redis_noperm},
      {"NOAUTH", Errc::redis_noauth},
      {"WRONGPASS", Errc::redis_auth_failed},
      {"LOADING", Errc::redis_loading},
      {"BUSY", Errc::redis_busy},
      {"NOSCRIPT", Errc::redis_noscript},
      {"MASTERDOWN", Errc::redis_masterdown},
      {"ERR invalid password", Errc::redis_auth_failed},
      {"ERR AUTH <password> called without", Errc::redis_auth_failed},
  };
  for (const auto& p : table)
    if (starts_with(text, p.prefix)) return make_error_code(p.code);
  return make_error_code(Errc::redis_error);
}

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
  uv_prepare_init(loop_, &flush_);
  request_timer_.data = connect_timer_.data = reconnect_timer_.data = this;
  flush_.data = this;
  if (!address_.password.empty()) {
    auth_.args = {"AUTH"};
    if (!address_.user.empty()) auth_.args.push_back(address_.user);
    auth_.args.push_back(address_.password);
  }
  if (address_.db != 0) select_.args = {"SELECT", std::to_string(address_.db)};
  unsigned char buf[sizeof(in6_addr)];
  numeric_host_ = inet_pton(AF_INET, address_.host.c_str(), buf) == 1 ||
                  inet_pton(AF_INET6, address_.host.c_str(), buf) == 1;
  resolve_.data = this;
  last_error_ = make_error_code(Errc::not_connected);
  last_error_detail_ = "not connected yet";
}

Node::~Node() {
  // shutdown() ran and the loop has finished: hiredis is done with every connection.
  conns_.clear();
}

void Node::start() {
  if (state_ == State::idle) connect();
}

void Node::note_error(std::error_code ec, std::string detail) {
  last_error_ = ec;
  last_error_detail_ = std::move(detail);
}

void Node::sweep() {
  // Only from libuv callbacks, never from inside hiredis: then a Conn that hiredis has
  // cleaned up is no longer referenced by any call stack.
  for (auto it = conns_.begin(); it != conns_.end();) {
    if ((*it)->hiredis_done && it->get() != current_)
      it = conns_.erase(it);
    else
      ++it;
  }
}

void Node::connect() {
  sweep();
  if (numeric_host_) {
    connect_to(address_.host);
    return;
  }
  if (next_address_ < resolved_.size()) {
    connect_to(resolved_[next_address_]);
    return;
  }
  // hiredis would resolve the name with a blocking getaddrinfo on the loop thread.
  state_ = State::connecting;
  auto timeout = static_cast<std::uint64_t>(config_.connect_timeout.count());
  if (resolving_) {  // an earlier lookup is still running: its answer continues from here
    uv_timer_start(&connect_timer_, &Node::on_connect_timer, timeout, 0);
    return;
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  if (uv_getaddrinfo(loop_, &resolve_, &Node::on_resolved, address_.host.c_str(), nullptr,
                     &hints) == 0) {
    resolving_ = true;
    uv_timer_start(&connect_timer_, &Node::on_connect_timer, timeout, 0);
  } else {
    connection_gone(make_error_code(Errc::connect_failed), "cannot resolve " + address_.host,
                    false);
  }
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
                              (status != 0 ? uv_strerror(status) : "no address"),
                          false);
    return;
  }
  self->resolved_ = std::move(addresses);
  self->next_address_ = 0;
  self->connect_to(self->resolved_[0]);
}

void Node::connect_to(const std::string& ip) {
  redisAsyncContext* ac = redisAsyncConnect(ip.c_str(), address_.port);
  if (ac == nullptr) {
    connection_gone(make_error_code(Errc::connect_failed), "out of memory", false);
    return;
  }
  if (ac->err != 0 || redisLibuvAttach(ac, loop_) != REDIS_OK) {
    std::string detail = ac->err != 0 ? ac->errstr : "cannot attach to the event loop";
    redisAsyncFree(ac);
    connection_gone(make_error_code(Errc::connect_failed), std::move(detail), false);
    return;
  }
  auto conn = std::make_unique<Conn>();
  conn->node = this;
  conn->ac = ac;
  // Wrap the adapter's cleanup hook: hiredis calls it once, when it has run every pending
  // callback of this context. After that, the Conn may be freed from the loop.
  conn->adapter_cleanup = ac->ev.cleanup;
  ac->ev.cleanup = &Node::on_cleanup;
  ac->ev.addRead = &add_read;
  ac->ev.delRead = &del_read;
  ac->ev.addWrite = &add_write;
  ac->ev.delWrite = &del_write;
  ac->data = conn.get();
  redisAsyncSetConnectCallback(ac, &Node::on_connect);
  redisAsyncSetDisconnectCallback(ac, &Node::on_disconnect);
  current_ = conn.get();
  conns_.push_back(std::move(conn));
  state_ = State::connecting;
  // AUTH and SELECT go first; hiredis writes them once connected. Callers' commands are held
  // back until both succeeded (begin_session).
  for (const Command* hs : {&auth_, &select_}) {
    if (hs->args.empty()) continue;
    Pending p{hs,
              nullptr,
              uv_now(loop_) + static_cast<std::uint64_t>(config_.connect_timeout.count()),
              uv_hrtime(),
              Kind::handshake,
              false,
              false};
    if (issue_and_track(*current_, p)) ++current_->handshake_left;
  }
  if (current_->handshake_left == 0) begin_session(*current_);
  uv_timer_start(&connect_timer_, &Node::on_connect_timer,
                 static_cast<std::uint64_t>(config_.connect_timeout.count()), 0);
}

void Node::subscribe(const std::string& channel) {
  if (!channels_.insert(channel).second) return;
  if (current_ != nullptr && current_->handshake_left == 0)
    issue_subscription(*current_, "SUBSCRIBE", channel);
}

void Node::unsubscribe(const std::string& channel) {
  if (channels_.erase(channel) == 0) return;
  if (current_ != nullptr && current_->handshake_left == 0)
    issue_subscription(*current_, "UNSUBSCRIBE", channel);
}

void Node::begin_session(Conn& conn) {
  for (const Script* script : preload_) load_script(conn, *script);
  for (const auto& channel : channels_) issue_subscription(conn, "SUBSCRIBE", channel);
  // Held commands go out in the order they were sent, behind the scripts they need.
  auto held = std::move(conn.held);
  conn.held.clear();
  std::vector<Pending> refused;
  for (auto& p : held)
    if (!issue_and_track(conn, p)) refused.push_back(p);
  if (conn.connected) uv_prepare_start(&flush_, &Node::on_flush);
  for (auto& p : refused) {
    NodeReply out;
    out.error = make_error_code(Errc::connection_lost);
    out.detail = "the connection refused the command";
    p.sink->on_node_reply(index_, out);
  }
}

void Node::load_script(Conn& conn, const Script& script) {
  const char* argv[3] = {"SCRIPT", "LOAD", script.body};
  std::size_t lens[3] = {6, 4, std::strlen(script.body)};
  Pending p{nullptr, nullptr, 0, uv_hrtime(), Kind::internal, false, false};
  if (redisAsyncCommandArgv(conn.ac, &Node::on_reply, &conn, 3, argv, lens) == REDIS_OK)
    conn.pending.push_back(p);
}

void Node::fail_held(Conn& conn, std::error_code error, const std::string& detail) {
  auto held = std::move(conn.held);
  conn.held.clear();
  for (auto& p : held) {
    NodeReply out;
    out.error = error;
    out.detail = detail;
    out.latency = std::chrono::microseconds((uv_hrtime() - p.sent_ns) / 1000);
    p.sink->on_node_reply(index_, out);
  }
}

void Node::issue_subscription(Conn& conn, const char* verb, const std::string& channel) {
  const char* argv[2] = {verb, channel.c_str()};
  std::size_t lens[2] = {std::strlen(verb), channel.size()};
  // hiredis keeps the callback per channel and calls it for every message on it.
  redisAsyncCommandArgv(conn.ac, &Node::on_subscription, &conn, 2, argv, lens);
}

void Node::on_subscription(redisAsyncContext* /*ac*/, void* reply, void* privdata) {
  auto* conn = static_cast<Conn*>(privdata);
  Node* self = conn->node;
  auto* r = static_cast<const redisReply*>(reply);
  if (r == nullptr || conn != self->current_ || self->subscriber_ == nullptr) return;
  if (r->type != REDIS_REPLY_ARRAY || r->elements < 2 ||
      r->element[0]->type != REDIS_REPLY_STRING || r->element[1]->type != REDIS_REPLY_STRING)
    return;
  std::string_view kind(r->element[0]->str, r->element[0]->len);
  std::string_view channel(r->element[1]->str, r->element[1]->len);
  if (kind == "message")
    self->subscriber_->on_message(self->index_, channel);
  else if (kind == "subscribe")
    self->subscriber_->on_subscribed(self->index_, channel);
}

void Node::on_cleanup(void* adapter_data) {
  auto* events = static_cast<redisLibuvEvents*>(adapter_data);
  auto* conn = static_cast<Conn*>(events->context->data);
  conn->adapter_cleanup(adapter_data);
  conn->hiredis_done = true;
}

void Node::on_connect(const redisAsyncContext* ac, int status) {
  auto* conn = static_cast<Conn*>(ac->data);
  Node* self = conn->node;
  if (status != REDIS_OK) {
    // hiredis frees the context after this returns and fails its pending callbacks.
    conn->close_reason = make_error_code(Errc::connect_failed);
    conn->close_detail = ac->errstr;
    if (conn == self->current_) {
      self->current_ = nullptr;
      self->connection_gone(conn->close_reason, conn->close_detail, false);
    }
    self->fail_held(*conn, conn->close_reason, conn->close_detail);
    return;
  }
  conn->connected = true;
  if (conn == self->current_) {
    uv_timer_stop(&self->connect_timer_);
    self->state_ = State::ready;
    if (self->auth_.args.empty() && self->select_.args.empty()) self->note_error({}, "");
  }
}

void Node::on_disconnect(const redisAsyncContext* ac, int /*status*/) {
  auto* conn = static_cast<Conn*>(ac->data);
  Node* self = conn->node;
  if (conn != self->current_) return;  // we closed it ourselves
  self->current_ = nullptr;
  std::string detail = ac->errstr != nullptr && ac->err != 0 ? ac->errstr : "connection closed";
  self->connection_gone(make_error_code(Errc::connection_lost), detail, conn->answered);
  self->fail_held(*conn, make_error_code(Errc::connection_lost), detail);
}

void Node::connection_gone(std::error_code reason, std::string detail, bool was_ready) {
  note_error(reason, std::move(detail));
  uv_timer_stop(&connect_timer_);
  if (state_ == State::shut_down) return;
  state_ = State::backoff;
  // A connection that worked is replaced at once; so is a failed connect to one address of a
  // name that has more. Otherwise failed connects back off exponentially.
  Milliseconds delay{0};
  bool another_address = !was_ready && ++next_address_ < resolved_.size();
  if (!was_ready && !another_address) {
    resolved_.clear();  // every address was tried: resolve the name again next time
    next_address_ = 0;
    delay = reconnect_backoff(failures_, config_.reconnect_min, config_.reconnect_max, rng_());
    ++failures_;
  }
  // Always through the loop: this may run inside a hiredis callback.
  uv_timer_start(&reconnect_timer_, &Node::on_reconnect_timer,
                 static_cast<std::uint64_t>(delay.count()), 0);
}

void Node::on_flush(uv_prepare_t* prepare) {
  auto* self = static_cast<Node*>(prepare->data);
  uv_prepare_stop(prepare);
  // A libuv callback, not inside hiredis: a write error may free the context safely here.
  if (self->current_ != nullptr && self->current_->connected)
    redisAsyncHandleWrite(self->current_->ac);
}

void Node::on_reconnect_timer(uv_timer_t* timer) {
  auto* self = static_cast<Node*>(timer->data);
  if (self->state_ == State::backoff) self->connect();
}

void Node::on_connect_timer(uv_timer_t* timer) {
  auto* self = static_cast<Node*>(timer->data);
  if (self->resolving_ && self->current_ == nullptr) {
    uv_cancel(reinterpret_cast<uv_req_t*>(&self->resolve_));
    self->connection_gone(make_error_code(Errc::connect_timeout),
                          "resolving " + self->address_.host + " took longer than " +
                              ms_text(self->config_.connect_timeout),
                          false);
    return;
  }
  if (self->current_ == nullptr || self->current_->connected) return;
  self->close_current(make_error_code(Errc::connect_timeout),
                      "no connection within " + ms_text(self->config_.connect_timeout));
}

void Node::close_current(std::error_code reason, std::string detail) {
  Conn* old = current_;
  current_ = nullptr;
  bool was_ready = old->connected && old->answered;
  old->close_reason = reason;
  old->close_detail = detail;
  if (was_ready) {
    // Open the replacement first, so that requests sent while the old connection's pending
    // callbacks fail (a release after a timed-out acquire) already go to the new one.
    note_error(reason, detail);
    state_ = State::backoff;
    connect();
  } else {
    connection_gone(reason, detail, false);
  }
  fail_held(*old, reason, detail);
  // Runs every pending callback of `old` with a NULL reply, synchronously: we are in a libuv
  // callback, not inside hiredis.
  redisAsyncFree(old->ac);
}

std::error_code Node::send(const Command& command, ReplySink* sink) {
  if (state_ == State::shut_down) return make_error_code(Errc::shutting_down);
  // Down or between connections: fail at once, with the cause of the last failure.
  if (current_ == nullptr) return last_error_ ? last_error_ : make_error_code(Errc::not_connected);
  Pending p{&command,
            sink,
            uv_now(loop_) + static_cast<std::uint64_t>(config_.request_timeout.count()),
            uv_hrtime(),
            Kind::user,
            false,
            false};
  if (current_->handshake_left > 0) {
    current_->held.push_back(p);  // goes out once AUTH / SELECT succeeded
    arm_request_timer(p.deadline_ms);
    return {};
  }
  if (!issue_and_track(*current_, p)) return make_error_code(Errc::connection_lost);
  if (current_->connected) uv_prepare_start(&flush_, &Node::on_flush);
  return {};
}

bool Node::issue_and_track(Conn& conn, const Pending& p) {
  if (!issue(conn, p)) return false;
  conn.pending.push_back(p);
  if (p.deadline_ms != 0) arm_request_timer(p.deadline_ms);
  return true;
}

bool Node::issue(Conn& conn, const Pending& p) {
  Argv argv;
  const Command& c = *p.command;
  char numkeys[24];
  if (c.script != nullptr) {
    if (p.as_eval) {
      argv.push("EVAL");
      argv.push(c.script->body);
    } else {
      argv.push("EVALSHA");
      argv.push(c.script->sha);
    }
    auto [end, ec] = std::to_chars(numkeys, numkeys + sizeof numkeys, c.keys.size());
    (void)ec;
    argv.push(numkeys, static_cast<std::size_t>(end - numkeys));
    for (const auto& k : c.keys) argv.push(k);
  }
  for (const auto& a : c.args) argv.push(a);
  return redisAsyncCommandArgv(conn.ac, &Node::on_reply, &conn, argv.argc(), argv.argv(),
                               argv.lens()) == REDIS_OK;
}

void Node::arm_request_timer(std::uint64_t deadline_ms) {
  // One timer per node, armed for the earliest deadline among pending requests.
  bool active = uv_is_active(reinterpret_cast<uv_handle_t*>(&request_timer_)) != 0;
  if (active && armed_deadline_ <= deadline_ms) return;
  auto now = uv_now(loop_);
  armed_deadline_ = deadline_ms;
  uv_timer_start(&request_timer_, &Node::on_request_timer,
                 deadline_ms > now ? deadline_ms - now : 0, 0);
}

void Node::on_request_timer(uv_timer_t* timer) {
  static_cast<Node*>(timer->data)->check_timeouts();
}

void Node::check_timeouts() {
  if (current_ == nullptr) return;
  auto now = uv_now(loop_);
  std::uint64_t earliest = UINT64_MAX;
  // Held commands were never sent: one that is late fails alone, the connection stays.
  std::vector<Pending> late;
  for (auto it = current_->held.begin(); it != current_->held.end();) {
    if (it->deadline_ms <= now) {
      late.push_back(*it);
      it = current_->held.erase(it);
    } else {
      earliest = std::min(earliest, it->deadline_ms);
      ++it;
    }
  }
  bool expired = false, handshake = false;
  for (auto& p : current_->pending) {
    if (p.deadline_ms == 0) continue;  // internal: bounded by the commands around it
    if (p.deadline_ms <= now) {
      p.timed_out = true;
      expired = true;
      handshake = handshake || p.kind == Kind::handshake;
    } else if (p.deadline_ms < earliest) {
      earliest = p.deadline_ms;
    }
  }
  if (!expired && earliest != UINT64_MAX) arm_request_timer(earliest);
  if (expired) {
    // Replies come in order: once a request is late, every reply on this connection is suspect.
    // Close it, so that a late reply can never be matched to a later request.
    if (handshake || !current_->connected)
      close_current(make_error_code(Errc::connect_timeout),
                    "connection or handshake took longer than " + ms_text(config_.connect_timeout));
    else
      close_current(make_error_code(Errc::connection_lost),
                    "connection closed after a request timed out");
  }
  for (auto& p : late) {
    NodeReply out;
    out.error = make_error_code(Errc::request_timeout);
    std::string detail = "not sent within " + ms_text(config_.request_timeout) +
                         ": the connection's handshake had not finished";
    out.detail = detail;
    out.latency = std::chrono::microseconds((uv_hrtime() - p.sent_ns) / 1000);
    p.sink->on_node_reply(index_, out);
  }
}

void Node::on_reply(redisAsyncContext* /*ac*/, void* reply, void* privdata) {
  auto* conn = static_cast<Conn*>(privdata);
  conn->node->handle_reply(*conn, static_cast<const redisReply*>(reply));
}

void Node::handle_reply(Conn& conn, const redisReply* reply) {
  assert(!conn.pending.empty());
  Pending p = conn.pending.front();
  conn.pending.pop_front();
  if (reply != nullptr && reply->type != REDIS_REPLY_ERROR && !conn.answered) {
    conn.answered = true;
    failures_ = 0;
  }

  if (p.kind == Kind::internal) return;  // SCRIPT LOAD: a failure shows on the script's use
  if (p.kind == Kind::handshake) {
    if (reply == nullptr || &conn != current_) return;
    if (reply->type == REDIS_REPLY_ERROR) {
      std::string text(reply->str, reply->len);
      auto ec = error_from_reply_text(text);
      if (p.command == &auth_ && ec == make_error_code(Errc::redis_error))
        ec = make_error_code(Errc::redis_auth_failed);
      conn.close_reason = ec;
      conn.close_detail = std::string(p.command->args.front()) + ": " + text;
      current_ = nullptr;
      connection_gone(ec, conn.close_detail, false);
      fail_held(conn, ec, conn.close_detail);  // never sent: no command ran on this connection
      redisAsyncFree(conn.ac);                 // deferred by hiredis until this callback returns
      return;
    }
    if (--conn.handshake_left == 0) {
      note_error({}, "");
      begin_session(conn);
    }
    return;
  }

  NodeReply out;
  out.latency = std::chrono::microseconds((uv_hrtime() - p.sent_ns) / 1000);
  std::string detail;
  if (reply == nullptr) {
    if (p.timed_out) {
      out.error = make_error_code(Errc::request_timeout);
      detail = "no reply within " + ms_text(config_.request_timeout);
    } else if (conn.close_reason) {
      out.error = conn.close_reason;
      detail = conn.close_detail;
    } else {
      out.error = make_error_code(Errc::connection_lost);
      detail =
          conn.ac->errstr != nullptr && conn.ac->err != 0 ? conn.ac->errstr : "connection lost";
    }
  } else if (reply->type == REDIS_REPLY_ERROR) {
    std::string_view text(reply->str, reply->len);
    out.error = error_from_reply_text(text);
    const Script* script = p.command->script;
    if (out.error == Errc::redis_noscript && script != nullptr && !p.as_eval && &conn == current_) {
      // The script cache was flushed (SCRIPT FLUSH): the command did not run. Every command
      // sent after it on this connection is still waiting for its reply, so when none is, or
      // when the script's order does not matter, sending the body now keeps the order in which
      // commands run. Otherwise (an acquire with its own clean-up already behind it) the
      // command fails, and the script is loaded again for the next attempt.
      if (script->order_free || conn.pending.empty()) {
        Pending again = p;
        again.as_eval = true;
        again.timed_out = false;
        again.deadline_ms =
            uv_now(loop_) + static_cast<std::uint64_t>(config_.request_timeout.count());
        if (issue_and_track(conn, again)) {
          uv_prepare_start(&flush_, &Node::on_flush);
          return;
        }
      } else {
        load_script(conn, *script);
        uv_prepare_start(&flush_, &Node::on_flush);
      }
    }
    detail.assign(text);
  } else {
    out.reply = reply;
  }
  out.detail = detail;
  p.sink->on_node_reply(index_, out);
}

void Node::shutdown() {
  if (state_ == State::shut_down) return;
  state_ = State::shut_down;
  if (resolving_) uv_cancel(reinterpret_cast<uv_req_t*>(&resolve_));
  uv_timer_stop(&request_timer_);
  uv_timer_stop(&connect_timer_);
  uv_timer_stop(&reconnect_timer_);
  if (current_ != nullptr) {
    Conn* old = current_;
    current_ = nullptr;
    old->close_reason = make_error_code(Errc::shutting_down);
    old->close_detail = "client is shutting down";
    fail_held(*old, old->close_reason, old->close_detail);
    redisAsyncFree(old->ac);
  }
  uv_close(reinterpret_cast<uv_handle_t*>(&request_timer_), nullptr);
  uv_close(reinterpret_cast<uv_handle_t*>(&connect_timer_), nullptr);
  uv_close(reinterpret_cast<uv_handle_t*>(&reconnect_timer_), nullptr);
  uv_close(reinterpret_cast<uv_handle_t*>(&flush_), nullptr);
}

}  // namespace redlock::detail
