// Leader election (redlock::Election, docs/guide-election.md) under the faults of the mutex's
// scenarios: a paused minority, partitions, crashed leaders. Each term a worker leads is a
// section whose fencing token is its term, so the suite's checker judges the office's two rules
// with the mutex's: no two leaders whose validity overlaps (claimed sections), and terms that
// grow strictly in the order the terms began (the fence rule; the storage also refuses a write
// carrying a term below one it has seen).
#include <chrono>
#include <string>
#include <thread>

#include "netfault.hpp"
#include "scenarios.hpp"

namespace redlock::chaos {
namespace {

using namespace std::chrono_literals;
using Steady = std::chrono::steady_clock;

// Looping campaigners for one office (worker mode elect): each campaigns with a wait, leads for
// a few ms (renewed), and resigns.
void spawn_campaigners(Run& run, long duration_ms, int workers) {
  WorkerSpec s;
  s.mode = "elect";
  s.resource = "office";
  s.ttl = 500;
  s.duration = duration_ms;
  for (int i = 0; i < workers; ++i) run.spawn("elect" + std::to_string(i), s);
}

// The term in a control worker's grant ("ok LEFT TOKEN fence TERM VOTES"), or -1.
long term_of(const std::string& reply) {
  auto at = reply.find(" fence ");
  return at == std::string::npos ? -1 : std::atol(reply.c_str() + at + 7);
}

// (a) Four campaigners; two random nodes SIGSTOPped for 700 ms, again and again: a leader whose
// renewals stall on the paused nodes keeps the office on the other three, and ghost grants that
// run after a resume are cleaned up.
void election_pause_minority(Run& run) {
  run.start_nodes(5);
  long d = run.phase(8000, 25000);
  spawn_campaigners(run, d, 4);
  pause_rounds(run, d, 2);
}

// (b) Four campaigners; a minority and a majority in turns cut off both ways for 1 s (nftables):
// a leader cut off from a majority loses the office (its renewals fail) before another can win it.
void election_partition(Run& run) {
  run.start_nodes(5);
  NetFault net;
  long d = run.phase(10000, 25000);
  spawn_campaigners(run, d, 4);
  partition_rounds(run, net, d, [](std::size_t round) { return round % 2 == 0 ? 2u : 3u; });
}

// (c) Three looping campaigners; every ~1.2 s one more process wins the office (ttl 800 ms) amid
// them, claims it to its deadline, and is SIGKILLed while it leads: nobody else may lead before
// that deadline, and the office must be won again after it (the loopers keep campaigning).
// Afterwards, on a quiet office: L leads (ttl 1.5 s) and is killed; P is refused at once, then
// wins a later term, not before L's deadline (the checker).
void election_leader_crash(Run& run) {
  constexpr long victim_ttl = 800;
  run.start_nodes(5);
  long d = run.phase(8000, 20000);
  auto spawned = Steady::now();
  spawn_campaigners(run, d, 3);
  WorkerSpec v;
  v.resource = "office";
  auto k = kill_holders(
      run, v, d, "elect " + std::to_string(victim_ttl) + " 3000",
      [](const std::string& r) { return "leading in term " + std::to_string(term_of(r)); });
  run.note(std::to_string(k.killed) + " leaders killed while leading, " +
           std::to_string(k.refused) + " campaigns that did not win");
  run.check(k.killed > 0, "some leaders were killed while leading");
  // The loopers are done (a campaign begun just before their end waits up to 2 s).
  std::this_thread::sleep_until(spawned + Ms(d + 2500));
  v.ttl = 1500;
  auto& l = run.control("L", v);
  auto& p = run.control("P", v);
  run.sleep(300ms);
  auto rl = l.call("elect 1500 3000");
  run.check(granted(rl), "L wins the office: " + rl);
  if (!granted(rl)) return;
  l.call("claim");
  kill_control(run, l, "leading in term " + std::to_string(term_of(rl)));
  auto killed_at = Steady::now();
  auto r0 = p.call("elect 1500 0");
  run.check(!granted(r0), "P is refused while L's term is within its ttl: " + r0);
  if (granted(r0)) return;
  auto rp = p.call("elect 1500 4000", 8s);
  auto waited = std::chrono::duration_cast<Ms>(Steady::now() - killed_at).count();
  run.check(granted(rp), "P wins the office once L's ttl ended: " + rp);
  if (granted(rp)) {
    run.check(term_of(rp) > term_of(rl), "P's term " + std::to_string(term_of(rp)) +
                                             " follows L's " + std::to_string(term_of(rl)));
    run.note("P won " + std::to_string(waited) + " ms after L was killed (ttl 1500)");
    for (const char* c : {"read", "write", "end", "release"}) p.call(c);
  }
}

}  // namespace

void add_election_scenarios(std::vector<Scenario>& out) {
  out.push_back({"election_pause_minority",
                 Expect::safe,
                 true,
                 {},
                 "an office, four campaigners; two random nodes SIGSTOPped for 700 ms, again "
                 "and again: one leader at a time, terms strictly increasing",
                 election_pause_minority});
  out.push_back({"election_partition",
                 Expect::safe,
                 false,
                 {Tool::netns_nft},
                 "an office, four campaigners; a minority and a majority in turns cut off for "
                 "1 s (nftables): one leader at a time, terms strictly increasing",
                 election_partition});
  out.push_back({"election_leader_crash",
                 Expect::safe,
                 false,
                 {},
                 "an office; leaders SIGKILLed while leading amid three campaigners: nobody "
                 "leads before the dead leader's deadline, and the office is won again after it",
                 election_leader_crash});
}

}  // namespace redlock::chaos
