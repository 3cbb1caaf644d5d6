// Checker 12 (docs/simulation.md, "The checkers"): leader election. Never two leaders at once and
// never two grants of one term; terms increase from grant to grant; a node reports a leader only
// while its lock key holds that leader's grant; a read leader is its term's campaign (in
// election.cpp); a vacant office goes to a live campaigner within checker 4's bound (liveness.cpp).
// Its own arithmetic: the grants' terms and tokens as the workload saw them, the nodes' keys, the
// leader record's form written out from leader.lua's header, nothing asked of the library.

#include "../world_impl.hpp"

namespace redlock::sim::internal {

// After leader.lua ran on node n: where it answered a read with a leader ({term, value, pttl}),
// the node's lock key holds the token of the grant of that term (itself, or as a waiter marks it:
// '!' for its last '.'), and its leader record ("term|token|value") names that token.
void World::check_leader_read(int c, std::size_t n, const std::vector<std::string>& argv,
                              const Value& reply) {
  if (argv.size() < 5 || (argv[0] != "EVALSHA" && argv[0] != "EVAL")) return;
  if (argv[1] != (argv[0] == "EVALSHA" ? kLeader.sha : kLeader.body)) return;
  if (argv[2] != "1" || argv[4] != "read") return;
  if (reply.kind != Value::Kind::array || reply.items.size() != 3) return;
  const auto& node = *nodes_[n].redis;
  std::int64_t now = node_ms(n);
  const std::string& key = argv[3];
  std::string term = reply.items[0].str;
  auto report = [&](const std::string& rule, const std::string& what) {
    if (!reported12_.insert("node|" + rule).second) return;
    violation("checker 12: n" + std::to_string(n) + " reads to c" + std::to_string(c) +
              " the leader of term " + term + " as current, but " + what);
  };
  auto lock = node.key(key, now);
  if (!lock || lock->type != KeyType::string) return report("free", "the office is free there");
  std::string holder = lock->value.str;
  if (!holder.empty() && holder.back() == '!') holder.back() = '.';
  auto granted = office_terms_.find(holder);
  if (granted == office_terms_.end())
    return report("unknown", "its lock key holds " + escape_bytes(lock->value.str) +
                                 ", no token a grant of the office was delivered with");
  if (std::to_string(granted->second.term) != term)
    return report("term",
                  "its lock key's holder was granted term " + std::to_string(granted->second.term));
  auto record = node.key(aux_of(key, "leader"), now);
  std::string want = term + "|" + holder + "|";
  if (!record || record->type != KeyType::string || record->value.str.compare(0, want.size(), want))
    report("record", "its leader record is " +
                         (record ? escape_bytes(record->value.str) : std::string("gone")));
}

// At the end: (a) no two leaders' beliefs overlap in true time (each from the write that made it
// leader to its claim's end: its release, its death, or the last instant its clock read less than
// its believed deadline, as checker 1's claims) and no two grants of the office share a term;
// (b) the terms strictly increase in the order of the grants. (a)'s terms and (b) not with
// crash_wipe: a node that lost its fence counter may give a term again, as checker 2.
void World::check_election() {
  auto report = [&](const std::string& rule, const std::string& what) {
    if (!reported12_.insert("end|" + rule).second) return;
    violation("checker 12: " + what);
  };
  for (std::size_t i = 0; i < leaders_.size(); ++i)
    for (std::size_t j = i + 1; j < leaders_.size(); ++j) {
      const auto &a = leaders_[i], &b = leaders_[j];
      Us a_end = claims_[a.claim].end, b_end = claims_[b.claim].end;
      if (a.start < b_end && b.start < a_end)
        report("two", "c" + std::to_string(a.client) + " leads (term " + std::to_string(a.term) +
                          ") over [" + fmt_t(a.start) + ", " + fmt_t(a_end) + ") and c" +
                          std::to_string(b.client) + " (term " + std::to_string(b.term) +
                          ") over [" + fmt_t(b.start) + ", " + fmt_t(b_end) + ")");
    }
  if (on("crash_wipe")) return;
  // The office's grants in grant order (claims_ is in the order of the grants' delivery).
  const Claim* last = nullptr;
  std::map<std::uint64_t, const Claim*> by_term;
  for (const auto& cl : claims_) {
    if (cl.resources.size() != 1 || cl.resources[0] != kOffice) continue;
    auto who = [](const Claim& x) {
      return "c" + std::to_string(x.client) + "'s grant at " + fmt_t(x.start) + " (term " +
             std::to_string(x.fence) + ")";
    };
    if (!by_term.emplace(cl.fence, &cl).second)
      report("same", who(cl) + " has the term of " + who(*by_term[cl.fence]));
    else if (last != nullptr && cl.fence <= last->fence)
      report("order", who(cl) + " comes after " + who(*last) + ": terms must increase");
    last = &cl;
  }
}

}  // namespace redlock::sim::internal
