// The permits workload (docs/simulation.md, "One run"): with `permits` on, 3 to 8 clients contend
// for the permits of one semaphore (resource kSemaphore) of k = 1..4 (AcquireRequest::permits):
// tries without waiting, waits, holds renewed by the watchdog, extends, releases, and now and then
// a holder that crashes while it holds, or a client that asks with another k (which the nodes
// must refuse while a permit of the first is valid: Errc::permits_mismatch). Every draw is
// permits_rng_'s. Checker 11 (checkers/permits.cpp) judges it.

#include "world_impl.hpp"

namespace redlock::sim::internal {

void World::start_permit(int c) {
  auto& cl = clients_[c];
  UserOp op;
  op.kind = OpKind::permit;
  op.step = cl.op.step + 1;
  op.resources = {kSemaphore};
  op.permits = permits_;
  if (permits_rng_.chance(0.03)) {
    // Another k, of 1..kMostPermits.
    int other = static_cast<int>(permits_rng_.range(1, kMostPermits - 1));
    op.permits = other >= permits_ ? other + 1 : other;
  }
  AcquireSpec spec;
  spec.resources = op.resources;
  spec.ttl = cl.config.ttl;
  spec.permits = static_cast<unsigned>(op.permits);
  // Three in ten try once (the acquire's attempts, no wait), four in ten wait, three in ten hold
  // (renewed by the watchdog), half of those after a wait.
  auto draw = permits_rng_.range(0, 9);
  op.holds = draw >= 7;
  if ((draw >= 3 && draw < 7) || (op.holds && permits_rng_.chance(0.5)))
    spec.wait = Milliseconds(permits_rng_.range(300, max_wait_.count()));
  cl.op = op;
  cl.has_op = true;
  cl.op.waiting = true;
  cl.op.wait_start = now_;
  cl.op.wait_deadline_true = spec.wait ? now_ + spec.wait->count() * kMs : now_;
  trace("c" + std::to_string(c) + " begins permit " + kSemaphore +
        " k=" + std::to_string(op.permits) + (op.holds ? " hold" : "") +
        (spec.wait ? " wait=" + std::to_string(spec.wait->count()) + "ms" : std::string()));
  Actions out;
  cl.op.job = cl.brain->acquire(spec, cnow(cl), kEpochMs * 1000 + local(cl), out);
  apply(c, out);
}

void World::permit_granted(int c, const AcquireResult& r) {
  auto& cl = clients_[c];
  auto& op = cl.op;
  Claim claim = grant_claim(c, r);
  // The k is the one this client asked with (the workload's), the slot the grant's.
  claim.permits = op.permits;
  claim.slot = r.lock.permit;
  op.claim = static_cast<int>(claims_.size());
  claims_.push_back(claim);
  hold_granted_kind(c, permits_rng_, "a holder of a permit crashes");
}

}  // namespace redlock::sim::internal
