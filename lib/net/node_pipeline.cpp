// Node: the request pipeline. A caller's command waits for the session or goes on the wire;
// replies are matched to requests in order; NOSCRIPT is answered; a deadline that passed closes
// the connection; a release whose outcome is unknown is kept and sent again. Loop thread only.
#include "node.hpp"

#include <hiredis/hiredis.h>

#include <charconv>
#include <utility>
#include <vector>

#include "../core/session.hpp"
#include "node_conn.hpp"
#include "redlock/errors.hpp"

namespace redlock::detail {

using node_impl::ms_text;
using node_impl::notify_node;
using node_impl::since;

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

bool format_command(std::string& out, const Command& c, bool as_eval) {
  Argv argv;
  char numkeys[24];
  if (c.script != nullptr) {
    if (as_eval) {
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
  return append_command(out, argv);
}

bool Node::issue(Conn& conn, const Pending& p) {
  if (!format_command(conn.transport->output(), *p.command, p.as_eval)) return false;
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
  if (p.kind == Kind::handshake) return handle_handshake_reply(conn, p, reply);

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
}  // namespace redlock::detail
