// Decoding script replies into votes (lib/core/replies.hpp): yes only for the exact shape each
// script returns on success, never for an error, a nil (but for the quick acquire, whose success
// is nil) or a shape no script returns. Reply trees
// are built by hand (hiredis' struct only: these tests link no hiredis). The shapes below the
// "found by fuzzing" comments came from tests/fuzz/fuzz_replies.cpp.
#include "core/replies.hpp"

#include <gtest/gtest.h>
#include <hiredis/hiredis.h>

#include <deque>
#include <initializer_list>
#include <string>
#include <vector>

#include "core/quorum.hpp"

namespace redlock::detail {
namespace {

// Owns the nodes of hand-built reply trees.
class Tree {
 public:
  redisReply* integer(long long v) {
    auto* r = node(REDIS_REPLY_INTEGER);
    r->integer = v;
    return r;
  }
  redisReply* text(const std::string& s, int type = REDIS_REPLY_STRING) {
    auto* r = node(type);
    texts_.push_back(s);
    r->str = texts_.back().data();
    r->len = s.size();
    return r;
  }
  redisReply* error(const std::string& s) { return text(s, REDIS_REPLY_ERROR); }
  redisReply* status(const std::string& s) { return text(s, REDIS_REPLY_STATUS); }
  redisReply* nil() { return node(REDIS_REPLY_NIL); }
  redisReply* array(std::initializer_list<redisReply*> items) {
    auto* r = node(REDIS_REPLY_ARRAY);
    arrays_.emplace_back(items);
    r->elements = items.size();
    r->element = arrays_.back().empty() ? nullptr : arrays_.back().data();
    return r;
  }

 private:
  redisReply* node(int type) {
    nodes_.emplace_back();
    nodes_.back().type = type;
    return &nodes_.back();
  }
  std::deque<redisReply> nodes_;
  std::deque<std::string> texts_;
  std::deque<std::vector<redisReply*>> arrays_;
};

NodeVote acquire(const redisReply* r) {
  NodeVote v;
  acquire_vote(r, v);
  return v;
}
NodeVote quick(const redisReply* r) {
  NodeVote v;
  quick_acquire_vote(r, v);
  return v;
}
NodeVote fence(const redisReply* r) {
  NodeVote v;
  fence_vote(r, v);
  return v;
}
NodeVote release(const redisReply* r, std::size_t keys) {
  NodeVote v;
  release_vote(r, keys, v);
  return v;
}
NodeVote text(const redisReply* r) {
  NodeVote v;
  text_vote(r, v);
  return v;
}
std::vector<NodeVote> renew(const redisReply* r, std::size_t items) {
  std::vector<NodeVote> v(items);
  renew_votes(r, v.data(), items);
  return v;
}

TEST(Replies, AcquireGrantedIsYesWithItsFence) {
  Tree t;
  auto plain = acquire(t.array({t.integer(1), t.integer(0)}));
  EXPECT_EQ(plain.vote, Vote::yes);
  EXPECT_EQ(plain.fence, 0u);
  auto fenced = acquire(t.array({t.integer(1), t.integer(42)}));
  EXPECT_EQ(fenced.vote, Vote::yes);
  EXPECT_EQ(fenced.fence, 42u);
}

TEST(Replies, AcquireHeldIsNoWithTheHolder) {
  Tree t;
  auto v = acquire(t.array({t.integer(0), t.integer(1500), t.text("0123456789abcdef")}));
  EXPECT_EQ(v.vote, Vote::no);
  EXPECT_EQ(v.holder_ttl, Milliseconds(1500));
  EXPECT_EQ(v.holder, "0123456789abcdef");
}

// SET key token NX PX ttl GET: nil when it set the key, the old value (the holder's token, named
// by its digest as acquire.lua names it) when it did not; nothing else is a vote.
TEST(Replies, QuickAcquireIsYesOnlyForNil) {
  Tree t;
  EXPECT_EQ(quick(t.nil()).vote, Vote::yes);
  auto held = quick(t.text("a-token"));
  EXPECT_EQ(held.vote, Vote::no);
  EXPECT_EQ(held.holder, token_digest("a-token"));
  EXPECT_EQ(held.holder_ttl, Milliseconds(-1));
  EXPECT_EQ(quick(t.status("OK")).vote, Vote::pending);
  EXPECT_EQ(quick(t.integer(1)).vote, Vote::pending);
  EXPECT_EQ(quick(t.array({})).vote, Vote::pending);
  EXPECT_EQ(quick(t.error("ERR syntax error")).vote, Vote::pending);
  EXPECT_EQ(quick(nullptr).vote, Vote::pending);
}

// A waiter's turn holds the free key (acquire.lua, TURN): the quick command is refused, and the
// holder is named as the script names a turn, "turn:" and 11 digits of its ticket's digest.
TEST(Replies, QuickAcquireRefusedByATurnNamesTheTurn) {
  Tree t;
  const std::string ticket = "redlock:turn:0123456789abcdef#7@200";
  auto turn = quick(t.text(std::string("turn\0", 5) + ticket));
  EXPECT_EQ(turn.vote, Vote::no);
  EXPECT_EQ(turn.holder, "turn:" + token_digest(ticket).substr(0, 11));
  auto lookalike = quick(t.text("turn:not-a-turn"));
  EXPECT_EQ(lookalike.holder, token_digest("turn:not-a-turn")) << "no NUL: a token like any other";
}

// Found by fuzzing: the decoder said yes for any array whose first element was the integer 1,
// whatever followed it. Only {1, fence >= 0} is a grant.
TEST(Replies, AcquireYesOnlyForTheExactGrantedShape) {
  Tree t;
  const redisReply* wrong[] = {
      t.array({t.integer(1)}),
      t.array({t.integer(1), t.text("7")}),
      t.array({t.integer(1), t.nil()}),
      t.array({t.integer(1), t.integer(-1)}),
      t.array({t.integer(1), t.integer(3), t.integer(4)}),
      t.array({t.integer(1), t.array({t.integer(3)})}),
      t.array({t.integer(1), t.error("ERR x")}),
      t.array({t.integer(1), nullptr}),
      t.array({t.array({t.integer(1), t.integer(0)})}),
      t.array({t.text("1"), t.integer(0)}),
      t.array({}),
      t.integer(1),
      t.status("OK"),
  };
  for (const auto* r : wrong) EXPECT_EQ(acquire(r).vote, Vote::pending);
}

// Found by fuzzing: any first integer other than 1 (2, -1, ...) counted as a plain "no"; no
// script answers that, so it is a protocol error (left pending), like every other odd shape.
TEST(Replies, AcquireOtherFirstIntegersAreNotVotes) {
  Tree t;
  for (long long first : {2LL, -1LL, 1LL << 40})
    EXPECT_EQ(acquire(t.array({t.integer(first), t.integer(10), t.text("h")})).vote, Vote::pending)
        << first;
}

TEST(Replies, ErrorsAndNilsAreNeverYes) {
  Tree t;
  for (auto* r : {t.error("ERR no"), t.error("WRONGTYPE x"), t.nil(), t.array({t.nil()})}) {
    EXPECT_EQ(acquire(r).vote, Vote::pending);
    EXPECT_EQ(fence(r).vote, Vote::pending);
    EXPECT_EQ(release(r, 1).vote, Vote::pending);
    EXPECT_EQ(text(r).vote, Vote::pending);
    EXPECT_EQ(renew(r, 1)[0].vote, Vote::pending);
  }
}

// No reply tree hiredis makes has a null in it, but the decoders do not count on it.
TEST(Replies, NullsDecideNothing) {
  Tree t;
  EXPECT_EQ(acquire(nullptr).vote, Vote::pending);
  EXPECT_EQ(fence(nullptr).vote, Vote::pending);
  EXPECT_EQ(release(nullptr, 1).vote, Vote::pending);
  EXPECT_EQ(text(nullptr).vote, Vote::pending);
  EXPECT_EQ(renew(nullptr, 1)[0].vote, Vote::pending);
  EXPECT_EQ(acquire(t.array({t.integer(0), nullptr, nullptr})).vote, Vote::no);
}

// Found by fuzzing: any integer other than 1 was a "no".
TEST(Replies, FenceIsOneOrZero) {
  Tree t;
  EXPECT_EQ(fence(t.integer(1)).vote, Vote::yes);
  EXPECT_EQ(fence(t.integer(0)).vote, Vote::no);
  EXPECT_EQ(fence(t.integer(2)).vote, Vote::pending);
  EXPECT_EQ(fence(t.integer(-1)).vote, Vote::pending);
  EXPECT_EQ(fence(t.text("1")).vote, Vote::pending);
}

// Found by fuzzing: a count above the number of keys, or below zero, was a plain "no".
TEST(Replies, ReleaseCountsKeysAndRefusesImpossibleCounts) {
  Tree t;
  EXPECT_EQ(release(t.integer(3), 3).vote, Vote::yes);
  EXPECT_EQ(release(t.integer(2), 3).vote, Vote::no);
  EXPECT_EQ(release(t.integer(0), 3).vote, Vote::no);
  EXPECT_EQ(release(t.integer(4), 3).vote, Vote::pending);
  EXPECT_EQ(release(t.integer(-1), 3).vote, Vote::pending);
  EXPECT_EQ(release(t.integer(-(1LL << 62)), 1).vote, Vote::pending);
  EXPECT_EQ(release(t.text("3"), 3).vote, Vote::pending);
  EXPECT_EQ(release(t.array({t.integer(1)}), 1).vote, Vote::pending);
}

TEST(Replies, RenewOneVotePerLock) {
  Tree t;
  auto v = renew(t.array({t.integer(1), t.integer(0), t.integer(-1), t.integer(7), t.nil()}), 5);
  EXPECT_EQ(v[0].vote, Vote::yes);
  EXPECT_EQ(v[1].vote, Vote::no);
  EXPECT_FALSE(v[1].error);
  EXPECT_EQ(v[2].vote, Vote::no);
  EXPECT_EQ(v[2].error, make_error_code(Errc::redis_wrongtype));
  EXPECT_EQ(v[3].vote, Vote::pending);  // found by fuzzing: was a "no"
  EXPECT_EQ(v[4].vote, Vote::pending);
}

TEST(Replies, RenewOfTheWrongLengthDecidesNothing) {
  Tree t;
  for (auto* r : {t.array({t.integer(1)}), t.array({t.integer(1), t.integer(1), t.integer(1)}),
                  t.array({}), t.integer(1)})
    for (const auto& v : renew(r, 2)) EXPECT_EQ(v.vote, Vote::pending);
}

TEST(Replies, TextIsAStringOrAStatus) {
  Tree t;
  EXPECT_EQ(text(t.text("# Server\r\nredis_version:7.0.0\r\n")).vote, Vote::yes);
  EXPECT_EQ(text(t.status("OK")).vote, Vote::yes);
  EXPECT_EQ(text(t.integer(1)).vote, Vote::pending);
  EXPECT_EQ(text(t.array({t.text("x")})).vote, Vote::pending);
}

// A permit's refusal adds a free slot (a hint, only within the slots there can be); {-2, k} is
// a node that keeps another number of permits: a typed failure, never a grant.
TEST(Replies, APermitsRefusalCarriesItsHintAndAnotherKIsATypedFailure) {
  Tree t;
  auto hinted = acquire(t.array({t.integer(0), t.integer(900), t.text("abc"), t.integer(2)}));
  EXPECT_EQ(hinted.vote, Vote::no);
  EXPECT_EQ(hinted.free_permit, 2);
  auto none = acquire(t.array({t.integer(0), t.integer(900), t.text("abc"), t.integer(-1)}));
  EXPECT_EQ(none.free_permit, -1);
  auto huge = acquire(t.array({t.integer(0), t.integer(900), t.text("abc"), t.integer(1 << 30)}));
  EXPECT_EQ(huge.free_permit, -1) << "no such slot";
  auto mutex = acquire(t.array({t.integer(0), t.integer(900), t.text("abc")}));
  EXPECT_EQ(mutex.free_permit, -1);
  auto other_k = acquire(t.array({t.integer(-2), t.text("3")}));
  EXPECT_EQ(other_k.vote, Vote::failed);
  EXPECT_EQ(other_k.error, Errc::permits_mismatch);
  EXPECT_NE(other_k.detail.find(": 3"), std::string::npos) << other_k.detail;
  auto bare = acquire(t.array({t.integer(-2)}));
  EXPECT_EQ(bare.error, Errc::permits_mismatch);
  auto granted_with_more = acquire(t.array({t.integer(1), t.integer(0), t.integer(1)}));
  EXPECT_NE(granted_with_more.vote, Vote::yes) << "a grant is {1, fence}, nothing more";
}

}  // namespace
}  // namespace redlock::detail
