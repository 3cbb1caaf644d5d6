// The network: requests from a client to a node over a FIFO connection with delays, the node
// running them, the replies back, and the failures (timeouts, resets, partitions).

#include "world_impl.hpp"

namespace redlock::sim::internal {

std::vector<std::string> World::argv_of(const proto::Request& r, bool as_eval) const {
  std::vector<std::string> argv;
  if (r.script == proto::ScriptId::none) return r.args;
  const ScriptText* s = nullptr;
  switch (r.script) {
    case proto::ScriptId::acquire:
      s = &kAcquire;
      break;
    case proto::ScriptId::renew:
      s = &kRenew;
      break;
    case proto::ScriptId::release:
      s = &kRelease;
      break;
    case proto::ScriptId::fence:
      s = &kFence;
      break;
    case proto::ScriptId::leader:
      s = &kLeader;
      break;
    default:
      break;
  }
  argv.reserve(3 + r.keys.size() + r.args.size());
  argv.emplace_back(as_eval ? "EVAL" : "EVALSHA");
  argv.emplace_back(as_eval ? std::string(s->body) : std::string(s->sha));
  argv.push_back(std::to_string(r.keys.size()));
  argv.insert(argv.end(), r.keys.begin(), r.keys.end());
  argv.insert(argv.end(), r.args.begin(), r.args.end());
  return argv;
}

void World::send(int c, const proto::Send& s) {
  for (auto n : s.nodes) send_one(c, n, s.id, s.request, s.reply_wanted);
  if (on("late_grant")) late_stall(c, *s.request);
}

void World::send_one(int c, std::size_t n, RequestId id, std::shared_ptr<const proto::Request> req,
                     bool reply_wanted) {
  auto& cl = clients_[c];
  auto& conn = cl.conns[n];
  auto tag = next_tag_++;
  if (opt_.trace) {
    std::string line = "c" + std::to_string(c) + " -> n" + std::to_string(n) + " " +
                       std::string(req->script == proto::ScriptId::acquire   ? "acquire"
                                   : req->script == proto::ScriptId::release ? "release"
                                   : req->script == proto::ScriptId::renew   ? "renew"
                                   : req->script == proto::ScriptId::fence   ? "fence"
                                   : req->script == proto::ScriptId::leader  ? "leader"
                                                                             : "cmd");
    for (const auto& k : req->keys) line += " " + escape_bytes(k);
    line += " |";
    for (const auto& a : req->args) line += " " + escape_bytes(a);
    trace(line);
  }
  // The request's timeout, on the client's clock; one that waits for the session fails at it
  // (never sent), as lib/net/node.cpp's check_timeouts.
  Us deadline_local = local(cl) + cl.config.request_timeout.count() * kMs;
  conn.pending[tag] = Pending{id, std::move(req), false, reply_wanted, deadline_local};
  auto& p = conn.pending[tag];
  if (conn.id == 0) {
    auto& nd = nodes_[n];
    if (!nd.up) {  // connection refused, after a round trip
      Us back = now_ + 2 * delay();
      client_at(c, back, [this, c, n, tag] { fail(c, n, tag, Errc::connect_failed, "refused"); });
      return;
    }
    conn.id = next_conn_id_++;
    conn.epoch++;
    conn.incarnation = nd.incarnation;
    conn.loaded = false;
    conn.in_session = false;
    conn.held.clear();
    conn_owner_[conn.id] = ConnRef{c, n, false};
    handshake(c, n);
  }
  Us deadline = cl.clock.when(deadline_local, now_);
  auto epoch = conn.epoch;
  client_at(c, deadline, [this, c, n, tag, epoch] {
    auto& cn = clients_[c].conns[n];
    if (cn.epoch != epoch || cn.pending.count(tag) == 0) return;
    fail(c, n, tag, Errc::request_timeout, "request timed out");
  });
  // The gate (lib/core/session.hpp): until the handshake is judged, the request waits.
  switch (detail::gate(conn.in_session ? detail::SessionPhase::session
                                       : detail::SessionPhase::handshake)) {
    case detail::Gate::hold:
      conn.held.push_back(tag);
      return;
    case detail::Gate::fail:  // never: the simulated node refuses a connection above
    case detail::Gate::wire:
      break;
  }
  // The restart guard refuses what could grant; releases, renewals and write-backs go through.
  bool order_free =
      p.request->script != proto::ScriptId::acquire && p.request->script != proto::ScriptId::none;
  if (detail::guard_refuses(order_free, detail::eligible(local(cl), conn.eligible_at))) {
    client_at(c, now_ + 1, [this, c, n, tag] {
      fail(c, n, tag, Errc::node_restarting, "restarted less than the largest lease ago");
    });
    return;
  }
  transmit(c, n, tag);
}

void World::transmit(int c, std::size_t n, std::uint64_t tag) {
  auto& cl = clients_[c];
  auto& conn = cl.conns[n];
  auto& p = conn.pending[tag];
  auto argv = argv_of(*p.request, p.as_eval);
  bool load = !conn.loaded && !on("noscript");
  conn.loaded = true;
  if (cut(c, n)) return;  // lost: the timeout answers for it
  Us arrive = std::max(now_ + delay(), conn.to_node + 1);
  conn.to_node = arrive;
  auto id = conn.id;
  auto epoch = conn.epoch;
  bool ghost = rng_.chance(0.5);  // if the connection resets first: did it reach the node?
  at(arrive, [this, c, n, id, epoch, tag, argv = std::move(argv), load, ghost]() mutable {
    node_receive(c, n, id, epoch, tag, std::move(argv), ghost, load);
  });
}

void World::node_receive(int c, std::size_t n, std::uint64_t conn_id, std::uint64_t epoch,
                         std::uint64_t tag, std::vector<std::string> argv, bool ghost, bool load) {
  auto& nd = nodes_[n];
  if (!nd.up) return;
  if (cut(c, n)) return;
  bool open = nd.open.count(conn_id) != 0;
  if (!open) {
    // A connection the node does not know yet is new; one it closed got a reset: what was in
    // flight may still have reached it (then it runs, and its answer is lost).
    auto& conn = clients_[c].conns[n];
    if (conn.id == conn_id && conn.epoch == epoch && conn.incarnation == nd.incarnation) {
      nd.open.insert(conn_id);
    } else if (ghost && conn.incarnation == nd.incarnation) {
      ++scripts_;
      nd.redis->execute(argv, node_ms(n), 0);
      trace("n" + std::to_string(n) + " ran a request of a reset connection of c" +
            std::to_string(c));
      deliver_pubsub(n);
      return;
    } else {
      return;
    }
  }
  // A new connection loads the scripts before its first command (as lib/net/node.cpp does on
  // connect), unless the `noscript` fault keeps it from doing so.
  if (load)
    for (const auto& sc : kScripts)
      nd.redis->execute({"SCRIPT", "LOAD", std::string(sc.body)}, node_ms(n), conn_id);
  if (tag != kHandshakeTag) ++scripts_;
  Value reply;
  auto is = [&argv](const ScriptText& sc) {
    return argv.size() >= 3 && ((argv[0] == "EVALSHA" && argv[1] == sc.sha) ||
                                (argv[0] == "EVAL" && argv[1] == sc.body));
  };
  bool acquire = is(kAcquire);
  bool release = !acquire && is(kRelease);
  // The token (ARGV[1] of both scripts), for the order oracle below.
  std::string token;
  if (acquire || release) {
    auto keys = static_cast<std::size_t>(std::stoul(argv[2]));
    if (argv.size() > 3 + keys) token = argv[3 + keys];
  }
  if (tag != kHandshakeTag && now_ < nd.odd_until) {
    // Something else answers for the script or the quick acquire's command (another program at
    // the port, another version of the scripts): a reply of another shape than the command's,
    // decoded by the library's own decoder (lib/core/replies.cpp). None of them is a yes; nothing
    // ran.
    const auto& conn = clients_[c].conns[n];
    auto p = conn.epoch == epoch ? conn.pending.find(tag) : conn.pending.end();
    reply = odd_reply(p != conn.pending.end() ? p->second.request.get() : nullptr);
    trace("n" + std::to_string(n) + " answers c" + std::to_string(c) +
          " oddly: " + reply.to_string());
  } else {
    if (acquire && !token.empty() && cleaned_up_.count({conn_id, token}) != 0)
      // Checker 5, the order on one connection: an acquire that runs after its own attempt's
      // clean-up ran there leaves keys that nobody will release (as after NOSCRIPT, re-sent as EVAL
      // behind that clean-up).
      violation("checker 5: an acquire of c" + std::to_string(c) + " ran on n" + std::to_string(n) +
                " after its own clean-up (token " + escape_bytes(token) +
                ") ran there on the same connection");
    try {
      reply = nd.redis->execute(argv, node_ms(n), conn_id);
    } catch (const std::exception& e) {
      violation(std::string("model gap: ") + e.what());
      return;
    }
    if (release && !token.empty() && !reply.is_error()) cleaned_up_.insert({conn_id, token});
    check_script(c, n, argv, reply);
    if (on("election")) check_leader_read(c, n, argv, reply);
    // Checker 11 on the node: after a script on the semaphore's keys (its first key one of them).
    if (argv.size() > 3 &&
        argv[3].compare(0, prefix_.size() + kSemaphore.size(), prefix_ + kSemaphore) == 0)
      check_permits_on(n);
    // Checker 13 on the node: after every script (a watchdog's batch may renew the read-write
    // lock behind other locks' keys).
    if (on("rwlock")) check_rw_on(n);
  }
  if (opt_.trace) {
    trace("n" + std::to_string(n) + " ran for c" + std::to_string(c) + ": " + reply.to_string());
    std::string d = nd.redis->dump(node_ms(n));
    std::string indented;
    std::istringstream in(d);
    for (std::string line; std::getline(in, line);) indented += "      " + line + "\n";
    trace_ += indented;
  }
  deliver_pubsub(n);
  bool slow = now_ < nd.slow_until;
  Us service = slow ? rng_.range(30 * kMs, 150 * kMs) : 20;
  Us depart = std::max(now_, nd.busy_until) + service;
  nd.busy_until = depart;
  // The slow fault outlasts its slowness: the commands it served slowly queue what comes after
  // them, whose replies wait for the last of them to leave, seconds after the slowness ended
  // where many came meanwhile. The fault lasts as long as that queue does, for the checkers that
  // judge only where no fault is on (4 and 9): the window the fault was drawn with (its length +
  // 500 ms) does not cover it. (Seed 144414: n1, slow for 823 ms from 1.75 s, queued replies
  // until 11.18 s; a renewal it ran at 8.85 s answered then, and its lease, watched at 7.19 s,
  // was lost at 10.50 s: checker 9 saw a calm renewal go unanswered.)
  if (slow || now_ < nd.slow_queue_until) faulty(depart + 500 * kMs);
  if (slow) nd.slow_queue_until = depart;
  at(depart, [this, c, n, epoch, tag, reply = std::move(reply)]() mutable {
    if (cut(c, n) || !nodes_[n].up) return;
    auto& conn = clients_[c].conns[n];
    if (conn.epoch != epoch) return;
    Us arrive = std::max(now_ + delay(), conn.to_client + 1);
    conn.to_client = arrive;
    client_at(c, arrive, [this, c, n, epoch, tag, reply = std::move(reply)]() mutable {
      client_receive(c, n, epoch, tag, std::move(reply));
    });
  });
}

Value World::odd_reply(const proto::Request* r) {
  using V = Value;
  auto many = [](std::size_t k, const V& v) { return V::array(std::vector<V>(k, v)); };
  std::vector<V> shapes;
  switch (r != nullptr ? r->decoder : proto::Decoder::acquire) {
    case proto::Decoder::acquire:
      // acquire.lua: {1, fence} (granted) or {0, ttl, holder} (refused).
      shapes = {V::array({V::integer(1)}),
                V::array({V::integer(1), V::bulk("7")}),
                V::array({V::integer(1), V::integer(-1)}),
                V::array({V::integer(1), V::integer(3), V::bulk("x")}),
                V::array({V::integer(2), V::integer(0)}),
                V::integer(1),
                V::status("OK"),
                V::array({}),
                V::nil()};
      break;
    case proto::Decoder::quick_acquire:
      // SET key token NX PX ttl GET: nil (it was set) or the holder's value (a bulk string). +OK is
      // what the command answers without its GET.
      shapes = {V::status("OK"), V::integer(1),        V::integer(0),
                V::array({}),    V::array({V::nil()}), V::array({V::integer(1), V::integer(0)})};
      break;
    case proto::Decoder::release: {
      // release.lua: how many of its keys it released, 0 to their number.
      auto k = static_cast<std::int64_t>(r->keys.size());
      shapes = {V::integer(-1),  V::integer(k + 1),          V::nil(),
                V::status("OK"), V::bulk(std::to_string(k)), V::array({V::integer(k)}),
                V::array({})};
      break;
    }
    case proto::Decoder::renew: {
      // renew.lua: one integer per lock of the batch, 1, 0 or -1.
      std::size_t m = r->items;
      shapes = {many(m + 1, V::integer(1)),
                many(m - 1, V::integer(1)),
                many(m, V::bulk("1")),
                many(m, V::integer(2)),
                V::integer(1),
                V::nil(),
                V::status("OK")};
      break;
    }
    case proto::Decoder::fence:
      // fence.lua: 1 (written back) or 0.
      shapes = {V::integer(2),   V::integer(-1), V::bulk("1"),
                V::status("OK"), V::nil(),       V::array({V::integer(1)})};
      break;
    case proto::Decoder::text:
      // INFO: a bulk string. Only the handshake sends it, which odd_reply leaves alone.
      shapes = {V::nil()};
      break;
    case proto::Decoder::leader_write:
    case proto::Decoder::leader_read:
      // leader.lua: 1, 0, -1, {} or {term, value, pttl}.
      shapes = {V::integer(7), V::bulk("1"), V::nil(), V::array({V::bulk("x"), V::bulk("v")})};
      break;
  }
  return shapes[static_cast<std::size_t>(
      rng_.range(0, static_cast<std::int64_t>(shapes.size()) - 1))];
}

void World::client_receive(int c, std::size_t n, std::uint64_t epoch, std::uint64_t tag,
                           Value reply) {
  auto& cl = clients_[c];
  auto& conn = cl.conns[n];
  if (conn.epoch != epoch) return;
  if (tag == kHandshakeTag) {
    if (!conn.in_session) begin_session(c, n, std::move(reply));
    return;
  }
  auto it = conn.pending.find(tag);
  if (it == conn.pending.end()) return;  // timed out already
  Pending p = it->second;
  conn.pending.erase(it);
  if (reply.is_error() && reply.error_code() == "NOSCRIPT" && !p.as_eval) {
    // The library's rule (lib/core/session.hpp): send the body when the script's order does not
    // matter or nothing went after it on this connection; otherwise fail and load the script
    // for next time.
    bool order_free = p.request->script != proto::ScriptId::acquire;
    conn.loaded = false;
    if (detail::after_noscript(order_free, !conn.pending.empty()) ==
        detail::NoscriptStep::resend_eval) {
      p.as_eval = true;
      conn.pending[tag] = p;
      trace("c" + std::to_string(c) + " NOSCRIPT from n" + std::to_string(n) + ": EVAL");
      transmit(c, n, tag);
      return;
    }
  }
  if (!p.reply_wanted) return;
  std::vector<NodeVote> votes;
  if (reply.is_error()) {
    auto code = reply.error_code();
    Errc e = code == "OOM"         ? Errc::redis_oom
             : code == "NOSCRIPT"  ? Errc::redis_noscript
             : code == "WRONGTYPE" ? Errc::redis_wrongtype
                                   : Errc::redis_error;
    NodeVote v;
    v.vote = Vote::failed;
    v.error = make_error_code(e);
    v.detail = reply.str;
    votes.assign(p.request->items, v);
  } else {
    auto r = to_hiredis(reply);
    votes.assign(p.request->items, NodeVote());
    switch (p.request->decoder) {
      case proto::Decoder::acquire:
        detail::acquire_vote(r.get(), votes[0]);
        break;
      case proto::Decoder::quick_acquire:
        detail::quick_acquire_vote(r.get(), votes[0]);
        break;
      case proto::Decoder::fence:
        detail::fence_vote(r.get(), votes[0]);
        break;
      case proto::Decoder::release:
        detail::release_vote(r.get(), p.request->keys.size(), votes[0]);
        break;
      case proto::Decoder::renew:
        detail::renew_votes(r.get(), votes.data(), votes.size());
        break;
      case proto::Decoder::text:
        detail::text_vote(r.get(), votes[0]);
        break;
      case proto::Decoder::leader_write:
        detail::leader_write_vote(r.get(), votes[0]);
        break;
      case proto::Decoder::leader_read:
        detail::leader_read_vote(r.get(), votes[0]);
        break;
    }
    for (auto& v : votes)
      if (v.vote == Vote::pending) {
        v.vote = Vote::failed;
        v.error = make_error_code(Errc::protocol_error);
      }
  }
  if (election_reply(c, n, p.id, votes)) return;
  Actions out;
  cl.brain->on_reply(p.id, n, std::move(votes), cnow(cl), out);
  apply(c, out);
}

void World::fail(int c, std::size_t n, std::uint64_t tag, Errc why, const std::string& detail) {
  auto& cl = clients_[c];
  auto& conn = cl.conns[n];
  auto it = conn.pending.find(tag);
  if (it == conn.pending.end()) return;
  Pending p = it->second;
  conn.pending.erase(it);
  if (!p.reply_wanted) return;
  NodeVote v;
  v.vote = Vote::failed;
  v.error = make_error_code(why);
  v.detail = detail;
  if (election_reply(c, n, p.id, std::vector<NodeVote>(p.request->items, v))) return;
  Actions out;
  cl.brain->on_reply(p.id, n, std::vector<NodeVote>(p.request->items, v), cnow(cl), out);
  apply(c, out);
}

}  // namespace redlock::sim::internal
