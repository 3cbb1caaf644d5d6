// Fuzzes the decoding of script replies (lib/core/replies.hpp) with every reply tree a byte
// string makes through our RESP reader (lib/net/protocol.hpp, hiredis' redisReader): errors,
// nils, integers of any value, nested arrays of any shape. Each decoder runs on every reply and on
// every sub-tree of it, and its vote is checked against the shapes the scripts really return,
// written here a second time from the scripts' comments:
//   - yes exactly for the granted shape, never for anything else (an error or a nil included);
//   - no only for a shape the script returns when it refuses;
//   - a Redis error's text always maps to an error code.
// Input: one byte choosing the number of keys (release) and of locks (renew), then RESP bytes.
#include <hiredis/hiredis.h>

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "core/replies.hpp"
#include "fuzz_check.hpp"
#include "net/protocol.hpp"
#include "redlock/errors.hpp"

namespace redlock::detail {
namespace {

bool integer_is(const redisReply* r, long long v) {
  return r != nullptr && r->type == REDIS_REPLY_INTEGER && r->integer == v;
}

bool is_integer(const redisReply* r) { return r != nullptr && r->type == REDIS_REPLY_INTEGER; }

// acquire.lua's grant: {1, fence} with fence >= 0.
bool granted_acquire(const redisReply* r) {
  return r->type == REDIS_REPLY_ARRAY && r->elements == 2 && integer_is(r->element[0], 1) &&
         is_integer(r->element[1]) && r->element[1]->integer >= 0;
}

void check_acquire(const redisReply* r) {
  NodeVote v;
  acquire_vote(r, v);
  if (granted_acquire(r)) {
    FUZZ_CHECK(v.vote == Vote::yes, "acquire: the granted shape is a yes");
    FUZZ_CHECK(v.fence == static_cast<std::uint64_t>(r->element[1]->integer),
               "acquire: the fence is the script's");
    return;
  }
  FUZZ_CHECK(v.vote != Vote::yes, "acquire: only the granted shape is a yes");
  if (v.vote == Vote::no)
    FUZZ_CHECK(r->type == REDIS_REPLY_ARRAY && r->elements >= 1 && integer_is(r->element[0], 0),
               "acquire: a no is {0, ...}");
  // The one error it sets: a permit's {-2, k}, a node that keeps another number of permits, which
  // is a failed vote (never a grant).
  bool other_k = r != nullptr && r->type == REDIS_REPLY_ARRAY && r->elements >= 1 &&
                 integer_is(r->element[0], -2);
  if (other_k)
    FUZZ_CHECK(v.vote == Vote::failed && v.error == Errc::permits_mismatch,
               "acquire: {-2, ...} is a failed vote, permits_mismatch");
  else
    FUZZ_CHECK(!v.error, "acquire: the decoder sets no other error");
  FUZZ_CHECK(v.free_permit >= -1 && v.free_permit < 1024, "acquire: a hint is a slot or none");
}

// The quick acquire (SET NX GET): nil is the grant, a string the holder's token.
void check_quick_acquire(const redisReply* r) {
  NodeVote v;
  quick_acquire_vote(r, v);
  FUZZ_CHECK((v.vote == Vote::yes) == (r->type == REDIS_REPLY_NIL), "quick: yes exactly for nil");
  FUZZ_CHECK((v.vote == Vote::no) == (r->type == REDIS_REPLY_STRING),
             "quick: no exactly for a string");
  if (v.vote == Vote::no)
    FUZZ_CHECK(v.holder.size() == 16 && v.holder_ttl.count() == -1,
               "quick: the holder is named, its ttl unknown");
}

void check_fence(const redisReply* r) {
  NodeVote v;
  fence_vote(r, v);
  FUZZ_CHECK((v.vote == Vote::yes) == integer_is(r, 1), "fence: yes exactly for 1");
  FUZZ_CHECK((v.vote == Vote::no) == integer_is(r, 0), "fence: no exactly for 0");
}

void check_release(const redisReply* r, std::size_t keys) {
  NodeVote v;
  release_vote(r, keys, v);
  bool all = integer_is(r, static_cast<long long>(keys));
  bool fewer = is_integer(r) && r->integer >= 0 && r->integer < static_cast<long long>(keys);
  FUZZ_CHECK((v.vote == Vote::yes) == all, "release: yes exactly when every key was deleted");
  FUZZ_CHECK((v.vote == Vote::no) == fewer, "release: no exactly for a count below the keys");
}

void check_renew(const redisReply* r, std::size_t items) {
  std::vector<NodeVote> v(items);
  renew_votes(r, v.data(), items);
  bool shaped = r->type == REDIS_REPLY_ARRAY && r->elements == items;
  for (std::size_t i = 0; i < items; ++i) {
    const redisReply* e = shaped ? r->element[i] : nullptr;
    FUZZ_CHECK((v[i].vote == Vote::yes) == (shaped && integer_is(e, 1)),
               "renew: yes exactly for a 1 in the lock's place of an array of one per lock");
    FUZZ_CHECK((v[i].vote == Vote::no) == (shaped && (integer_is(e, 0) || integer_is(e, -1))),
               "renew: no exactly for 0 or -1 in the lock's place");
    FUZZ_CHECK(!v[i].error || integer_is(e, -1), "renew: an error only for -1 (WRONGTYPE)");
  }
}

void check_text(const redisReply* r) {
  NodeVote v;
  text_vote(r, v);
  FUZZ_CHECK(
      (v.vote == Vote::yes) == (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS),
      "text: yes exactly for a string or a status");
}

void check_leader(const redisReply* r) {
  NodeVote w;
  leader_write_vote(r, w);
  FUZZ_CHECK((w.vote == Vote::yes) == integer_is(r, 1), "leader write: yes exactly for 1");
  FUZZ_CHECK((w.vote == Vote::no) == (integer_is(r, 0) || integer_is(r, -1)),
             "leader write: no exactly for 0 or -1");
  NodeVote v;
  leader_read_vote(r, v);
  bool shaped = r->type == REDIS_REPLY_ARRAY && r->elements == 3 &&
                r->element[0]->type == REDIS_REPLY_STRING &&
                r->element[1]->type == REDIS_REPLY_STRING && is_integer(r->element[2]);
  FUZZ_CHECK(v.vote != Vote::yes || shaped, "leader read: yes only for {term, value, pttl}");
  FUZZ_CHECK((v.vote == Vote::no) == (r->type == REDIS_REPLY_ARRAY && r->elements == 0),
             "leader read: vacant exactly for an empty array");
}

void check_tree(const redisReply* r, std::size_t keys, std::size_t items, int depth) {
  FUZZ_CHECK(depth < 16, "hiredis nests replies no deeper than it says");
  if (r->type == REDIS_REPLY_ERROR) {
    // The node hands error replies to no decoder, but none may take one for a yes anyway.
    auto ec = error_from_reply_text(std::string_view(r->str, r->len));
    FUZZ_CHECK(ec && ec.category() == error_category(), "an error reply maps to our error code");
  }
  check_acquire(r);
  check_quick_acquire(r);
  check_fence(r);
  check_release(r, keys);
  check_renew(r, items);
  check_text(r);
  check_leader(r);
  if (r->type == REDIS_REPLY_ARRAY)
    for (std::size_t i = 0; i < r->elements; ++i) check_tree(r->element[i], keys, items, depth + 1);
}

}  // namespace
}  // namespace redlock::detail

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace redlock::detail;
  if (size < 1) return 0;
  std::size_t keys = 1 + (data[0] & 3);
  std::size_t items = 1 + ((data[0] >> 2) & 3);
  std::string_view bytes(reinterpret_cast<const char*>(data + 1), size - 1);
  if (redlock::fuzz::announces_huge_array(bytes)) return 0;
  ReplyReader reader;
  FUZZ_CHECK(reader.feed(bytes.data(), bytes.size()), "the reader takes any bytes");
  for (int n = 0; n < 256; ++n) {
    ReplyPtr reply;
    auto status = reader.next(reply);
    if (status == ReplyReader::Status::error) {
      FUZZ_CHECK(reader.error_text() != nullptr && reader.error_text()[0] != '\0',
                 "a reader error says why");
      break;
    }
    if (status == ReplyReader::Status::more) break;
    FUZZ_CHECK(reply != nullptr, "a reply comes with its tree");
    check_tree(reply.get(), keys, items, 0);
  }
  return 0;
}
