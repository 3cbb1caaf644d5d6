// A simulated reply as hiredis would have parsed it: an owning redisReply tree built from a
// Value, so that the library's own decoders (lib/core/replies.hpp: acquire_vote, release_vote,
// renew_votes, fence_vote, quick_acquire_vote, text_vote) read simulated replies unchanged.
// Also the way back (a hiredis reply from a real server to a Value), for the differential tests.
// Pure; any thread.
//
//   ReplyPtr r = to_hiredis(node.execute(argv, now, conn));
//   redlock::detail::acquire_vote(r.get(), vote);
#pragma once

#include <memory>

#include "value.hpp"

struct redisReply;

namespace redlock::sim {

// Frees a tree made by to_hiredis() (malloc'd as hiredis does: freeReplyObject frees it too).
struct ReplyDeleter {
  void operator()(redisReply* reply) const;
};
using ReplyPtr = std::unique_ptr<redisReply, ReplyDeleter>;

// nil -> REDIS_REPLY_NIL, integer -> REDIS_REPLY_INTEGER, bulk -> REDIS_REPLY_STRING,
// status -> REDIS_REPLY_STATUS, error -> REDIS_REPLY_ERROR (its text, without '-'),
// array -> REDIS_REPLY_ARRAY of the elements. Strings keep their length and a trailing NUL.
// Throws std::bad_alloc when memory runs out (nothing leaks).
ReplyPtr to_hiredis(const Value& value);

// The other way: a reply tree (from a real server or from to_hiredis) as a Value.
Value from_hiredis(const redisReply* reply);

}  // namespace redlock::sim
