// Node: the handshake of a connection (AUTH, SELECT, INFO and the restart safeguards it feeds:
// role, duplicates, persistence, the restart guard) and the beginning of a session, when what
// waited for it goes out. Loop thread only.
#include "node.hpp"

#include <hiredis/hiredis.h>

#include <algorithm>
#include <utility>

#include "../core/safeguards.hpp"
#include "../core/session.hpp"
#include "node_conn.hpp"
#include "redlock/errors.hpp"

namespace redlock::detail {

using node_impl::ms_text;
using node_impl::notify_node;
using node_impl::since;

namespace {

// INFO itself is not allowed on this server (an ACL without it, or the command renamed away),
// as opposed to an error that any command would have got.
bool info_refused(const redisReply* reply) {
  std::string_view text(reply->str, reply->len);
  return error_from_reply_text(text) == Errc::redis_noperm ||
         text.rfind("ERR unknown command", 0) == 0;
}

}  // namespace

std::vector<std::string> auth_argv(const NodeAddress& address) {
  if (address.password.empty()) return {};
  std::vector<std::string> args{"AUTH"};
  if (!address.user.empty()) args.push_back(address.user);
  args.push_back(address.password);
  return args;
}

std::vector<std::string> select_argv(const NodeAddress& address) {
  if (address.db == 0) return {};
  return {"SELECT", std::to_string(address.db)};
}

std::error_code handshake_error(bool to_auth, std::string_view text) {
  auto ec = error_from_reply_text(text);
  // A plain ERR to AUTH is a refused password, unless it is the server's greeting of a
  // connection it will not serve (maxclients), which answers whatever came first.
  if (to_auth && ec == make_error_code(Errc::redis_error) &&
      text.rfind("ERR max number of clients", 0) != 0)
    ec = make_error_code(Errc::redis_auth_failed);
  return ec;
}

// A reply to AUTH, SELECT or INFO. False when it closed the connection.
bool Node::handle_handshake_reply(Conn& conn, const Pending& p, const redisReply* reply) {
  if (reply->type == REDIS_REPLY_ERROR && p.command == &info_ && info_refused(reply)) {
    // INFO refused (an ACL without it, or renamed): the node may still vote, unchecked, but
    // with the restart guard on it waits as if it had just restarted. Any other error (a
    // server at maxclients, NOAUTH, BUSY) is the connection's, and ends it below.
    warn("the restart safeguards could not check it: INFO answered " +
         std::string(reply->str, reply->len));
    unknown_age();
  } else if (reply->type == REDIS_REPLY_ERROR) {
    std::string text(reply->str, reply->len);
    auto ec = handshake_error(p.command == &auth_, text);
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

void Node::begin_session(Conn& conn) {
  conn.in_session = true;
  state_ = State::ready;
  note_error({}, "");
  publish_session(true);
  if (ask_fsync_) {
    Argv argv;
    argv.push("CONFIG");
    argv.push("GET");
    argv.push("append*");  // appendonly and appendfsync, in one request (Redis 2.6 on)
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
  run_id_ = facts.run_id;
  uptime_s_ = facts.uptime_s.value_or(0);
  eligible_at_ = uv_now(loop_) + static_cast<std::uint64_t>(verdict.ineligible_for.count());
  ask_fsync_ = verdict.ask_fsync;
  warn_if_unknown_ = verdict.warn_if_unknown;
  for (const auto& w : verdict.warnings) warn(w);
  return true;
}

void Node::handle_probe(const redisReply* r) {
  // CONFIG GET append*: [name, value, ...]. Refused (managed services
  // often rename CONFIG): nothing more is known. Asked while the node was loading, INFO's
  // aof_enabled:0 is then all there is, and it is warned about.
  std::string_view appendonly, appendfsync;
  const bool pairs = r->type == REDIS_REPLY_ARRAY && r->elements % 2 == 0;
  for (std::size_t i = 0; pairs && i + 1 < r->elements; i += 2) {
    const redisReply* name = r->element[i];
    const redisReply* value = r->element[i + 1];
    if (name->type != REDIS_REPLY_STRING || value->type != REDIS_REPLY_STRING) continue;
    std::string_view n(name->str, name->len), v(value->str, value->len);
    if (n == "appendonly") appendonly = v;
    if (n == "appendfsync") appendfsync = v;
  }
  if (appendonly.empty() && appendfsync.empty()) {
    if (warn_if_unknown_) warn(persistence_off_warning());
    return;
  }
  auto text = append_warning(appendonly, appendfsync);
  if (!text.empty()) warn(text);
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
}  // namespace redlock::detail
