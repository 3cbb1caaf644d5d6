// The scenarios of the chaos suite, by the fault tool they need, and what they share.
#pragma once

#include <functional>
#include <random>
#include <string>
#include <vector>

#include "harness.hpp"

namespace redlock::chaos {

class NetFault;

// Crashes, restarts, SIGSTOP of nodes and of clients, `redlock run`, extend: kill and signals
// only (scenarios_process.cpp).
void add_process_scenarios(std::vector<Scenario>& out);
// Partitions and reply loss with nftables, delay through the fault proxy (scenarios_net.cpp).
void add_network_scenarios(std::vector<Scenario>& out);
// Clock rate, jumps and drift on the nodes through the clock shim (scenarios_clock.cpp).
void add_clock_scenarios(std::vector<Scenario>& out);
// The counting semaphore (permits of k) under crashes, pauses, partitions and crashed holders
// (scenarios_permits.cpp).
void add_permit_scenarios(std::vector<Scenario>& out);
// Leader election under pauses, partitions and crashed leaders (scenarios_election.cpp).
void add_election_scenarios(std::vector<Scenario>& out);
// The read-write lock (readers and writers of one key) under pauses, crashes and an empty
// restart (scenarios_rwlock.cpp).
void add_rwlock_scenarios(std::vector<Scenario>& out);

// --- shared by the scenario files ----------------------------------------------------------

// True when a control worker's answer to acquire/hold is a grant.
inline bool granted(const std::string& reply) { return reply.rfind("ok ", 0) == 0; }

// The usual mix of looping workers on one resource: two explicit (acquire/release), one held
// (renewed HeldLock), one Mutex, and with `run_lane` one that goes through `redlock run`. The
// second explicit worker, the held one and `redlock run` ask for fencing tokens, which the
// storage checks.
void spawn_mix(Run& run, long duration_ms, long ttl_ms, bool run_lane);
// The same from a template (its mode is replaced).
void spawn_mix(Run& run, WorkerSpec base, bool run_lane);

// SIGKILLs a control worker (its process), and says so in the run's events.
void kill_control(Run& run, Control& c, const std::string& why);

struct Kills {
  int killed = 0;   // holders SIGKILLed while they held
  int refused = 0;  // workers whose ask was not granted (they quit)
};
// From 500 ms after the start until `d` ms less 1.5 s have passed, every ~1.2 s one more control
// worker of `spec` (victim<n>) sends `ask` ("acquire 800 3000", "elect 800 3000"); granted, it
// reads the counter, claims its grant to its deadline and is SIGKILLed while it holds
// (`what(reply)` names what it held, in the events); refused, it quits.
Kills kill_holders(Run& run, const WorkerSpec& spec, long d, const std::string& ask,
                   const std::function<std::string(const std::string& reply)>& what);

// Nodes [0, n) in a random order.
std::vector<std::size_t> shuffled(std::size_t n, std::mt19937_64& rng);

// Until `d` ms less 2.5 s have passed (the last heal comes before the workers stop), in rounds:
// `cut(round)` of the five nodes, drawn at random, are cut off both ways for a second, then
// healed, and the next round comes 400-700 ms later.
void partition_rounds(Run& run, NetFault& net, long d,
                      const std::function<std::size_t(std::size_t round)>& cut);

// From 500 ms after the start until `d` ms less 1 s have passed, in rounds: `k` of the five nodes,
// drawn at random, SIGSTOPped for 700 ms, then resumed, and the next round 400-700 ms later.
// Returns the number of rounds.
int pause_rounds(Run& run, long d, std::size_t k);

// From 500 ms after the start until `d` ms less 1.5 s have passed, in rounds: one or two of the
// five nodes, drawn at random, crash and restart 200-600 ms later with what they kept (their AOF
// when started so), `restarted(i)` after each restart, and the next round 300-700 ms later.
// Returns the number of crashes.
int crash_restart_rounds(Run& run, long d,
                         const std::function<void(std::size_t node)>& restarted = {});

}  // namespace redlock::chaos
