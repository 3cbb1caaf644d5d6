// The simulated clients: the actions of a client's protocol brain (lib/proto) carried out in the
// world (timers, sends, subscriptions, results), and a client's death.

#include "world_impl.hpp"

namespace redlock::sim::internal {

void World::apply(int c, Actions& out) {
  auto& cl = clients_[c];
  for (std::size_t i = 0; i < out.size(); ++i) {
    auto& a = out[i];
    if (auto* s = std::get_if<proto::Send>(&a)) {
      if (s->job != 0 && s->reply_wanted && s->request->script == proto::ScriptId::acquire)
        attempting_[{c, s->job}] = true;
      send(c, *s);
    } else if (auto* t = std::get_if<proto::ArmTimer>(&a)) {
      if (t->job != 0 && us(t->at) > local(cl) + kMs) attempting_[{c, t->job}] = false;
      auto gen = ++cl.timer_gen;
      Us l = us(t->at);
      cl.timers[t->id] = {l, gen};
      auto id = t->id;
      client_at(c, cl.clock.when(l, now_), [this, c, id, gen] {
        auto& me = clients_[c];
        auto it = me.timers.find(id);
        if (it == me.timers.end() || it->second.second != gen) return;
        if (local(me) < it->second.first) {  // the clock went back meanwhile
          auto l2 = it->second.first;
          client_at(c, me.clock.when(l2, now_), [this, c, id, gen] {
            auto& m2 = clients_[c];
            auto it2 = m2.timers.find(id);
            if (it2 == m2.timers.end() || it2->second.second != gen) return;
            m2.timers.erase(it2);
            Actions o;
            m2.brain->on_timer(id, cnow(m2), o);
            apply(c, o);
          });
          return;
        }
        me.timers.erase(it);
        Actions o;
        me.brain->on_timer(id, cnow(me), o);
        apply(c, o);
      });
    } else if (auto* ct = std::get_if<proto::CancelTimer>(&a)) {
      cl.timers.erase(ct->id);
    } else if (auto* sb = std::get_if<proto::Subscribe>(&a)) {
      if (cl.channels.insert(sb->channel).second) {
        trace("c" + std::to_string(c) + " subscribe " + sb->channel);
        for (std::size_t n = 0; n < nodes_.size(); ++n) {
          if (cl.subs[n].id == 0)
            sub_connect(c, n);
          else
            sub_send(c, n, "SUBSCRIBE", sb->channel);
        }
      }
    } else if (auto* ub = std::get_if<proto::Unsubscribe>(&a)) {
      if (cl.channels.erase(ub->channel) != 0)
        for (std::size_t n = 0; n < nodes_.size(); ++n)
          if (cl.subs[n].id != 0) sub_send(c, n, "UNSUBSCRIBE", ub->channel);
    } else if (auto* d = std::get_if<proto::DeliverAcquire>(&a)) {
      HeldPart* part = part_of_job(cl, d->job);
      if (!cl.has_op || (cl.op.job != d->job && part == nullptr)) continue;
      trace("c" + std::to_string(c) + " acquire " +
            (part != nullptr ? part->resource + " " : std::string()) +
            (d->result
                 ? "GRANTED, believes until " + fmt_t(us(d->result.lock.valid_until)) + " (local)"
                 : "refused: " + d->result.error.message()) +
            (d->result.lock.fencing_token ? " fence=" + std::to_string(d->result.lock.fencing_token)
                                          : std::string()));
      if (part == nullptr) cl.op.waiting = false;
      if (d->result) {
        // Checker 7, a grant: kept only with the least validity left (Config::min_validity_ratio),
        // by the checker's own arithmetic (least_left), not the library's least_validity.
        auto left = us(d->result.lock.valid_until) - local(cl);
        auto least = least_left(cl.config.ttl.count(), cl.config.min_validity_ratio);
        if (left < least)
          violation("checker 7: c" + std::to_string(c) + " granted with " + std::to_string(left) +
                    " us of validity left, below the least " + std::to_string(least) + " us");
        check_backed(c, d->result.lock, "grant");
      }
      if (part != nullptr)
        part_delivered(c, *part, d->result);
      else if (d->result && cl.op.kind == OpKind::permit)
        permit_granted(c, d->result);
      else if (d->result && cl.op.kind == OpKind::campaign)
        campaign_granted(c, d->result);
      else if (d->result && (cl.op.kind == OpKind::reader || cl.op.kind == OpKind::writer))
        rw_granted(c, d->result);
      else if (d->result)
        op_granted(c, d->result);
      else
        op_end(c, false);
    } else if (auto* e = std::get_if<proto::DeliverExtend>(&a)) {
      if (!cl.has_op || !cl.op.granted) continue;
      if (e->result) {
        cl.op.lock.valid_until = e->result.valid_until;
        if (cl.op.claim >= 0) claims_[cl.op.claim].deadline_local = us(e->result.valid_until);
        check_backed(c, cl.op.lock, "extend");
      }
      trace("c" + std::to_string(c) + " extend " + (e->result ? "ok" : e->result.error.message()) +
            " believes until " + fmt_t(us(cl.op.lock.valid_until)) + " (local)");
      if (cl.op.extending && !cl.op.done) {
        cl.op.extending = false;
        schedule_release(c, us(cl.op.lock.valid_until) - local(cl));
      }
    } else if (std::get_if<proto::DeliverRelease>(&a)) {
      // Nothing to do: the claim ended when the release left.
    } else if (auto* r = std::get_if<proto::Renewed>(&a)) {
      if (cl.has_op && cl.op.lease == r->lease && cl.op.claim >= 0) {
        cl.op.lock.valid_until = r->valid_until;
        claims_[cl.op.claim].deadline_local = us(r->valid_until);
        trace("c" + std::to_string(c) + " renewed, believes until " + fmt_t(us(r->valid_until)) +
              " (local)");
        check_backed(c, cl.op.lock, "renewal");
        expect_lost(c, cl.op.lease);
      } else if (HeldPart* p = part_of_lease(cl, r->lease); p != nullptr && p->claim >= 0) {
        p->lock.valid_until = r->valid_until;
        claims_[p->claim].deadline_local = us(r->valid_until);
        trace("c" + std::to_string(c) + " renewed " + p->resource + ", believes until " +
              fmt_t(us(r->valid_until)) + " (local)");
        check_backed(c, p->lock, "renewal");
        expect_lost(c, p->lease);
      }
    } else if (auto* l = std::get_if<proto::Lost>(&a)) {
      HeldPart* part = part_of_lease(cl, l->lease);
      if (!cl.has_op || (cl.op.lease != l->lease && part == nullptr)) continue;
      const Lock& lost = part != nullptr ? part->lock : cl.op.lock;
      // Checker 3: the lost-lock signal comes no later than the believed deadline (unless the
      // client was stalled across it: then it comes as soon as it runs again).
      // Judged in true time: a clock that jumps forward past the deadline reads past it at once.
      Us deadline = us(lost.valid_until);
      Us dl_true = cl.clock.first_reading(deadline);
      if (now_ > dl_true && !(cl.last_pause_end >= dl_true))
        violation("checker 3: c" + std::to_string(c) + " heard of its lost lock at local " +
                  fmt_t(local(cl)) + ", after its believed deadline " + fmt_t(deadline));
      check_lost(c, l->lease, lost, l->reason);
      if (part != nullptr) {
        trace("c" + std::to_string(c) + " LOST its lock on " + part->resource);
        part->lease = 0;
        part_end(c, *part, true);
        bool all = true;
        for (const auto& p : cl.op.parts) all = all && !p.waiting && (p.ended || !p.granted);
        if (all) op_end(c, false);
        continue;
      }
      trace("c" + std::to_string(c) + " LOST its lock");
      cl.op.lease = 0;
      op_end(c, true);
    }
  }
}

void World::kill(int c, const std::string& why) {
  auto& cl = clients_[c];
  if (!cl.alive) return;
  trace("FAULT c" + std::to_string(c) + " dies (" + why + ")");
  if (cl.has_op) close_claim(cl.op, now_);
  cl.alive = false;
  cl.has_op = false;
  // Its connections close: the nodes drop its subscriptions (and with them the turns it heard).
  for (std::size_t n = 0; n < nodes_.size(); ++n) {
    std::vector<std::uint64_t> ids;
    if (cl.conns[n].id != 0) ids.push_back(cl.conns[n].id);
    if (cl.subs[n].id != 0) ids.push_back(cl.subs[n].id);
    cl.conns[n].id = 0;
    cl.subs[n].id = 0;
    for (auto id : ids)
      at(now_ + delay(), [this, n, id] {
        if (nodes_[n].open.erase(id) != 0) nodes_[n].redis->disconnect(id);
      });
  }
}

}  // namespace redlock::sim::internal
