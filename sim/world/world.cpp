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

namespace redlock::sim {
namespace {

using Us = std::int64_t;  // microseconds of true (simulated) time
constexpr Us kMs = 1000;
constexpr Us kSec = 1000 * kMs;
// The nodes' clocks read like wall clocks (TIME in the scripts): ms since the epoch.
constexpr std::int64_t kEpochMs = 1'767'225'600'000;
// The longest a turn may hold a free key for a waiter that does not come (checker 4): the
// protocol must cap a turn at this, whatever the waiter's ticket asks for, and end it once its
// listener is gone: acquire.lua's and release.lua's MAX_TURN, and their PUBSUB NUMSUB.
constexpr std::int64_t kTurnCap = 2000 * 1000;
// The same cap in the nodes' milliseconds: no turn a script records or answers ends later.
constexpr std::int64_t kTurnCapMs = 2000;
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
    "odd_reply",   // a node answers acquires with replies of other shapes, without running them
    "multi_hold",  // a client holds several locks renewed in one batch; one's keys change type
    "hostile",     // another program's values on a node: a string at a line's turns, a ticket
    "replica",     // one node is a (writable) replica: its INFO says role:slave
    "late_grant",  // a client stalls right after an acquire or write-back leaves, for most of a ttl
};
// multi_hold, hostile with replica, and late_grant are each drawn, and draw all they need, from a
// generator of their own: with them off, a seed runs bit for bit as it did before the kind
// existed, so adding a kind does not move every other seed's scenario. (Where one is on, the run
// differs; a recorded mutant killer, tools/mutants_killers.tsv, is recorded again with
// `tools/mutants.py --sim-only --record` whenever the world changes.)
const std::string kMultiHold = "multi_hold";
constexpr std::uint64_t kHostileSeed = 0x686f737469cb2d25ull;
constexpr std::uint64_t kLateGrantSeed = 0x6c617465677261ull;
bool own_draws(const std::string& kind) {
  return kind == "hostile" || kind == "replica" || kind == "late_grant";
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
// Clocks: local = true * rate + offset, with jumps (a new offset from a true time on).

struct SimClock {
  double rate = 1.0;
  struct Seg {
    Us from;
    Us offset;
  };
  std::vector<Seg> segs{{0, 0}};

  Us local_at(Us t, Us offset) const {
    return offset + static_cast<Us>(std::floor(static_cast<double>(t) * rate));
  }
  Us local(Us t) const {
    for (auto it = segs.rbegin(); it != segs.rend(); ++it)
      if (it->from <= t) return local_at(t, it->offset);
    return local_at(t, segs.front().offset);
  }
  void jump(Us t, Us by) { segs.push_back({t, segs.back().offset + by}); }
  // The first true time >= now at which the clock (as it runs now) reads `l` or more.
  Us when(Us l, Us now) const {
    auto off = segs.back().offset;
    auto t = static_cast<Us>(std::ceil(static_cast<double>(l - off) / rate));
    while (local_at(t, off) < l) ++t;
    while (t > now && local_at(t - 1, off) >= l) --t;
    return std::max(t, now);
  }
  // The first true time at which the clock read `l` or more.
  Us first_reading(Us l) const {
    for (std::size_t i = 0; i < segs.size(); ++i) {
      Us a = segs[i].from;
      if (local_at(a, segs[i].offset) >= l) return a;
      auto t = static_cast<Us>(std::ceil(static_cast<double>(l - segs[i].offset) / rate));
      while (local_at(t, segs[i].offset) < l) ++t;
      if (i + 1 == segs.size() || t < segs[i + 1].from) return t;
    }
    return segs.back().from;
  }
  // The end (exclusive) of the true times in [start, cap] at which the clock read less than `l`:
  // the last instant a holder whose deadline is `l` could believe it held. Counts every stretch
  // (a jump back makes the belief come back).
  Us believe_until(Us l, Us start, Us cap) const {
    Us end = start;
    for (std::size_t i = 0; i < segs.size(); ++i) {
      Us a = std::max(segs[i].from, start);
      Us b = i + 1 < segs.size() ? segs[i + 1].from : cap;
      b = std::min(b, cap);
      if (a >= b) continue;
      if (local_at(a, segs[i].offset) >= l) continue;
      auto t = static_cast<Us>(std::ceil(static_cast<double>(l - segs[i].offset) / rate));
      while (local_at(t, segs[i].offset) < l) ++t;
      end = std::max(end, std::min(t, b));
    }
    return end;
  }
};

Clock::time_point tp(Us local) { return Clock::time_point(std::chrono::microseconds(local)); }
Us us(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
}

std::string fmt_t(Us t) {
  char b[32];
  std::snprintf(b, sizeof b, "%lld.%06lld", static_cast<long long>(t / kSec),
                static_cast<long long>(t % kSec));
  return b;
}

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
};

enum class OpKind { try_acquire, wait, fenced, hold, multi, cancel, multi_hold };
const char* op_name(OpKind k) {
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
  Us isolated_until = 0;
  Us odd_until = 0;  // answers acquires with odd shapes until then (odd_reply)
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
        late_rng_(o.seed ^ kLateGrantSeed) {}

  RunResult run();

 private:
  // --- queue ---
  void at(Us t, std::function<void()> fn) {
    queue_.push(Event{std::max(t, now_), ++seq_, std::move(fn)});
  }
  void trace(const std::string& line) {
    if (!opt_.trace) return;
    trace_ += fmt_t(now_);
    trace_ += ' ';
    trace_ += line;
    trace_ += '\n';
  }
  void violation(const std::string& what) {
    if (violations_.size() < 20) violations_.push_back("t=" + fmt_t(now_) + " " + what);
    trace("VIOLATION " + what);
  }

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
  // A reply of another shape than the acquire script's: {1, fence} is a grant, {0, ...} a no.
  Value odd_reply() {
    using V = Value;
    switch (rng_.range(0, 7)) {
      case 0:
        return V::array({V::integer(1)});
      case 1:
        return V::array({V::integer(1), V::bulk("7")});
      case 2:
        return V::array({V::integer(1), V::integer(-1)});
      case 3:
        return V::array({V::integer(1), V::integer(3), V::bulk("x")});
      case 4:
        return V::array({V::integer(2), V::integer(0)});
      case 5:
        return V::integer(1);
      case 6:
        return V::status("OK");
      default:
        return V::array({});
    }
  }
  std::int64_t node_ms(std::size_t n) const { return kEpochMs + nodes_[n].clock.local(now_) / kMs; }
  std::vector<std::string> argv_of(const proto::Request& r, bool as_eval) const;

  // --- faults ---
  void schedule_faults();
  void crash(std::size_t n, bool keep, Us down_for);
  void restart(std::size_t n, bool keep);
  void trigger_control();

  // --- checks ---
  void liveness_probe();
  void check_script(int c, std::size_t n, const std::vector<std::string>& argv, const Value& reply);
  void plant_hostile(std::size_t n, bool ticket);
  void check_turn_heard(int c, const std::string& channel, const std::string& message,
                        const Actions& out);
  void faulty(Us until) {
    faulty_until_ = std::max(faulty_until_, until);
    ++disturbances_;
  }
  void final_checks();

  RunOptions opt_;
  Rng rng_;
  Rng hold_rng_;       // multi_hold's own draws (kMultiHoldSeed)
  Rng hostile_rng_;    // hostile's and replica's own draws (kHostileSeed)
  Rng late_rng_;       // late_grant's own draws (kLateGrantSeed)
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
  std::map<std::string, std::map<std::pair<int, std::uint64_t>, Us>> waited_while_free_;
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
  // Per (client, job) of an acquire: true from the time it sends an attempt until it arms a timer
  // for the next one (longer than a fill-in's 1 ms): then it sits between attempts.
  std::map<std::pair<int, std::uint64_t>, bool> attempting_;
};

HeldPart* part_of_job(ClientState& cl, std::uint64_t job) {
  if (!cl.has_op || job == 0) return nullptr;
  for (auto& p : cl.op.parts)
    if (p.job == job) return &p;
  return nullptr;
}
HeldPart* part_of_lease(ClientState& cl, std::uint64_t lease) {
  if (!cl.has_op || lease == 0) return nullptr;
  for (auto& p : cl.op.parts)
    if (p.lease == lease) return &p;
  return nullptr;
}
// The lock a client watches under `lease`, if it still does.
const Lock* watched_lock(ClientState& cl, std::uint64_t lease) {
  if (!cl.has_op || lease == 0) return nullptr;
  if (cl.op.lease == lease) return &cl.op.lock;
  auto* p = part_of_lease(cl, lease);
  return p != nullptr ? &p->lock : nullptr;
}

// ---------------------------------------------------------------------------------------------
// Scenario

void World::draw_scenario() {
  // Swarm: which fault kinds are on at all, among those allowed.
  std::vector<std::string> allowed = opt_.faults.empty() ? kFaultKinds : opt_.faults;
  for (const auto& k : allowed)
    if (k != kMultiHold && !own_draws(k) && opt_.control == Control::none && rng_.chance(0.5))
      enabled_.insert(k);
  if (opt_.control == Control::none &&
      std::find(allowed.begin(), allowed.end(), kMultiHold) != allowed.end() &&
      hold_rng_.chance(0.5))
    enabled_.insert(kMultiHold);
  for (const std::string k : {"hostile", "replica"})
    if (opt_.control == Control::none &&
        std::find(allowed.begin(), allowed.end(), k) != allowed.end() && hostile_rng_.chance(0.5))
      enabled_.insert(k);
  if (opt_.control == Control::none &&
      std::find(allowed.begin(), allowed.end(), "late_grant") != allowed.end() &&
      late_rng_.chance(0.5))
    enabled_.insert("late_grant");
  // A few stalls per run, as `pause` has: each one keeps liveness (checker 4) and checker 9
  // from judging for a while, and most of the run should still be judged.
  late_left_ = static_cast<int>(late_rng_.range(1, 3));
  // A shrunk replay names its kinds exactly (the draws above are made all the same).
  if (opt_.only) enabled_ = std::set<std::string>(opt_.faults.begin(), opt_.faults.end());
  if (on(kMultiHold)) hold_resources_ = kHoldResources;

  static const std::vector<int> node_counts = {1, 3, 3, 3, 5, 5, 5};
  std::size_t n = static_cast<std::size_t>(rng_.pick(node_counts));
  int clients = static_cast<int>(rng_.range(2, 6));
  static const std::vector<int> ttls = {300, 500, 1000};
  ttl_ = Milliseconds(rng_.pick(ttls));
  if (opt_.control != Control::none) {
    n = rng_.chance(0.5) ? 3 : 5;
    clients = static_cast<int>(rng_.range(3, 5));
  }
  max_ttl_ = ttl_;

  // Resources: a few names; with `collide`, some are other resources' auxiliary keys.
  static const std::vector<std::string> aux = {"queue", "turns", "others", "fence"};
  resources_ = {"r"};
  int extra = opt_.control != Control::none ? 0 : static_cast<int>(rng_.range(0, 2));
  for (int i = 0; i < extra; ++i) {
    if (on("collide") && rng_.chance(0.7))
      resources_.push_back("r:" + rng_.pick(aux));
    else
      resources_.push_back(std::string("s") + static_cast<char>('0' + i));
  }

  // With `replica`, one node of three or five is a replica that takes writes (replica-read-only
  // no): the handshake must refuse it (safeguards.hpp), or it votes (checker 10).
  std::size_t replica =
      on("replica") && n >= 3
          ? static_cast<std::size_t>(hostile_rng_.range(0, static_cast<std::int64_t>(n) - 1))
          : n;
  for (std::size_t i = 0; i < n; ++i) {
    NodeState nd;
    NodeOptions no;
    no.name = "n" + std::to_string(i);
    no.replica = i == replica;
    no.read_only = false;
    nd.clock.rate = 1.0 + static_cast<double>(rng_.range(-1500, 1500)) * 1e-6;
    nd.clock.segs[0].offset = rng_.range(0, 5 * kSec);
    // Up for an hour already: only a restart during the run trips the restart guard.
    nd.redis = std::make_unique<RedisNode>(no, kEpochMs + nd.clock.local(0) / kMs - 3'600'000);
    nodes_.push_back(std::move(nd));
  }

  guard_ = on("crash_wipe");
  for (int i = 0; i < clients; ++i) {
    ClientState c;
    c.index = i;
    c.config.ttl = ttl_;
    c.config.retry_count = 3;
    c.config.retry_delay = Milliseconds(rng_.range(20, 200));
    c.config.retry_jitter = Milliseconds(rng_.range(5, 100));
    c.config.drift_factor = 0.01;
    c.config.request_timeout = Milliseconds(200);
    if (on("long_turn") && rng_.chance(0.5)) {
      // A turn lasts as long as the waiter's ticket says: max(100 ms, its request timeout).
      c.config.request_timeout = Milliseconds(rng_.range(4000, 8000));
      c.config.ttl = Milliseconds(10000);
      max_ttl_ = std::max(max_ttl_, c.config.ttl);
    }
    if (guard_) c.config.restart_guard = max_ttl_;
    max_turn_ = std::max(max_turn_, std::max(Milliseconds(100), c.config.request_timeout));
    c.clock.rate = 1.0 + static_cast<double>(rng_.range(-1500, 1500)) * 1e-6;
    c.clock.segs[0].offset = rng_.range(0, 1000 * kSec);
    char chan[40];
    std::snprintf(chan, sizeof chan, "turn:%016llx", static_cast<unsigned long long>(rng_.next()));
    c.turn_channel = chan;
    c.conns.resize(n);
    c.subs.resize(n);
    c.die_on_turn = on("die") && rng_.chance(0.3);
    clients_.push_back(std::move(c));
  }
  // An extend may ask for more than the lease (kExtendPercents): the largest ttl a key is given.
  max_ttl_ = Milliseconds(max_ttl_.count() * kExtendMaxPercent / 100);
  for (auto& c : clients_) {
    // The restart guard keeps a node out for the largest lease in use (safeguards.hpp).
    c.config.watchdog_lease = c.config.ttl;
    if (guard_) c.config.restart_guard = max_ttl_;
    int idx = c.index;
    auto token = [this] {
      static const char hex[] = "0123456789abcdef";
      std::string t;
      auto a = rng_.next(), b = rng_.next();
      for (int i = 0; i < 16; ++i) t.push_back(hex[(a >> (4 * i)) & 15]);
      for (int i = 0; i < 16; ++i) t.push_back(hex[(b >> (4 * i)) & 15]);
      t.push_back('.');
      return t;
    };
    auto random = [this] { return rng_.next(); };
    c.brain = make_proto_brain(c.config, n, c.turn_channel, token, random);
    (void)idx;
  }

  active_end_ = rng_.range(2 * kSec, 4 * kSec);
  max_wait_ = Milliseconds(on("long_turn") ? 8000 : 2000);
  // Checker 4's bound: from a key gone from every node to a live waiter's grant. A turn that
  // nobody takes ends within the turn cap (2 s); then the next in line is told, asks within a
  // request timeout and is answered within another; a waiter whose notice was lost asks again
  // within its retry delay and jitter (at most 300 ms here).
  bound_free_ = kTurnCap + 300 * kMs + 2 * 200 * kMs + 200 * kMs;
  // The quiet end: the last ops end (a wait, a hold of up to 3 leases), then every auxiliary key
  // must be gone within the line's keep (the rest of the wait and a lease) and a turn.
  Us ops_end = active_end_ + max_wait_.count() * kMs + 3 * max_ttl_.count() * kMs + 500 * kMs;
  // A sign-up of a waiter for several keys that is gone lasts up to 10 s past its latest
  // refused attempt (the fixed acquire.lua's SIGN_UP): that long on top.
  end_ = ops_end + max_wait_.count() * kMs + max_ttl_.count() * kMs + max_turn_.count() * kMs +
         1000 * kMs + 10 * kSec;

  std::ostringstream s;
  s << "nodes=" << n << " clients=" << clients << " ttl=" << ttl_.count() << "ms resources=";
  for (std::size_t i = 0; i < resources_.size(); ++i) s << (i ? "," : "") << resources_[i];
  s << " faults=";
  bool first = true;
  for (const auto& k : enabled_) s << (first ? "" : ",") << k, first = false;
  if (enabled_.empty()) s << "none";
  if (opt_.control == Control::wipe_majority) s << " control=wipe-majority";
  if (opt_.control == Control::clock_jump_quorum) s << " control=clock-jump-quorum";
  summary_ = s.str();
  trace("scenario " + summary_);
}

// ---------------------------------------------------------------------------------------------
// Clients: actions of the brain

void World::apply(int c, Actions& out) {
  auto& cl = clients_[c];
  for (std::size_t i = 0; i < out.size(); ++i) {
    auto& a = out[i];
    if (auto* s = std::get_if<proto::Send>(&a)) {
      if (s->job != 0 && s->reply_wanted && s->request->script == proto::ScriptId::acquire)
        attempting_[{c, s->job}] = true;
      send(c, *s);
    } else if (auto* t = std::get_if<proto::ArmTimer>(&a)) {
      if (t->job != 0 && us(t->at) > local(cl) + kMs) attempting_[{c, t->job}] = false;
      auto gen = ++cl.timer_gen;
      Us l = us(t->at);
      cl.timers[t->id] = {l, gen};
      auto id = t->id;
      client_at(c, cl.clock.when(l, now_), [this, c, id, gen] {
        auto& me = clients_[c];
        auto it = me.timers.find(id);
        if (it == me.timers.end() || it->second.second != gen) return;
        if (local(me) < it->second.first) {  // the clock went back meanwhile
          auto l2 = it->second.first;
          client_at(c, me.clock.when(l2, now_), [this, c, id, gen] {
            auto& m2 = clients_[c];
            auto it2 = m2.timers.find(id);
            if (it2 == m2.timers.end() || it2->second.second != gen) return;
            m2.timers.erase(it2);
            Actions o;
            m2.brain->on_timer(id, cnow(m2), o);
            apply(c, o);
          });
          return;
        }
        me.timers.erase(it);
        Actions o;
        me.brain->on_timer(id, cnow(me), o);
        apply(c, o);
      });
    } else if (auto* ct = std::get_if<proto::CancelTimer>(&a)) {
      cl.timers.erase(ct->id);
    } else if (auto* sb = std::get_if<proto::Subscribe>(&a)) {
      if (cl.channels.insert(sb->channel).second) {
        trace("c" + std::to_string(c) + " subscribe " + sb->channel);
        for (std::size_t n = 0; n < nodes_.size(); ++n) {
          if (cl.subs[n].id == 0)
            sub_connect(c, n);
          else
            sub_send(c, n, "SUBSCRIBE", sb->channel);
        }
      }
    } else if (auto* ub = std::get_if<proto::Unsubscribe>(&a)) {
      if (cl.channels.erase(ub->channel) != 0)
        for (std::size_t n = 0; n < nodes_.size(); ++n)
          if (cl.subs[n].id != 0) sub_send(c, n, "UNSUBSCRIBE", ub->channel);
    } else if (auto* d = std::get_if<proto::DeliverAcquire>(&a)) {
      HeldPart* part = part_of_job(cl, d->job);
      if (!cl.has_op || (cl.op.job != d->job && part == nullptr)) continue;
      trace("c" + std::to_string(c) + " acquire " +
            (part != nullptr ? part->resource + " " : std::string()) +
            (d->result
                 ? "GRANTED, believes until " + fmt_t(us(d->result.lock.valid_until)) + " (local)"
                 : "refused: " + d->result.error.message()) +
            (d->result.lock.fencing_token ? " fence=" + std::to_string(d->result.lock.fencing_token)
                                          : std::string()));
      if (part == nullptr) cl.op.waiting = false;
      if (d->result) {
        // Checker 7, a grant: kept only with the least validity left (Config::min_validity_ratio).
        auto left = us(d->result.lock.valid_until) - local(cl);
        auto least = detail::least_validity(cl.config.ttl, cl.config.min_validity_ratio).count();
        if (left < least)
          violation("checker 7: c" + std::to_string(c) + " granted with " + std::to_string(left) +
                    " us of validity left, below the least " + std::to_string(least) + " us");
        check_backed(c, d->result.lock, "grant");
      }
      if (part != nullptr)
        part_delivered(c, *part, d->result);
      else if (d->result)
        op_granted(c, d->result);
      else
        op_end(c, false);
    } else if (auto* e = std::get_if<proto::DeliverExtend>(&a)) {
      if (!cl.has_op || !cl.op.granted) continue;
      if (e->result) {
        cl.op.lock.valid_until = e->result.valid_until;
        if (cl.op.claim >= 0) claims_[cl.op.claim].deadline_local = us(e->result.valid_until);
        check_backed(c, cl.op.lock, "extend");
      }
      trace("c" + std::to_string(c) + " extend " + (e->result ? "ok" : e->result.error.message()) +
            " believes until " + fmt_t(us(cl.op.lock.valid_until)) + " (local)");
      if (cl.op.extending && !cl.op.done) {
        cl.op.extending = false;
        schedule_release(c, us(cl.op.lock.valid_until) - local(cl));
      }
    } else if (std::get_if<proto::DeliverRelease>(&a)) {
      // Nothing to do: the claim ended when the release left.
    } else if (auto* r = std::get_if<proto::Renewed>(&a)) {
      if (cl.has_op && cl.op.lease == r->lease && cl.op.claim >= 0) {
        cl.op.lock.valid_until = r->valid_until;
        claims_[cl.op.claim].deadline_local = us(r->valid_until);
        trace("c" + std::to_string(c) + " renewed, believes until " + fmt_t(us(r->valid_until)) +
              " (local)");
        check_backed(c, cl.op.lock, "renewal");
        expect_lost(c, cl.op.lease);
      } else if (HeldPart* p = part_of_lease(cl, r->lease); p != nullptr && p->claim >= 0) {
        p->lock.valid_until = r->valid_until;
        claims_[p->claim].deadline_local = us(r->valid_until);
        trace("c" + std::to_string(c) + " renewed " + p->resource + ", believes until " +
              fmt_t(us(r->valid_until)) + " (local)");
        check_backed(c, p->lock, "renewal");
        expect_lost(c, p->lease);
      }
    } else if (auto* l = std::get_if<proto::Lost>(&a)) {
      HeldPart* part = part_of_lease(cl, l->lease);
      if (!cl.has_op || (cl.op.lease != l->lease && part == nullptr)) continue;
      const Lock& lost = part != nullptr ? part->lock : cl.op.lock;
      // Checker 3: the lost-lock signal comes no later than the believed deadline (unless the
      // client was stalled across it: then it comes as soon as it runs again).
      // Judged in true time: a clock that jumps forward past the deadline reads past it at once.
      Us deadline = us(lost.valid_until);
      Us dl_true = cl.clock.first_reading(deadline);
      if (now_ > dl_true && !(cl.last_pause_end >= dl_true))
        violation("checker 3: c" + std::to_string(c) + " heard of its lost lock at local " +
                  fmt_t(local(cl)) + ", after its believed deadline " + fmt_t(deadline));
      check_lost(c, l->lease, lost, l->reason);
      if (part != nullptr) {
        trace("c" + std::to_string(c) + " LOST its lock on " + part->resource);
        part->lease = 0;
        part_end(c, *part, true);
        bool all = true;
        for (const auto& p : cl.op.parts) all = all && !p.waiting && (p.ended || !p.granted);
        if (all) op_end(c, false);
        continue;
      }
      trace("c" + std::to_string(c) + " LOST its lock");
      cl.op.lease = 0;
      op_end(c, true);
    }
  }
}

void World::user_step(int c, std::uint64_t step, std::function<void()> fn, Us after_local) {
  auto& cl = clients_[c];
  client_at(c, cl.clock.when(local(cl) + after_local, now_), [this, c, step, fn = std::move(fn)] {
    auto& me = clients_[c];
    if (!me.has_op || me.op.step != step) return;
    fn();
  });
}

void World::schedule_next_op(int c) {
  auto& cl = clients_[c];
  Us think = rng_.range(0, 150 * kMs);
  client_at(c, now_ + think, [this, c] {
    if (now_ >= active_end_) return;
    start_op(c);
  });
  (void)cl;
}

void World::start_op(int c) {
  auto& cl = clients_[c];
  if (on(kMultiHold) && hold_rng_.chance(0.3)) return start_multi_hold(c);
  std::vector<OpKind> kinds = {OpKind::try_acquire, OpKind::wait, OpKind::wait,
                               OpKind::fenced,      OpKind::hold, OpKind::cancel};
  if (resources_.size() > 1) kinds.push_back(OpKind::multi);
  if (on("collide") && rng_.chance(0.1)) {
    // A name with the reserved byte names another resource's auxiliary key ("r\0queue" is r's
    // line): the library refuses it before any command is sent, by its own check (keys.hpp).
    static const std::vector<std::string> aux = {"queue", "turns", "others", "fence"};
    std::string name = "r";
    name.push_back(detail::kReservedByte);
    name += rng_.pick(aux);
    if (detail::resource_name_problem(name) == nullptr)
      violation("checker 8: c" + std::to_string(c) + " may lock resource " + escape_bytes(name) +
                ", another resource's auxiliary key");
    trace("c" + std::to_string(c) + " is refused resource " + escape_bytes(name));
    schedule_next_op(c);
    return;
  }
  UserOp op;
  op.kind = rng_.pick(kinds);
  op.step = cl.op.step + 1;
  if (op.kind == OpKind::multi) {
    op.resources = resources_;
    if (op.resources.size() > 2) op.resources.resize(2);
  } else {
    op.resources = {rng_.pick(resources_)};
  }
  AcquireSpec spec;
  spec.resources = op.resources;
  spec.ttl = cl.config.ttl;
  spec.fencing = op.kind == OpKind::fenced;
  if (op.kind == OpKind::wait || op.kind == OpKind::multi || op.kind == OpKind::cancel ||
      op.kind == OpKind::hold || (op.kind == OpKind::fenced && rng_.chance(0.5)))
    spec.wait = Milliseconds(rng_.range(300, max_wait_.count()));
  // A waiter for several keys sometimes waits without end (its sign-ups are kept an hour).
  if (op.kind == OpKind::multi && rng_.chance(0.5)) spec.wait = Milliseconds(600'000);
  cl.op = op;
  cl.has_op = true;
  cl.op.waiting = true;
  cl.op.wait_start = now_;
  cl.op.wait_deadline_true = spec.wait ? now_ + spec.wait->count() * kMs : now_;
  std::string what = std::string(op_name(op.kind)) + " ";
  for (const auto& r : op.resources) what += r + " ";
  trace("c" + std::to_string(c) + " begins " + what +
        (spec.wait ? "wait=" + std::to_string(spec.wait->count()) + "ms" : std::string()));
  Actions out;
  // A waiter's place: microseconds on its wall clock (the same number on every node).
  cl.op.job = cl.brain->acquire(spec, cnow(cl), kEpochMs * 1000 + local(cl), out);
  apply(c, out);
  if (op.kind == OpKind::cancel) {
    auto step = cl.op.step;
    user_step(
        c, step,
        [this, c] {
          auto& me = clients_[c];
          if (!me.op.waiting) return;
          trace("c" + std::to_string(c) + " cancels");
          Actions o;
          me.brain->cancel(me.op.job, cnow(me), o);
          apply(c, o);
        },
        rng_.range(0, 400 * kMs));
  }
}

void World::op_granted(int c, const AcquireResult& r) {
  auto& cl = clients_[c];
  auto& op = cl.op;
  op.granted = true;
  op.lock = r.lock;
  Claim claim;
  claim.client = c;
  claim.resources = op.resources;
  claim.start = now_;
  claim.deadline_local = us(r.lock.valid_until);
  claim.fence = r.lock.fencing_token;
  claim.fenced = op.kind == OpKind::fenced;
  claim.token = r.lock.token;
  op.claim = static_cast<int>(claims_.size());
  claims_.push_back(claim);
  ++op.step;
  auto step = op.step;
  Us ttl = cl.config.ttl.count() * kMs;
  if (op.kind == OpKind::hold) {
    Actions out;
    op.lease = cl.brain->watch(op.lock, cnow(cl), out);
    watched(c, op.lease);
    apply(c, out);
    expect_lost(c, op.lease);
    user_step(
        c, step, [this, c] { op_end(c, true); }, rng_.range(ttl, 3 * ttl));
    return;
  }
  if (op.kind == OpKind::fenced) {
    int writes = static_cast<int>(rng_.range(1, 4));
    for (int i = 0; i < writes; ++i)
      user_step(
          c, step, [this, c] { storage_write(c); }, rng_.range(0, ttl * 8 / 10));
    user_step(
        c, step, [this, c] { op_end(c, true); }, ttl * 8 / 10 + 1);
    return;
  }
  if (rng_.chance(0.3)) {
    // An extend, to the lease's ttl or to a shorter or a longer one: the nodes must never shorten
    // a key (the holder keeps the later of its two deadlines), and the holder then holds on to
    // the end of what it believes (schedule_release), so a key shorter than the belief, or a
    // belief no quorum confirmed, meets the next holder (checker 1).
    Us ext = ttl * rng_.pick(kExtendPercents) / 100;
    user_step(
        c, step,
        [this, c, ext] {
          auto& me = clients_[c];
          me.op.extending = true;
          trace("c" + std::to_string(c) + " extends to " + std::to_string(ext / kMs) + "ms");
          Actions out;
          me.brain->extend(me.op.lock, Milliseconds(ext / kMs), cnow(me), out);
          apply(c, out);
        },
        rng_.range(0, ttl / 2));
    // Only if the extend's result never came (it always does, at the latest on the timeouts).
    user_step(
        c, step, [this, c] { op_end(c, true); }, 3 * ttl);
    return;
  }
  user_step(
      c, step, [this, c] { op_end(c, true); }, rng_.range(0, ttl));
}

void World::schedule_release(int c, Us within) {
  auto& op = clients_[c].op;
  ++op.step;  // the fallback release is void now
  user_step(
      c, op.step, [this, c] { op_end(c, true); }, rng_.range(within / 2, std::max(within, Us(0))));
}

// ---------------------------------------------------------------------------------------------
// multi_hold: several locks of one client, renewed in one batch

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
  auto q = static_cast<Us>(detail::quorum_size(nodes_.size()));
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

// ---------------------------------------------------------------------------------------------
// Checker 9

void World::watched(int c, std::uint64_t lease) {
  // Judged only for a lease watched with no fault on (and none since: check_lost), and with two
  // thirds of its ttl left: the watchdog renews first a third of a ttl after the watch
  // (proto::lease_of), so a lock granted late with less than that and the margin left (a grant
  // keeps a tenth, min_validity_ratio) is lost before its first renewal, keys fine or not.
  if (now_ < faulty_until_) return;
  auto& cl = clients_[c];
  const Lock* lock = watched_lock(cl, lease);
  if (lock == nullptr || us(lock->valid_until) - local(cl) < lock->ttl.count() * kMs * 2 / 3)
    return;
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
  if (disturbances_ != seen || cl.last_pause_end >= since) return;
  std::string mine = lock.token.substr(0, lock.token.size() - 1);
  std::size_t held = 0;
  for (std::size_t n = 0; n < nodes_.size(); ++n) {
    bool all = nodes_[n].up;
    for (const auto& r : lock.resources) {
      auto k = nodes_[n].redis->key(prefix_ + r, node_ms(n));
      all = all && k && k->type == KeyType::string && k->value.str.size() == lock.token.size() &&
            k->value.str.compare(0, mine.size(), mine) == 0;
    }
    if (all) ++held;
  }
  if (held < detail::quorum_size(nodes_.size())) return;
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
  for (std::size_t n = 0; n < nodes_.size(); ++n) {
    bool all = true;
    for (const auto& r : lock.resources) {
      auto k = nodes_[n].redis->key(prefix_ + r, node_ms(n));
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
  if (backed >= nodes_.size() / 2 + 1) return;
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

void World::storage_write(int c) {
  auto& cl = clients_[c];
  auto& op = cl.op;
  if (!op.granted || op.claim < 0) return;
  if (local(cl) >= us(op.lock.valid_until)) return;  // writes only while it believes it holds
  int claim = op.claim;
  auto token = op.lock.fencing_token;
  auto resource = op.resources[0];
  // The write travels to the storage; now and then it is held up on the way (a stalled sender,
  // a slow network), which is exactly what the token is for.
  Us travel = rng_.chance(0.2) ? rng_.range(0, 2 * max_ttl_.count() * kMs) : rng_.range(0, 2 * kMs);
  at(now_ + travel, [this, claim, token, resource] {
    auto& max = storage_max_[resource];
    if (token < max) {
      trace("storage refuses " + resource + " fence=" + std::to_string(token) + " (seen " +
            std::to_string(max) + ")");
      return;
    }
    max = token;
    accepted_.push_back(Write{claim, now_});
    trace("storage accepts " + resource + " fence=" + std::to_string(token));
  });
}

void World::close_claim(UserOp& op, Us cap) {
  close_claim(op.claim, cap);
  for (const auto& p : op.parts) close_claim(p.claim, cap);
}

void World::close_claim(int claim, Us cap) {
  if (claim < 0) return;
  auto& cl = claims_[claim];
  if (cl.end >= 0) return;
  cl.end = clients_[cl.client].clock.believe_until(cl.deadline_local, cl.start, cap);
}

void World::op_end(int c, bool release) {
  auto& cl = clients_[c];
  auto& op = cl.op;
  if (op.done) return;
  op.done = true;
  ++op.step;
  if (op.granted) {
    close_claim(op, now_);
    Actions out;
    if (op.lease != 0) cl.brain->unwatch(op.lease, cnow(cl), out);
    calm_watches_.erase({c, op.lease});
    op.lease = 0;
    if (release) {
      trace("c" + std::to_string(c) + " releases");
      cl.brain->release(op.lock, cnow(cl), out);
    }
    apply(c, out);
  }
  for (auto& p : op.parts) part_end(c, p, release);
  cl.has_op = false;
  ++cl.ops_done;
  schedule_next_op(c);
}

void World::kill(int c, const std::string& why) {
  auto& cl = clients_[c];
  if (!cl.alive) return;
  trace("FAULT c" + std::to_string(c) + " dies (" + why + ")");
  if (cl.has_op) close_claim(cl.op, now_);
  cl.alive = false;
  cl.has_op = false;
  // Its connections close: the nodes drop its subscriptions (and with them the turns it heard).
  for (std::size_t n = 0; n < nodes_.size(); ++n) {
    std::vector<std::uint64_t> ids;
    if (cl.conns[n].id != 0) ids.push_back(cl.conns[n].id);
    if (cl.subs[n].id != 0) ids.push_back(cl.subs[n].id);
    cl.conns[n].id = 0;
    cl.subs[n].id = 0;
    for (auto id : ids)
      at(now_ + delay(), [this, n, id] {
        if (nodes_[n].open.erase(id) != 0) nodes_[n].redis->disconnect(id);
      });
  }
}

// ---------------------------------------------------------------------------------------------
// Network

std::vector<std::string> World::argv_of(const proto::Request& r, bool as_eval) const {
  std::vector<std::string> argv;
  if (r.script == proto::ScriptId::none) return r.args;
  const ScriptText* s = nullptr;
  switch (r.script) {
    case proto::ScriptId::acquire:
      s = &kAcquire;
      break;
    case proto::ScriptId::renew:
      s = &kRenew;
      break;
    case proto::ScriptId::release:
      s = &kRelease;
      break;
    case proto::ScriptId::fence:
      s = &kFence;
      break;
    default:
      break;
  }
  argv.reserve(3 + r.keys.size() + r.args.size());
  argv.emplace_back(as_eval ? "EVAL" : "EVALSHA");
  argv.emplace_back(as_eval ? std::string(s->body) : std::string(s->sha));
  argv.push_back(std::to_string(r.keys.size()));
  argv.insert(argv.end(), r.keys.begin(), r.keys.end());
  argv.insert(argv.end(), r.args.begin(), r.args.end());
  return argv;
}

void World::send(int c, const proto::Send& s) {
  for (auto n : s.nodes) send_one(c, n, s.id, s.request, s.reply_wanted);
  if (on("late_grant")) late_stall(c, *s.request);
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
  cl.paused_until = std::max(cl.paused_until, now_ + len);
  cl.last_pause_end = std::max(cl.last_pause_end, cl.paused_until);
  faulty(cl.paused_until + 500 * kMs);
}

void World::send_one(int c, std::size_t n, RequestId id, std::shared_ptr<const proto::Request> req,
                     bool reply_wanted) {
  auto& cl = clients_[c];
  auto& conn = cl.conns[n];
  auto tag = next_tag_++;
  if (opt_.trace) {
    std::string line = "c" + std::to_string(c) + " -> n" + std::to_string(n) + " " +
                       std::string(req->script == proto::ScriptId::acquire   ? "acquire"
                                   : req->script == proto::ScriptId::release ? "release"
                                   : req->script == proto::ScriptId::renew   ? "renew"
                                   : req->script == proto::ScriptId::fence   ? "fence"
                                                                             : "cmd");
    for (const auto& k : req->keys) line += " " + escape_bytes(k);
    line += " |";
    for (const auto& a : req->args) line += " " + escape_bytes(a);
    trace(line);
  }
  // The request's timeout, on the client's clock; one that waits for the session fails at it
  // (never sent), as lib/net/node.cpp's check_timeouts.
  Us deadline_local = local(cl) + cl.config.request_timeout.count() * kMs;
  conn.pending[tag] = Pending{id, std::move(req), false, reply_wanted, deadline_local};
  auto& p = conn.pending[tag];
  if (conn.id == 0) {
    auto& nd = nodes_[n];
    if (!nd.up) {  // connection refused, after a round trip
      Us back = now_ + 2 * delay();
      client_at(c, back, [this, c, n, tag] { fail(c, n, tag, Errc::connect_failed, "refused"); });
      return;
    }
    conn.id = next_conn_id_++;
    conn.epoch++;
    conn.incarnation = nd.incarnation;
    conn.loaded = false;
    conn.in_session = false;
    conn.held.clear();
    conn_owner_[conn.id] = ConnRef{c, n, false};
    handshake(c, n);
  }
  Us deadline = cl.clock.when(deadline_local, now_);
  auto epoch = conn.epoch;
  client_at(c, deadline, [this, c, n, tag, epoch] {
    auto& cn = clients_[c].conns[n];
    if (cn.epoch != epoch || cn.pending.count(tag) == 0) return;
    fail(c, n, tag, Errc::request_timeout, "request timed out");
  });
  // The gate (lib/core/session.hpp): until the handshake is judged, the request waits.
  switch (detail::gate(conn.in_session ? detail::SessionPhase::session
                                       : detail::SessionPhase::handshake)) {
    case detail::Gate::hold:
      conn.held.push_back(tag);
      return;
    case detail::Gate::fail:  // never: the simulated node refuses a connection above
    case detail::Gate::wire:
      break;
  }
  // The restart guard refuses what could grant; releases, renewals and write-backs go through.
  bool order_free =
      p.request->script != proto::ScriptId::acquire && p.request->script != proto::ScriptId::none;
  if (detail::guard_refuses(order_free, detail::eligible(local(cl), conn.eligible_at))) {
    client_at(c, now_ + 1, [this, c, n, tag] {
      fail(c, n, tag, Errc::node_restarting, "restarted less than the largest lease ago");
    });
    return;
  }
  transmit(c, n, tag);
}

void World::handshake(int c, std::size_t n) {
  auto& conn = clients_[c].conns[n];
  // The handshake has the connect timeout, as in lib/net/node.cpp: a lost INFO closes the
  // connection, and what waited for it fails.
  auto& cl = clients_[c];
  auto epoch = conn.epoch;
  Us limit = cl.clock.when(local(cl) + cl.config.connect_timeout.count() * kMs, now_);
  client_at(c, limit, [this, c, n, epoch] {
    auto& cn = clients_[c].conns[n];
    if (cn.epoch == epoch && cn.id != 0 && !cn.in_session)
      fail_conn(c, n, Errc::connect_timeout, /*with_subscriber=*/false);
  });
  if (cut(c, n)) return;
  Us arrive = std::max(now_ + delay(), conn.to_node + 1);
  conn.to_node = arrive;
  auto id = conn.id;
  at(arrive, [this, c, n, id, epoch] {
    node_receive(c, n, id, epoch, kHandshakeTag, {"INFO"}, false, false);
  });
}

void World::begin_session(int c, std::size_t n, Value info) {
  auto& cl = clients_[c];
  auto& conn = cl.conns[n];
  // INFO, read and judged by the library's safeguards (lib/core/safeguards.hpp); with the restart
  // guard on, a node younger than the largest lease in use stays ineligible for the rest of it.
  auto check = detail::judge(detail::parse_info(info.str), cl.config, std::string());
  if (check.refuse) {
    // As lib/net/node.cpp: a node that is no independent master (a replica) is never asked; the
    // connection closes, what waited for it fails, and the next request connects again.
    trace("c" + std::to_string(c) + " n" + std::to_string(n) + " refused: " + check.why);
    std::vector<std::uint64_t> held;
    std::swap(held, conn.held);
    if (nodes_[n].open.erase(conn.id) != 0) nodes_[n].redis->disconnect(conn.id);
    conn_owner_.erase(conn.id);
    conn.id = 0;
    conn.epoch++;
    for (auto tag : held) fail(c, n, tag, Errc::node_not_master, check.why);
    return;
  }
  conn.eligible_at = check.ineligible_for.count() > 0
                         ? local(cl) + static_cast<Us>(check.ineligible_for.count()) * kMs
                         : 0;
  conn.in_session = true;
  bool eligible = detail::eligible(local(cl), conn.eligible_at);
  if (!eligible) trace("c" + std::to_string(c) + " n" + std::to_string(n) + " not eligible yet");
  // As lib/net/node.cpp's begin_session: what waited goes out in order, then the late and the
  // refused fail (their callbacks may send more, behind them).
  std::vector<std::uint64_t> held;
  std::swap(held, conn.held);
  std::vector<std::pair<std::uint64_t, detail::HeldFate>> failed;
  for (auto tag : held) {
    auto it = conn.pending.find(tag);
    if (it == conn.pending.end()) continue;  // failed at its deadline already
    auto fate = detail::at_start(eligible, local(cl), it->second.deadline);
    if (fate == detail::HeldFate::send)
      transmit(c, n, tag);
    else
      failed.emplace_back(tag, fate);
  }
  for (auto [tag, fate] : failed) {
    if (fate == detail::HeldFate::late)
      fail(c, n, tag, Errc::request_timeout, "the connection's handshake ended too late");
    else
      fail(c, n, tag, Errc::node_restarting, "restarted less than the largest lease ago");
  }
}

void World::transmit(int c, std::size_t n, std::uint64_t tag) {
  auto& cl = clients_[c];
  auto& conn = cl.conns[n];
  auto& p = conn.pending[tag];
  auto argv = argv_of(*p.request, p.as_eval);
  bool load = !conn.loaded && !on("noscript");
  conn.loaded = true;
  if (cut(c, n)) return;  // lost: the timeout answers for it
  Us arrive = std::max(now_ + delay(), conn.to_node + 1);
  conn.to_node = arrive;
  auto id = conn.id;
  auto epoch = conn.epoch;
  bool ghost = rng_.chance(0.5);  // if the connection resets first: did it reach the node?
  at(arrive, [this, c, n, id, epoch, tag, argv = std::move(argv), load, ghost]() mutable {
    node_receive(c, n, id, epoch, tag, std::move(argv), ghost, load);
  });
}

void World::node_receive(int c, std::size_t n, std::uint64_t conn_id, std::uint64_t epoch,
                         std::uint64_t tag, std::vector<std::string> argv, bool ghost, bool load) {
  auto& nd = nodes_[n];
  if (!nd.up) return;
  if (cut(c, n)) return;
  bool open = nd.open.count(conn_id) != 0;
  if (!open) {
    // A connection the node does not know yet is new; one it closed got a reset: what was in
    // flight may still have reached it (then it runs, and its answer is lost).
    auto& conn = clients_[c].conns[n];
    if (conn.id == conn_id && conn.epoch == epoch && conn.incarnation == nd.incarnation) {
      nd.open.insert(conn_id);
    } else if (ghost && conn.incarnation == nd.incarnation) {
      ++scripts_;
      nd.redis->execute(argv, node_ms(n), 0);
      trace("n" + std::to_string(n) + " ran a request of a reset connection of c" +
            std::to_string(c));
      deliver_pubsub(n);
      return;
    } else {
      return;
    }
  }
  // A new connection loads the scripts before its first command (as lib/net/node.cpp does on
  // connect), unless the `noscript` fault keeps it from doing so.
  if (load)
    for (const auto& sc : kScripts)
      nd.redis->execute({"SCRIPT", "LOAD", std::string(sc.body)}, node_ms(n), conn_id);
  if (tag != kHandshakeTag) ++scripts_;
  Value reply;
  auto is = [&argv](const ScriptText& sc) {
    return argv.size() >= 3 && ((argv[0] == "EVALSHA" && argv[1] == sc.sha) ||
                                (argv[0] == "EVAL" && argv[1] == sc.body));
  };
  bool acquire = is(kAcquire);
  bool release = !acquire && is(kRelease);
  // The token (ARGV[1] of both scripts), for the order oracle below.
  std::string token;
  if (acquire || release) {
    auto keys = static_cast<std::size_t>(std::stoul(argv[2]));
    if (argv.size() > 3 + keys) token = argv[3 + keys];
  }
  if (acquire && now_ < nd.odd_until) {
    // Something else answers for the acquire script (another program at the port, another
    // version of the scripts): a reply of another shape than the script's, decoded by the
    // library's own decoder (lib/core/replies.cpp). None of them is a grant; nothing ran.
    reply = odd_reply();
    trace("n" + std::to_string(n) + " answers c" + std::to_string(c) +
          " oddly: " + reply.to_string());
  } else {
    if (acquire && !token.empty() && cleaned_up_.count({conn_id, token}) != 0)
      // Checker 5, the order on one connection: an acquire that runs after its own attempt's
      // clean-up ran there leaves keys that nobody will release (as after NOSCRIPT, re-sent as EVAL
      // behind that clean-up).
      violation("checker 5: an acquire of c" + std::to_string(c) + " ran on n" + std::to_string(n) +
                " after its own clean-up (token " + escape_bytes(token) +
                ") ran there on the same connection");
    try {
      reply = nd.redis->execute(argv, node_ms(n), conn_id);
    } catch (const std::exception& e) {
      violation(std::string("model gap: ") + e.what());
      return;
    }
    if (release && !token.empty() && !reply.is_error()) cleaned_up_.insert({conn_id, token});
    check_script(c, n, argv, reply);
  }
  if (opt_.trace) {
    trace("n" + std::to_string(n) + " ran for c" + std::to_string(c) + ": " + reply.to_string());
    std::string d = nd.redis->dump(node_ms(n));
    std::string indented;
    std::istringstream in(d);
    for (std::string line; std::getline(in, line);) indented += "      " + line + "\n";
    trace_ += indented;
  }
  deliver_pubsub(n);
  Us service = now_ < nd.slow_until ? rng_.range(30 * kMs, 150 * kMs) : 20;
  Us depart = std::max(now_, nd.busy_until) + service;
  nd.busy_until = depart;
  at(depart, [this, c, n, epoch, tag, reply = std::move(reply)]() mutable {
    if (cut(c, n) || !nodes_[n].up) return;
    auto& conn = clients_[c].conns[n];
    if (conn.epoch != epoch) return;
    Us arrive = std::max(now_ + delay(), conn.to_client + 1);
    conn.to_client = arrive;
    client_at(c, arrive, [this, c, n, epoch, tag, reply = std::move(reply)]() mutable {
      client_receive(c, n, epoch, tag, std::move(reply));
    });
  });
}

void World::client_receive(int c, std::size_t n, std::uint64_t epoch, std::uint64_t tag,
                           Value reply) {
  auto& cl = clients_[c];
  auto& conn = cl.conns[n];
  if (conn.epoch != epoch) return;
  if (tag == kHandshakeTag) {
    if (!conn.in_session) begin_session(c, n, std::move(reply));
    return;
  }
  auto it = conn.pending.find(tag);
  if (it == conn.pending.end()) return;  // timed out already
  Pending p = it->second;
  conn.pending.erase(it);
  if (reply.is_error() && reply.error_code() == "NOSCRIPT" && !p.as_eval) {
    // The library's rule (lib/core/session.hpp): send the body when the script's order does not
    // matter or nothing went after it on this connection; otherwise fail and load the script
    // for next time.
    bool order_free = p.request->script != proto::ScriptId::acquire;
    conn.loaded = false;
    if (detail::after_noscript(order_free, !conn.pending.empty()) ==
        detail::NoscriptStep::resend_eval) {
      p.as_eval = true;
      conn.pending[tag] = p;
      trace("c" + std::to_string(c) + " NOSCRIPT from n" + std::to_string(n) + ": EVAL");
      transmit(c, n, tag);
      return;
    }
  }
  if (!p.reply_wanted) return;
  std::vector<NodeVote> votes;
  if (reply.is_error()) {
    auto code = reply.error_code();
    Errc e = code == "OOM"         ? Errc::redis_oom
             : code == "NOSCRIPT"  ? Errc::redis_noscript
             : code == "WRONGTYPE" ? Errc::redis_wrongtype
                                   : Errc::redis_error;
    NodeVote v;
    v.vote = Vote::failed;
    v.error = make_error_code(e);
    v.detail = reply.str;
    votes.assign(p.request->items, v);
  } else {
    auto r = to_hiredis(reply);
    votes.assign(p.request->items, NodeVote());
    switch (p.request->decoder) {
      case proto::Decoder::acquire:
        detail::acquire_vote(r.get(), votes[0]);
        break;
      case proto::Decoder::quick_acquire:
        detail::quick_acquire_vote(r.get(), votes[0]);
        break;
      case proto::Decoder::fence:
        detail::fence_vote(r.get(), votes[0]);
        break;
      case proto::Decoder::release:
        detail::release_vote(r.get(), p.request->keys.size(), votes[0]);
        break;
      case proto::Decoder::renew:
        detail::renew_votes(r.get(), votes.data(), votes.size());
        break;
      case proto::Decoder::text:
        detail::text_vote(r.get(), votes[0]);
        break;
    }
    for (auto& v : votes)
      if (v.vote == Vote::pending) {
        v.vote = Vote::failed;
        v.error = make_error_code(Errc::protocol_error);
      }
  }
  Actions out;
  cl.brain->on_reply(p.id, n, std::move(votes), cnow(cl), out);
  apply(c, out);
}

void World::fail(int c, std::size_t n, std::uint64_t tag, Errc why, const std::string& detail) {
  auto& cl = clients_[c];
  auto& conn = cl.conns[n];
  auto it = conn.pending.find(tag);
  if (it == conn.pending.end()) return;
  Pending p = it->second;
  conn.pending.erase(it);
  if (!p.reply_wanted) return;
  NodeVote v;
  v.vote = Vote::failed;
  v.error = make_error_code(why);
  v.detail = detail;
  Actions out;
  cl.brain->on_reply(p.id, n, std::vector<NodeVote>(p.request->items, v), cnow(cl), out);
  apply(c, out);
}

// The connection broke (reset, node crash): whatever waits on it fails with an I/O error.
void World::fail_conn(int c, std::size_t n, Errc why, bool with_subscriber) {
  auto& cl = clients_[c];
  auto& conn = cl.conns[n];
  if (conn.id == 0 && conn.pending.empty()) return;
  if (conn.id != 0 && nodes_[n].open.erase(conn.id) != 0) nodes_[n].redis->disconnect(conn.id);
  conn.id = 0;
  conn.epoch++;
  conn.in_session = false;
  conn.held.clear();  // they are in `pending`: they fail below, never sent
  std::vector<std::uint64_t> tags;
  for (auto& [tag, p] : conn.pending) tags.push_back(tag);
  for (auto tag : tags)
    client_at(c, now_ + delay(),
              [this, c, n, tag, why] { fail(c, n, tag, why, "connection lost"); });
  if (!with_subscriber) return;
  auto& sub = cl.subs[n];
  if (sub.id != 0) {
    if (nodes_[n].open.erase(sub.id) != 0) nodes_[n].redis->disconnect(sub.id);
    sub.id = 0;
    sub.epoch++;
  }
  if (!cl.channels.empty() && !sub.reconnecting) {
    sub.reconnecting = true;
    client_at(c, now_ + rng_.range(10 * kMs, 100 * kMs), [this, c, n] {
      clients_[c].subs[n].reconnecting = false;
      if (clients_[c].subs[n].id == 0) sub_connect(c, n);
    });
  }
}

void World::sub_connect(int c, std::size_t n) {
  auto& cl = clients_[c];
  auto& sub = cl.subs[n];
  if (sub.id != 0 || !cl.alive) return;
  if (!nodes_[n].up || cut(c, n)) {
    if (!sub.reconnecting) {
      sub.reconnecting = true;
      client_at(c, now_ + rng_.range(20 * kMs, 150 * kMs), [this, c, n] {
        clients_[c].subs[n].reconnecting = false;
        sub_connect(c, n);
      });
    }
    return;
  }
  sub.id = next_conn_id_++;
  sub.epoch++;
  conn_owner_[sub.id] = ConnRef{c, n, true};
  for (const auto& ch : cl.channels) sub_send(c, n, "SUBSCRIBE", ch);
}

void World::sub_send(int c, std::size_t n, const std::string& verb, const std::string& channel) {
  auto& sub = clients_[c].subs[n];
  Us arrive = std::max(now_ + delay(), sub.to_node + 1);
  sub.to_node = arrive;
  auto id = sub.id;
  auto epoch = sub.epoch;
  auto incarnation = nodes_[n].incarnation;
  at(arrive, [this, c, n, id, epoch, verb, channel, incarnation] {
    auto& nd = nodes_[n];
    auto& s = clients_[c].subs[n];
    if (!nd.up || nd.incarnation != incarnation || s.id != id || s.epoch != epoch) return;
    nd.open.insert(id);
    nd.redis->execute({verb, channel}, node_ms(n), id);
    if (verb != "SUBSCRIBE") return;
    Us back = std::max(now_ + delay(), s.to_client + 1);
    s.to_client = back;
    client_at(c, back, [this, c, n, epoch, channel] {
      auto& me = clients_[c];
      if (me.subs[n].epoch != epoch || me.channels.count(channel) == 0) return;
      Actions out;
      me.brain->on_subscribed(n, channel, cnow(me), out);
      apply(c, out);
    });
  });
}

void World::deliver_pubsub(std::size_t n) {
  for (auto& d : nodes_[n].redis->take_deliveries()) {
    auto it = conn_owner_.find(d.connection);
    if (it == conn_owner_.end() || !it->second.sub) continue;
    int c = it->second.client;
    auto& cl = clients_[c];
    auto& sub = cl.subs[n];
    if (sub.id != d.connection || cut(c, n)) continue;
    trace("n" + std::to_string(n) + " tells c" + std::to_string(c) + " on " + d.channel + ": " +
          escape_bytes(d.message));
    // A waiter paused, then killed when its turn came: its turn began (somebody heard it).
    if (cl.die_on_turn && d.channel == cl.turn_channel && d.message.find('#') != std::string::npos)
      at(now_ + rng_.range(0, 20 * kMs), [this, c] { kill(c, "when its turn came"); });
    Us arrive = std::max(now_ + delay(), sub.to_client + 1);
    sub.to_client = arrive;
    auto epoch = sub.epoch;
    client_at(c, arrive, [this, c, n, epoch, ch = d.channel, msg = d.message] {
      auto& me = clients_[c];
      if (me.subs[n].epoch != epoch) return;
      Actions out;
      me.brain->on_message(n, ch, msg, cnow(me), out);
      check_turn_heard(c, ch, msg, out);
      apply(c, out);
    });
  }
}

// ---------------------------------------------------------------------------------------------
// Faults

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
        cl.paused_until = std::max(cl.paused_until, now_ + len);
        cl.last_pause_end = std::max(cl.last_pause_end, cl.paused_until);
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
        trace("FAULT n" + std::to_string(n) + " answers acquires oddly for " +
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
  std::size_t q = detail::quorum_size(nodes_.size());
  if (opt_.control == Control::wipe_majority) {
    trace("CONTROL a majority restarts without its data, no restart guard");
    for (std::size_t n = 0; n < q; ++n) crash(n, false, 1 * kMs);
  } else {
    trace("CONTROL a quorum's clocks jump forward by a lease");
    for (std::size_t n = 0; n < q; ++n) nodes_[n].clock.jump(now_, max_ttl_.count() * kMs);
    ++disturbances_;
  }
}

// ---------------------------------------------------------------------------------------------
// Checks

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

  // A fence write-back answers 1 only where every key holds the token or its marked form.
  if (fence && reply == Value::integer(1))
    for (const auto& k : keys) {
      auto v = string_at(k);
      if (!v || (*v != token && *v != marked))
        report("fence", k,
               "answered 1, but the key holds " + (v ? escape_bytes(*v) : std::string("no token")));
    }

  // A waiter's grant (ARGV[7]) leaves the new holder's key marked where others still wait: its
  // release must know it has somebody to tell.
  if (granted && args.size() >= 7 && !marked.empty())
    for (const auto& k : keys)
      if ((node.key(detail::aux_key(k, "queue"), now) ||
           node.key(detail::aux_key(k, "others"), now)) &&
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
      auto o = node.key(detail::aux_key(k, "others"), now);
      if (!o || o->type != KeyType::zset) continue;
      for (std::size_t i = 0; i < o->value.items.size(); i += 2)
        if (o->value.items[i].str == gone)
          report("sign_up", k,
                 "left the sign-up of " + escape_bytes(gone) + ", which stopped waiting");
    }

  // No turn ends later than the cap from now, whatever its ticket asks (MAX_TURN).
  if (release || (acquire && keys.size() == 1 && args.size() >= 7))
    for (const auto& k : keys) {
      auto t = node.key(detail::aux_key(k, "turns"), now);
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
  // still listens on its ticket's channel (a turn whose listener left passes at once).
  if (acquire && !granted && reply.kind == Value::Kind::array && reply.items.size() == 3 &&
      reply.items[2].kind == Value::Kind::bulk && reply.items[2].str.rfind("turn:", 0) == 0 &&
      keys.size() == 1) {
    if (reply.items[1].number > kTurnCapMs)
      report("cap", keys[0],
             "refused for a turn of " + std::to_string(reply.items[1].number) + " ms");
    std::string digest = reply.items[2].str.substr(5);
    auto q = node.key(detail::aux_key(keys[0], "queue"), now);
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
    std::string turns = detail::aux_key(key, "turns");
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
  std::string queue = detail::aux_key(key, "queue");
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
  for (const auto& r : lock_names) {
    if (long_keys_reported_.count(r) != 0) continue;
    for (std::size_t n = 0; n < nodes_.size(); ++n) {
      if (!nodes_[n].up) continue;
      auto k = nodes_[n].redis->key(prefix_ + r, node_ms(n));
      if (!k || k->type != KeyType::string) continue;
      if (k->pttl > max_ttl_.count() + 1 || k->pttl == -1) {
        long_keys_reported_.insert(r);
        violation("checker 5: lock key " + prefix_ + r + " on n" + std::to_string(n) + " has " +
                  std::to_string(k->pttl) + " ms left, more than any lease (" +
                  std::to_string(max_ttl_.count()) + " ms)");
        break;
      }
    }
  }
  if (now_ < faulty_until_) {
    free_since_.clear();
    waited_while_free_.clear();
    return;
  }
  for (const auto& r : resources_) {
    bool free = true;
    for (std::size_t n = 0; n < nodes_.size() && free; ++n)
      free = nodes_[n].up && !nodes_[n].redis->key(prefix_ + r, node_ms(n)).has_value();
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
      // The bound counts this waiter's own request timeout: a request lost to a fault that has
      // just healed is answered by its timeout. Every live waiter ahead of it in the line (it
      // began to wait earlier: places are start times) may let one turn of its own run out
      // first (a waiter that is slow to come, not gone: its channel still listens), so each
      // adds one turn, its notice and its request.
      std::size_t ahead = 0;
      for (const auto& [who, began] : seen)
        if (who.first != cl.index && began < op.wait_start) ++ahead;
      Us bound = bound_free_ + 2 * (cl.config.request_timeout.count() - 200) * kMs +
                 static_cast<Us>(ahead) * (kTurnCap + 2 * 200 * kMs);
      if (now_ - since < bound) continue;
      liveness_reported_.insert(r);
      violation("checker 4: " + r + " free on every node since " + fmt_t(since) + " (" +
                std::to_string((now_ - since) / kMs) + " ms, bound " + std::to_string(bound / kMs) +
                " ms) while c" + std::to_string(cl.index) + " waits for it");
      break;
    }
  }
}

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
      if (!shared) continue;
      if (a.start < b.end && b.start < a.end) {
        overlaps.emplace_back(static_cast<int>(i), static_cast<int>(j));
        if (overlaps.size() <= 3)
          violation("checker 1: c" + std::to_string(a.client) + " claims " + a.resources[0] +
                    " over [" + fmt_t(a.start) + ", " + fmt_t(a.end) + ") and c" +
                    std::to_string(b.client) + " over [" + fmt_t(b.start) + ", " + fmt_t(b.end) +
                    ")");
      }
    }
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
      // A fence counter: `<key>:fence` in the scripts of this version, `<key>\0fence` once the
      // auxiliary keys move to their own namespace (lib/core/keys.hpp).
      bool counter = false;
      for (char sep : {':', detail::kReservedByte}) {
        std::string suffix = std::string(1, sep) + std::string(detail::kFence);
        counter = counter || (k.size() > suffix.size() &&
                              k.compare(k.size() - suffix.size(), suffix.size(), suffix) == 0);
      }
      if (counter && view && view->pttl == -1 && view->type == KeyType::string) continue;
      violation("checker 5: n" + std::to_string(n) + " still has key " + escape_bytes(k) +
                " at the quiet end");
    }
  }
}

RunResult World::run() {
  draw_scenario();
  if (opt_.control == Control::none)
    schedule_faults();
  else
    at(rng_.range(100 * kMs, active_end_ / 2), [this] { trigger_control(); });
  for (std::size_t c = 0; c < clients_.size(); ++c) {
    int ci = static_cast<int>(c);
    client_at(ci, rng_.range(0, 50 * kMs), [this, ci] { start_op(ci); });
  }
  at(25 * kMs, [this] { liveness_probe(); });
  // Bounded: by simulated time and by events.
  const std::uint64_t max_events = 300000;
  while (!queue_.empty() && events_ < max_events) {
    Event e = std::move(const_cast<Event&>(queue_.top()));
    queue_.pop();
    if (e.t > end_) break;
    now_ = e.t;
    ++events_;
    e.fn();
  }
  if (events_ >= max_events) violation("event budget exhausted (a livelock?)");
  now_ = end_;
  final_checks();
  RunResult r;
  r.seed = opt_.seed;
  r.events = events_;
  r.scripts = scripts_;
  r.violations = violations_;
  r.summary = summary_;
  r.enabled.assign(enabled_.begin(), enabled_.end());
  if (opt_.trace) {
    std::uint64_t h = 1469598103934665603ull;
    for (unsigned char ch : trace_) h = (h ^ ch) * 1099511628211ull;
    r.trace_hash = h;
    r.trace = std::move(trace_);
  }
  return r;
}

}  // namespace

const std::vector<std::string>& fault_kinds() { return kFaultKinds; }

RunResult run_seed(const RunOptions& options) {
  World w(options);
  return w.run();
}

}  // namespace redlock::sim
