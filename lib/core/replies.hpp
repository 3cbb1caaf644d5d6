// Decoding the replies of our scripts into votes. Pure: reads a hiredis reply tree (only its
// struct; nothing here calls hiredis), no I/O. The coordinator calls these for every node's
// reply, and the fuzz targets (tests/fuzz/) call them on every reply tree a byte string can make.
//
// The rule of every decoder: a vote is `yes` only for the exact shape the script returns on
// success; a shape the script never returns leaves the vote pending, which the fan-out counts as
// a failed vote (Errc::protocol_error). An error reply is never a yes, and a nil reply only for
// the quick acquire, whose one answer of success it is (quick_acquire_vote, used only for the
// replies to that command). Any thread.
#pragma once

#include <cstddef>

#include "redlock/lock.hpp"

struct redisReply;

namespace redlock::detail {

// acquire.lua: {1, fence} granted (fence >= 0; 0 without fencing) is yes, with `fence` set when
// above 0; {0, pttl, holder} is no, with `holder_ttl` and `holder`.
void acquire_vote(const redisReply* reply, NodeVote& vote);

// The quick acquire, `SET key token NX PX ttl GET` (one key, no wait, no fencing): nil (the key
// was free and is now ours) is yes; a bulk string (the key's value: the holder's token, set
// nothing) is no, with `holder` the token's digest as acquire.lua names it and `holder_ttl`
// unknown (-1).
void quick_acquire_vote(const redisReply* reply, NodeVote& vote);

// fence.lua: 1 (the node still held our token and raised its counters) is yes, 0 is no.
void fence_vote(const redisReply* reply, NodeVote& vote);

// release.lua over `keys` keys: the number deleted. yes when every key still held our token,
// no for fewer.
void release_vote(const redisReply* reply, std::size_t keys, NodeVote& vote);

// renew.lua for `items` locks: an array of exactly `items` integers. Per lock, 1 renewed (yes),
// 0 not ours (no), -1 a key of another type (no, with Errc::redis_wrongtype).
void renew_votes(const redisReply* reply, NodeVote* votes, std::size_t items);

// leader.lua's write: 1 (the node held our token and wrote the leader) is yes, 0 no, -1 (the
// leader key holds another type) no with Errc::redis_wrongtype.
void leader_write_vote(const redisReply* reply, NodeVote& vote);

// leader.lua's read. {term, value, pttl} is yes: the node's leader, with `fence` its term,
// `holder` its value and `holder_ttl` what is left of its lease; {} is no (vacant). -1 (the
// leader key holds another type) fails with Errc::redis_wrongtype, -2 (a string not of our form)
// with Errc::protocol_error.
void leader_read_vote(const redisReply* reply, NodeVote& vote);

// A plain command answered by text (INFO): a bulk string or a status is yes.
void text_vote(const redisReply* reply, NodeVote& vote);

}  // namespace redlock::detail
