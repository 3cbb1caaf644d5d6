// The deterministic simulator's world (docs/simulation.md): one event queue ordered by (true
// time, sequence), generators derived from the seed alone, simulated Redis nodes (sim/redis) that
// run the project's scripts, a network of FIFO connections with delays, resets and partitions, per
// node and per client clocks with drift and jumps, faults drawn per seed (swarm), simulated
// clients that run the protocol's decisions, and the checkers. No wall clock, no threads, no
// sockets: a seed replays bit for bit. One thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace redlock::sim {

// Runs that inject faults outside the protocol's assumptions: a checker must catch them
// (docs/simulation.md, "Negative controls").
enum class Control {
  none,
  wipe_majority,      // a majority restarts without its data while a lock is held, no guard
  clock_jump_quorum,  // a quorum's clocks jump forward by a lease while a lock is held
};

struct RunOptions {
  std::uint64_t seed = 0;
  bool trace = false;  // keep a readable trace (slower)
  Control control = Control::none;
  // Fault kinds allowed (names as fault_kinds() lists them); empty: all. The swarm draws which
  // of the allowed kinds are on for each seed.
  std::vector<std::string> faults;
  // With `only`: exactly the kinds in `faults` are on (no swarm draw): a shrunk run.
  bool only = false;
  // Kinds on in every seed whatever the swarm drew (`--with permits,election,rwlock`: every kind
  // of lock in every seed). Every draw is still made, so the rest of a seed's scenario is the one
  // it draws without them.
  std::vector<std::string> with;
};

struct RunResult {
  std::uint64_t seed = 0;
  std::uint64_t events = 0;
  std::uint64_t scripts = 0;            // commands the nodes executed
  std::vector<std::string> violations;  // empty: the run passed every checker
  std::string trace;                    // with RunOptions::trace
  std::uint64_t trace_hash = 0;         // FNV-1a of the trace (0 without it)
  std::string summary;                  // the seed's drawn scenario, one line
  std::vector<std::string> enabled;     // the fault kinds that were on
};

RunResult run_seed(const RunOptions& options);

// The fault kinds the swarm draws from.
const std::vector<std::string>& fault_kinds();

}  // namespace redlock::sim
