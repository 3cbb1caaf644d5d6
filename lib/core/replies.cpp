// Script replies to votes; see replies.hpp. Only the reply struct of hiredis is used.
#include "replies.hpp"

#include <hiredis/hiredis.h>

#include <algorithm>

#include "quorum.hpp"
#include "redlock/client.hpp"
#include "redlock/errors.hpp"
#include "token.hpp"

namespace redlock::detail {
namespace {

bool is_int(const redisReply* r) { return r != nullptr && r->type == REDIS_REPLY_INTEGER; }

bool is_array(const redisReply* r) {
  return r != nullptr && r->type == REDIS_REPLY_ARRAY && (r->elements == 0 || r->element);
}

}  // namespace

void acquire_vote(const redisReply* r, NodeVote& vote) {
  if (!is_array(r) || r->elements < 1 || !is_int(r->element[0])) return;
  const redisReply* const* e = r->element;
  if (e[0]->integer == 1) {
    // Granted only as the script says it: {1, fence}, nothing more, nothing less.
    if (r->elements != 2 || !is_int(e[1]) || e[1]->integer < 0) return;
    vote.vote = Vote::yes;
    vote.fence = static_cast<std::uint64_t>(e[1]->integer);
    return;
  }
  if (e[0]->integer == -2) {
    // A permit's acquire where the node keeps another number of permits: {-2, k}. Never a grant.
    vote.vote = Vote::failed;
    vote.error = make_error_code(Errc::permits_mismatch);
    vote.detail = "the node keeps another number of permits";
    if (r->elements >= 2 && e[1] != nullptr && e[1]->type == REDIS_REPLY_STRING)
      vote.detail.append(": ").append(e[1]->str, std::min<std::size_t>(e[1]->len, 32));
    return;
  }
  if (e[0]->integer != 0) return;
  vote.vote = Vote::no;
  if (r->elements >= 2 && is_int(e[1])) vote.holder_ttl = Milliseconds(e[1]->integer);
  if (r->elements >= 3 && e[2] != nullptr && e[2]->type == REDIS_REPLY_STRING)
    vote.holder.assign(e[2]->str, e[2]->len);
  // A permit's refusal names a slot the node saw free (a hint), within the slots there are.
  if (r->elements >= 4 && is_int(e[3]) && e[3]->integer >= 0 &&
      e[3]->integer < static_cast<long long>(AcquireRequest::max_permits))
    vote.free_permit = static_cast<int>(e[3]->integer);
}

void quick_acquire_vote(const redisReply* r, NodeVote& vote) {
  if (r == nullptr) return;
  if (r->type == REDIS_REPLY_NIL) {
    vote.vote = Vote::yes;
    return;
  }
  if (r->type != REDIS_REPLY_STRING) return;
  vote.vote = Vote::no;
  // The holder's value (its token, or a waiter's turn), named as the script names it.
  vote.holder = holder_of_value(std::string_view(r->str, r->len));
}

void fence_vote(const redisReply* r, NodeVote& vote) {
  if (!is_int(r)) return;
  if (r->integer == 1) vote.vote = Vote::yes;
  if (r->integer == 0) vote.vote = Vote::no;
}

void release_vote(const redisReply* r, std::size_t keys, NodeVote& vote) {
  // A count below 0 or above the number of keys is no answer the script can give.
  if (!is_int(r) || r->integer < 0 || static_cast<unsigned long long>(r->integer) > keys) return;
  vote.vote = static_cast<std::size_t>(r->integer) == keys ? Vote::yes : Vote::no;
}

void renew_votes(const redisReply* r, NodeVote* votes, std::size_t items) {
  if (!is_array(r) || r->elements != items) return;
  for (std::size_t i = 0; i < items; ++i) {
    if (!is_int(r->element[i])) continue;
    switch (r->element[i]->integer) {
      case 1:
        votes[i].vote = Vote::yes;
        break;
      case 0:
        votes[i].vote = Vote::no;
        break;
      case -1:
        votes[i].vote = Vote::no;
        votes[i].error = make_error_code(Errc::redis_wrongtype);
        votes[i].detail = "a key of the lock holds a value of another type";
        break;
      default:
        break;
    }
  }
}

void leader_write_vote(const redisReply* r, NodeVote& vote) {
  if (!is_int(r)) return;
  if (r->integer == 1) vote.vote = Vote::yes;
  if (r->integer == 0) vote.vote = Vote::no;
  if (r->integer == -1) {
    vote.vote = Vote::no;
    vote.error = make_error_code(Errc::redis_wrongtype);
    vote.detail = "the office's leader key holds a value of another type";
  }
}

void leader_read_vote(const redisReply* r, NodeVote& vote) {
  if (is_int(r)) {
    if (r->integer == -1 || r->integer == -2) {
      vote.vote = Vote::failed;
      vote.error = make_error_code(r->integer == -1 ? Errc::redis_wrongtype : Errc::protocol_error);
      vote.detail = r->integer == -1 ? "the office's leader key holds a value of another type"
                                     : "the office's leader key holds a value not of our form";
    }
    return;
  }
  if (!is_array(r)) return;
  if (r->elements == 0) {
    vote.vote = Vote::no;
    return;
  }
  // Exactly {term, value, pttl}: a term of decimal digits that fits 64 bits.
  if (r->elements != 3 || r->element[0]->type != REDIS_REPLY_STRING ||
      r->element[1]->type != REDIS_REPLY_STRING || !is_int(r->element[2]))
    return;
  std::string_view term(r->element[0]->str, r->element[0]->len);
  if (term.empty() || term.size() > 19) return;
  std::uint64_t t = 0;
  for (char c : term) {
    if (c < '0' || c > '9') return;
    t = t * 10 + static_cast<std::uint64_t>(c - '0');
  }
  vote.vote = Vote::yes;
  vote.fence = t;
  vote.holder.assign(r->element[1]->str, r->element[1]->len);
  vote.holder_ttl = Milliseconds(r->element[2]->integer);
}

void text_vote(const redisReply* r, NodeVote& vote) {
  if (r != nullptr && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS))
    vote.vote = Vote::yes;
}

}  // namespace redlock::detail
