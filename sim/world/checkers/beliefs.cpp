// Checkers 3 (its second half), 7 and 9 (docs/simulation.md, "The checkers"): a lost-lock signal
// comes no later than the believed deadline; a belief is backed by a quorum of keys the moment
// it is believed; a lock is lost only when the nodes say so.

#include "../world_impl.hpp"

namespace redlock::sim::internal {

void World::watched(int c, std::uint64_t lease) {
  // Checker 9 judges every lease watched with no fault on (and none since: check_lost) that a
  // renewal could still save: one with time enough left for the watchdog to renew it before it
  // must give it up. The checker's own arithmetic on the configuration, not the watchdog's
  // functions (proto::lease_of, first_renewal, WatchdogMachine::margin), which it judges:
  // - the watchdog gives a lock up a margin before its believed deadline: the lease/20, between
  //   2 ms and 100 ms (docs/guide-held-locks.md, "What lost means");
  // - with no fault, a renewal is answered within a round trip, kCalmRoundTrip (network.cpp's
  //   delay() each way, the node's service);
  // - the watchdog cannot know the round trip, so it may put the renewal off; the checker holds
  //   it to no later than halfway from the watch to the moment it gives up, so that a lease with
  //   more than two round trips left before that moment is saved by the watchdog's renewal.
  // So a lease is judged when, in true time, more than 2 * kCalmRoundTrip lies between its watch
  // and the instant its client's clock reads the deadline less the margin. (It judged only leases
  // with two thirds of their ttl left before, from when the watchdog renewed first a third of a
  // ttl after the watch: it missed every lock granted late.)
  if (now_ < faulty_until_) return;
  auto& cl = clients_[c];
  const Lock* lock = watched_lock(cl, lease);
  if (lock == nullptr) return;
  Us margin = std::clamp<Us>(lock->ttl.count() * kMs / 20, 2 * kMs, 100 * kMs);
  Us gives_up = cl.clock.when(us(lock->valid_until) - margin, now_);
  if (gives_up - now_ <= 2 * kCalmRoundTrip) return;
  calm_watches_[{c, lease}] = {now_, disturbances_};
}

void World::check_lost(int c, std::uint64_t lease, const Lock& lock, LostReason reason) {
  // Checker 9: a lock is lost only when a quorum no longer holds it or its renewals could not
  // reach one. Where no fault came since it was watched (no crash, slowness, reset, partition,
  // OOM, odd reply, clock jump; no stall of its client), every renewal is answered; a lock
  // reported lost while a quorum of nodes still holds each of its keys with its token was given
  // up for nothing: a renewal refused or failed because of something else (another lock's bad
  // key in the same batch: the mutant batch_couples_fates).
  auto it = calm_watches_.find({c, lease});
  if (it == calm_watches_.end()) return;
  auto [since, seen] = it->second;
  calm_watches_.erase(it);
  auto& cl = clients_[c];
  if (disturbances_ != seen || cl.last_pause_end > since) return;
  std::string mine = lock.token.substr(0, lock.token.size() - 1);
  std::size_t held = 0;
  auto keys = keys_held(prefix_, lock);  // a permit's: its slot key
  // A reader of the read-write lock holds a node while its token is an unexpired reader there.
  bool reader = cl.has_op && cl.op.kind == OpKind::reader;
  for (std::size_t n = 0; n < nodes_.size(); ++n) {
    if (reader) {
      if (nodes_[n].up && reader_end(n, lock.token) >= 0) ++held;
      continue;
    }
    bool all = nodes_[n].up;
    for (const auto& key : keys) {
      auto k = nodes_[n].redis->key(key, node_ms(n));
      all = all && k && k->type == KeyType::string && k->value.str.size() == lock.token.size() &&
            k->value.str.compare(0, mine.size(), mine) == 0;
    }
    if (all) ++held;
  }
  if (held < majority(nodes_.size())) return;
  violation("checker 9: c" + std::to_string(c) + " lost its lock on " + lock.resources[0] + " (" +
            (reason == LostReason::not_held ? "not held" : "expired") + ") at local " +
            fmt_t(local(cl)) + " while " + std::to_string(held) + " of " +
            std::to_string(nodes_.size()) + " nodes hold it, with no fault since " + fmt_t(since));
}

void World::check_backed(int c, const Lock& lock, const char* what) {
  // Checker 7: when a client comes to believe it holds until a deadline (a grant, an extend, a
  // renewal), a quorum of nodes holds every key of the lock with its token, each lasting at
  // least until the client's clock reads that deadline (in true time, with the clocks as they
  // run now). Stronger than checker 1, which needs a
  // second holder to come: it sees a belief that outruns its keys at once. A key a waiter marked
  // ends in '!' instead of the token's '.'.
  // Not in runs with crash_wipe: a node that voted and was then wiped leaves a belief backed by
  // fewer keys, which the restart guard makes safe (the wiped node refuses to grant for a lease).
  // A node down with its data (crash_keep) still counts: its keys come back with it.
  if (guard_) return;
  auto& cl = clients_[c];
  Us deadline = cl.clock.when(us(lock.valid_until), now_);
  std::string mine = lock.token.substr(0, lock.token.size() - 1);
  std::size_t backed = 0;
  auto keys = keys_held(prefix_, lock);  // a permit's: its slot key
  // A reader of the read-write lock: its token among the node's unexpired readers, its score (the
  // end of its lease on the node's clock) lasting at least until the client's deadline.
  bool reader = cl.has_op && cl.op.kind == OpKind::reader;
  for (std::size_t n = 0; n < nodes_.size(); ++n) {
    if (reader) {
      std::int64_t end_ms = reader_end(n, lock.token);
      if (end_ms < 0) continue;
      Us local_end = (end_ms - kEpochMs) * kMs;
      if (nodes_[n].clock.when(local_end, now_) >= deadline) ++backed;
      continue;
    }
    bool all = true;
    for (const auto& key : keys) {
      auto k = nodes_[n].redis->key(key, node_ms(n));
      if (!k || k->type != KeyType::string || k->value.str.size() != lock.token.size() ||
          k->value.str.compare(0, mine.size(), mine) != 0) {
        all = false;
        break;
      }
      if (k->pttl < 0) continue;  // no expiry: checker 5's concern
      Us local_end = nodes_[n].clock.local(now_) + k->pttl * kMs;
      if (nodes_[n].clock.when(local_end, now_) < deadline) all = false;
    }
    if (all) ++backed;
  }
  if (backed >= majority(nodes_.size())) return;
  violation("checker 7: c" + std::to_string(c) + "'s " + what + " believes until local " +
            fmt_t(us(lock.valid_until)) + ", but only " + std::to_string(backed) +
            " nodes hold its keys that long");
}

void World::expect_lost(int c, std::uint64_t lease) {
  // Checker 3, its other half: a watched lock whose believed deadline passes without a renewal
  // is reported lost by then (the watchdog's timer fires on the client's clock when it reads the
  // deadline less its margin). Looked at 1 ms of true time after the clock reads the deadline.
  auto& cl = clients_[c];
  const Lock* lock = watched_lock(cl, lease);
  if (lock == nullptr) return;
  Us deadline = us(lock->valid_until);
  at(cl.clock.when(deadline, now_) + kMs, [this, c, lease, deadline] {
    auto& me = clients_[c];
    const Lock* l = watched_lock(me, lease);
    if (!me.alive || l == nullptr) return;
    if (us(l->valid_until) != deadline) return;              // renewed meanwhile: a later look
    if (local(me) < deadline) return expect_lost(c, lease);  // its clock went back meanwhile
    // A stalled client hears it when it runs again (the late half judges that).
    if (now_ < me.paused_until || me.last_pause_end >= me.clock.first_reading(deadline)) return;
    violation("checker 3: c" + std::to_string(c) + " still holds a watched lock at local " +
              fmt_t(local(me)) + ", past its believed deadline " + fmt_t(deadline) +
              ", and heard nothing of it lost");
  });
}

}  // namespace redlock::sim::internal
