// The election workload (docs/simulation.md, "One run"): with `election` on, 3 to 6 clients
// campaign for one office (resource kOffice) as lib/client/election.cpp does: a waiting, fenced
// acquire of the office's lock key, watched (renewed) from its grant, then leader.lua's write of
// (term = the grant's fencing token, token, value) on every node, decided at a quorum of yes; a
// write that reaches no quorum releases the office. A leader holds for one to two leases, then
// resigns (the release, then leader.lua's resign on every node, nobody waiting for its replies);
// now and then one crashes while it leads. Other ops read the leader (leader.lua's read on every
// node, decided by lib/proto's leader_verdict) and compare it with the campaign of its term.
// The requests are lib/proto's (leader_write_request, leader_read_request,
// leader_resign_request), sent over the client's connections like the brain's. Every draw is
// election_rng_'s. Checker 12 (checkers/election.cpp) judges it.

#include "world_impl.hpp"

#include "../../lib/proto/election.hpp"
#include "../../lib/proto/scripts.hpp"

namespace redlock::sim::internal {

RequestId World::send_leader(int c, proto::Request r, bool reply_wanted) {
  auto& cl = clients_[c];
  proto::Send s;
  s.id = cl.brain->new_request();
  s.request = std::make_shared<const proto::Request>(std::move(r));
  for (std::size_t n = 0; n < nodes_.size(); ++n) s.nodes.push_back(n);
  s.reply_wanted = reply_wanted;
  if (reply_wanted) election_requests_[{c, s.id}] = cl.op.step;
  send(c, s);
  return s.id;
}

void World::start_campaign(int c) {
  auto& cl = clients_[c];
  UserOp op;
  op.kind = OpKind::campaign;
  op.step = cl.op.step + 1;
  op.resources = {kOffice};
  op.value = "c" + std::to_string(c) + "#" + std::to_string(cl.ops_done);
  AcquireSpec spec;
  spec.resources = op.resources;
  spec.ttl = cl.config.ttl;
  spec.fencing = true;  // the term
  spec.wait = Milliseconds(election_rng_.range(300, max_wait_.count()));
  cl.op = op;
  cl.has_op = true;
  cl.op.waiting = true;
  cl.op.wait_start = now_;
  cl.op.wait_deadline_true = now_ + spec.wait->count() * kMs;
  trace("c" + std::to_string(c) + " campaigns for " + kOffice + " with " + op.value +
        " wait=" + std::to_string(spec.wait->count()) + "ms");
  Actions out;
  cl.op.job = cl.brain->acquire(spec, cnow(cl), kEpochMs * 1000 + local(cl), out);
  apply(c, out);
}

void World::campaign_granted(int c, const AcquireResult& r) {
  auto& cl = clients_[c];
  auto& op = cl.op;
  Claim claim = grant_claim(c, r);
  claim.fence = r.lock.fencing_token;
  op.claim = static_cast<int>(claims_.size());
  claims_.push_back(claim);
  // The term is the grant's fencing token (Election::campaign: lock.fencing_token()).
  office_terms_[r.lock.token] = Term{r.lock.fencing_token, op.value};
  ++op.step;
  // Renewed from the grant on, as hold_with does, while the leader is written.
  Actions out;
  op.lease = cl.brain->watch(op.lock, cnow(cl), out);
  watched(c, op.lease);
  apply(c, out);
  expect_lost(c, op.lease);
  op.votes.assign(nodes_.size(), NodeVote());
  op.request = send_leader(
      c,
      proto::leader_write_request(prefix_ + kOffice, r.lock.token, r.lock.fencing_token, op.value),
      true);
}

void World::start_leader_read(int c) {
  auto& cl = clients_[c];
  UserOp op;
  op.kind = OpKind::leader_read;
  op.step = cl.op.step + 1;
  op.resources = {kOffice};
  cl.op = op;
  cl.has_op = true;
  trace("c" + std::to_string(c) + " reads the leader of " + kOffice);
  cl.op.votes.assign(nodes_.size(), NodeVote());
  cl.op.request = send_leader(c, proto::leader_read_request(prefix_ + kOffice), true);
}

bool World::election_reply(int c, std::size_t n, RequestId id, const std::vector<NodeVote>& votes) {
  auto it = election_requests_.find({c, id});
  if (it == election_requests_.end()) return false;
  auto& cl = clients_[c];
  auto& op = cl.op;
  if (!cl.has_op || op.step != it->second || op.request != id || op.done) {
    election_requests_.erase(it);  // its op is over: nobody waits for the rest
    return true;
  }
  op.votes[n] = votes.empty() ? NodeVote() : votes[0];
  std::size_t answered = 0, yes = 0;
  for (const auto& v : op.votes) {
    if (v.vote != Vote::pending) ++answered;
    if (v.vote == Vote::yes) ++yes;
  }
  if (answered == op.votes.size()) election_requests_.erase(it);
  const std::size_t quorum = nodes_.size() / 2 + 1;
  if (op.kind == OpKind::campaign) {
    // lib/client/election.cpp's write_leader: won at a quorum of yes, lost once it cannot be.
    bool won = yes >= quorum;
    bool lost = yes + (op.votes.size() - answered) < quorum;
    if (!won && !lost) return true;
    op.request = 0;
    auto step = op.step;
    if (lost) {
      trace("c" + std::to_string(c) + " wrote no leader on a quorum: releases");
      op_end(c, true);
      return true;
    }
    // It leads, and believes so until its claim ends.
    leaders_.push_back(Leader{c, op.claim, op.lock.fencing_token, now_});
    trace("c" + std::to_string(c) + " leads " + kOffice +
          " term=" + std::to_string(op.lock.fencing_token));
    Us ttl = cl.config.ttl.count() * kMs;
    if (election_rng_.chance(0.1)) {
      // The leader's process crashes: its office is left to expire, its record to go stale.
      user_step(
          c, step, [this, c] { kill(c, "a leader crashes"); }, election_rng_.range(0, ttl));
    }
    user_step(
        c, step,
        [this, c] {
          // Office::resign: the release, then leader.lua's resign after it on each connection.
          std::string token = clients_[c].op.lock.token;
          trace("c" + std::to_string(c) + " resigns");
          op_end(c, true);
          send_leader(c, proto::leader_resign_request(prefix_ + kOffice, token), false);
        },
        election_rng_.range(ttl, 2 * ttl));
    return true;
  }
  // A read: decided as Election::leader decides it (lib/proto's leader_verdict).
  auto v = proto::leader_verdict(op.votes, quorum);
  if (!v.decided) return true;
  op.request = 0;
  if (v.error)
    trace("c" + std::to_string(c) + " reads no leader: " + v.error.message());
  else if (!v.leads)
    trace("c" + std::to_string(c) + " reads the office vacant");
  else {
    trace("c" + std::to_string(c) + " reads leader term=" + std::to_string(v.term) + " " + v.value);
    // Checker 12 (d): the leader read is the one its term's campaign wrote (terms repeat only
    // where a node lost its fence counter: crash_wipe, as checker 2).
    if (!on("crash_wipe")) {
      const Term* t = nullptr;
      for (const auto& [token, term] : office_terms_)
        if (term.term == v.term) t = &term;
      if ((t == nullptr || t->value != v.value) && reported12_.insert("read").second)
        violation("checker 12: c" + std::to_string(c) + " read leader " + escape_bytes(v.value) +
                  " of term " + std::to_string(v.term) + ", which " +
                  (t == nullptr ? "no grant had" : "campaigned with " + escape_bytes(t->value)));
    }
  }
  op_end(c, false);
  return true;
}

}  // namespace redlock::sim::internal
