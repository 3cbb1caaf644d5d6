// The counting semaphore (AcquireRequest::permits = k) under the faults of the mutex's
// scenarios: node crashes with persistence, a paused minority, partitions, crashed holders, and
// a negative control. Judged by the permit checker (checker.hpp, find_permit_excess): never more
// than k holders whose validity has not ended, never two holders of one slot, one k. Each
// worker's read-modify-write goes to its slot's counter, so a second holder of a slot still
// shows as a lost update.
#include <signal.h>

#include <chrono>
#include <string>
#include <thread>

#include "netfault.hpp"
#include "scenarios.hpp"

namespace redlock::chaos {
namespace {

using namespace std::chrono_literals;
using Steady = std::chrono::steady_clock;

// Looping workers on one semaphore of k permits: explicit (acquire/release), held (renewed), one
// of each with fencing tokens (checked by the storage per slot), `redlock run --permits` with
// `run_lane`, and explicit workers until there are `workers` of them.
void spawn_permits(Run& run, WorkerSpec s, int workers, bool run_lane) {
  auto plain = s.extra_args;
  auto fenced = s.extra_args;
  fenced.push_back("--fencing");
  const char* modes[] = {"explicit", "explicit", "held", "held"};
  for (int i = 0; i < workers; ++i) {
    bool cli = run_lane && i == workers - 1;
    s.mode = cli ? "run" : i < 4 ? modes[i] : "explicit";
    s.extra_args = i == 1 || i == 3 ? fenced : plain;
    run.spawn(cli ? std::string("cli") : s.mode + std::to_string(i), s);
  }
}

WorkerSpec permit_spec(long duration_ms, int k) {
  WorkerSpec s;
  s.ttl = 500;
  s.duration = duration_ms;
  s.permits = k;
  return s;
}

// The slot in a control worker's grant ("ok LEFT TOKEN fence F slot S VOTES"), or -1.
int slot_of(const std::string& reply) {
  auto at = reply.find(" slot ");
  return at == std::string::npos ? -1 : std::atoi(reply.c_str() + at + 6);
}

// (a) k = 3, six workers; nodes with appendonly yes + appendfsync always crash, one or two at a
// time, and restart after 200-600 ms with what their AOF kept: the slots' keys and k survive.
void permits_crash_restart(Run& run) {
  run.start_nodes(5, true);
  // The premise: every node keeps its writes (INFO, as the clients' safeguards read it).
  auto persistent = [&](std::size_t i) {
    auto info = run.node(i).command({"INFO", "persistence"});
    return info.find("aof_enabled:1") != std::string::npos;
  };
  int not_persistent = 0;
  for (std::size_t i = 0; i < run.size(); ++i) not_persistent += !persistent(i);
  long d = run.phase(10000, 25000);
  spawn_permits(run, permit_spec(d, 3), 6, true);
  int crashes =
      crash_restart_rounds(run, d, [&](std::size_t i) { not_persistent += !persistent(i); });
  run.note(std::to_string(crashes) + " node crashes, each restarted with its AOF");
  run.check(not_persistent == 0, "every node says aof_enabled:1 at its start (" +
                                     std::to_string(not_persistent) + " did not)");
}

// (b) k = 2, five workers; two random nodes SIGSTOPped for 700 ms, again and again: ghost SETs of
// slots run after a resume and must be cleaned up.
void permits_pause_minority(Run& run) {
  run.start_nodes(5);
  long d = run.phase(10000, 25000);
  spawn_permits(run, permit_spec(d, 2), 5, false);
  pause_rounds(run, d, 2);
}

// (c) k = 3, six workers; a minority and a majority in turns cut off both ways (nftables) for
// 1 s, then healed: late replies and retransmitted requests after healing.
void permits_partition(Run& run) {
  run.start_nodes(5);
  NetFault net;
  long d = run.phase(10000, 25000);
  spawn_permits(run, permit_spec(d, 3), 6, false);
  partition_rounds(run, net, d, [](std::size_t round) { return round % 2 == 0 ? 2u : 3u; });
}

// (d) k = 2, four looping workers; every ~1.2 s one more process acquires a permit (ttl 800 ms)
// amid them, records its claim to its deadline, and is SIGKILLed holding it: its slot must stay
// taken until its ttl ends, and free then. Afterwards, on quiet nodes: X (ttl 1.5 s) and Y (6 s)
// take both permits; Q, asking with k = 3, is refused (permits_mismatch); X is killed; P is
// refused at once, then gets X's slot, not before X's deadline (the checker).
void permits_holder_crash(Run& run) {
  constexpr long victim_ttl = 800;
  run.start_nodes(5);
  long d = run.phase(8000, 20000);
  auto spawned = Steady::now();
  spawn_permits(run, permit_spec(d, 2), 4, true);
  WorkerSpec v;
  v.permits = 2;
  v.ttl = victim_ttl;
  auto k = kill_holders(
      run, v, d, "acquire " + std::to_string(victim_ttl) + " 3000",
      [](const std::string& r) { return "holding slot " + std::to_string(slot_of(r)); });
  run.note(std::to_string(k.killed) + " holders killed holding a permit, " +
           std::to_string(k.refused) + " refused");
  run.check(k.killed > 0, "some holders were killed holding a permit");
  // The looping workers are done (an acquire begun just before their end waits up to 2 s): a
  // quiet semaphore for the deterministic part.
  std::this_thread::sleep_until(spawned + Ms(d + 2500));
  // Y's ttl outlasts the whole part: the only slot that can free is X's.
  v.ttl = 1500;
  auto& x = run.control("X", v);
  auto& p = run.control("P", v);
  v.ttl = 6000;
  auto& y = run.control("Y", v);
  v.permits = 3;  // another k for the same semaphore
  auto& q = run.control("Q", v);
  run.sleep(300ms);
  auto rx = x.call("acquire 1500 3000");
  auto ry = y.call("acquire 6000 3000");
  run.check(granted(rx) && granted(ry), "X and Y take both permits: " + rx + " / " + ry);
  if (!granted(rx) || !granted(ry)) return;
  // Every holder of one semaphore at one time has one k: another k is refused, not waited out.
  auto rq = q.call("acquire 1500 500");
  run.check(rq.rfind("fail permits_mismatch", 0) == 0,
            "Q, asking for one of 3 permits while 2 are held of 2, is refused: " + rq);
  if (granted(rq))
    for (const char* c : {"end", "release"}) q.call(c);
  x.call("claim");
  kill_control(run, x, "holding slot " + std::to_string(slot_of(rx)));
  auto killed_at = Steady::now();
  auto r0 = p.call("acquire 1500 0");
  run.check(!granted(r0), "P is refused while X's permit is within its ttl: " + r0);
  if (granted(r0)) return;
  auto rp = p.call("acquire 1500 4000", 8s);
  auto waited = std::chrono::duration_cast<Ms>(Steady::now() - killed_at).count();
  run.check(granted(rp), "P gets a permit once X's ttl ended: " + rp);
  if (granted(rp)) {
    run.check(slot_of(rp) == slot_of(rx), "P holds X's slot " + std::to_string(slot_of(rx)) + ": " +
                                              std::to_string(slot_of(rp)));
    run.note("P got X's slot " + std::to_string(waited) + " ms after X was killed (ttl 1500)");
    for (const char* c : {"read", "write", "end", "release"}) p.call(c);
  }
  for (const char* c : {"read", "write", "end", "release"}) y.call(c);
}

// Negative control: A and B hold both permits of k = 2 on all five nodes; nodes 0-2 crash and
// restart empty (no restart guard): C gets a third permit, in A's or B's slot. Caught: three
// holders of two permits, two in one slot, and that slot's counter loses an update.
void permits_empty_restart(Run& run) {
  run.start_nodes(5);
  WorkerSpec spec;
  spec.ttl = 3000;
  spec.permits = 2;
  auto& a = run.control("A", spec);
  auto& b = run.control("B", spec);
  auto& c = run.control("C", spec);
  run.sleep(300ms);
  auto ra = a.call("acquire 3000 0");
  auto rb = b.call("acquire 3000 1000");
  run.check(granted(ra) && granted(rb), "A and B take both permits: " + ra + " / " + rb);
  if (!granted(ra) || !granted(rb)) return;
  run.check(slot_of(ra) != slot_of(rb), "A and B hold different slots");
  a.call("read");
  b.call("read");
  auto rc = c.call("acquire 3000 0");
  run.check(!granted(rc), "C is refused while both permits are held: " + rc);
  if (granted(rc)) return;
  for (std::size_t i : {0, 1, 2}) run.crash(i);
  for (std::size_t i : {0, 1, 2}) run.restart(i);
  run.sleep(500ms);  // the clients reconnect
  rc = c.call("acquire 3000 2000");
  run.check(granted(rc), "C gets a third permit while A's and B's are valid: " + rc);
  if (granted(rc))
    for (const char* cmd : {"read", "write", "end", "release"}) c.call(cmd);
  for (const char* cmd : {"write", "end", "release"}) a.call(cmd);  // one of them is stale
  for (const char* cmd : {"write", "end", "release"}) b.call(cmd);
}

}  // namespace

void add_permit_scenarios(std::vector<Scenario>& out) {
  out.push_back({"permits_crash_restart",
                 Expect::safe,
                 false,
                 {Tool::fsync_nodes},
                 "semaphore k=3, six workers; one or two nodes at a time crash and restart with "
                 "appendfsync always: never more than 3 holders",
                 permits_crash_restart});
  out.push_back({"permits_pause_minority",
                 Expect::safe,
                 true,
                 {},
                 "semaphore k=2, five workers; two random nodes SIGSTOPped for 700 ms, again and "
                 "again: never more than 2 holders, ghost slots cleaned up",
                 permits_pause_minority});
  out.push_back({"permits_partition",
                 Expect::safe,
                 false,
                 {Tool::netns_nft},
                 "semaphore k=3, six workers; a minority and a majority in turns cut off for 1 s "
                 "(nftables): never more than 3 holders",
                 permits_partition});
  out.push_back({"permits_holder_crash",
                 Expect::safe,
                 false,
                 {},
                 "semaphore k=2; holders SIGKILLed holding a permit amid four workers: the slot "
                 "stays taken until its ttl, then frees",
                 permits_holder_crash});
  out.push_back({"permits_empty_restart",
                 Expect::caught,
                 false,
                 {},
                 "semaphore k=2, both permits held; nodes 0-2 restart empty: a third holder "
                 "(negative control)",
                 permits_empty_restart});
}

}  // namespace redlock::chaos
