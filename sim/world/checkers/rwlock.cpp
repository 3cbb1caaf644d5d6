// Checker 13 (docs/simulation.md, "The checkers"): a read-write lock never has a reader beside a
// writer. From the workload's own record of the grants and beliefs (the claims) and the nodes'
// keys, with the checker's own arithmetic and names (the read-write contract's layout: the lock
// key L, the readers' sorted set aux(L, "readers") of token -> end of its lease in node ms, the
// readers' marker "readers\0" on L), never the library's functions:
//   (a) no reader's belief overlaps a writer's in true time (two writers: checker 1), and a
//       fenced grant's token is above every fenced grant of the other kind that began before it;
//   (b) on every node, after every script: while an unexpired reader is there, L holds the
//       marker (so no writer's token, no turn) with a PTTL covering the highest reader's score,
//       and so does the readers' set;
//   (c) where no fault is on, a write lock free on every node goes to a live waiting writer, and
//       a readable lock (no writer's token, no live writer waiting) to a live waiting reader,
//       within checker 4's bound by the same arithmetic;
//   (d) a waiting writer is not overtaken by a reader that stands behind it in line (a greater
//       place) and began to wait after the writer was in line, with no fault meanwhile.

#include "../world_impl.hpp"

namespace redlock::sim::internal {
namespace {

// A free key that a waiter's turn holds ("turn", NUL, the ticket), written out as
// checkers/liveness.cpp does.
bool rw_is_turn(const std::string& value) {
  return value.compare(0, 5, std::string("turn\0", 5)) == 0;
}

// A token as a holder of this version gives it ('.' last) or as a waiter marks it ('!' last).
bool same_token(const std::string& a, const std::string& b) {
  return !a.empty() && a.size() == b.size() && a.compare(0, a.size() - 1, b, 0, b.size() - 1) == 0;
}

// A reader's ticket in the line: "<its client's channel>#r<n>@<ms>" (acquire.lua's reader form
// documents it; a writer's has a digit after the '#').
bool reader_ticket(const std::string& ticket) {
  auto hash = ticket.rfind('#');
  return hash != std::string::npos && hash + 1 < ticket.size() && ticket[hash + 1] == 'r';
}

bool is_rw(const Claim& c) { return c.resources.size() == 1 && c.resources[0] == kRwLock; }

}  // namespace

std::map<std::string, std::int64_t> World::readers_on(std::size_t n) const {
  // A node down with its data still counts (checker 7: its keys come back with it); the callers
  // that need it up ask.
  std::map<std::string, std::int64_t> out;
  std::int64_t now = node_ms(n);
  auto set = nodes_[n].redis->key(aux_of(prefix_ + kRwLock, "readers"), now);
  if (!set || set->type != KeyType::zset) return out;
  for (std::size_t i = 0; i + 1 < set->value.items.size(); i += 2) {
    auto score =
        static_cast<std::int64_t>(std::strtod(set->value.items[i + 1].str.c_str(), nullptr));
    if (score > now) out[set->value.items[i].str] = score;  // scores <= now are expired
  }
  return out;
}

std::int64_t World::reader_end(std::size_t n, const std::string& token) const {
  for (const auto& [member, score] : readers_on(n))
    if (same_token(member, token)) return score;
  return -1;
}

// (b): after every script a node ran on the read-write lock's keys.
void World::check_rw_on(std::size_t n) {
  if (!nodes_[n].up) return;
  auto readers = readers_on(n);
  if (readers.empty()) return;
  const auto& node = *nodes_[n].redis;
  std::int64_t now = node_ms(n);
  std::int64_t highest = 0;
  for (const auto& r : readers) highest = std::max(highest, r.second);
  std::int64_t need = highest - now;
  auto report = [&](const std::string& rule, const std::string& what) {
    if (!reported13_.insert("node|" + rule).second) return;
    violation("checker 13: n" + std::to_string(n) + ": " + std::to_string(readers.size()) +
              " unexpired reader(s), the highest for " + std::to_string(need) + " ms more, " +
              what);
  };
  std::string lock = prefix_ + kRwLock;
  auto k = node.key(lock, now);
  if (!k || k->type != KeyType::string) {
    report("marker", "and the lock key holds no marker: a writer may take it");
  } else if (k->value.str != readers_marker()) {
    bool turn = rw_is_turn(k->value.str);
    report(turn ? "turn" : "writer", std::string("and the lock key holds ") +
                                         (turn ? "a waiter's turn " : "a writer's ") +
                                         escape_bytes(k->value.str));
  } else if (k->pttl >= 0 && k->pttl + 1 < need) {
    // 1 ms for the rounding of a PTTL against a score.
    report("marker_short", "and the marker has only " + std::to_string(k->pttl) + " ms left");
  }
  auto set = node.key(aux_of(lock, "readers"), now);
  if (set && set->pttl >= 0 && set->pttl + 1 < need)
    report("set_short", "and the readers' set has only " + std::to_string(set->pttl) + " ms left");
}

// (d): at a reader's grant, against every writer waiting.
void World::check_rw_overtake(int c) {
  const auto& reader = clients_[c];
  // A writer is in line on every node (and listens on its channel) once its first attempt and
  // its subscription have arrived: within a handshake's and a request's calm round trip of its
  // start, a third for the subscription.
  const Us slack = 3 * kCalmRoundTrip;
  for (const auto& w : clients_) {
    const auto& op = w.op;
    if (w.index == c || !w.alive || !w.has_op || op.kind != OpKind::writer || !op.waiting) continue;
    if (op.wait_deadline_true < now_ + 10 * kMs) continue;  // about to give up: leaves the line
    if (op.place >= reader.op.place || reader.op.wait_start <= op.wait_start + slack) continue;
    // A calm wait: no fault on when it began, none since, no stall of the writer since.
    if (faulty_until_ > op.wait_start || op.calm_mark != disturbances_ ||
        w.last_pause_end >= op.wait_start || now_ < faulty_until_)
      continue;
    bool listens = true;
    for (std::size_t n = 0; n < nodes_.size() && listens; ++n)
      listens = nodes_[n].up && nodes_[n].redis->subscribers(w.turn_channel) > 0;
    if (!listens) continue;
    if (!reported13_.insert("overtake").second) return;
    violation("checker 13: c" + std::to_string(c) + " is granted a read of " + kRwLock +
              " (began to wait at " + fmt_t(reader.op.wait_start) + ", place " +
              std::to_string(reader.op.place) + ") past c" + std::to_string(w.index) +
              ", a writer waiting since " + fmt_t(op.wait_start) + " (place " +
              std::to_string(op.place) + ") with no fault since");
    return;
  }
}

// (a): at the end, from the claims in true time (checker 1's: from the grant to the release, or
// to the last instant the client's clock read less than its believed deadline).
void World::check_rw_claims() {
  auto who = [](const Claim& c) {
    return std::string(c.shared ? "reader" : "writer") + " c" + std::to_string(c.client) + " [" +
           fmt_t(c.start) + ", " + fmt_t(c.end) + ")" +
           (c.fence != 0 ? " fence " + std::to_string(c.fence) : std::string());
  };
  for (const auto& r : claims_) {
    if (!is_rw(r) || !r.shared) continue;
    for (const auto& w : claims_) {
      if (!is_rw(w) || w.shared) continue;
      if (r.start < w.end && w.start < r.end && r.end > r.start && w.end > w.start &&
          reported13_.insert("overlap").second)
        violation("checker 13: " + who(r) + " overlaps " + who(w));
      // One fence counter for both kinds: a grant's token is above that of every grant of the
      // other kind that began before it (their quorums meet on a node that counted the earlier
      // one first). Not with crash_wipe: a wiped node forgets its counter (checker 2).
      if (r.fence != 0 && w.fence != 0 && !on("crash_wipe") && r.start != w.start) {
        const Claim& first = r.start < w.start ? r : w;
        const Claim& then = r.start < w.start ? w : r;
        if (then.fence <= first.fence && reported13_.insert("fence").second)
          violation("checker 13: " + who(then) + " has a token not above " + who(first) +
                    "'s, granted before it");
      }
    }
  }
}

// (c): while the run goes on (from liveness_probe, every 25 ms).
void World::rw_liveness() {
  bool calm = now_ >= faulty_until_;
  for (std::size_t n = 0; n < nodes_.size() && calm; ++n) calm = nodes_[n].up;
  if (!calm) {
    rw_write_free_since_ = rw_read_free_since_ = -1;
    rw_write_seen_.clear();
    rw_read_seen_.clear();
    return;
  }
  std::string lock = prefix_ + kRwLock;
  // Free to write: on every node neither a writer's token nor an unexpired reader; the lock key
  // absent, a turn (which holds nothing) or the marker with no unexpired reader left (the marker
  // lasts as long as the latest reader and no longer: it may outlive it by the rounding of a
  // millisecond, not by the bound). Free to read: on every node no writer's token and no writer's
  // ticket in the line, and no writer of the workload waits (a reader stands behind any live
  // writer in line; a writer's ticket whose clean-up a fault lost, of a client that still
  // listens, looks live to the nodes until its turn comes, which waits for the readers to go).
  bool write_free = true, read_free = true;
  for (std::size_t n = 0; n < nodes_.size(); ++n) {
    auto k = nodes_[n].redis->key(lock, node_ms(n));
    bool turn = k && k->type == KeyType::string && rw_is_turn(k->value.str);
    bool marker = k && k->type == KeyType::string && k->value.str == readers_marker();
    write_free = write_free && (!k || turn || marker) && readers_on(n).empty();
    read_free = read_free && (!k || turn || marker);
    auto line = nodes_[n].redis->key(aux_of(lock, "queue"), node_ms(n));
    if (line && line->type == KeyType::zset)
      for (std::size_t i = 0; i < line->value.items.size() && read_free; i += 2)
        read_free = reader_ticket(line->value.items[i].str);
  }
  auto live_waiter = [&](const ClientState& cl, OpKind kind) {
    return cl.alive && cl.has_op && cl.op.kind == kind && cl.op.waiting;
  };
  for (const auto& cl : clients_) read_free = read_free && !live_waiter(cl, OpKind::writer);
  // How long a free lock may stay free while `cl` waits for it: checker 4's arithmetic
  // (waiter_bound, checkers/liveness.cpp), with the waiters ahead counted by the line's order
  // (their places) rather than by when they began: bound_free_, the waiter's own two request
  // timeouts, and one turn, notice and request for each live waiter seen ahead of it.
  auto bound = [&](const ClientState& cl, const WaitersSeen& seen) {
    std::size_t ahead = 0;
    for (const auto& [who, place] : seen)
      if (who.first != cl.index && place < cl.op.place) ++ahead;
    return bound_free_ + 2 * (cl.config.request_timeout.count() - 200) * kMs +
           static_cast<Us>(ahead) * (kTurnCap + 2 * 200 * kMs);
  };
  auto judge = [&](bool free, Us& since, WaitersSeen& seen, OpKind kind, const char* what) {
    if (!free) {
      since = -1;
      seen.clear();
      return;
    }
    if (since < 0) since = now_;
    for (const auto& cl : clients_)
      if (live_waiter(cl, OpKind::reader) || live_waiter(cl, OpKind::writer))
        seen[{cl.index, cl.op.step}] = cl.op.place;
    if (now_ - since < bound_free_ || reported13_.count(what) != 0) return;
    for (const auto& cl : clients_) {
      if (!live_waiter(cl, kind) || cl.op.wait_start > since ||
          cl.op.wait_deadline_true < now_ + 10 * kMs || cl.paused_until > since)
        continue;
      Us b = bound(cl, seen);
      if (now_ - since < b) continue;
      reported13_.insert(what);
      violation(std::string("checker 13: ") + kRwLock + " free to " + what +
                " on every node since " + fmt_t(since) + " (" +
                std::to_string((now_ - since) / kMs) + " ms, bound " + std::to_string(b / kMs) +
                " ms) while c" + std::to_string(cl.index) + " waits to " + what);
      return;
    }
  };
  judge(write_free, rw_write_free_since_, rw_write_seen_, OpKind::writer, "write");
  judge(read_free, rw_read_free_since_, rw_read_seen_, OpKind::reader, "read");
}

}  // namespace redlock::sim::internal
