// Connections: a new command connection's handshake (INFO, judged as lib/net/node.cpp does),
// a broken connection, and the subscriber connections with their pub/sub messages.

#include "world_impl.hpp"

namespace redlock::sim::internal {

void World::handshake(int c, std::size_t n) {
  auto& conn = clients_[c].conns[n];
  // The handshake has the connect timeout, as in lib/net/node.cpp: a lost INFO closes the
  // connection, and what waited for it fails.
  auto& cl = clients_[c];
  auto epoch = conn.epoch;
  Us limit = cl.clock.when(local(cl) + cl.config.connect_timeout.count() * kMs, now_);
  client_at(c, limit, [this, c, n, epoch] {
    auto& cn = clients_[c].conns[n];
    if (cn.epoch == epoch && cn.id != 0 && !cn.in_session)
      fail_conn(c, n, Errc::connect_timeout, /*with_subscriber=*/false);
  });
  if (cut(c, n)) return;
  Us arrive = std::max(now_ + delay(), conn.to_node + 1);
  conn.to_node = arrive;
  auto id = conn.id;
  at(arrive, [this, c, n, id, epoch] {
    node_receive(c, n, id, epoch, kHandshakeTag, {"INFO"}, false, false);
  });
}

void World::begin_session(int c, std::size_t n, Value info) {
  auto& cl = clients_[c];
  auto& conn = cl.conns[n];
  // INFO, read and judged by the library's safeguards (lib/core/safeguards.hpp); with the restart
  // guard on, a node younger than the largest lease in use stays ineligible for the rest of it.
  auto check = detail::judge(detail::parse_info(info.str), cl.config, std::string());
  if (check.refuse) {
    // As lib/net/node.cpp: a node that is no independent master (a replica) is never asked; the
    // connection closes, what waited for it fails, and the next request connects again.
    trace("c" + std::to_string(c) + " n" + std::to_string(n) + " refused: " + check.why);
    std::vector<std::uint64_t> held;
    std::swap(held, conn.held);
    if (nodes_[n].open.erase(conn.id) != 0) nodes_[n].redis->disconnect(conn.id);
    conn_owner_.erase(conn.id);
    conn.id = 0;
    conn.epoch++;
    for (auto tag : held) fail(c, n, tag, Errc::node_not_master, check.why);
    return;
  }
  conn.eligible_at = check.ineligible_for.count() > 0
                         ? local(cl) + static_cast<Us>(check.ineligible_for.count()) * kMs
                         : 0;
  conn.in_session = true;
  bool eligible = detail::eligible(local(cl), conn.eligible_at);
  if (!eligible) trace("c" + std::to_string(c) + " n" + std::to_string(n) + " not eligible yet");
  // As lib/net/node.cpp's begin_session: what waited goes out in order, then the late and the
  // refused fail (their callbacks may send more, behind them).
  std::vector<std::uint64_t> held;
  std::swap(held, conn.held);
  std::vector<std::pair<std::uint64_t, detail::HeldFate>> failed;
  for (auto tag : held) {
    auto it = conn.pending.find(tag);
    if (it == conn.pending.end()) continue;  // failed at its deadline already
    auto fate = detail::at_start(eligible, local(cl), it->second.deadline);
    if (fate == detail::HeldFate::send)
      transmit(c, n, tag);
    else
      failed.emplace_back(tag, fate);
  }
  for (auto [tag, fate] : failed) {
    if (fate == detail::HeldFate::late)
      fail(c, n, tag, Errc::request_timeout, "the connection's handshake ended too late");
    else
      fail(c, n, tag, Errc::node_restarting, "restarted less than the largest lease ago");
  }
}

// The connection broke (reset, node crash): whatever waits on it fails with an I/O error.
void World::fail_conn(int c, std::size_t n, Errc why, bool with_subscriber) {
  auto& cl = clients_[c];
  auto& conn = cl.conns[n];
  if (conn.id == 0 && conn.pending.empty()) return;
  if (conn.id != 0 && nodes_[n].open.erase(conn.id) != 0) nodes_[n].redis->disconnect(conn.id);
  conn.id = 0;
  conn.epoch++;
  conn.in_session = false;
  conn.held.clear();  // they are in `pending`: they fail below, never sent
  std::vector<std::uint64_t> tags;
  for (auto& [tag, p] : conn.pending) tags.push_back(tag);
  for (auto tag : tags)
    client_at(c, now_ + delay(),
              [this, c, n, tag, why] { fail(c, n, tag, why, "connection lost"); });
  if (!with_subscriber) return;
  auto& sub = cl.subs[n];
  if (sub.id != 0) {
    if (nodes_[n].open.erase(sub.id) != 0) nodes_[n].redis->disconnect(sub.id);
    sub.id = 0;
    sub.epoch++;
  }
  if (!cl.channels.empty() && !sub.reconnecting) {
    sub.reconnecting = true;
    client_at(c, now_ + rng_.range(10 * kMs, 100 * kMs), [this, c, n] {
      clients_[c].subs[n].reconnecting = false;
      if (clients_[c].subs[n].id == 0) sub_connect(c, n);
    });
  }
}

void World::sub_connect(int c, std::size_t n) {
  auto& cl = clients_[c];
  auto& sub = cl.subs[n];
  if (sub.id != 0 || !cl.alive) return;
  if (!nodes_[n].up || cut(c, n)) {
    if (!sub.reconnecting) {
      sub.reconnecting = true;
      client_at(c, now_ + rng_.range(20 * kMs, 150 * kMs), [this, c, n] {
        clients_[c].subs[n].reconnecting = false;
        sub_connect(c, n);
      });
    }
    return;
  }
  sub.id = next_conn_id_++;
  sub.epoch++;
  conn_owner_[sub.id] = ConnRef{c, n, true};
  for (const auto& ch : cl.channels) sub_send(c, n, "SUBSCRIBE", ch);
}

void World::sub_send(int c, std::size_t n, const std::string& verb, const std::string& channel) {
  auto& sub = clients_[c].subs[n];
  Us arrive = std::max(now_ + delay(), sub.to_node + 1);
  sub.to_node = arrive;
  auto id = sub.id;
  auto epoch = sub.epoch;
  auto incarnation = nodes_[n].incarnation;
  at(arrive, [this, c, n, id, epoch, verb, channel, incarnation] {
    auto& nd = nodes_[n];
    auto& s = clients_[c].subs[n];
    if (!nd.up || nd.incarnation != incarnation || s.id != id || s.epoch != epoch) return;
    nd.open.insert(id);
    nd.redis->execute({verb, channel}, node_ms(n), id);
    if (verb != "SUBSCRIBE") return;
    Us back = std::max(now_ + delay(), s.to_client + 1);
    s.to_client = back;
    client_at(c, back, [this, c, n, epoch, channel] {
      auto& me = clients_[c];
      if (me.subs[n].epoch != epoch || me.channels.count(channel) == 0) return;
      Actions out;
      me.brain->on_subscribed(n, channel, cnow(me), out);
      apply(c, out);
    });
  });
}

void World::deliver_pubsub(std::size_t n) {
  for (auto& d : nodes_[n].redis->take_deliveries()) {
    auto it = conn_owner_.find(d.connection);
    if (it == conn_owner_.end() || !it->second.sub) continue;
    int c = it->second.client;
    auto& cl = clients_[c];
    auto& sub = cl.subs[n];
    if (sub.id != d.connection || cut(c, n)) continue;
    trace("n" + std::to_string(n) + " tells c" + std::to_string(c) + " on " + d.channel + ": " +
          escape_bytes(d.message));
    // A waiter paused, then killed when its turn came: its turn began (somebody heard it).
    if (cl.die_on_turn && d.channel == cl.turn_channel && d.message.find('#') != std::string::npos)
      at(now_ + rng_.range(0, 20 * kMs), [this, c] { kill(c, "when its turn came"); });
    Us arrive = std::max(now_ + delay(), sub.to_client + 1);
    sub.to_client = arrive;
    auto epoch = sub.epoch;
    client_at(c, arrive, [this, c, n, epoch, ch = d.channel, msg = d.message] {
      auto& me = clients_[c];
      if (me.subs[n].epoch != epoch) return;
      Actions out;
      me.brain->on_message(n, ch, msg, cnow(me), out);
      check_turn_heard(c, ch, msg, out);
      apply(c, out);
    });
  }
}

}  // namespace redlock::sim::internal
