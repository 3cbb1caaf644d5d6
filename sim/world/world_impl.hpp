// The simulator's world inside (docs/simulation.md, "Parts"): the fault kinds, the
// generators, the state of nodes, clients and connections, and the World class, whose member
// functions are defined by concept: world.cpp (the event queue and a run), scenario.cpp,
// clients.cpp and workload.cpp, multi_hold.cpp, late_hold.cpp, permits.cpp, election.cpp and
// rwlock.cpp (the workloads), network.cpp and connections.cpp (the network), faults.cpp, trace.cpp,
// checkers/*.cpp. Private to sim/world.
#pragma once

#include "world.hpp"

#include <hiredis/hiredis.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <queue>
#include <random>
#include <set>
#include <sstream>
#include <variant>

#include "../../lib/core/keys.hpp"
#include "../../lib/core/quorum.hpp"
#include "../../lib/core/replies.hpp"
#include "../../lib/core/safeguards.hpp"
#include "../../lib/core/session.hpp"
#include "brain.hpp"
#include "hiredis_reply.hpp"
#include "node.hpp"
#include "scripts.hpp"

#include "clock.hpp"

namespace redlock::sim::internal {

// The nodes' clocks read like wall clocks (TIME in the scripts): ms since the epoch.
constexpr std::int64_t kEpochMs = 1'767'225'600'000;
// The longest a turn may hold a free key for a waiter that does not come (checker 4): the
// protocol must cap a turn at this, whatever the waiter's ticket asks for, and end it once its
// listener is gone: acquire.lua's and release.lua's MAX_TURN, and their PUBSUB NUMSUB.
constexpr std::int64_t kTurnCap = 2000 * 1000;
// The same cap in the nodes' milliseconds: no turn a script records or answers ends later.
constexpr std::int64_t kTurnCapMs = 2000;
// The checkers' own arithmetic and names, written out from the protocol's documents rather than
// taken from lib/core or lib/proto: a checker that computes its bound with the library's own
// function cannot catch a fault in that function (checker 4's turn cap above, holds_turn in
// checkers/liveness.cpp, least_left and kCalmRoundTrip below are the same).
//
// A quorum of n nodes: more than half of them, n/2 + 1 (Redlock; docs/safety.md). Also what the
// faults count as "a quorum" (multi_hold's hashes, the clock-jump control).
constexpr std::size_t majority(std::size_t n) { return n / 2 + 1; }
// A lock key's auxiliary key of a kind ("queue", "turns", "others", "fence"), as the scripts name
// it (aux at the head of lib/scripts/acquire.lua; docs/architecture.md, "Keys"): the lock key, a
// NUL byte, then the kind, after the lock key again in braces when it has no brace of its own
// (its Redis Cluster hash tag).
inline std::string aux_of(const std::string& key, const char* kind) {
  if (key.find_first_of("{}") != std::string::npos) return key + std::string(1, '\0') + kind;
  return key + std::string(1, '\0') + "{" + key + "}" + kind;
}
// The keys a lock holds on a node (checkers 7, 9, 11): each resource's lock key, or for a permit
// of a semaphore (Lock::permit, the slot) its one slot key: slot 0 the lock key itself, slot i > 0
// the auxiliary key "slot<i>" (acquire.lua's permit mode; docs/guide-semaphore.md).
inline std::string slot_of(const std::string& key, int slot) {
  if (slot <= 0) return key;
  return aux_of(key, ("slot" + std::to_string(slot)).c_str());
}
inline std::vector<std::string> keys_held(const std::string& prefix, const Lock& lock) {
  std::vector<std::string> keys;
  for (const auto& r : lock.resources) keys.push_back(slot_of(prefix + r, lock.permit));
  return keys;
}
// The least validity a grant must keep (checker 7): Config::min_validity_ratio of its ttl, and
// never less than 1 ms (docs/configuration-and-cli.md, min_validity_ratio), in microseconds.
inline std::int64_t least_left(std::int64_t ttl_ms, double ratio) {
  auto share =
      static_cast<std::int64_t>(static_cast<double>(ttl_ms) * 1000.0 * std::max(ratio, 0.0));
  return std::max<std::int64_t>(share, 1000);
}
// The longest a request and its reply take with no fault on (checker 9's bound): each way at most
// delay()'s 400 us and its occasional 20 ms more, and the node's 20 us of service behind the
// commands queued before it (1 ms covers fifty).
constexpr std::int64_t kCalmRoundTrip = 2 * (400 + 20 * 1000) + 1000;
// The ttls an extend asks for, in percent of the holder's lease: shorter, the same, longer. The
// longest counts as a lease in use (checker 5's bound, the restart guard).
const std::vector<int> kExtendPercents = {25, 50, 100, 100, 150};
constexpr int kExtendMaxPercent = 150;

const std::vector<std::string> kFaultKinds = {
    "crash_keep",  // node crash, restart with its data (persistence)
    "crash_wipe",  // node crash, restart without data: late, or early behind the restart guard
    "pause",       // client stalls (GC) longer than its lease
    "slow",        // a node answers slowly for a while
    "reset",       // a client's connection to a node resets (in-flight requests fail)
    "partition",   // a node unreachable for a while (requests time out)
    "clock_jump",  // node and client clocks jump, within the drift allowance
    "die",         // a client dies while waiting in line or holding (its turn may be running)
    "oom",         // a node at maxmemory for a while
    "noscript",    // connections do not load the scripts first: EVALSHA meets NOSCRIPT
    "long_turn",   // a client whose turn length (its request timeout) is long
    "collide",     // resource names that are other resources' auxiliary keys (r, r:turns, ...)
    "odd_reply",   // a node answers requests with replies of other shapes, without running them
    "multi_hold",  // a client holds several locks renewed in one batch; one's keys change type
    "hostile",     // another program's values on a node: a string at a line's turns, a ticket
    "replica",     // one node is a (writable) replica: its INFO says role:slave
    "late_grant",  // a client stalls right after an acquire or write-back leaves, for most of a ttl
    "permits",     // 3 to 8 clients contend for permits of a semaphore of k = 1..4 (permits.cpp)
    "election",    // 3 to 6 clients campaign for one office, lead, resign, read it (election.cpp)
    "rwlock",      // 3 to 8 clients read (shared) and write one read-write lock (rwlock.cpp)
};
// multi_hold, hostile with replica, and late_grant are each drawn, and draw all they need, from a
// generator of their own: with them off, a seed runs bit for bit as it did before the kind
// existed, so adding a kind does not move every other seed's scenario. (Where one is on, the run
// differs; a recorded mutant killer, tools/mutants_killers.tsv, is recorded again with
// `tools/mutants.py --sim-only --record` whenever the world changes.)
const std::string kMultiHold = "multi_hold";
constexpr std::uint64_t kHostileSeed = 0x686f737469cb2d25ull;
constexpr std::uint64_t kLateGrantSeed = 0x6c617465677261ull;
inline bool own_draws(const std::string& kind) {
  return kind == "hostile" || kind == "replica" || kind == "late_grant" || kind == "permits" ||
         kind == "election" || kind == "rwlock";
}
// The permits workload (permits.cpp) draws from a generator of its own too.
constexpr std::uint64_t kPermitsSeed = 0x7065726d69747331ull;
// Its semaphore's resource, and the most permits any of its clients asks for (k is drawn 1..4;
// an odd client asks for another k of 1..4): checker 11 looks at that many slot keys.
const std::string kSemaphore = "p";
constexpr int kMostPermits = 4;
// The election workload (election.cpp) draws from a generator of its own too; its office's
// resource (checker 12 reads its lock key and its leader key, aux_of(lock key, "leader")).
constexpr std::uint64_t kElectionSeed = 0x656c656374696f6eull;
const std::string kOffice = "e";
// The rwlock workload (rwlock.cpp) draws from a generator of its own too; its lock's resource
// (checker 13 reads its lock key, aux_of(lock key, "readers") and aux_of(lock key, "queue")).
constexpr std::uint64_t kRwLockSeed = 0x72776c6f636b3133ull;
const std::string kRwLock = "w";
// The readers' marker on the lock key while a reader is unexpired (the read-write contract):
// "readers" and a NUL byte, written out here, not taken from the library.
inline const std::string& readers_marker() {
  static const std::string m("readers\0", 8);
  return m;
}
constexpr std::uint64_t kMultiHoldSeed = 0x6d756c74696c6335ull;
// The resources a multi_hold operation locks, each with its own acquire, token and lease.
const std::vector<std::string> kHoldResources = {"m0", "m1", "m2"};

// ---------------------------------------------------------------------------------------------
// Randomness: one generator per run.

struct Rng {
  std::mt19937_64 g;
  explicit Rng(std::uint64_t seed) : g(seed) {}
  std::uint64_t next() { return g(); }
  // Uniform in [lo, hi] (the modulo bias is irrelevant at these ranges).
  std::int64_t range(std::int64_t lo, std::int64_t hi) {
    return lo + static_cast<std::int64_t>(g() % static_cast<std::uint64_t>(hi - lo + 1));
  }
  bool chance(double p) { return static_cast<double>(g() >> 11) * 0x1.0p-53 < p; }
  template <class T>
  const T& pick(const std::vector<T>& v) {
    return v[g() % v.size()];
  }
};

// ---------------------------------------------------------------------------------------------
// The world.

struct Pending {
  RequestId id = 0;
  std::shared_ptr<const proto::Request> request;
  bool as_eval = false;
  bool reply_wanted = true;
  Us deadline = 0;  // local time: its request timeout
};

// The tag of a connection's handshake (INFO): requests' tags count from 1.
constexpr std::uint64_t kHandshakeTag = 0;

struct Conn {            // a client's command connection to one node
  std::uint64_t id = 0;  // the node's connection id; 0: closed
  std::uint64_t epoch = 0;
  std::uint64_t incarnation = 0;
  bool loaded = false;            // the scripts were loaded on it
  bool in_session = false;        // its INFO was answered and judged (lib/core/session.hpp)
  Us to_node = 0, to_client = 0;  // FIFO: the last arrival each way
  // Local time from which the restart guard lets acquires through. The node's, as in
  // lib/net/node.cpp: a new connection keeps the last session's until its own INFO is judged.
  Us eligible_at = 0;
  std::map<std::uint64_t, Pending> pending;  // by tag, held ones too
  std::vector<std::uint64_t> held;           // tags waiting for the session, in sending order
};

struct SubConn {  // a client's subscriber connection to one node
  std::uint64_t id = 0;
  std::uint64_t epoch = 0;
  Us to_node = 0, to_client = 0;
  bool reconnecting = false;
};

struct Claim {
  int client = 0;
  std::vector<std::string> resources;
  Us start = 0;
  Us end = -1;  // exclusive; -1 while open
  Us deadline_local = 0;
  std::uint64_t fence = 0;
  bool fenced = false;
  std::string token;
  // A permit of a semaphore (checker 11): the k its client asked with, and the slot it was
  // granted (Lock::permit). 0 and -1 for a mutex, which checker 1 judges.
  int permits = 0;
  int slot = -1;
  // A reader of a read-write lock (checker 13): readers share their resource, and checker 1
  // judges only claims of which neither is a reader.
  bool shared = false;
};

enum class OpKind {
  try_acquire,
  wait,
  fenced,
  hold,
  multi,
  cancel,
  multi_hold,
  late_hold,
  permit,
  campaign,
  leader_read,
  reader,
  writer
};
inline const char* op_name(OpKind k) {
  switch (k) {
    case OpKind::try_acquire:
      return "try_acquire";
    case OpKind::wait:
      return "wait";
    case OpKind::fenced:
      return "fenced";
    case OpKind::hold:
      return "hold";
    case OpKind::multi:
      return "multi";
    case OpKind::cancel:
      return "cancel";
    case OpKind::multi_hold:
      return "multi_hold";
    case OpKind::late_hold:
      return "late_hold";
    case OpKind::permit:
      return "permit";
    case OpKind::campaign:
      return "campaign";
    case OpKind::leader_read:
      return "leader_read";
    case OpKind::reader:
      return "reader";
    case OpKind::writer:
      return "writer";
  }
  return "?";
}

// One lock of a multi_hold operation: its own acquire, claim and watchdog lease.
struct HeldPart {
  std::string resource;
  std::uint64_t job = 0;
  bool waiting = true, granted = false, ended = false;
  Lock lock;
  int claim = -1;
  std::uint64_t lease = 0;
};

struct UserOp {
  OpKind kind = OpKind::try_acquire;
  std::vector<std::string> resources;
  std::uint64_t job = 0;
  bool waiting = false, granted = false, done = false;
  bool extending = false;  // an extend is on its way; its result schedules the release
  Us wait_start = 0;
  Us wait_deadline_true = 0;
  Lock lock;
  int claim = -1;
  std::uint64_t lease = 0;
  std::uint64_t step = 0;       // invalidates scheduled steps of an earlier stage
  std::vector<HeldPart> parts;  // multi_hold: several locks (then job, lock, claim, lease unused)
  int permits = 0;              // permit: the k it asks with
  bool holds = false;           // permit: watched and renewed until it releases
  // campaign: the value it campaigns with, and its leader write's request (0: none on its way);
  // leader_read: its read's request. Their votes so far, one a node.
  std::string value;
  RequestId request = 0;
  std::vector<NodeVote> votes;
  // reader, writer: the place its acquire was given (its order in the line), and the faults
  // begun by the time it began to wait (checker 13's overtaking rule judges a calm wait only).
  std::int64_t place = 0;
  std::uint64_t calm_mark = 0;
};

struct ClientState {
  int index = 0;
  Config config;
  SimClock clock;
  std::string turn_channel;
  std::unique_ptr<Brain> brain;
  bool alive = true;
  Us paused_until = 0;
  Us last_pause_end = -1;
  bool die_on_turn = false;
  // Stalls the client (a GC pause, SIGSTOP) from `now` for `len`: it runs nothing until then, and
  // the checkers that judge stalls (3, 9) see when the latest one ended.
  void stall(Us now, Us len) {
    paused_until = std::max(paused_until, now + len);
    last_pause_end = std::max(last_pause_end, paused_until);
  }
  std::vector<Conn> conns;
  std::vector<SubConn> subs;
  std::set<std::string> channels;
  std::map<proto::TimerId, std::pair<Us, std::uint64_t>> timers;  // id -> (local at, generation)
  std::uint64_t timer_gen = 0;
  UserOp op;
  bool has_op = false;
  int ops_done = 0;
};

struct NodeState {
  std::unique_ptr<RedisNode> redis;
  SimClock clock;
  bool up = true;
  std::uint64_t incarnation = 0;
  Us busy_until = 0;
  Us slow_until = 0;
  Us slow_queue_until = 0;  // the last reply of a command served slowly leaves then
  Us isolated_until = 0;
  Us odd_until = 0;  // answers requests with odd shapes until then (odd_reply)
  Us down_since = 0;
  std::set<std::uint64_t> open;  // node-side open connection ids
};

struct ConnRef {
  int client;
  std::size_t node;
  bool sub;
};

struct Event {
  Us t;
  std::uint64_t seq;
  std::function<void()> fn;
};
struct Later {
  bool operator()(const Event& a, const Event& b) const {
    return a.t != b.t ? a.t > b.t : a.seq > b.seq;
  }
};

class World {
 public:
  explicit World(const RunOptions& o)
      : opt_(o),
        rng_(o.seed ^ 0x9e3779b97f4a7c15ull),
        hold_rng_(o.seed ^ kMultiHoldSeed),
        hostile_rng_(o.seed ^ kHostileSeed),
        late_rng_(o.seed ^ kLateGrantSeed),
        permits_rng_(o.seed ^ kPermitsSeed),
        election_rng_(o.seed ^ kElectionSeed),
        rw_rng_(o.seed ^ kRwLockSeed) {}

  RunResult run();

 private:
  // --- queue ---
  void at(Us t, std::function<void()> fn) {
    queue_.push(Event{std::max(t, now_), ++seq_, std::move(fn)});
  }
  // --- trace (trace.cpp) ---
  // A line of the readable trace (with RunOptions::trace), stamped with the true time.
  void trace(const std::string& line);
  // A checker's finding: kept (the first 20) and traced.
  void violation(const std::string& what);

  // --- scenario ---
  void draw_scenario();
  bool on(const std::string& kind) const { return enabled_.count(kind) != 0; }
  Us delay() {  // one message's network delay
    Us d = rng_.range(50, 400);
    if (rng_.chance(0.05)) d += rng_.range(1 * kMs, 20 * kMs);
    return d;
  }

  // --- clients ---
  Us local(const ClientState& c) const { return c.clock.local(now_); }
  Clock::time_point cnow(const ClientState& c) const { return tp(local(c)); }
  // Runs `fn` for client c at true time t, as the client: not while it is paused (then when the
  // pause ends, in order), never after it died.
  void client_at(int c, Us t, std::function<void()> fn) {
    at(t, [this, c, fn = std::move(fn)]() mutable { client_run(c, std::move(fn)); });
  }
  void client_run(int c, std::function<void()> fn) {
    auto& cl = clients_[c];
    if (!cl.alive) return;
    if (now_ < cl.paused_until) {
      at(cl.paused_until,
         [this, c, fn = std::move(fn)]() mutable { client_run(c, std::move(fn)); });
      return;
    }
    fn();
  }
  void apply(int c, Actions& out);
  void start_op(int c);
  void op_granted(int c, const AcquireResult& r);
  void op_end(int c, bool release);
  void schedule_next_op(int c);
  void user_step(int c, std::uint64_t step, std::function<void()> fn, Us after_local);
  // The holder's extend of its lock to `ext`, `at` into its step, then the op's end 3 ttl later
  // (only if the extend's result never came: it always does, at the latest on the timeouts).
  void extend_then_end(int c, std::uint64_t step, Us ext, Us at, Us ttl);
  // What a holder of a permit or of a read-write lock does once granted, its draws `rng`'s: now
  // and then its process crashes while it holds (`crash`: the trace's words); a holder (op.holds)
  // is watched and holds one to two leases; three in ten of the others extend; the rest release
  // within a lease.
  void hold_granted_kind(int c, Rng& rng, const char* crash);
  // A granted holder's lease watched by its watchdog (and judged by the lost-lock checker), its op
  // ending between one lease and `most` later.
  void watch_then_end(int c, std::uint64_t step, Rng& rng, Us most);
  // A granted holder that does not hold: three in ten extend (extend_then_end), the rest end
  // within a lease.
  void extend_or_end(int c, std::uint64_t step, Rng& rng);
  // A grant of the client's op: the op holds the lock, and its claim (what checker 1 and the
  // others judge) begins now, to the deadline the client believes.
  Claim grant_claim(int c, const AcquireResult& r);
  void storage_write(int c);
  void kill(int c, const std::string& why);
  void close_claim(UserOp& op, Us cap);
  void expect_lost(int c, std::uint64_t lease);
  void check_lost(int c, std::uint64_t lease, const Lock& lock, LostReason reason);
  void watched(int c, std::uint64_t lease);
  void check_backed(int c, const Lock& lock, const char* what);
  void schedule_release(int c, Us within);
  // multi_hold
  void start_multi_hold(int c);
  void part_delivered(int c, HeldPart& part, const AcquireResult& r);
  void part_end(int c, HeldPart& part, bool release);
  void hold_all_in(int c);
  void overwrite_with_hash(int c, std::uint64_t step, std::size_t part,
                           std::vector<std::size_t> nodes, int tries);
  void close_claim(int claim, Us cap);
  // late_hold
  void stall_after_acquire(int c);
  // permits
  void start_permit(int c);
  void permit_granted(int c, const AcquireResult& r);
  // election
  void start_campaign(int c);
  void campaign_granted(int c, const AcquireResult& r);
  void start_leader_read(int c);
  // Sends one of leader.lua's requests to every node, its replies to election_reply.
  // rwlock
  void start_rw(int c);
  void rw_granted(int c, const AcquireResult& r);
  RequestId send_leader(int c, proto::Request r, bool reply_wanted);
  // A node's answer (or failure) to a leader.lua request of the election's: false when `id` is
  // none of its (then it is the brain's).
  bool election_reply(int c, std::size_t n, RequestId id, const std::vector<NodeVote>& votes);

  // --- network ---
  void send(int c, const proto::Send& s);
  void late_stall(int c, const proto::Request& r);
  void send_one(int c, std::size_t n, RequestId id, std::shared_ptr<const proto::Request> req,
                bool reply_wanted);
  void transmit(int c, std::size_t n, std::uint64_t tag);
  void node_receive(int c, std::size_t n, std::uint64_t conn_id, std::uint64_t epoch,
                    std::uint64_t tag, std::vector<std::string> argv, bool ghost, bool load);
  void client_receive(int c, std::size_t n, std::uint64_t epoch, std::uint64_t tag, Value reply);
  void fail(int c, std::size_t n, std::uint64_t tag, Errc why, const std::string& detail);
  // The connection broke; with_subscriber: the subscriber connection to that node too (a reset,
  // a crash), not when only the command connection's handshake timed out (lib/net/node.cpp).
  void fail_conn(int c, std::size_t n, Errc why, bool with_subscriber = true);
  // A new connection's handshake: INFO to the node, its reply judged on the way back.
  void handshake(int c, std::size_t n);
  void begin_session(int c, std::size_t n, Value info);
  bool cut(int c, std::size_t n) const {
    const auto& nd = nodes_[n];
    return now_ < nd.isolated_until || cuts_.count({c, n}) != 0;
  }
  void deliver_pubsub(std::size_t n);
  void sub_connect(int c, std::size_t n);
  void sub_send(int c, std::size_t n, const std::string& verb, const std::string& channel);
  // A reply of another shape than the one the request's command gives (odd_reply, network.cpp):
  // what another program at the port or another version of the scripts might answer. Each is a
  // shape the command never answers, so none may count as a yes: a grant, a renewal, a release
  // or a write-back that never ran. `r` is the request (nullptr: one nobody waits for any more).
  Value odd_reply(const proto::Request* r);
  std::int64_t node_ms(std::size_t n) const { return kEpochMs + nodes_[n].clock.local(now_) / kMs; }
  std::vector<std::string> argv_of(const proto::Request& r, bool as_eval) const;

  // --- faults ---
  void schedule_faults();
  void crash(std::size_t n, bool keep, Us down_for);
  void restart(std::size_t n, bool keep);
  void trigger_control();

  // --- checks ---
  void liveness_probe();
  // Per waiter seen in line while a key or slot was free: (client, op step) -> when it began.
  using WaitersSeen = std::map<std::pair<int, std::uint64_t>, Us>;
  Us waiter_bound(const ClientState& cl, const WaitersSeen& seen) const;
  void check_script(int c, std::size_t n, const std::vector<std::string>& argv, const Value& reply);
  void plant_hostile(std::size_t n, bool ticket);
  void check_turn_heard(int c, const std::string& channel, const std::string& message,
                        const Actions& out);
  void faulty(Us until) {
    faulty_until_ = std::max(faulty_until_, until);
    ++disturbances_;
  }
  void final_checks();
  // Checker 11 (checkers/permits.cpp): a node's semaphore after a script, and the holders at the
  // end.
  void check_permits_on(std::size_t n);
  void check_permit_holders();
  void permits_liveness();
  // Checker 12 (checkers/election.cpp): a node's answer to leader.lua's read, and the office's
  // grants and leaders at the end.
  void check_leader_read(int c, std::size_t n, const std::vector<std::string>& argv,
                         const Value& reply);
  void check_election();
  // Checker 13 (checkers/rwlock.cpp): a node's read-write lock after a script, a reader's grant
  // against the writers waiting, the claims at the end, and the lock's liveness.
  void check_rw_on(std::size_t n);
  void check_rw_overtake(int c);
  void check_rw_claims();
  void rw_liveness();
  // Unexpired readers of the read-write lock on node n: token -> score (node ms).
  std::map<std::string, std::int64_t> readers_on(std::size_t n) const;
  // The end (node ms) of the reader with `token` (or its marked form) on node n; -1: none.
  std::int64_t reader_end(std::size_t n, const std::string& token) const;

  RunOptions opt_;
  Rng rng_;
  Rng hold_rng_;       // multi_hold's own draws (kMultiHoldSeed)
  Rng hostile_rng_;    // hostile's and replica's own draws (kHostileSeed)
  Rng late_rng_;       // late_grant's own draws (kLateGrantSeed)
  Rng permits_rng_;    // the permits workload's own draws (kPermitsSeed)
  Rng election_rng_;   // the election workload's own draws (kElectionSeed)
  Rng rw_rng_;         // the rwlock workload's own draws (kRwLockSeed)
  int permits_ = 0;    // with permits: the semaphore's k
  int late_left_ = 0;  // late_grant's stalls still to come
  std::priority_queue<Event, std::vector<Event>, Later> queue_;
  Us now_ = 0;
  std::uint64_t seq_ = 0;
  std::uint64_t events_ = 0, scripts_ = 0;
  std::string trace_;
  std::vector<std::string> violations_;
  std::string summary_;

  // Scenario.
  std::set<std::string> enabled_;
  std::vector<NodeState> nodes_;
  std::vector<ClientState> clients_;
  std::vector<std::string> resources_;
  Milliseconds ttl_{500};
  Milliseconds max_ttl_{500};
  Milliseconds max_wait_{2000};
  Milliseconds max_turn_{200};
  bool guard_ = false;  // the clients enforce the restart guard
  Us active_end_ = 0, end_ = 0;
  Us bound_free_ = 0;  // liveness bound (checker 4)
  bool control_done_ = false;
  Us faulty_until_ = 0;  // liveness is judged only where no fault is on (checker 4)
  // Faults begun and clocks jumped so far: checker 9 judges a lease only if none came meanwhile.
  std::uint64_t disturbances_ = 0;
  std::vector<std::string> hold_resources_;  // with multi_hold: kHoldResources
  std::set<std::string> long_keys_reported_;
  std::string prefix_ = Config().key_prefix;

  std::uint64_t next_conn_id_ = 1;
  std::uint64_t next_tag_ = 1;
  std::map<std::uint64_t, ConnRef> conn_owner_;
  // Checker 5's order oracle: (connection id, token) of every clean-up (release) that ran.
  std::set<std::pair<std::uint64_t, std::string>> cleaned_up_;
  std::set<std::pair<int, std::size_t>> cuts_;

  // Checkers' records.
  std::vector<Claim> claims_;
  struct Write {
    int claim;
    Us t;
  };
  std::map<std::string, std::uint64_t> storage_max_;
  std::vector<Write> accepted_;
  std::map<std::string, Us> free_since_;
  // Per resource free on every node: the waiters in line seen meanwhile, (client, op) -> start.
  std::map<std::string, WaitersSeen> waited_while_free_;
  std::set<std::string> liveness_reported_;
  // Checker 9: per (client, lease) watched in calm, the true time it was watched and the
  // disturbances until then.
  std::map<std::pair<int, std::uint64_t>, std::pair<Us, std::uint64_t>> calm_watches_;
  // Checker 10: the strings another program put on a node (hostile) with the expiry it gave
  // them (node ms): no script may raise it.
  struct Planted {
    std::size_t node;
    std::string key, value;
    std::int64_t deadline_ms;
  };
  std::vector<Planted> planted_;
  std::set<std::string> reported10_;  // one violation of checker 10 per rule and key
  std::set<std::string> reported11_;  // one violation of checker 11 per rule
  // Checker 11's liveness: per slot free on every node, since when, and the waiters for a permit
  // seen meanwhile, (client, op) -> start.
  std::map<int, Us> slot_free_since_;
  std::map<int, WaitersSeen> waited_for_slot_;
  // Per (client, job) of an acquire: true from the time it sends an attempt until it arms a timer
  // for the next one (longer than a fill-in's 1 ms): then it sits between attempts.
  std::map<std::pair<int, std::uint64_t>, bool> attempting_;
  // Checker 12: each grant of the office, by token, its term (the grant's fencing token) and the
  // value its campaign wrote; the leaders (a campaign whose write reached a quorum: it believes
  // it leads from then to its claim's end); the election's leader.lua requests on their way,
  // (client, request) -> the op's step.
  struct Term {
    std::uint64_t term = 0;
    std::string value;
  };
  std::map<std::string, Term> office_terms_;
  struct Leader {
    int client = 0;
    int claim = -1;
    std::uint64_t term = 0;
    Us start = 0;
  };
  std::vector<Leader> leaders_;
  std::map<std::pair<int, RequestId>, std::uint64_t> election_requests_;
  std::set<std::string> reported12_;  // one violation of checker 12 per rule
  // Checker 13: one violation per rule; the liveness's stretches (the write lock free on every
  // node; readers grantable) with the waiters seen meanwhile.
  std::set<std::string> reported13_;
  Us rw_write_free_since_ = -1, rw_read_free_since_ = -1;
  WaitersSeen rw_write_seen_, rw_read_seen_;
};

// The FNV-1a hash of a trace (trace.cpp): what `redlock_sim --trace-hash` prints.
std::uint64_t trace_hash(const std::string& trace);

inline HeldPart* part_of_job(ClientState& cl, std::uint64_t job) {
  if (!cl.has_op || job == 0) return nullptr;
  for (auto& p : cl.op.parts)
    if (p.job == job) return &p;
  return nullptr;
}
inline HeldPart* part_of_lease(ClientState& cl, std::uint64_t lease) {
  if (!cl.has_op || lease == 0) return nullptr;
  for (auto& p : cl.op.parts)
    if (p.lease == lease) return &p;
  return nullptr;
}
// The lock a client watches under `lease`, if it still does.
inline const Lock* watched_lock(ClientState& cl, std::uint64_t lease) {
  if (!cl.has_op || lease == 0) return nullptr;
  if (cl.op.lease == lease) return &cl.op.lock;
  auto* p = part_of_lease(cl, lease);
  return p != nullptr ? &p->lock : nullptr;
}

}  // namespace redlock::sim::internal
