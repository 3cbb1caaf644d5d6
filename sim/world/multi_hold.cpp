// The multi_hold workload: several locks of one client, renewed in one batch, and another
// program that makes one of their keys a hash.

#include "world_impl.hpp"

namespace redlock::sim::internal {

void World::start_multi_hold(int c) {
  // Two or three locks at once, each its own acquire (no wait) and its own lease, watched as
  // soon as it is granted: granted together, their renewals fall due together and go out as one
  // renew.lua call per node, as lib/client's holds of many locks do. Every draw is hold_rng_'s.
  auto& cl = clients_[c];
  UserOp op;
  op.kind = OpKind::multi_hold;
  op.step = cl.op.step + 1;
  op.resources = kHoldResources;
  for (std::size_t i = op.resources.size(); i > 1; --i)
    std::swap(op.resources[i - 1],
              op.resources[static_cast<std::size_t>(hold_rng_.range(0, static_cast<Us>(i) - 1))]);
  if (hold_rng_.chance(0.5)) op.resources.resize(2);
  for (const auto& r : op.resources) {
    HeldPart part;
    part.resource = r;
    op.parts.push_back(part);
  }
  cl.op = op;
  cl.has_op = true;
  cl.op.waiting = true;
  cl.op.wait_start = now_;
  cl.op.wait_deadline_true = now_;
  std::string what;
  for (const auto& r : op.resources) what += " " + r;
  trace("c" + std::to_string(c) + " begins multi_hold" + what);
  auto step = cl.op.step;
  for (std::size_t i = 0; i < cl.op.parts.size(); ++i) {
    if (!cl.has_op || cl.op.step != step) return;
    AcquireSpec spec;
    spec.resources = {cl.op.parts[i].resource};
    spec.ttl = cl.config.ttl;
    Actions out;
    cl.op.parts[i].job = cl.brain->acquire(spec, cnow(cl), kEpochMs * 1000 + local(cl), out);
    apply(c, out);
  }
}

void World::part_delivered(int c, HeldPart& part, const AcquireResult& r) {
  auto& cl = clients_[c];
  part.waiting = false;
  if (r) {
    part.granted = true;
    part.lock = r.lock;
    Claim claim;
    claim.client = c;
    claim.resources = {part.resource};
    claim.start = now_;
    claim.deadline_local = us(r.lock.valid_until);
    claim.token = r.lock.token;
    part.claim = static_cast<int>(claims_.size());
    claims_.push_back(claim);
    Actions out;
    part.lease = cl.brain->watch(part.lock, cnow(cl), out);
    watched(c, part.lease);
    apply(c, out);
    expect_lost(c, part.lease);
  }
  bool all_in = true;
  for (const auto& p : cl.op.parts) all_in = all_in && !p.waiting;
  if (all_in) hold_all_in(c);
}

void World::hold_all_in(int c) {
  auto& cl = clients_[c];
  auto& op = cl.op;
  op.waiting = false;
  std::vector<std::size_t> held;
  for (std::size_t i = 0; i < op.parts.size(); ++i)
    if (op.parts[i].granted && !op.parts[i].ended) held.push_back(i);
  if (held.empty()) return op_end(c, false);
  ++op.step;
  auto step = op.step;
  Us ttl = cl.config.ttl.count() * kMs;
  user_step(
      c, step, [this, c] { op_end(c, true); }, hold_rng_.range(ttl, 3 * ttl));
  if (held.size() < 2 || !hold_rng_.chance(0.6)) return;
  // Another program turns one of the locks' keys into a hash on a quorum of nodes or more, so
  // that the nodes refuse that lock's renewal (renew.lua answers -1 for it): the lock is lost,
  // and the others in its batch must be renewed all the same (checker 9).
  auto part = held[static_cast<std::size_t>(hold_rng_.range(0, static_cast<Us>(held.size()) - 1))];
  std::vector<std::size_t> nodes(nodes_.size());
  for (std::size_t n = 0; n < nodes.size(); ++n) nodes[n] = n;
  for (std::size_t i = nodes.size(); i > 1; --i)
    std::swap(nodes[i - 1],
              nodes[static_cast<std::size_t>(hold_rng_.range(0, static_cast<Us>(i) - 1))]);
  auto q = static_cast<Us>(majority(nodes_.size()));
  nodes.resize(static_cast<std::size_t>(hold_rng_.range(q, static_cast<Us>(nodes_.size()))));
  Us after = hold_rng_.range(0, ttl / 2);
  at(now_ + after, [this, c, step, part, nodes] { overwrite_with_hash(c, step, part, nodes, 0); });
}

void World::overwrite_with_hash(int c, std::uint64_t step, std::size_t part,
                                std::vector<std::size_t> nodes, int tries) {
  auto& cl = clients_[c];
  if (!cl.alive || !cl.has_op || cl.op.step != step || cl.op.parts[part].ended) return;
  // Not while a renewal of this client is on its way: one that some nodes ran before the write
  // and answered yes would win, and the holder would believe in keys that are gone (outside the
  // protocol's assumptions: nobody else writes its keys). Between renewals it is the holder's
  // next renewal that meets the hash.
  bool renewing = false;
  for (const auto& conn : cl.conns)
    for (const auto& [tag, pending] : conn.pending)
      renewing = renewing || pending.request->script == proto::ScriptId::renew;
  if (renewing) {
    if (tries < 200)
      at(now_ + 5 * kMs, [this, c, step, part, nodes = std::move(nodes), tries]() mutable {
        overwrite_with_hash(c, step, part, std::move(nodes), tries + 1);
      });
    return;
  }
  const auto& lock = cl.op.parts[part].lock;
  std::string key = prefix_ + cl.op.parts[part].resource;
  std::string mine = lock.token.substr(0, lock.token.size() - 1);
  std::string which;
  for (auto n : nodes) {
    auto& nd = nodes_[n];
    // Only where the key still holds this lock, and where the HSET cannot be refused: a key
    // merely deleted would let another client take the lock while its holder believes.
    if (!nd.up || nd.redis->oom()) continue;
    auto k = nd.redis->key(key, node_ms(n));
    if (!k || k->type != KeyType::string || k->value.str.size() != lock.token.size() ||
        k->value.str.compare(0, mine.size(), mine) != 0)
      continue;
    // It lasts past the holder's belief (at most a lease from its last renewal), so nobody
    // takes the lock before the holder has stopped believing.
    nd.redis->execute({"DEL", key}, node_ms(n), 0);
    nd.redis->execute({"HSET", key, "owner", "another program"}, node_ms(n), 0);
    nd.redis->execute({"PEXPIRE", key, std::to_string(2 * cl.config.ttl.count())}, node_ms(n), 0);
    which += " n" + std::to_string(n);
  }
  trace("FAULT another program makes c" + std::to_string(c) + "'s " + escape_bytes(key) +
        " a hash on" + (which.empty() ? std::string(" no node") : which));
}

void World::part_end(int c, HeldPart& part, bool release) {
  if (!part.granted || part.ended) return;
  part.ended = true;
  auto& cl = clients_[c];
  close_claim(part.claim, now_);
  Actions out;
  if (part.lease != 0) cl.brain->unwatch(part.lease, cnow(cl), out);
  calm_watches_.erase({c, part.lease});
  part.lease = 0;
  if (release) {
    trace("c" + std::to_string(c) + " releases " + part.resource);
    cl.brain->release(part.lock, cnow(cl), out);
  }
  apply(c, out);
}

}  // namespace redlock::sim::internal
