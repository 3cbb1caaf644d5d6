// Checker 11 (docs/simulation.md, "The checkers"): a semaphore of k permits never has more than k
// holders, never two holders of one slot, and never holders of two numbers of permits at once;
// on every node, a slot that is held keeps its semaphore's k at least as long; and a free slot
// goes to a live waiter within a bound.

#include "../world_impl.hpp"

namespace redlock::sim::internal {
namespace {

// A free key that a waiter's turn holds ("turn", NUL, the ticket: acquire.lua's TURN), written
// out here as checkers/liveness.cpp does: no holder of a slot.
bool is_turn(const std::string& value) {
  return value.compare(0, 5, std::string("turn\0", 5)) == 0;
}

}  // namespace

// After every script a node ran (with `permits` on): each slot key of the semaphore that holds a
// token has the semaphore's number of permits kept beside it (aux "permits", acquire.lua), a
// number greater than that slot, lasting at least as long as the slot's key. That is what lets
// the nodes refuse another k while a permit of the first may be valid: a release that lets k go
// while a slot is held, or a renewal that prolongs a slot and not k, breaks it on the spot.
// Slots 0..kMostPermits-1 (slot_of, the checker's own names: slot 0 the lock key, slot i > 0
// its auxiliary key "slot<i>").
void World::check_permits_on(std::size_t n) {
  if (!on("permits") || !nodes_[n].up) return;
  const auto& node = *nodes_[n].redis;
  std::int64_t now = node_ms(n);
  std::string lock = prefix_ + kSemaphore;
  auto kept = node.key(aux_of(lock, "permits"), now);
  auto report = [&](const std::string& rule, const std::string& what) {
    if (!reported11_.insert("node|" + rule).second) return;
    violation("checker 11: n" + std::to_string(n) + ": " + what);
  };
  for (int slot = 0; slot < kMostPermits; ++slot) {
    auto k = node.key(slot_of(lock, slot), now);
    if (!k || k->type != KeyType::string || is_turn(k->value.str)) continue;
    std::string which =
        "slot " + std::to_string(slot) + " is held (" + std::to_string(k->pttl) + " ms left)";
    if (!kept || kept->type != KeyType::string) {
      report("gone", which + ", and no number of permits is kept");
      continue;
    }
    long permits = std::strtol(kept->value.str.c_str(), nullptr, 10);
    if (slot >= permits)
      report("range", which + ", but the number of permits kept is " + kept->value.str);
    if (kept->pttl >= 0 && (k->pttl < 0 || kept->pttl < k->pttl))
      report("short", which + ", but the number of permits is kept only " +
                          std::to_string(kept->pttl) + " ms");
  }
}

// At the end, from the claims in true time (each from its grant to its release, or to the last
// instant its client's clock read less than its believed deadline, as checker 1's): at the start
// of every permit's claim, the claims that hold then are at most k, of one k, each of another
// slot, and its slot is one of 0..k-1. (A count of overlapping intervals is highest at the start
// of one of them, so these instants are every instant.)
void World::check_permit_holders() {
  std::vector<const Claim*> permits;
  for (const auto& cl : claims_)
    if (cl.slot >= 0 || cl.permits > 0) permits.push_back(&cl);
  auto report = [&](const std::string& rule, const std::string& what) {
    if (!reported11_.insert("holders|" + rule).second) return;
    violation("checker 11: " + what);
  };
  auto who = [](const Claim& c) {
    return "c" + std::to_string(c.client) + " (slot " + std::to_string(c.slot) +
           " of k=" + std::to_string(c.permits) + ", [" + fmt_t(c.start) + ", " + fmt_t(c.end) +
           "))";
  };
  for (const auto* x : permits) {
    if (x->slot < 0 || x->slot >= x->permits)
      report("slot", who(*x) + " was granted a slot outside 0.." + std::to_string(x->permits - 1));
    if (x->end <= x->start) continue;
    int holders = 0;
    for (const auto* y : permits) {
      if (y->resources != x->resources || !(y->start <= x->start && x->start < y->end)) continue;
      ++holders;
      if (y == x) continue;
      if (y->permits != x->permits)
        report("k", who(*x) + " and " + who(*y) + " hold permits of two numbers at once");
      else if (y->slot == x->slot)
        report("same", who(*x) + " and " + who(*y) + " hold one slot at once");
    }
    if (holders > x->permits)
      report("count", std::to_string(holders) + " clients hold a permit of " + x->resources[0] +
                          " at " + fmt_t(x->start) + ", more than its k=" +
                          std::to_string(x->permits) + " (the latest: " + who(*x) + ")");
  }
}

// While the run goes on (from liveness_probe, every 25 ms): where no fault is on, a slot of the
// semaphore (0..k-1 of the workload's k) that is free on every node, or holds only a waiter's
// turn, is granted to a live waiter for a permit of that k within checker 4's bound, by the same
// arithmetic: bound_free_ (a turn nobody takes ends within the turn cap; the next is told, asks
// and is answered; a waiter whose notice was lost asks again within its retry delay), the
// waiter's own two request timeouts, and one turn, notice and request for each live waiter that
// began to wait before it (each may let a turn run out first, on this slot or another). Not
// while a node keeps another number of permits: a waiter of the workload's k is then refused.
void World::permits_liveness() {
  std::string lock = prefix_ + kSemaphore;
  bool calm = now_ >= faulty_until_;
  for (std::size_t n = 0; n < nodes_.size() && calm; ++n) {
    if (!nodes_[n].up) {
      calm = false;
      break;
    }
    auto kept = nodes_[n].redis->key(aux_of(lock, "permits"), node_ms(n));
    calm = !kept || (kept->type == KeyType::string && kept->value.str == std::to_string(permits_));
  }
  if (!calm) {
    slot_free_since_.clear();
    waited_for_slot_.clear();
    return;
  }
  for (int slot = 0; slot < permits_; ++slot) {
    bool free = true;
    for (std::size_t n = 0; n < nodes_.size() && free; ++n) {
      auto k = nodes_[n].redis->key(slot_of(lock, slot), node_ms(n));
      free = !k || (k->type == KeyType::string && is_turn(k->value.str));
    }
    if (!free) {
      slot_free_since_.erase(slot);
      waited_for_slot_.erase(slot);
      continue;
    }
    Us since = slot_free_since_.emplace(slot, now_).first->second;
    auto waits = [&](const ClientState& cl) {
      return cl.alive && cl.has_op && cl.op.kind == OpKind::permit && cl.op.waiting &&
             cl.op.permits == permits_;
    };
    auto& seen = waited_for_slot_[slot];
    for (const auto& cl : clients_)
      if (waits(cl)) seen[{cl.index, cl.op.step}] = cl.op.wait_start;
    if (now_ - since < bound_free_ || reported11_.count("free") != 0) continue;
    for (const auto& cl : clients_) {
      const auto& op = cl.op;
      if (!waits(cl) || op.wait_start > since || op.wait_deadline_true < now_ + 10 * kMs ||
          cl.paused_until > since)
        continue;
      Us bound = waiter_bound(cl, seen);
      if (now_ - since < bound) continue;
      reported11_.insert("free");
      violation("checker 11: slot " + std::to_string(slot) + " of " + kSemaphore +
                " free on every node since " + fmt_t(since) + " (" +
                std::to_string((now_ - since) / kMs) + " ms, bound " + std::to_string(bound / kMs) +
                " ms) while c" + std::to_string(cl.index) + " waits for a permit");
      break;
    }
  }
}

}  // namespace redlock::sim::internal
