// Network faults: partitions and reply loss with nftables (inside a private network namespace
// only), delay through the fault proxy.
#include <chrono>
#include <memory>

#include "fault_proxy.hpp"
#include "netfault.hpp"
#include "record.hpp"
#include "scenarios.hpp"

namespace redlock::chaos {
namespace {

using namespace std::chrono_literals;
using Steady = std::chrono::steady_clock;

// `k` random nodes are cut off both ways for a second, then healed, again and again. TCP
// retransmits the old requests after healing and late replies arrive: a client that read one
// as the answer to a later request could grant a lock nobody holds.
void partition(Run& run, std::size_t k) {
  run.start_nodes(5);
  NetFault net;
  long d = run.phase(10000, 25000);
  spawn_mix(run, d, 500, false);
  partition_rounds(run, net, d, [k](std::size_t) { return k; });
}

// Replies lost while the commands run (first on a minority, then on a majority, in turns), then
// 30 % random loss both ways on every node. A lock granted on a node whose reply was lost is
// ours; the clean-up must reach it, or its ttl must end it: nothing may be left behind.
void reply_loss(Run& run) {
  run.start_nodes(5);
  NetFault net;
  long d = run.phase(10000, 24000);
  spawn_mix(run, d, 500, false);
  std::mt19937_64 rng(std::random_device{}());
  auto half = Steady::now() + Ms(d / 2);
  run.sleep(500ms);
  for (std::size_t round = 0; Steady::now() < half; ++round) {
    auto order = shuffled(5, rng);
    order.resize(round % 2 == 0 ? 2 : 3);
    std::string which;
    for (auto i : order) {
      net.drop_from_port(run.client_port(i));
      which += " " + std::to_string(i);
    }
    run.event("replies dropped from nodes" + which);
    run.sleep(800ms);
    net.heal_all();
    run.network_healed();
    run.sleep(500ms);
  }
  for (std::size_t i = 0; i < run.size(); ++i) net.loss(run.client_port(i), 30);
  run.event("30% random loss on every node");
  run.sleep(Ms(d / 2 - 2500));  // healed before the workers stop
  net.heal_all();
  run.network_healed();
}

// Every node behind a fault proxy. The lease is 400 ms with a drift factor of 0.2: validity
// 318 ms, request timeout 390 ms. Delaying a majority by 175 ms each way puts their answers
// between the end of validity and the timeout: every quorum arrives too late, and the acquire
// must fail (validity_expired), never grant a lock whose deadline has passed. A 60 ms delay
// still grants, with less validity left.
void delay_beyond_validity(Run& run) {
  run.start_nodes(5);
  std::vector<std::unique_ptr<FaultProxy>> proxies;
  std::vector<std::uint16_t> ports;
  for (std::size_t i = 0; i < run.size(); ++i) {
    proxies.push_back(std::make_unique<FaultProxy>(run.client_port(i)));
    ports.push_back(proxies.back()->port());
  }
  long d = run.phase(9000, 16000);
  WorkerSpec s;
  s.nodes = run.node_list(ports);
  s.ttl = 400;
  s.drift = 0.2;
  s.request_timeout = 390;
  s.wait = 1000;
  s.duration = d;
  run.spawn("explicit1", s);
  run.spawn("explicit2", s);
  s.mode = "held";
  run.spawn("held", s);
  // A probe on a resource of its own: one attempt at a time, nobody to contend with.
  WorkerSpec p = s;
  p.resource = "probe";
  auto& probe = run.control("probe", p);

  auto delay = [&](Ms each_way) {
    for (std::size_t i : {0, 1, 2})
      proxies[i]->set_mode(each_way.count() ? ProxyMode::delay : ProxyMode::pass, each_way);
    run.event("nodes 0-2 delayed " + std::to_string(each_way.count()) + " ms each way");
  };
  run.sleep(2000ms);
  delay(175ms);
  auto late_from = raw_now_ns() + 500'000'000;  // attempts begun before the switch may still end
  for (int i = 0; i < 3; ++i) {
    run.sleep(Ms(d / 8));
    auto r = probe.call("acquire 400 0");
    run.check(r.rfind("fail validity_expired", 0) == 0,
              "a quorum that arrives after the window is a failure: " + r.substr(0, 40));
    if (granted(r)) probe.call("release");
  }
  run.sleep(Ms(d / 2 - 1000 - 3 * (d / 8)));
  auto late_to = raw_now_ns();
  delay(60ms);
  run.sleep(500ms);
  auto r = probe.call("acquire 400 0");
  run.check(granted(r), "a 120 ms round trip still grants, with less validity: " + r.substr(0, 40));
  if (granted(r))
    for (const char* c : {"end", "release"}) probe.call(c);
  run.sleep(1500ms);
  delay(0ms);
  run.sleep(Ms(d - d / 2 - 3000));

  run.wait_all(15s);
  std::size_t granted_late = 0;
  for (const char* id : {"explicit1", "explicit2", "held"})
    for (const auto& rec : read_records(run.records_path(id)))
      if (rec.kind == "section" && rec.get_int("start") >= late_from &&
          rec.get_int("start") <= late_to)
        ++granted_late;
  run.check(granted_late == 0, std::to_string(granted_late) +
                                   " grants while every quorum arrived after the validity window");
}

}  // namespace

void add_network_scenarios(std::vector<Scenario>& out) {
  out.push_back({"partition_minority",
                 Expect::safe,
                 false,
                 {Tool::netns_nft},
                 "two random nodes cut off both ways for 1 s, then healed, again and again",
                 [](Run& r) { partition(r, 2); }});
  out.push_back({"partition_majority",
                 Expect::safe,
                 true,
                 {Tool::netns_nft},
                 "three random nodes cut off both ways for 1 s, then healed (late replies)",
                 [](Run& r) { partition(r, 3); }});
  out.push_back({"reply_loss",
                 Expect::safe,
                 false,
                 {Tool::netns_nft},
                 "replies dropped from a minority / a majority, then 30% random loss everywhere",
                 reply_loss});
  out.push_back({"delay_beyond_validity",
                 Expect::safe,
                 true,
                 {Tool::proxy},
                 "a majority delayed past the validity budget: acquires fail, never grant late",
                 delay_beyond_validity});
}

}  // namespace redlock::chaos
