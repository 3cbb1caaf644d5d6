// The checks at the end of a run (docs/simulation.md, "The checkers"): checker 1 (no two claims
// overlap), 2 (fencing tokens increase), 6 (the storage refused every stale write) and 5 (after
// the quiet end only fence counters remain); and checker 11 on the holders of permits
// (permits.cpp).

#include "../world_impl.hpp"

namespace redlock::sim::internal {

void World::final_checks() {
  // Close what is still open (a holder stalled at the end): its belief ends with its deadline.
  for (auto& cl : claims_)
    if (cl.end < 0)
      cl.end = clients_[cl.client].clock.believe_until(cl.deadline_local, cl.start, now_);
  // Checker 1: no two claims of one resource overlap in true time.
  std::vector<std::pair<int, int>> overlaps;
  for (std::size_t i = 0; i < claims_.size(); ++i)
    for (std::size_t j = i + 1; j < claims_.size(); ++j) {
      const auto &a = claims_[i], &b = claims_[j];
      bool shared = false;
      for (const auto& r : a.resources)
        shared =
            shared || std::find(b.resources.begin(), b.resources.end(), r) != b.resources.end();
      // Permits of a semaphore share its resource: checker 11 judges them. Readers of a
      // read-write lock share theirs, and a reader beside a writer is checker 13's.
      if (!shared || (a.slot >= 0 && b.slot >= 0) || a.shared || b.shared) continue;
      if (a.start < b.end && b.start < a.end) {
        overlaps.emplace_back(static_cast<int>(i), static_cast<int>(j));
        if (overlaps.size() <= 3)
          violation("checker 1: c" + std::to_string(a.client) + " claims " + a.resources[0] +
                    " over [" + fmt_t(a.start) + ", " + fmt_t(a.end) + ") and c" +
                    std::to_string(b.client) + " over [" + fmt_t(b.start) + ", " + fmt_t(b.end) +
                    ")");
      }
    }
  check_permit_holders();
  if (on("election")) check_election();
  if (on("rwlock")) check_rw_claims();
  // Checker 2: fencing tokens of fenced grants strictly increase per resource.
  std::map<std::string, std::pair<std::uint64_t, Us>> last;
  std::vector<std::size_t> order(claims_.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return claims_[a].start < claims_[b].start;
  });
  for (auto i : order) {
    const auto& cl = claims_[i];
    // Fencing tokens grow only while the nodes keep their counters (docs/safety.md, "Fencing
    // tokens"): not judged in runs where nodes restart without their data.
    if (!cl.fenced || on("crash_wipe")) continue;
    for (const auto& r : cl.resources) {
      auto it = last.find(r);
      if (it != last.end() && cl.fence <= it->second.first)
        violation("checker 2: fenced grant of " + r + " at " + fmt_t(cl.start) + " has token " +
                  std::to_string(cl.fence) + ", not above " + std::to_string(it->second.first) +
                  " granted at " + fmt_t(it->second.second));
      last[r] = {cl.fence, cl.start};
    }
  }
  // Checker 6: the storage accepted no write from a holder whose claim overlapped another's.
  for (const auto& w : accepted_)
    for (const auto& [i, j] : overlaps)
      if (w.claim == i || w.claim == j) {
        violation("checker 6: storage accepted a write (fence " +
                  std::to_string(claims_[w.claim].fence) + ") at " + fmt_t(w.t) +
                  " from a holder whose claim overlapped another's");
        break;
      }
  // Still running acquires: every live waiter must have been served (or told no) by now.
  for (const auto& cl : clients_)
    if (cl.alive && cl.has_op && cl.op.waiting)
      violation("acquire of c" + std::to_string(cl.index) + " never ended");
  // Checker 5: after the quiet end only fence counters remain.
  for (std::size_t n = 0; n < nodes_.size(); ++n) {
    for (const auto& k : nodes_[n].redis->keys(node_ms(n))) {
      auto view = nodes_[n].redis->key(k, node_ms(n));
      // A fence counter: aux_of(lock key, "fence"), written out, not lib/core/keys.hpp's. (Not
      // `<key>:fence`, the counter's name before the auxiliary keys had their own namespace: the
      // scripts only read it now, and a key of that name is resource `<key>:fence`'s lock, which
      // must not outlive its purpose.)
      auto nul = k.find('\0');
      bool counter = nul != std::string::npos && k == aux_of(k.substr(0, nul), "fence");
      if (counter && view && view->pttl == -1 && view->type == KeyType::string) continue;
      // The office's leader record (leader.lua): kept without a ttl by design, stale once the
      // lock key no longer holds its token (the next read deletes it; a crashed leader's stays).
      if (on("election") && k == aux_of(prefix_ + kOffice, "leader") && view && view->pttl == -1 &&
          view->type == KeyType::string)
        continue;
      violation("checker 5: n" + std::to_string(n) + " still has key " + escape_bytes(k) +
                " at the quiet end");
    }
  }
}

}  // namespace redlock::sim::internal
