// Checkers 4 and 5 while the run goes on (docs/simulation.md, "The checkers"): a free key is
// granted to a live waiter within the bound; no lock key has more time left than the largest lease.

#include "../world_impl.hpp"

namespace redlock::sim::internal {
namespace {

// The value of a free key that a waiter's turn holds (acquire.lua, TURN): "turn", a NUL byte,
// the waiter's ticket. Written out here, not taken from the library: a checker does not ask the
// code it judges.
bool holds_turn(const std::string& value) {
  return value.compare(0, 5, std::string("turn\0", 5)) == 0;
}

}  // namespace

// How long a free key (or slot) may stay free while `cl` waits for it, by the checker's own
// arithmetic: bound_free_, plus this waiter's own request timeout twice (a request lost to a
// fault that has just healed is answered by its timeout), plus, for every live waiter `seen` in
// line that began to wait before it (places are start times), one turn of its own that it may
// let run out first (a waiter that is slow to come, not gone: its channel still listens), its
// notice and its request.
Us World::waiter_bound(const ClientState& cl, const WaitersSeen& seen) const {
  std::size_t ahead = 0;
  for (const auto& [who, began] : seen)
    if (who.first != cl.index && began < cl.op.wait_start) ++ahead;
  return bound_free_ + 2 * (cl.config.request_timeout.count() - 200) * kMs +
         static_cast<Us>(ahead) * (kTurnCap + 2 * 200 * kMs);
}

void World::liveness_probe() {
  // Checker 4: where no fault is on, a key gone from every node is granted to a live waiter
  // within bound_free_.
  if (now_ >= end_) return;
  // Every 25 ms while anybody may wait; once every operation is over, only the lock keys' ttls
  // are left to watch, at a slower pace.
  bool busy = now_ < active_end_;
  for (const auto& cl : clients_) busy = busy || (cl.alive && cl.has_op);
  at(now_ + (busy ? 25 : 250) * kMs, [this] { liveness_probe(); });
  // Checker 5, lock keys: no lock key lives longer than the largest lease any client asks
  // for (a lock prolonged by somebody else's script outlives its purpose).
  std::vector<std::string> lock_names = resources_;
  lock_names.insert(lock_names.end(), hold_resources_.begin(), hold_resources_.end());
  if (on("election")) lock_names.push_back(kOffice);
  if (on("rwlock")) lock_names.push_back(kRwLock);
  for (const auto& r : lock_names) {
    if (long_keys_reported_.count(r) != 0) continue;
    for (std::size_t n = 0; n < nodes_.size(); ++n) {
      if (!nodes_[n].up) continue;
      auto k = nodes_[n].redis->key(prefix_ + r, node_ms(n));
      if (!k || k->type != KeyType::string) continue;
      // A waiter's turn that holds the free key lasts a turn at most (the cap), whatever the
      // leases.
      bool turn = holds_turn(k->value.str);
      std::int64_t most = turn ? kTurnCapMs : max_ttl_.count();
      if (k->pttl > most + 1 || k->pttl == -1) {
        long_keys_reported_.insert(r);
        violation("checker 5: lock key " + prefix_ + r + " on n" + std::to_string(n) + " has " +
                  std::to_string(k->pttl) + " ms left, more than " +
                  (turn ? "a turn's cap (" : "any lease (") + std::to_string(most) + " ms)");
        break;
      }
    }
  }
  if (on("permits")) permits_liveness();
  if (on("rwlock")) rw_liveness();
  if (now_ < faulty_until_) {
    free_since_.clear();
    waited_while_free_.clear();
    return;
  }
  // With election, the office too (checker 12's liveness: a vacant office goes to a live
  // campaigner within the same bound; a campaign is a waiting acquire of its lock key).
  std::vector<std::string> judged = resources_;
  if (on("election")) judged.push_back(kOffice);
  for (const auto& r : judged) {
    bool free = true;
    // A key that holds only a waiter's turn is free: nobody holds the lock.
    for (std::size_t n = 0; n < nodes_.size() && free; ++n) {
      auto k = nodes_[n].redis->key(prefix_ + r, node_ms(n));
      free = nodes_[n].up && (!k || (k->type == KeyType::string && holds_turn(k->value.str)));
    }
    if (!free) {
      free_since_.erase(r);
      waited_while_free_.erase(r);
      continue;
    }
    auto it = free_since_.emplace(r, now_).first;
    Us since = it->second;
    // Every live waiter seen in line for r while it is free: one that has given up since
    // (its late request timed out) may still have had its turn in this stretch.
    auto& seen = waited_while_free_[r];
    for (const auto& other : clients_)
      if (other.alive && other.has_op && other.op.waiting && other.op.resources.size() == 1 &&
          other.op.resources[0] == r)
        seen[{other.index, other.op.step}] = other.op.wait_start;
    if (now_ - since < bound_free_ || liveness_reported_.count(r) != 0) continue;
    for (const auto& cl : clients_) {
      const auto& op = cl.op;
      if (!cl.alive || !cl.has_op || !op.waiting || op.resources.size() != 1 ||
          op.resources[0] != r || op.kind == OpKind::cancel)
        continue;
      if (op.wait_start > since || op.wait_deadline_true < now_ + 10 * kMs) continue;
      if (cl.paused_until > since) continue;
      Us bound = waiter_bound(cl, seen);
      if (now_ - since < bound) continue;
      liveness_reported_.insert(r);
      violation(std::string(r == kOffice ? "checker 12: office " : "checker 4: ") + r +
                " free on every node since " + fmt_t(since) + " (" +
                std::to_string((now_ - since) / kMs) + " ms, bound " + std::to_string(bound / kMs) +
                " ms) while c" + std::to_string(cl.index) + " waits for it");
      break;
    }
  }
}

}  // namespace redlock::sim::internal
