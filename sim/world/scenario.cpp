// The scenario a seed draws (docs/simulation.md, "One run"): the nodes, clients, clocks,
// resources, ttls and the fault kinds that are on (the swarm).

#include "world_impl.hpp"

namespace redlock::sim::internal {

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
  // The permits workload (permits.cpp), one seed in three: from its own generator, as the kinds
  // above, and so are its k and its clients.
  if (opt_.control == Control::none &&
      std::find(allowed.begin(), allowed.end(), "permits") != allowed.end() &&
      permits_rng_.chance(1.0 / 3))
    enabled_.insert("permits");
  permits_ = static_cast<int>(permits_rng_.range(1, kMostPermits));
  int permit_clients = static_cast<int>(permits_rng_.range(3, 8));
  // The election workload (election.cpp), one seed in three: from its own generator, and so are
  // its clients.
  if (opt_.control == Control::none &&
      std::find(allowed.begin(), allowed.end(), "election") != allowed.end() &&
      election_rng_.chance(1.0 / 3))
    enabled_.insert("election");
  int election_clients = static_cast<int>(election_rng_.range(3, 6));
  // The rwlock workload (rwlock.cpp), one seed in three: from its own generator, and so are its
  // clients.
  if (opt_.control == Control::none &&
      std::find(allowed.begin(), allowed.end(), "rwlock") != allowed.end() &&
      rw_rng_.chance(1.0 / 3))
    enabled_.insert("rwlock");
  int rw_clients = static_cast<int>(rw_rng_.range(3, 8));
  // A few stalls per run, as `pause` has: each one keeps liveness (checker 4) and checker 9
  // from judging for a while, and most of the run should still be judged.
  late_left_ = static_cast<int>(late_rng_.range(1, 3));
  // A shrunk replay names its kinds exactly (the draws above are made all the same); --with
  // switches its kinds on whatever was drawn.
  if (opt_.only) enabled_ = std::set<std::string>(opt_.faults.begin(), opt_.faults.end());
  if (opt_.control == Control::none) enabled_.insert(opt_.with.begin(), opt_.with.end());
  if (on(kMultiHold)) hold_resources_ = kHoldResources;

  // Odd counts are the common case (3 and 5 six draws in eleven, 1 and 7 two more); even counts
  // (2, 4, 6) are drawn too, where a quorum (N/2 + 1) tolerates no more lost nodes than N - 1
  // would: two of two, three of four, four of six.
  static const std::vector<int> node_counts = {1, 2, 3, 3, 3, 3, 4, 5, 5, 6, 7};
  std::size_t n = static_cast<std::size_t>(rng_.pick(node_counts));
  int clients = static_cast<int>(rng_.range(2, 6));
  // With permits, 3 to 8 clients, so that more than k of them contend for the k permits.
  if (on("permits")) clients = permit_clients;
  // With election (and no permits), 3 to 6 clients, so that several campaign at once.
  if (on("election") && !on("permits")) clients = election_clients;
  // With rwlock, 3 to 8 clients, so that readers overlap and writers wait behind them.
  if (on("rwlock")) clients = rw_clients;
  static const std::vector<int> ttls = {300, 500, 1000};
  ttl_ = Milliseconds(rng_.pick(ttls));
  if (opt_.control != Control::none) {
    n = rng_.chance(0.5) ? 3 : 5;
    clients = static_cast<int>(rng_.range(3, 5));
  }
  max_ttl_ = ttl_;

  // Resources: a few names; with `collide`, some are named like other resources' auxiliary keys
  // (of the layout before: "r:queue"), or like r's hash tag ("{r}", "r{r}": the Cluster layout
  // names r's auxiliary keys with "{r}", docs/architecture.md "Keys"; neither may share them).
  static const std::vector<std::string> collide = {"r:queue", "r:turns", "r:others",
                                                   "r:fence", "{r}",     "r{r}"};
  resources_ = {"r"};
  int extra = opt_.control != Control::none ? 0 : static_cast<int>(rng_.range(0, 2));
  for (int i = 0; i < extra; ++i) {
    if (on("collide") && rng_.chance(0.7))
      resources_.push_back(rng_.pick(collide));
    else
      resources_.push_back(std::string("s") + static_cast<char>('0' + i));
  }

  // With `replica`, one node of three or more is a replica that takes writes (replica-read-only
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
  if (on("permits")) s << " permits=" << permits_;
  if (on("election")) s << " office=" << kOffice;
  if (on("rwlock")) s << " rwlock=" << kRwLock;
  if (opt_.control == Control::wipe_majority) s << " control=wipe-majority";
  if (opt_.control == Control::clock_jump_quorum) s << " control=clock-jump-quorum";
  summary_ = s.str();
  trace("scenario " + summary_);
}

}  // namespace redlock::sim::internal
