// Checker 10 (docs/simulation.md, "The checkers"): every yes a node gives is true when it gives it,
// every script leaves the node in a state the protocol allows, and a waiter told its turn asks.

#include "../world_impl.hpp"

namespace redlock::sim::internal {

// Checker 10: every yes a script gives is true when it gives it, and every script leaves the node
// in a state the protocol allows. Judged on the node right after the script ran, on the keys it
// was given (cheap: a few lookups).
void World::check_script(int c, std::size_t n, const std::vector<std::string>& argv,
                         const Value& reply) {
  if (argv.size() < 3 || (argv[0] != "EVALSHA" && argv[0] != "EVAL")) return;
  bool by_sha = argv[0] == "EVALSHA";
  auto is = [&](const ScriptText& t) { return argv[1] == (by_sha ? t.sha : t.body); };
  bool acquire = is(kAcquire), release = !acquire && is(kRelease);
  bool fence = !acquire && !release && is(kFence);
  if (!acquire && !release && !fence) return;  // renew.lua: checkers 7 and 9 judge renewals
  // A script the node did not know did not run.
  if (reply.is_error() && reply.error_code() == "NOSCRIPT") return;
  const auto& node = *nodes_[n].redis;
  std::int64_t now = node_ms(n);
  std::size_t nkeys =
      std::min<std::size_t>(std::strtoul(argv[2].c_str(), nullptr, 10), argv.size() - 3);
  std::vector<std::string> keys(argv.begin() + 3, argv.begin() + 3 + static_cast<long>(nkeys));
  std::vector<std::string> args(argv.begin() + 3 + static_cast<long>(nkeys), argv.end());
  auto report = [&](const std::string& rule, const std::string& key, const std::string& what) {
    if (!reported10_.insert(rule + '|' + key).second) return;
    violation("checker 10: n" + std::to_string(n) + "'s " +
              (acquire   ? "acquire"
               : release ? "release"
                         : "fence") +
              " for c" + std::to_string(c) + " on " + escape_bytes(key) + ": " + what);
  };
  auto string_at = [&](const std::string& key) -> std::optional<std::string> {
    auto k = node.key(key, now);
    if (!k || k->type != KeyType::string) return std::nullopt;
    return k->value.str;
  };
  const std::string token = args.empty() ? std::string() : args[0];
  // The token as a waiter marks it (acquire.lua): '!' for the last '.'.
  std::string marked;
  if (!token.empty() && token.back() == '.') marked = token.substr(0, token.size() - 1) + "!";
  bool granted = acquire && reply.kind == Value::Kind::array && !reply.items.empty() &&
                 reply.items[0] == Value::integer(1);

  // A node the handshake must refuse (INFO role:slave) never runs an acquire: its vote would
  // count toward a quorum, and a replica's keys are its master's to lose (safeguards.hpp).
  if (acquire && node.options().replica)
    report("replica", keys.empty() ? std::string() : keys[0],
           "ran on a replica (INFO role:slave), which the handshake refuses");

  // A fence write-back answers 1 only where every key holds the token or its marked form; a
  // reader's (ARGV[3] 'shared', its one key the lock key) only where its token is an unexpired
  // reader and the lock key holds the readers' marker (checker 13's names).
  bool reader_fence = fence && args.size() >= 3 && args[2] == "shared";
  if (reader_fence && reply == Value::integer(1) && !keys.empty() &&
      (reader_end(n, token) < 0 || string_at(keys[0]) != readers_marker()))
    report("fence", keys[0], "answered 1 for a reader that does not hold the node");
  if (fence && !reader_fence && reply == Value::integer(1))
    for (const auto& k : keys) {
      auto v = string_at(k);
      if (!v || (*v != token && *v != marked))
        report("fence", k,
               "answered 1, but the key holds " + (v ? escape_bytes(*v) : std::string("no token")));
    }

  // A waiter's grant (ARGV[7]) leaves the new holder's key marked where others still wait: its
  // release must know it has somebody to tell.
  // A permit's grant (ARGV[8], ARGV[9]: k and the slot; KEYS the k slot keys, KEYS[1] the
  // semaphore's lock key, whose line and sign-ups its waiters use) marks the slot it granted.
  bool permit = acquire && args.size() >= 9;  // (a reader's acquire has 8)
  // A reader's grant (ARGV[8] 'shared') leaves the lock key holding the readers' marker, not its
  // token: checker 13 judges it.
  bool reader = acquire && args.size() >= 8 && args[7] == "shared";
  if (granted && permit && !marked.empty()) {
    auto slot = static_cast<std::size_t>(std::strtoul(args[8].c_str(), nullptr, 10));
    if (slot < keys.size() &&
        (node.key(aux_of(keys[0], "queue"), now) || node.key(aux_of(keys[0], "others"), now)) &&
        string_at(keys[slot]) != marked)
      report("unmarked", keys[slot],
             "granted a permit while others wait, and left the slot unmarked");
  }
  if (granted && !permit && !reader && args.size() >= 7 && !marked.empty())
    for (const auto& k : keys)
      if ((node.key(aux_of(k, "queue"), now) || node.key(aux_of(k, "others"), now)) &&
          string_at(k) != marked)
        report("unmarked", k, "granted a waiter while others wait, and left the key unmarked");

  // A waiter for several keys that was granted (acquire) or stopped waiting (release, ARGV[4] '')
  // has signed up for none of them here any more.
  std::string gone;
  if (granted && keys.size() > 1 && args.size() >= 7) gone = args[3];
  if (release && !reply.is_error() && keys.size() > 1 && args.size() >= 4 && args[3].empty())
    gone = args[2];
  if (!gone.empty())
    for (const auto& k : keys) {
      auto o = node.key(aux_of(k, "others"), now);
      if (!o || o->type != KeyType::zset) continue;
      for (std::size_t i = 0; i < o->value.items.size(); i += 2)
        if (o->value.items[i].str == gone)
          report("sign_up", k,
                 "left the sign-up of " + escape_bytes(gone) + ", which stopped waiting");
    }

  // No turn ends later than the cap from now, whatever its ticket asks (MAX_TURN).
  if (release || (acquire && keys.size() == 1 && args.size() >= 7))
    for (const auto& k : keys) {
      auto t = node.key(aux_of(k, "turns"), now);
      if (!t || t->type != KeyType::hash) continue;
      for (std::size_t i = 1; i < t->value.items.size(); i += 2) {
        double due = std::strtod(t->value.items[i].str.c_str(), nullptr);
        if (due > static_cast<double>(now + kTurnCapMs))
          report("cap", k,
                 "a turn ends " + std::to_string(static_cast<std::int64_t>(due) - now) +
                     " ms from now, past the cap");
      }
    }

  // An acquire refused for another waiter's turn: that turn is at most the cap, and somebody
  // still listens on its ticket's channel (a turn whose listener left passes at once). A permit's
  // refusal has a fourth item (the hint), and its line is its semaphore's (keys[0]).
  if (acquire && !granted && reply.kind == Value::Kind::array &&
      reply.items.size() == (permit ? 4u : 3u) && reply.items[2].kind == Value::Kind::bulk &&
      reply.items[2].str.rfind("turn:", 0) == 0 && (keys.size() == 1 || permit)) {
    // (A reader refused for a live writer waiting ahead of it names that writer "turn:..." with
    // the lock key's PTTL, a lease's: acquire.lua's reader form. Not a turn's length.)
    if (reply.items[1].number > kTurnCapMs && !reader)
      report("cap", keys[0],
             "refused for a turn of " + std::to_string(reply.items[1].number) + " ms");
    std::string digest = reply.items[2].str.substr(5);
    auto q = node.key(aux_of(keys[0], "queue"), now);
    for (std::size_t i = 0; q && q->type == KeyType::zset && i < q->value.items.size(); i += 2) {
      const auto& head = q->value.items[i].str;
      if (sha1_hex(head).compare(0, digest.size(), digest) != 0) continue;
      auto hash = head.rfind('#');
      if (hash == std::string::npos || node.subscribers(head.substr(0, hash)) == 0)
        report(
            "listener", keys[0],
            "refused for the turn of " + escape_bytes(head) + ", whose channel nobody listens to");
      break;
    }
  }

  // Another program's value: a script may leave it, never prolong it.
  for (const auto& p : planted_) {
    if (p.node != n) continue;
    auto k = node.key(p.key, now);
    if (!k || k->type != KeyType::string || k->value.str != p.value) continue;
    if (k->pttl < 0 || now + k->pttl > p.deadline_ms)
      report("foreign", p.key,
             "another program's key now has " + std::to_string(k->pttl) +
                 " ms left, more than it was given");
  }
}

// Checker 10, the client's side: a waiter told its turn ("<name>|<ticket>|<key>" on its client's
// channel, from any node, the first to announce it or a later one) while it sits between
// attempts asks again at once: the node that told it has the key free and the turn is its own.
// (A waiter in an attempt asks again when it ends, unless it is granted.)
void World::check_turn_heard(int c, const std::string& channel, const std::string& message,
                             const Actions& out) {
  auto& cl = clients_[c];
  if (channel != cl.turn_channel || !cl.has_op || !cl.op.waiting) return;
  auto bar = message.find('|');
  std::string mine = cl.turn_channel + "#";
  if (bar == std::string::npos || message.compare(bar + 1, mine.size(), mine) != 0) return;
  auto job = std::strtoull(message.c_str() + bar + 1 + mine.size(), nullptr, 10);
  if (job != cl.op.job) return;
  auto it = attempting_.find({c, job});
  if (it == attempting_.end() || it->second) return;
  for (const auto& a : out)
    if (auto* s = std::get_if<proto::Send>(&a))
      if (s->job == job && s->request->script == proto::ScriptId::acquire) return;
  if (!reported10_.insert("turn|" + std::to_string(c)).second) return;
  violation("checker 10: c" + std::to_string(c) + " was told its turn (" + escape_bytes(message) +
            ") between attempts and did not ask");
}

}  // namespace redlock::sim::internal
