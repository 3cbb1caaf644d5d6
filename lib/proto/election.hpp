// Leader election's pure rules (docs/guide-election.md): who leads an office, from each node's
// answer to leader.lua's read, and whether the grant's write of the leader reached a quorum.
// Pure; any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include "redlock/lock.hpp"

namespace redlock::detail::proto {

// The office's channel: the grant's write announces "term|value" there (leader.lua).
std::string leader_channel(const std::string& lock_key);

struct LeaderVerdict {
  bool decided = false;
  std::error_code error;  // no quorum of answers (the failures' error where they agree on one)
  std::string detail;
  bool leads = false;  // a quorum reports one term: its value and term follow
  std::uint64_t term = 0;
  std::string value;
  Milliseconds ttl_left{-1};  // the largest lease left among the nodes reporting the leader
};

// The leader, from the votes of leader.lua's read so far (Vote::pending: not answered yet; yes:
// term in `fence`, value in `holder`, lease left in `holder_ttl`; no: vacant there; failed).
// - Leads when `quorum` nodes report the same term (with the same value). Two terms can never
//   both have a quorum: a node reports a term only while its lock key holds that term's token,
//   and two quorums share a node.
// - Vacant when at least `quorum` nodes answered and no term can reach a quorum any more.
// - An error when fewer than `quorum` nodes can answer.
// - Otherwise undecided: wait for more answers.
LeaderVerdict leader_verdict(const std::vector<NodeVote>& votes, std::size_t quorum);

// The error of a campaign whose write of the leader reached no quorum of yes (every node
// answered): Errc::redis_wrongtype when a node's leader key holds another type, lock_lost when
// nodes no longer held the grant's token, no_quorum when too many failed.
std::error_code leader_write_error(const std::vector<NodeVote>& votes);

}  // namespace redlock::detail::proto
