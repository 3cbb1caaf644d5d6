// The faults (docs/simulation.md, "Faults"): their schedule for a seed (crash, restart,
// partition, slowness, resets, clock jumps, pauses, OOM, hostile, replica, ...), late_grant's
// stalls, another program's writes (hostile), and the negative controls.

#include "world_impl.hpp"

namespace redlock::sim::internal {

void World::crash(std::size_t n, bool keep, Us down_for) {
  auto& nd = nodes_[n];
  if (!nd.up) return;
  trace("FAULT n" + std::to_string(n) + " crashes, restarts " + (keep ? "with" : "WITHOUT") +
        " its data in " + std::to_string(down_for / kMs) + " ms");
  nd.up = false;
  nd.down_since = now_;
  // The restart guard keeps the node out for the largest lease after it is back.
  // (INFO's uptime is whole seconds, rounded down: up to 1 s more.)
  faulty(now_ + down_for + (guard_ ? max_ttl_.count() * kMs + kSec : 0) + 500 * kMs);
  for (std::size_t c = 0; c < clients_.size(); ++c)
    fail_conn(static_cast<int>(c), n, Errc::connection_lost);
  nd.open.clear();
  at(now_ + down_for, [this, n, keep] { restart(n, keep); });
}

void World::restart(std::size_t n, bool keep) {
  auto& nd = nodes_[n];
  if (nd.up) return;
  nd.redis->restart(keep, node_ms(n));
  nd.incarnation++;
  nd.up = true;
  nd.busy_until = now_;
  nd.slow_queue_until = 0;  // its queue went down with it
  trace("n" + std::to_string(n) + " is up again");
}

void World::schedule_faults() {
  Us span = active_end_;
  auto some = [&](int lo, int hi) { return static_cast<int>(rng_.range(lo, hi)); };
  std::size_t nn = nodes_.size();
  if (on("crash_keep"))
    for (int i = some(1, 3); i > 0; --i) {
      auto n = static_cast<std::size_t>(rng_.range(0, static_cast<std::int64_t>(nn) - 1));
      Us down = rng_.range(1 * kMs, 2 * max_ttl_.count() * kMs);
      at(rng_.range(0, span), [this, n, down] { crash(n, true, down); });
    }
  if (on("crash_wipe"))
    for (int i = some(1, 3); i > 0; --i) {
      auto n = static_cast<std::size_t>(rng_.range(0, static_cast<std::int64_t>(nn) - 1));
      // Early (the clients' restart guard keeps it out) or after the guard's delay.
      Us guard = max_ttl_.count() * kMs;
      Us down = rng_.chance(0.5) ? rng_.range(1 * kMs, guard / 2)
                                 : guard + guard / 50 + 3 * kMs + rng_.range(0, guard);
      at(rng_.range(0, span), [this, n, down] { crash(n, false, down); });
    }
  if (on("pause"))
    for (int i = some(1, 3); i > 0; --i) {
      int c = static_cast<int>(rng_.range(0, static_cast<std::int64_t>(clients_.size()) - 1));
      Us len = rng_.range(max_ttl_.count() * kMs / 2, 3 * max_ttl_.count() * kMs);
      at(rng_.range(0, span), [this, c, len] {
        auto& cl = clients_[c];
        if (!cl.alive) return;
        trace("FAULT c" + std::to_string(c) + " stalls for " + std::to_string(len / kMs) + " ms");
        cl.stall(now_, len);
      });
    }
  if (on("slow"))
    for (int i = some(1, 2); i > 0; --i) {
      auto n = static_cast<std::size_t>(rng_.range(0, static_cast<std::int64_t>(nn) - 1));
      Us len = rng_.range(100 * kMs, 1 * kSec);
      at(rng_.range(0, span), [this, n, len] {
        trace("FAULT n" + std::to_string(n) + " slow for " + std::to_string(len / kMs) + " ms");
        nodes_[n].slow_until = now_ + len;
        faulty(now_ + len + 500 * kMs);
      });
    }
  if (on("reset"))
    for (int i = some(1, 6); i > 0; --i) {
      int c = static_cast<int>(rng_.range(0, static_cast<std::int64_t>(clients_.size()) - 1));
      auto n = static_cast<std::size_t>(rng_.range(0, static_cast<std::int64_t>(nn) - 1));
      at(rng_.range(0, span), [this, c, n] {
        if (!clients_[c].alive) return;
        trace("FAULT c" + std::to_string(c) + "'s connections to n" + std::to_string(n) + " reset");
        fail_conn(c, n, Errc::connection_lost);
        faulty(now_ + 500 * kMs);
      });
    }
  if (on("partition"))
    for (int i = some(1, 3); i > 0; --i) {
      auto n = static_cast<std::size_t>(rng_.range(0, static_cast<std::int64_t>(nn) - 1));
      Us len = rng_.range(50 * kMs, 1 * kSec);
      bool whole = rng_.chance(0.5);
      int c = static_cast<int>(rng_.range(0, static_cast<std::int64_t>(clients_.size()) - 1));
      at(rng_.range(0, span), [this, n, len, whole, c] {
        faulty(now_ + len + 500 * kMs);
        if (whole) {
          trace("FAULT n" + std::to_string(n) + " cut off for " + std::to_string(len / kMs) +
                " ms");
          nodes_[n].isolated_until = std::max(nodes_[n].isolated_until, now_ + len);
        } else {
          trace("FAULT c" + std::to_string(c) + " cut off from n" + std::to_string(n) + " for " +
                std::to_string(len / kMs) + " ms");
          cuts_.insert({c, n});
          at(now_ + len, [this, c, n] { cuts_.erase({c, n}); });
        }
      });
    }
  if (on("clock_jump")) {
    // Within the allowance: at most one jump of 1 ms per clock that matters, forward for nodes
    // (a key's life is shortened), back for clients (a belief is lengthened). The drift allowance
    // (ttl * 1 % + 2 ms, at least 5 ms here) covers them, the drift rates (0.15 % each way, so
    // 0.3 % of a lease) and the node's whole-millisecond clock (1 ms) together.
    for (std::size_t n = 0; n < nn; ++n)
      if (rng_.chance(0.5)) {
        Us by = rng_.range(0, 1 * kMs);
        at(rng_.range(0, span), [this, n, by] {
          trace("FAULT n" + std::to_string(n) + "'s clock jumps +" + std::to_string(by) + " us");
          nodes_[n].clock.jump(now_, by);
          ++disturbances_;
        });
      }
    for (std::size_t c = 0; c < clients_.size(); ++c)
      if (rng_.chance(0.5)) {
        Us by = rng_.chance(0.5) ? -rng_.range(0, 1 * kMs) : rng_.range(0, 50 * kMs);
        int ci = static_cast<int>(c);
        at(rng_.range(0, span), [this, ci, by] {
          trace("FAULT c" + std::to_string(ci) + "'s clock jumps " + std::to_string(by) + " us");
          clients_[ci].clock.jump(now_, by);
          ++disturbances_;
          // Timers armed on the old reading fire by the new one.
          auto& cl = clients_[ci];
          auto timers = cl.timers;
          for (auto& [id, when] : timers) {
            auto tid = id;
            auto gen = ++cl.timer_gen;
            cl.timers[tid] = {when.first, gen};
            client_at(ci, cl.clock.when(when.first, now_), [this, ci, tid, gen] {
              auto& me = clients_[ci];
              auto it = me.timers.find(tid);
              if (it == me.timers.end() || it->second.second != gen) return;
              me.timers.erase(it);
              Actions o;
              me.brain->on_timer(tid, cnow(me), o);
              apply(ci, o);
            });
          }
        });
      }
  }
  if (on("die"))
    for (int i = some(0, 2); i > 0; --i) {
      int c = static_cast<int>(rng_.range(0, static_cast<std::int64_t>(clients_.size()) - 1));
      at(rng_.range(0, span), [this, c] { kill(c, "at random"); });
    }
  if (on("oom"))
    for (int i = some(1, 2); i > 0; --i) {
      auto n = static_cast<std::size_t>(rng_.range(0, static_cast<std::int64_t>(nn) - 1));
      Us len = rng_.range(50 * kMs, 1 * kSec);
      at(rng_.range(0, span), [this, n, len] {
        trace("FAULT n" + std::to_string(n) + " out of memory for " + std::to_string(len / kMs) +
              " ms");
        nodes_[n].redis->set_oom(true);
        faulty(now_ + len + 500 * kMs);
        at(now_ + len, [this, n] { nodes_[n].redis->set_oom(false); });
      });
    }
  if (on("odd_reply"))
    for (int i = some(1, 2); i > 0; --i) {
      auto n = static_cast<std::size_t>(rng_.range(0, static_cast<std::int64_t>(nn) - 1));
      Us len = rng_.range(50 * kMs, 1 * kSec);
      at(rng_.range(0, span), [this, n, len] {
        trace("FAULT n" + std::to_string(n) + " answers requests oddly for " +
              std::to_string(len / kMs) + " ms");
        nodes_[n].odd_until = std::max(nodes_[n].odd_until, now_ + len);
        faulty(now_ + len + 500 * kMs);
      });
    }
  if (on("hostile"))
    for (auto i = hostile_rng_.range(1, 3); i > 0; --i) {
      auto n = static_cast<std::size_t>(hostile_rng_.range(0, static_cast<std::int64_t>(nn) - 1));
      bool ticket = hostile_rng_.chance(0.5);
      at(hostile_rng_.range(0, span), [this, n, ticket] { plant_hostile(n, ticket); });
    }
  // The quiet end: from active_end_ on, every fault is healed.
  at(active_end_, [this] {
    trace("quiet period begins: faults healed");
    for (std::size_t n = 0; n < nodes_.size(); ++n) {
      nodes_[n].odd_until = 0;
      nodes_[n].slow_until = 0;
      nodes_[n].isolated_until = 0;
      nodes_[n].redis->set_oom(false);
    }
    cuts_.clear();
  });
}

void World::trigger_control() {
  if (control_done_ || now_ >= active_end_) return;
  bool held = false;
  for (const auto& cl : claims_) held = held || cl.end < 0;
  if (!held) {
    at(now_ + 20 * kMs, [this] { trigger_control(); });
    return;
  }
  control_done_ = true;
  std::size_t q = majority(nodes_.size());
  if (opt_.control == Control::wipe_majority) {
    trace("CONTROL a majority restarts without its data, no restart guard");
    for (std::size_t n = 0; n < q; ++n) crash(n, false, 1 * kMs);
  } else {
    trace("CONTROL a quorum's clocks jump forward by a lease");
    for (std::size_t n = 0; n < q; ++n) nodes_[n].clock.jump(now_, max_ttl_.count() * kMs);
    ++disturbances_;
  }
}

// late_grant: now and then a client stalls (a GC pause) right after an acquire or a fencing
// write-back left it, for 85–99 % of its ttl, so that it reads the replies with about as little
// validity left as the minimum useful validity (Config::min_validity_ratio, 10 % of the ttl): some
// grants keep just enough, some just too little, some none. Only the validity rule may decide
// which (checker 7: a grant keeps the least validity). Shorter than a lease, unlike `pause`.
void World::late_stall(int c, const proto::Request& r) {
  bool grants = r.decoder == proto::Decoder::acquire ||
                r.decoder == proto::Decoder::quick_acquire || r.decoder == proto::Decoder::fence;
  // A fault like the others: over when the active phase ends (the quiet end heals everything).
  if (!grants || now_ >= active_end_ || late_left_ == 0 || !late_rng_.chance(0.25)) return;
  --late_left_;
  auto& cl = clients_[c];
  Us ttl = cl.config.ttl.count() * kMs;
  Us len = late_rng_.range(ttl * 85 / 100, ttl * 99 / 100);
  trace("FAULT c" + std::to_string(c) + " stalls for " + std::to_string(len / kMs) +
        " ms after a request left");
  cl.stall(now_, len);
  faulty(cl.paused_until + 500 * kMs);
}

// hostile: another program writes on node n, at a resource's auxiliary keys: a string (with a
// ttl) where the line's turns go, or a ticket of its own at the head of the line, whose turn is
// as long as a day and whose listener leaves after up to 3 s.
void World::plant_hostile(std::size_t n, bool ticket) {
  auto& nd = nodes_[n];
  if (!nd.up) return;
  std::string key = prefix_ + hostile_rng_.pick(resources_);
  auto id = next_conn_id_++;
  if (!ticket) {
    std::int64_t ms = hostile_rng_.range(20, 1000);
    std::string value = "hostile" + std::to_string(id);
    std::string turns = aux_of(key, "turns");
    auto r =
        nd.redis->execute({"SET", turns, value, "NX", "PX", std::to_string(ms)}, node_ms(n), id);
    trace("FAULT n" + std::to_string(n) + " gets a string at " + escape_bytes(turns) + " for " +
          std::to_string(ms) + " ms: " + r.to_string());
    if (r.kind == Value::Kind::status)
      planted_.push_back(Planted{n, turns, value, node_ms(n) + ms});
    faulty(now_ + ms * kMs + 500 * kMs);
    return;
  }
  std::string channel = "turn:hostile" + std::to_string(id);
  std::string head = channel + "#1@86400000";
  std::string queue = aux_of(key, "queue");
  nd.redis->subscribe(id, channel);
  auto r = nd.redis->execute({"ZADD", queue, std::to_string(kEpochMs * 1000 - 1000000), head},
                             node_ms(n), id + 1);
  ++next_conn_id_;
  if (nd.redis->key(queue, node_ms(n)) && nd.redis->key(queue, node_ms(n))->pttl < 0)
    nd.redis->execute({"PEXPIRE", queue, "5000"}, node_ms(n), id + 1);
  Us stays = hostile_rng_.range(0, 3 * kSec);
  trace("FAULT n" + std::to_string(n) + " gets " + escape_bytes(head) + " in " +
        escape_bytes(queue) + ", listened to for " + std::to_string(stays / kMs) +
        " ms: " + r.to_string());
  auto incarnation = nd.incarnation;
  at(now_ + stays, [this, n, id, incarnation] {
    if (nodes_[n].incarnation == incarnation) nodes_[n].redis->disconnect(id);
  });
  faulty(now_ + stays + kTurnCap + 500 * kMs);
}

}  // namespace redlock::sim::internal
