// The late_hold workload (docs/simulation.md, "One run"): a hold (an acquire renewed by the
// watchdog) whose client stalls right after its acquire leaves, as a process in a long GC pause
// or on a loaded machine would, so that it reads the nodes' replies with little of its validity
// left: from about half of the lease down to less than the least a grant keeps
// (Config::min_validity_ratio, a tenth). A grant then comes with little validity left, and the
// watchdog must renew it before it gives it up: checker 9 judges every such lease that a renewal
// could still save (checkers/beliefs.cpp). Not a fault: no checker stops judging for it.

#include "world_impl.hpp"

namespace redlock::sim::internal {

void World::stall_after_acquire(int c) {
  auto& cl = clients_[c];
  Us ttl = cl.config.ttl.count() * kMs;
  Us len = rng_.range(ttl * 50 / 100, ttl * 90 / 100);
  trace("c" + std::to_string(c) + " stalls for " + std::to_string(len / kMs) +
        " ms after its acquire left (late_hold)");
  // A stall like any other for the checkers that judge stalls (3, 9): it ends before the grant
  // is read, so it stalls nothing of the lease.
  cl.stall(now_, len);
}

}  // namespace redlock::sim::internal
