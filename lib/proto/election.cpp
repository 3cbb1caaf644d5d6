#include "election.hpp"

#include <algorithm>

namespace redlock::detail::proto {

std::string leader_channel(const std::string& lock_key) { return lock_key + ":leader"; }

namespace {

// A failed vote's error when it says something about the office's keys (not a node down).
bool about_the_keys(const NodeVote& v) {
  return v.error == Errc::redis_wrongtype || v.error == Errc::protocol_error;
}

}  // namespace

LeaderVerdict leader_verdict(const std::vector<NodeVote>& votes, std::size_t quorum) {
  LeaderVerdict v;
  std::size_t answered = 0, pending = 0, best = 0;
  const NodeVote* best_vote = nullptr;
  for (std::size_t i = 0; i < votes.size(); ++i) {
    const auto& a = votes[i];
    if (a.vote == Vote::pending) ++pending;
    if (a.vote == Vote::yes || a.vote == Vote::no) ++answered;
    if (a.vote != Vote::yes) continue;
    std::size_t same = 0;
    for (const auto& b : votes)
      if (b.vote == Vote::yes && b.fence == a.fence && b.holder == a.holder) ++same;
    if (same > best) best = same, best_vote = &a;
  }
  if (best_vote != nullptr && best >= quorum) {
    v.decided = v.leads = true;
    v.term = best_vote->fence;
    v.value = best_vote->holder;
    for (const auto& b : votes)
      if (b.vote == Vote::yes && b.fence == v.term && b.holder == v.value)
        v.ttl_left = std::max(v.ttl_left, b.holder_ttl);
    return v;
  }
  if (best + pending >= quorum) return v;  // a term may still reach a quorum
  if (answered >= quorum) {
    v.decided = true;  // vacant
    return v;
  }
  if (answered + pending >= quorum) return v;
  v.decided = true;
  v.error = make_error_code(Errc::no_quorum);
  for (const auto& a : votes)
    if (a.vote == Vote::failed && about_the_keys(a)) {
      v.error = a.error;
      v.detail = a.detail;
      break;
    }
  return v;
}

std::error_code leader_write_error(const std::vector<NodeVote>& votes) {
  std::size_t no = 0;
  for (const auto& a : votes) {
    if (a.error == Errc::redis_wrongtype) return a.error;
    if (a.vote == Vote::no) ++no;
  }
  return make_error_code(no > 0 ? Errc::lock_lost : Errc::no_quorum);
}

}  // namespace redlock::detail::proto
