// The rwlock workload (docs/simulation.md, "The read-write lock"): with `rwlock` on, 3 to 8
// clients read and write one read-write lock (resource kRwLock). A reader is an acquire with
// AcquireRequest::shared; a writer is a plain mutex acquire of the same resource (the read-write
// contract: a writer IS a mutex holder of the lock key). Both try without waiting, wait, hold
// renewed by the watchdog, extend and release; now and then a holder crashes while it holds.
// Every draw is rw_rng_'s. Checker 13 (checkers/rwlock.cpp) judges it.

#include "world_impl.hpp"

namespace redlock::sim::internal {

void World::start_rw(int c) {
  auto& cl = clients_[c];
  UserOp op;
  // Six in ten are readers, so that readers overlap and a writer meets a stream of them.
  op.kind = rw_rng_.chance(0.6) ? OpKind::reader : OpKind::writer;
  op.step = cl.op.step + 1;
  op.resources = {kRwLock};
  AcquireSpec spec;
  spec.resources = op.resources;
  spec.ttl = cl.config.ttl;
  spec.shared = op.kind == OpKind::reader;
  // One in five fenced: one counter for readers and writers.
  spec.fencing = rw_rng_.chance(0.2);
  // Three in ten try once (the acquire's attempts, no wait), four in ten wait, three in ten hold
  // (renewed by the watchdog), half of those after a wait.
  auto draw = rw_rng_.range(0, 9);
  op.holds = draw >= 7;
  if ((draw >= 3 && draw < 7) || (op.holds && rw_rng_.chance(0.5)))
    spec.wait = Milliseconds(rw_rng_.range(300, max_wait_.count()));
  // A waiter's place: microseconds on its wall clock (the same number on every node); the
  // line's order (acquire.lua's queue, by place), which checker 13's overtaking rule reads.
  op.place = kEpochMs * 1000 + local(cl);
  op.calm_mark = disturbances_;
  cl.op = op;
  cl.has_op = true;
  cl.op.waiting = true;
  cl.op.wait_start = now_;
  cl.op.wait_deadline_true = spec.wait ? now_ + spec.wait->count() * kMs : now_;
  trace("c" + std::to_string(c) + " begins " + op_name(op.kind) + " " + kRwLock +
        (op.holds ? " hold" : "") + (spec.fencing ? " fenced" : "") +
        (spec.wait ? " wait=" + std::to_string(spec.wait->count()) + "ms" : std::string()));
  Actions out;
  cl.op.job = cl.brain->acquire(spec, cnow(cl), op.place, out);
  apply(c, out);
}

void World::rw_granted(int c, const AcquireResult& r) {
  auto& cl = clients_[c];
  auto& op = cl.op;
  Claim claim = grant_claim(c, r);
  claim.shared = op.kind == OpKind::reader;
  claim.fence = r.lock.fencing_token;
  // Checker 2 judges the writers' tokens (one after the other, as a mutex's); checker 13 the
  // readers' against the writers'.
  claim.fenced = op.kind == OpKind::writer && r.lock.fencing_token != 0;
  op.claim = static_cast<int>(claims_.size());
  claims_.push_back(claim);
  if (op.kind == OpKind::reader) check_rw_overtake(c);
  hold_granted_kind(c, rw_rng_, "a holder of the read-write lock crashes");
}

}  // namespace redlock::sim::internal
