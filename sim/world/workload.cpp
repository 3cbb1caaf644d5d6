// The workload: each client's user operations one after the other (try_acquire, wait, fenced,
// hold with its extends, multi, cancel; multi_hold in multi_hold.cpp, late_hold's stall in
// late_hold.cpp, permits in permits.cpp, the election's campaigns and reads in election.cpp, the
// read-write lock's readers and writers in rwlock.cpp),
// their claims, fenced writes to the storage, and their end.

#include "world_impl.hpp"

namespace redlock::sim::internal {

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
  if (on("rwlock") && rw_rng_.chance(0.6)) return start_rw(c);
  if (on("election") && election_rng_.chance(0.6))
    return election_rng_.chance(0.7) ? start_campaign(c) : start_leader_read(c);
  if (on("permits") && permits_rng_.chance(0.6)) return start_permit(c);
  if (on(kMultiHold) && hold_rng_.chance(0.3)) return start_multi_hold(c);
  std::vector<OpKind> kinds = {OpKind::try_acquire, OpKind::wait, OpKind::wait,
                               OpKind::fenced,      OpKind::hold, OpKind::cancel,
                               OpKind::late_hold};
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
  if (op.kind == OpKind::late_hold) stall_after_acquire(c);
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

Claim World::grant_claim(int c, const AcquireResult& r) {
  auto& op = clients_[c].op;
  op.granted = true;
  op.lock = r.lock;
  Claim claim;
  claim.client = c;
  claim.resources = op.resources;
  claim.start = now_;
  claim.deadline_local = us(r.lock.valid_until);
  claim.token = r.lock.token;
  return claim;
}

void World::op_granted(int c, const AcquireResult& r) {
  auto& cl = clients_[c];
  auto& op = cl.op;
  Claim claim = grant_claim(c, r);
  claim.fence = r.lock.fencing_token;
  claim.fenced = op.kind == OpKind::fenced;
  op.claim = static_cast<int>(claims_.size());
  claims_.push_back(claim);
  ++op.step;
  auto step = op.step;
  Us ttl = cl.config.ttl.count() * kMs;
  if (op.kind == OpKind::hold || op.kind == OpKind::late_hold) {
    // A late hold came after a stall of up to 0.9 leases: it holds for less, so that it ends
    // within the three leases the quiet end waits for.
    watch_then_end(c, step, rng_, op.kind == OpKind::hold ? 3 * ttl : 2 * ttl);
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
  extend_or_end(c, step, rng_);
}

void World::watch_then_end(int c, std::uint64_t step, Rng& rng, Us most) {
  auto& cl = clients_[c];
  auto& op = cl.op;
  Actions out;
  op.lease = cl.brain->watch(op.lock, cnow(cl), out);
  watched(c, op.lease);
  apply(c, out);
  expect_lost(c, op.lease);
  Us ttl = cl.config.ttl.count() * kMs;
  user_step(
      c, step, [this, c] { op_end(c, true); }, rng.range(ttl, most));
}

void World::extend_or_end(int c, std::uint64_t step, Rng& rng) {
  Us ttl = clients_[c].config.ttl.count() * kMs;
  if (rng.chance(0.3)) {
    // An extend, to the lease's ttl or to a shorter or a longer one: the nodes must never shorten
    // a key (the holder keeps the later of its two deadlines), and the holder then holds on to
    // the end of what it believes (schedule_release), so a key shorter than the belief, or a
    // belief no quorum confirmed, meets the next holder (checker 1).
    Us ext = ttl * rng.pick(kExtendPercents) / 100;
    extend_then_end(c, step, ext, rng.range(0, ttl / 2), ttl);
    return;
  }
  user_step(
      c, step, [this, c] { op_end(c, true); }, rng.range(0, ttl));
}

void World::hold_granted_kind(int c, Rng& rng, const char* crash) {
  auto& cl = clients_[c];
  auto& op = cl.op;
  ++op.step;
  auto step = op.step;
  Us ttl = cl.config.ttl.count() * kMs;
  if (rng.chance(0.05)) {
    // The holder's process crashes while it holds: what it holds is left to expire on the nodes.
    user_step(
        c, step, [this, c, crash] { kill(c, crash); }, rng.range(0, ttl / 2));
  }
  if (op.holds) {
    watch_then_end(c, step, rng, 2 * ttl);
    return;
  }
  extend_or_end(c, step, rng);
}

void World::extend_then_end(int c, std::uint64_t step, Us ext, Us at, Us ttl) {
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
      at);
  user_step(
      c, step, [this, c] { op_end(c, true); }, 3 * ttl);
}

void World::schedule_release(int c, Us within) {
  auto& op = clients_[c].op;
  ++op.step;  // the fallback release is void now
  user_step(
      c, op.step, [this, c] { op_end(c, true); }, rng_.range(within / 2, std::max(within, Us(0))));
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

}  // namespace redlock::sim::internal
