#include "node.hpp"

#include <arpa/inet.h>
#include <hiredis/hiredis.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <utility>

#include "../core/observe.hpp"
#include "../core/quorum.hpp"
#include "../core/safeguards.hpp"
#include "../core/session.hpp"
#include "protocol.hpp"
#include "redlock/errors.hpp"
#include "tls.hpp"
#include "transport.hpp"

namespace redlock::detail {
namespace {

std::string ms_text(Milliseconds d) { return std::to_string(d.count()) + "ms"; }

std::chrono::microseconds since(std::uint64_t sent_ns) {
  return std::chrono::microseconds((uv_hrtime() - sent_ns) / 1000);
}

// Tells Config::observer, if any, that a node's connection changed state.
void notify_node(const Config& config, std::size_t index, const std::string& label, bool subscriber,
                 NodeState state, std::error_code error = {}, const std::string& detail = {},
                 Milliseconds backoff = Milliseconds(0)) {
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

}  // namespace

// One connection's session state. Its transport reports here, and the node decides.
class Node::Conn final : public TransportEvents {
 public:
  explicit Conn(Node& owner) : node(owner) {}

  Node& node;
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
  if (!address_.password.empty()) {
    auth_.args = {"AUTH"};
    if (!address_.user.empty()) auth_.args.push_back(address_.user);
    auth_.args.push_back(address_.password);
  }
  if (address_.db != 0) select_.args = {"SELECT", std::to_string(address_.db)};
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

void Node::begin_session(Conn& conn) {
  conn.in_session = true;
  state_ = State::ready;
  note_error({}, "");
  if (ask_fsync_) {
    Argv argv;
    argv.push("CONFIG");
    argv.push("GET");
    argv.push("appendfsync");
    if (append_command(conn.transport->output(), argv)) {
      conn.pending.push_back(Pending{nullptr, nullptr, 0, uv_hrtime(), Kind::probe, false, false});
      conn.transport->flush_soon();
    }
  }
  for (const Script* script : preload_) load_script(conn, *script);
  for (const auto& channel : channels_) issue_subscription(conn, "SUBSCRIBE", channel);
  send_orphans(conn);
  // The commands that waited go out in the order they were sent, behind the scripts they need,
  // each still bounded by its own deadline.
  told_restarting_ = false;  // a new session: told below
  const bool node_eligible = !ineligible();
  if (!node_eligible) {
    // Restarted too recently: what waited for this session fails, never sent (at_start).
    told_restarting_ = config_.observer != nullptr;
    notify_node(config_, index_, label_, subscriber_ != nullptr, NodeState::restarting, last_error_,
                last_error_detail_);
  } else {
    notify_node(config_, index_, label_, subscriber_ != nullptr, NodeState::connected);
  }
  Fifo<Pending> held;
  std::swap(held, held_);
  uv_update_time(loop_);
  const auto now = uv_now(loop_);
  // Each goes out, or fails never sent: late (issued, it would close the new connection as timed
  // out at once) or refused by the restart guard (lib/core/session.hpp, at_start).
  std::vector<Pending> refused, late, restarting;
  for (auto& p : held) {
    switch (at_start(node_eligible, now, p.deadline_ms)) {
      case HeldFate::send:
        if (!issue(conn, p)) refused.push_back(p);
        break;
      case HeldFate::late:
        late.push_back(p);
        break;
      case HeldFate::restarting:
        restarting.push_back(p);
        break;
    }
  }
  if (!restarting.empty()) {
    const auto error = last_error_;
    const std::string text = last_error_detail_;  // may change under the callbacks
    for (auto& p : restarting) {
      keep_orphan(*p.command);
      NodeReply out;
      out.error = error;
      out.detail = text;
      out.latency = since(p.sent_ns);
      p.sink->on_node_reply(index_, out);
    }
  }
  for (auto& p : refused) {
    NodeReply out;
    out.error = make_error_code(Errc::connection_lost);
    out.detail = "out of memory";
    out.latency = since(p.sent_ns);
    p.sink->on_node_reply(index_, out);
  }
  for (auto& p : late) fail_unsent(p, "the connection's handshake ended too late");
}

void Node::fail_unsent(const Pending& p, const char* why) {
  keep_orphan(*p.command);
  NodeReply out;
  out.error = make_error_code(Errc::request_timeout);
  // When the last attempt ended with an answer that rules the node out (a TLS failure, AUTH
  // refused, a replica), that is the cause: the command waits for an attempt that will likely
  // end the same way. A timeout or a lost connection says no more than the timeout itself.
  const auto& e = last_error_;
  if (e && e != Errc::not_connected && e != Errc::connect_failed && e != Errc::connect_timeout &&
      e != Errc::connection_lost && e != Errc::request_timeout)
    out.error = e;
  std::string detail = "not sent within " + ms_text(config_.request_timeout) + ": " + why;
  out.detail = detail;
  out.latency = since(p.sent_ns);
  p.sink->on_node_reply(index_, out);
}

void Node::subscribe(const std::string& channel) {
  if (!channels_.insert(channel).second) return;
  if (current_ != nullptr && current_->in_session)
    issue_subscription(*current_, "SUBSCRIBE", channel);
}

void Node::unsubscribe(const std::string& channel) {
  if (channels_.erase(channel) == 0) return;
  if (current_ != nullptr && current_->in_session)
    issue_subscription(*current_, "UNSUBSCRIBE", channel);
}

// ---------------------------------------------------------------------------------------------
// Sending

std::error_code Node::send(const Command& command, ReplySink* sink, const SendTime* at) {
  if (state_ == State::shut_down) return make_error_code(Errc::shutting_down);
  const SendTime t = at != nullptr ? *at : SendTime::now(loop_);
  const auto deadline = t.loop_ms + static_cast<std::uint64_t>(config_.request_timeout.count());
  Pending p{&command, sink, deadline, t.hr_ns, Kind::user, false, false};
  // Until the connection is open and AUTH, SELECT and INFO have succeeded, a caller's command
  // waits here, not on the wire (the gate, lib/core/session.hpp).
  switch (gate(phase())) {
    case Gate::fail:
      // Down, between back-off and the next attempt: fail at once, with the cause.
      keep_orphan(command);
      return last_error_ ? last_error_ : make_error_code(Errc::not_connected);
    case Gate::hold:
      held_.push_back(p);  // goes out when the session begins, or fails at its deadline
      arm_request_timer(p.deadline_ms);
      return {};
    case Gate::wire:
      break;
  }
  // The restart guard keeps a node from granting; what only deletes or extends the caller's own
  // keys (release, renewal, fencing write-back) still goes through. Only what may grant asks
  // ineligible(): its first "eligible" tells the observer that the node votes.
  const bool order_free = command.script != nullptr && command.script->order_free;
  if (guard_refuses(order_free, order_free || !ineligible())) return last_error_;
  if (!issue(*current_, p)) return make_error_code(Errc::connection_lost);
  return {};
}

SessionPhase Node::phase() const noexcept {
  if (current_ != nullptr && current_->in_session) return SessionPhase::session;
  if (state_ != State::connecting) return SessionPhase::down;
  return current_ != nullptr ? SessionPhase::handshake : SessionPhase::connecting;
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
    const auto& keys = c.key_list();
    auto [end, ec] = std::to_chars(numkeys, numkeys + sizeof numkeys, keys.size());
    (void)ec;
    argv.push(numkeys, static_cast<std::size_t>(end - numkeys));
    for (const auto& k : keys) argv.push(k);
  }
  for (const auto& a : c.arg_list()) argv.push(a);
  if (!append_command(conn.transport->output(), argv)) return false;
  conn.pending.push_back(p);
  if (p.deadline_ms != 0) arm_request_timer(p.deadline_ms);
  conn.transport->flush_soon();  // everything issued in this loop turn leaves in one write
  return true;
}

void Node::load_script(Conn& conn, const Script& script) {
  Argv argv;
  argv.push("SCRIPT");
  argv.push("LOAD");
  argv.push(script.body);
  if (!append_command(conn.transport->output(), argv)) return;  // its use will say NOSCRIPT
  conn.pending.push_back(Pending{nullptr, nullptr, 0, uv_hrtime(), Kind::internal, false, false});
  conn.transport->flush_soon();
}

void Node::issue_subscription(Conn& conn, const char* verb, const std::string& channel) {
  Argv argv;
  argv.push(verb);
  argv.push(channel);
  // Nothing to track: the server confirms each channel with a push message.
  if (append_command(conn.transport->output(), argv)) conn.transport->flush_soon();
}

// ---------------------------------------------------------------------------------------------
// Receiving

void Node::on_data(Conn& conn, const char* data, std::size_t len) {
  if (conn.closed) return;
  if (!conn.reader.feed(data, len)) {
    close_current(make_error_code(Errc::connection_lost), "out of memory");
    return;
  }
  const std::uint64_t received_ns = uv_hrtime();  // one clock read for all it brought
  ReplyPtr reply;
  for (;;) {
    switch (conn.reader.next(reply)) {
      case ReplyReader::Status::more:
        return;
      case ReplyReader::Status::error:
        close_current(make_error_code(Errc::protocol_error),
                      std::string("not a Redis reply: ") + conn.reader.error_text());
        return;
      case ReplyReader::Status::reply:
        // A callback may have closed the connection (or shut the node down): then the rest of
        // what it received is never matched to anything.
        if (!handle_reply(conn, reply.get(), received_ns) || conn.closed) return;
        break;
    }
  }
}

namespace {

// INFO itself is not allowed on this server (an ACL without it, or the command renamed away),
// as opposed to an error that any command would have got.
bool info_refused(const redisReply* reply) {
  std::string_view text(reply->str, reply->len);
  return error_from_reply_text(text) == Errc::redis_noperm ||
         text.rfind("ERR unknown command", 0) == 0;
}

}  // namespace

bool Node::handle_reply(Conn& conn, const redisReply* reply, std::uint64_t received_ns) {
  if (conn.in_session && reply->type != REDIS_REPLY_ERROR && !conn.answered) {
    conn.answered = true;
    failures_ = 0;
  }
  if (conn.pending.empty()) {
    if (subscriber_ != nullptr) {  // pub/sub messages arrive with no request
      handle_push(reply);
      return true;
    }
    close_current(make_error_code(Errc::protocol_error), "a reply nobody asked for");
    return false;
  }
  Pending p = conn.pending.front();
  conn.pending.pop_front();

  if (p.kind == Kind::internal) return true;  // SCRIPT LOAD: a failure shows on the script's use
  if (p.kind == Kind::orphan) {
    // Answered (deleted, not ours any more, or an error that sending again would not cure).
    orphans_.remove_if([&](const Orphan& o) { return &o.command == p.command; });
    return true;
  }
  if (p.kind == Kind::probe) {
    handle_probe(reply);
    return true;
  }
  if (p.kind == Kind::handshake) {
    if (reply->type == REDIS_REPLY_ERROR && p.command == &info_ && info_refused(reply)) {
      // INFO refused (an ACL without it, or renamed): the node may still vote, unchecked, but
      // with the restart guard on it waits as if it had just restarted. Any other error (a
      // server at maxclients, NOAUTH, BUSY) is the connection's, and ends it below.
      warn("the restart safeguards could not check it: INFO answered " +
           std::string(reply->str, reply->len));
      unknown_age();
    } else if (reply->type == REDIS_REPLY_ERROR) {
      std::string text(reply->str, reply->len);
      auto ec = error_from_reply_text(text);
      // A plain ERR to AUTH is a refused password, unless it is the server's greeting of a
      // connection it will not serve (maxclients), which answers whatever came first.
      if (p.command == &auth_ && ec == make_error_code(Errc::redis_error) &&
          text.rfind("ERR max number of clients", 0) != 0)
        ec = make_error_code(Errc::redis_auth_failed);
      // Never answered: the connect backs off, and every command that waited for this
      // session fails without having been sent.
      std::string why = p.command->args.front() + ": " + text;
      notify_node(config_, index_, label_, subscriber_ != nullptr, NodeState::refused, ec, why);
      close_current(ec, std::move(why));
      return false;
    } else if (p.command == &info_ && !apply_info(conn, reply)) {
      return false;
    }
    if (--conn.handshake_left == 0) begin_session(conn);
    return true;
  }

  NodeReply out;
  out.latency = std::chrono::microseconds((received_ns - p.sent_ns) / 1000);
  std::string detail;
  if (reply->type == REDIS_REPLY_ERROR) {
    std::string_view text(reply->str, reply->len);
    out.error = error_from_reply_text(text);
    const Script* script = p.command->script;
    if (out.error == Errc::redis_noscript && script != nullptr && !p.as_eval) {
      // The script cache was flushed (SCRIPT FLUSH): the command did not run. Every command
      // sent after it on this connection is still waiting for its reply, so when none is, or
      // when the script's order does not matter, sending the body now keeps the order in which
      // commands run. Otherwise (an acquire with its own clean-up already behind it) the
      // command fails, and the script is loaded again for the next attempt.
      if (after_noscript(script->order_free, !conn.pending.empty()) == NoscriptStep::resend_eval) {
        Pending again = p;
        again.as_eval = true;
        again.timed_out = false;
        again.deadline_ms = request_deadline();
        if (issue(conn, again)) return true;
      } else {
        load_script(conn, *script);
      }
    }
    detail.assign(text);
  } else {
    out.reply = reply;
  }
  out.detail = detail;
  p.sink->on_node_reply(index_, out);
  return true;
}

void Node::handle_push(const redisReply* r) {
  if (r->type != REDIS_REPLY_ARRAY || r->elements < 2 ||
      r->element[0]->type != REDIS_REPLY_STRING || r->element[1]->type != REDIS_REPLY_STRING)
    return;  // an error (e.g. NOPERM for a channel) or something else: nothing to hand on
  std::string_view kind(r->element[0]->str, r->element[0]->len);
  std::string_view channel(r->element[1]->str, r->element[1]->len);
  if (kind == "message")
    subscriber_->on_message(index_, channel,
                            r->elements >= 3 && r->element[2]->type == REDIS_REPLY_STRING
                                ? std::string_view(r->element[2]->str, r->element[2]->len)
                                : std::string_view());
  else if (kind == "subscribe")
    subscriber_->on_subscribed(index_, channel);
}

// ---------------------------------------------------------------------------------------------
// Restart safeguards (lib/core/safeguards.hpp)

bool Node::apply_info(Conn& conn, const redisReply* reply) {
  (void)conn;
  if (reply->type != REDIS_REPLY_STRING && reply->type != REDIS_REPLY_STATUS) {
    warn("the restart safeguards could not check it: INFO gave no text");
    unknown_age();
    return true;
  }
  auto facts = parse_info(std::string_view(reply->str, reply->len));
  std::string other;
  if (server_ids_ != nullptr && !facts.run_id.empty())
    other = server_ids_->holder(facts.run_id, index_);
  auto verdict = judge(facts, config_, other);
  if (verdict.refuse) {
    // Never answered: the node backs off like any failed connect, and what waited fails with
    // the reason.
    notify_node(config_, index_, label_, subscriber_ != nullptr, NodeState::refused, verdict.refuse,
                verdict.why);
    close_current(verdict.refuse, verdict.why);
    return false;
  }
  if (server_ids_ != nullptr && !facts.run_id.empty() && config_.check_duplicates)
    server_ids_->claim(facts.run_id, index_, label_);
  uptime_s_ = facts.uptime_s.value_or(0);
  eligible_at_ = uv_now(loop_) + static_cast<std::uint64_t>(verdict.ineligible_for.count());
  ask_fsync_ = verdict.ask_fsync;
  for (const auto& w : verdict.warnings) warn(w);
  return true;
}

void Node::handle_probe(const redisReply* r) {
  // CONFIG GET appendfsync: ["appendfsync", value]. Refused (managed services often rename
  // CONFIG): nothing is known, nothing is said.
  if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 || r->element[1]->type != REDIS_REPLY_STRING)
    return;
  auto text = fsync_warning(std::string_view(r->element[1]->str, r->element[1]->len));
  if (!text.empty()) warn(text);
}

void Node::keep_orphan(const Command& command) {
  if (command.script == nullptr || std::string_view(command.script->name) != "release") return;
  if (orphans_.size() >= kMaxOrphans) orphans_.pop_front();  // bounded: the oldest go first
  // Its own copy of the lists: an orphan outlives the caller's request.
  orphans_.push_back(
      Orphan{Command{command.script, command.key_list(), command.arg_list()}, false});
}

void Node::send_orphans(Conn& conn) {
  for (auto& o : orphans_) {
    if (o.sent) continue;
    // No deadline: bounded by the commands around it, like SCRIPT LOAD; nobody waits for it.
    Pending p{&o.command, nullptr, 0, uv_hrtime(), Kind::orphan, false, false};
    if (!issue(conn, p)) return;
    o.sent = true;
  }
}

void Node::warn(const std::string& text) {
  // The observer hears it on every handshake (a metric follows the node's state); the log and
  // Config::on_warning once per node.
  if (subscriber_ == nullptr)
    observe(config_, [&](Observer& o) {
      NodeWarningEvent e;
      e.kind = is_persistence_warning(text) ? NodeWarning::persistence : NodeWarning::other;
      e.node = index_;
      e.address = &label_;
      e.text = &text;
      o.on_node_warning(e);
    });
  if (std::find(warnings_.begin(), warnings_.end(), text) != warnings_.end()) return;
  warnings_.push_back(text);
  std::string line = "node " + label_ + ": " + text;
  if (config_.on_warning) {
    try {
      config_.on_warning(line);
    } catch (...) {
      // A warning handler that throws must not take the connection down.
    }
  } else {
    log_message(&config_, LogLevel::warning, line);
  }
}

void Node::unknown_age() {
  uptime_s_ = -1;
  eligible_at_ = uv_now(loop_) + static_cast<std::uint64_t>(restart_threshold(config_).count());
}

bool Node::ineligible() {
  auto now = uv_now(loop_);
  if (eligible(now, eligible_at_)) {
    if (told_restarting_) {
      // It was told restarting at connect: its first eligible use tells that it votes now.
      told_restarting_ = false;
      notify_node(config_, index_, label_, subscriber_ != nullptr, NodeState::connected);
    }
    return false;
  }
  note_error(
      make_error_code(Errc::node_restarting),
      (uptime_s_ < 0 ? std::string("uptime unknown (INFO unreadable), taken as just restarted")
                     : "restarted " + std::to_string(uptime_s_) + " s ago") +
          "; not eligible for another " + std::to_string(eligible_at_ - now) +
          " ms (restart guard: the largest lease, " + ms_text(restart_threshold(config_)) +
          ", must pass first)");
  return true;
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

// ---------------------------------------------------------------------------------------------
// Timeouts

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
  auto* self = static_cast<Node*>(timer->data);
  uv_idle_start(&self->poll_now_, [](uv_idle_t*) {});
  uv_check_start(&self->after_poll_, &Node::on_after_poll);
}

void Node::on_after_poll(uv_check_t* check) {
  auto* self = static_cast<Node*>(check->data);
  uv_idle_stop(&self->poll_now_);
  uv_check_stop(&self->after_poll_);
  self->check_timeouts();
}

void Node::check_timeouts() {
  auto now = uv_now(loop_);
  // Commands that wait for a session were never sent: one that is late fails alone.
  std::vector<Pending> late;
  Fifo<Pending> waiting;
  for (auto& p : held_) {
    if (p.deadline_ms <= now)
      late.push_back(p);
    else
      waiting.push_back(p);
  }
  std::swap(waiting, held_);
  bool expired = false, handshake = false;
  if (current_ != nullptr) {
    for (auto& p : current_->pending) {
      if (p.deadline_ms == 0) continue;  // internal: bounded by the commands around it
      if (p.deadline_ms <= now) {
        p.timed_out = true;
        expired = true;
        handshake = handshake || p.kind == Kind::handshake;
      } else {
        arm_request_timer(p.deadline_ms);
      }
    }
  }
  if (expired) {
    // Replies come in order: once a request is late, every reply on this connection is suspect.
    // Close it, so that a late reply can never be matched to a later request.
    if (handshake)
      close_current(make_error_code(Errc::connect_timeout),
                    "handshake took longer than " + ms_text(config_.connect_timeout));
    else
      close_current(make_error_code(Errc::connection_lost),
                    "connection closed after a request timed out");
  }
  for (auto& p : held_) arm_request_timer(p.deadline_ms);
  if (!late.empty()) {
    const std::string why = not_ready_reason();
    for (auto& p : late) fail_unsent(p, why.c_str());
  }
}

// ---------------------------------------------------------------------------------------------
// Shutdown

void Node::shutdown() {
  if (state_ == State::shut_down) return;
  state_ = State::shut_down;
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
