#include "core/quorum.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace redlock::detail {
namespace {

using namespace std::chrono_literals;

enum class V { yes, no, failed };

// Decodes mask `m` (base 3) into N votes.
std::vector<V> votes_of(int m, int n) {
  std::vector<V> v;
  for (int i = 0; i < n; ++i, m /= 3) v.push_back(static_cast<V>(m % 3));
  return v;
}

// Oracle, written independently of Tally: the outcome is decided once no way of voting
// for the nodes still silent could change it. A majority is "more than half".
Verdict oracle(std::size_t n, std::size_t yes, std::size_t answered) {
  std::size_t silent = n - answered;
  bool can_win = 2 * (yes + silent) > n;
  bool can_lose = !(2 * yes > n);
  if (can_win && can_lose) return Verdict::pending;
  return can_win ? Verdict::won : Verdict::lost;
}

TEST(Quorum, SizeIsAMajority) {
  for (std::size_t n = 1; n <= 9; ++n) {
    EXPECT_GT(2 * quorum_size(n), n) << n;
    EXPECT_LE(2 * (quorum_size(n) - 1), n) << n;
  }
}

// Every mask of yes/no/failed for N = 1..7, in every prefix: the verdict is known exactly when
// the oracle says it is, is the right one, and never changes once known.
TEST(Quorum, EveryMaskEveryPrefix) {
  for (int n = 1; n <= 7; ++n) {
    int masks = 1;
    for (int i = 0; i < n; ++i) masks *= 3;
    for (int m = 0; m < masks; ++m) {
      auto votes = votes_of(m, n);
      Tally t;
      t.nodes = static_cast<std::size_t>(n);
      Verdict first = Verdict::pending;
      for (std::size_t k = 0; k < votes.size(); ++k) {
        switch (votes[k]) {
          case V::yes:
            ++t.yes;
            break;
          case V::no:
            ++t.no;
            break;
          case V::failed:
            ++t.failed;
            break;
        }
        Verdict got = t.verdict();
        ASSERT_EQ(got, oracle(t.nodes, t.yes, k + 1)) << "n=" << n << " mask=" << m << " k=" << k;
        if (first == Verdict::pending) first = got;
        ASSERT_TRUE(got == first || first == Verdict::pending) << "verdict flipped";
      }
      std::size_t yes = 0;
      for (auto v : votes) yes += v == V::yes;
      EXPECT_EQ(t.verdict(), 2 * yes > static_cast<std::size_t>(n) ? Verdict::won : Verdict::lost);
    }
  }
}

TEST(Quorum, LossReasonSeparatesContentionFromUnreachableNodes) {
  // 5 nodes, quorum 3: 3 failures leave only 2 reachable -> no quorum possible.
  EXPECT_EQ((Tally{5, 0, 0, 3}.loss_reason(Errc::not_acquired)), Errc::no_quorum);
  EXPECT_EQ((Tally{5, 2, 0, 3}.loss_reason(Errc::not_acquired)), Errc::no_quorum);
  // 2 failures and 1 foreign holder: a quorum was reachable, the lock was taken.
  EXPECT_EQ((Tally{5, 2, 1, 2}.loss_reason(Errc::not_acquired)), Errc::not_acquired);
  EXPECT_EQ((Tally{5, 0, 3, 0}.loss_reason(Errc::not_held)), Errc::not_held);
  EXPECT_EQ((Tally{1, 0, 0, 1}.loss_reason(Errc::not_acquired)), Errc::no_quorum);
}

TEST(Validity, DeadlineSubtractsDriftAndTwoMilliseconds) {
  Clock::time_point t0{};
  // 10 s * 0.01 = 100 ms, + 2 ms.
  EXPECT_EQ(validity_deadline(t0, 10'000ms, 0.01), t0 + 9'898ms);
  EXPECT_EQ(validity_deadline(t0, 10'000ms, 0.0), t0 + 9'998ms);
  // Fractions of a millisecond are rounded up (a longer allowance is the safe side).
  EXPECT_EQ(drift_allowance(1'001ms, 0.001), 1'001us + 2ms);
  EXPECT_EQ(drift_allowance(3ms, 0.5), 1'500us + 2ms);
}

TEST(Validity, QuorumAtOrAfterTheDeadlineIsAFailure) {
  Clock::time_point t0{};
  auto deadline = validity_deadline(t0, 1'000ms, 0.01);  // t0 + 988 ms
  EXPECT_TRUE(still_valid(deadline - 1ns, deadline));
  EXPECT_FALSE(still_valid(deadline, deadline));
  EXPECT_FALSE(still_valid(deadline + 1ms, deadline));
  // The smallest ttl that the drift allows leaves a sliver of validity.
  auto tiny = validity_deadline(t0, 3ms, 0.0);
  EXPECT_EQ(tiny, t0 + 1ms);
  EXPECT_TRUE(still_valid(t0, tiny));
}

// The one check shared by acquire, extend and renewal: a quorum that completes at or after its
// deadline grants nothing; before it, it grants exactly the deadline computed from `sent`.
TEST(Validity, GrantedDeadlineIsTheValidityDeadlineOnlyWhileItIsOpen) {
  Clock::time_point sent{};
  auto deadline = validity_deadline(sent, 1'000ms, 0.01);
  EXPECT_EQ(granted_deadline(sent, sent, 1'000ms, 0.01), deadline);
  EXPECT_EQ(granted_deadline(sent, deadline - 1ns, 1'000ms, 0.01), deadline);
  EXPECT_FALSE(granted_deadline(sent, deadline, 1'000ms, 0.01));
  EXPECT_FALSE(granted_deadline(sent, sent + 5s, 1'000ms, 0.01));
  // The deadline counts from when the requests left, never from when the answers came.
  EXPECT_EQ(granted_deadline(sent, sent + 900ms, 1'000ms, 0.01), deadline);
}

// A grant is kept only with more than least_validity(ttl, ratio) of its validity left: ttl *
// ratio, never less than 1 ms (Config::min_validity_ratio).
TEST(Validity, AGrantNeedsTheLeastValidityLeft) {
  EXPECT_EQ(least_validity(1'000ms, 0.1), 100ms);
  EXPECT_EQ(least_validity(1'000ms, 0.0), 1ms);  // the floor: a grant with nothing left
  EXPECT_EQ(least_validity(5ms, 0.1), 1ms);
  EXPECT_EQ(least_validity(2'000ms, 0.75), 1'500ms);
  Clock::time_point sent{};
  auto deadline = validity_deadline(sent, 1'000ms, 0.01);  // 988 ms after sent
  auto least = least_validity(1'000ms, 0.1);
  EXPECT_EQ(granted_deadline(sent, sent + 100ms, 1'000ms, 0.01, least), deadline);
  EXPECT_EQ(granted_deadline(sent, deadline - least - 1ns, 1'000ms, 0.01, least), deadline);
  EXPECT_FALSE(granted_deadline(sent, deadline - least, 1'000ms, 0.01, least));
  EXPECT_FALSE(granted_deadline(sent, deadline - 1ms, 1'000ms, 0.01, least));
  // Without a minimum the rule is the plain validity check.
  EXPECT_EQ(granted_deadline(sent, deadline - 1ms, 1'000ms, 0.01), deadline);
  EXPECT_TRUE(enough_left(deadline - least - 1ns, deadline, least));
  EXPECT_FALSE(enough_left(deadline - least, deadline, least));
  EXPECT_FALSE(enough_left(deadline, deadline, 0ms));
}

TEST(Validity, ExtendNeverShortensAndFailureKeepsThePreviousDeadline) {
  Clock::time_point prev = Clock::time_point{} + 5s;
  EXPECT_EQ(extended_deadline(prev, std::nullopt), prev);
  EXPECT_EQ(extended_deadline(prev, prev + 1s), prev + 1s);
  EXPECT_EQ(extended_deadline(prev, prev - 1s), prev);
}

NodeVote no_by(std::string holder);

// A refusal because it is another waiter's turn on the free key says so, not "held".
TEST(Outcome, ARefusalForATurnIsNamedAsATurn) {
  AcquireResult r;
  r.error = make_error_code(Errc::not_acquired);
  r.votes.quorum = 2;
  r.votes.nodes = {no_by("turn:0123456789a"), no_by("turn:0123456789a"), NodeVote{}};
  EXPECT_EQ(r.message().rfind("lock is free but it is another waiter's turn", 0), 0u)
      << r.message();
  r.votes.nodes[1] = no_by("0123456789abcdef");  // a real holder on one node
  EXPECT_EQ(r.message().rfind("lock is held by another owner", 0), 0u) << r.message();
}

NodeVote no_by(std::string holder) {
  NodeVote v;
  v.vote = Vote::no;
  v.holder = std::move(holder);
  return v;
}
NodeVote vote(Vote kind) {
  NodeVote v;
  v.vote = kind;
  return v;
}

// A refusal is judged at once, without the votes still on their way, once one holder is seen on a
// quorum: no split vote is possible then.
TEST(SplitVote, AHolderSeenOnAQuorumEndsTheWaitForTheRest) {
  EXPECT_TRUE(holder_has_quorum(
      {no_by("a"), no_by("a"), no_by("a"), vote(Vote::pending), vote(Vote::yes)}, 3));
  EXPECT_FALSE(holder_has_quorum(
      {no_by("a"), no_by("a"), no_by("b"), vote(Vote::pending), vote(Vote::yes)}, 3));
  // Unnamed refusals or silent nodes may belong to anyone: not enough to know.
  EXPECT_FALSE(holder_has_quorum(
      {no_by("a"), no_by("a"), no_by(""), vote(Vote::pending), vote(Vote::yes)}, 3));
  EXPECT_FALSE(holder_has_quorum(
      {no_by("a"), no_by("a"), vote(Vote::failed), vote(Vote::pending), vote(Vote::yes)}, 3));
  EXPECT_TRUE(holder_has_quorum({no_by("a")}, 1));
}

// A refused acquire waits for a release notice only when some holder may hold a quorum; when
// contenders split the nodes and none can, nobody will ever publish a release.
TEST(SplitVote, ARealHolderIsToldFromASplit) {
  // 5 nodes, quorum 3. One holder on three nodes: held.
  EXPECT_TRUE(
      held_elsewhere({no_by("a"), no_by("a"), no_by("a"), vote(Vote::yes), vote(Vote::yes)}, 3));
  // Two contenders on two nodes each, we have one: split.
  EXPECT_FALSE(
      held_elsewhere({no_by("a"), no_by("a"), no_by("b"), no_by("b"), vote(Vote::yes)}, 3));
  // Two nodes for one holder plus a node that did not answer: it might hold a quorum.
  EXPECT_TRUE(held_elsewhere(
      {no_by("a"), no_by("a"), vote(Vote::pending), vote(Vote::yes), vote(Vote::yes)}, 3));
  EXPECT_TRUE(
      held_elsewhere({no_by("a"), no_by("a"), vote(Vote::failed), no_by("b"), vote(Vote::yes)}, 3));
  // A "no" that names nobody (an old server reply) counts for any holder.
  EXPECT_TRUE(
      held_elsewhere({no_by(""), no_by("a"), no_by("a"), vote(Vote::yes), vote(Vote::yes)}, 3));
  // Three contenders on 7 nodes, quorum 4: 3 + 2 + 1 and our 1: split.
  EXPECT_FALSE(held_elsewhere(
      {no_by("a"), no_by("a"), no_by("a"), no_by("b"), no_by("b"), no_by("c"), vote(Vote::yes)},
      4));
  // A single node, held by another: held.
  EXPECT_TRUE(held_elsewhere({no_by("a")}, 1));
}

// The name a contender gives itself must be the one the scripts give it: the first 16 hex digits
// of SHA-1 (FIPS 180-4 test vectors, and a message longer than one block).
TEST(SplitVote, TokenDigestIsTheScriptsName) {
  EXPECT_EQ(token_digest("abc"), "a9993e364706816a");
  EXPECT_EQ(token_digest(""), "da39a3ee5e6b4b0d");
  EXPECT_EQ(token_digest("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "84983e441c3bd26e");
  EXPECT_EQ(token_digest(std::string(1000000, 'a')), "34aa973cd4c4daa4");
}

// Every contender of a split seen whole agrees on one winner: the smallest name, whatever the
// counts. Checked from each contender's own point of view on the same picture.
TEST(SplitVote, ContendersOfAWholeSplitAgreeOnOneWinner) {
  // 5 nodes, quorum 3: a has 2, b has 2, c has 1: a wins.
  std::vector<std::string> owner{"a", "a", "b", "b", "c"};
  auto seen_by = [&](const std::string& me) {
    std::vector<NodeVote> v;
    for (const auto& o : owner) v.push_back(o == me ? vote(Vote::yes) : no_by(o));
    return v;
  };
  EXPECT_TRUE(split_winner(seen_by("a"), 3, "a"));
  EXPECT_FALSE(split_winner(seen_by("b"), 3, "b"));
  EXPECT_FALSE(split_winner(seen_by("c"), 3, "c"));
  // The smallest name wins even with fewer nodes: a with 1 of 7 against b with 3 (quorum 4).
  owner = {"a", "c", "b", "b", "b", "c", "c"};
  EXPECT_TRUE(split_winner(seen_by("a"), 4, "a"));
  EXPECT_FALSE(split_winner(seen_by("b"), 4, "b"));
  EXPECT_FALSE(split_winner(seen_by("c"), 4, "c"));
  // Exactly one winner over every split of 5 nodes among 3 named contenders.
  for (int m = 0; m < 243; ++m) {
    owner.clear();
    for (int i = 0, x = m; i < 5; ++i, x /= 3) owner.push_back(std::string(1, "abc"[x % 3]));
    std::size_t winners = 0;
    bool split = true;
    for (const char* c : {"a", "b", "c"})
      split = split && std::count(owner.begin(), owner.end(), c) < 3;
    for (const char* c : {"a", "b", "c"}) winners += split_winner(seen_by(c), 3, c) ? 1 : 0;
    EXPECT_EQ(winners, split ? 1u : 0u) << m;
  }
}

TEST(SplitVote, NoWinnerWithoutTheWholePictureOrAgainstAQuorum) {
  // A node not heard from, failed, or a "no" without a name: nobody can be sure.
  EXPECT_FALSE(split_winner(
      {vote(Vote::yes), vote(Vote::yes), vote(Vote::pending), no_by("b"), no_by("c")}, 3, "a"));
  EXPECT_FALSE(split_winner(
      {vote(Vote::yes), vote(Vote::yes), vote(Vote::failed), no_by("b"), no_by("c")}, 3, "a"));
  EXPECT_FALSE(
      split_winner({vote(Vote::yes), vote(Vote::yes), no_by(""), no_by("b"), no_by("c")}, 3, "a"));
  // Another holder with a quorum: held, not split.
  EXPECT_FALSE(
      split_winner({vote(Vote::yes), no_by("b"), no_by("b"), no_by("b"), no_by("c")}, 3, "a"));
  // Nothing of ours: never a winner.
  EXPECT_FALSE(split_winner({no_by("b"), no_by("c"), no_by("d")}, 2, "a"));
  // A node naming us (one server under two addresses) counts for nobody: 1 of ours against 1.
  EXPECT_TRUE(split_winner({vote(Vote::yes), no_by("a"), no_by("b")}, 2, "a"));
  EXPECT_FALSE(split_winner({vote(Vote::yes), no_by("z"), no_by("0")}, 2, "z"));
}

TEST(SplitVote, AWinnerAsksAgainOnlyWhileTheNodesItLacksAreHeldByThoseItBeat) {
  std::vector<std::string> beaten{"b", "c"};
  // Still held by the losers (their clean-ups are on the way): go on.
  EXPECT_TRUE(fill_in_may_win(
      {vote(Vote::yes), vote(Vote::yes), no_by("b"), no_by("c"), vote(Vote::yes)}, 3, beaten, "a"));
  EXPECT_TRUE(fill_in_may_win(
      {vote(Vote::yes), vote(Vote::yes), no_by("b"), no_by("b"), no_by("c")}, 3, beaten, "a"));
  // Somebody new, a failed node, or a name of ours that leaves too few: stop and clean up.
  EXPECT_FALSE(fill_in_may_win(
      {vote(Vote::yes), vote(Vote::yes), no_by("d"), no_by("c"), no_by("b")}, 3, beaten, "a"));
  EXPECT_FALSE(fill_in_may_win(
      {vote(Vote::yes), vote(Vote::yes), vote(Vote::failed), no_by("c"), no_by("b")}, 3, beaten,
      "a"));
  EXPECT_FALSE(fill_in_may_win({vote(Vote::yes), no_by("a"), no_by("a"), no_by("b"), no_by("a")}, 3,
                               beaten, "a"));
  EXPECT_TRUE(fill_in_may_win({vote(Vote::yes), no_by("a"), no_by("b")}, 2, beaten, "a"));
}

TEST(SplitVote, BackoffRanksCloserContendersFirstAndSpreadsGrowUpToTheCap) {
  // With one vote short, the first retry comes within one unit.
  for (std::uint64_t r : {0ull, 1ull, 5ull, ~0ull})
    EXPECT_LE(split_backoff(2, 3, 1, 1ms, 200ms, r), 1ms);
  // Two votes short: never before one unit.
  for (std::uint64_t r : {0ull, 1ull, 5ull, ~0ull}) {
    EXPECT_GE(split_backoff(1, 3, 1, 1ms, 200ms, r), 1ms);
    EXPECT_LE(split_backoff(1, 3, 1, 1ms, 200ms, r), 2ms);
  }
  // Splits in a row widen the spread; the cap bounds it.
  EXPECT_EQ(split_backoff(2, 3, 5, 1ms, 200ms, 16), 16ms);
  EXPECT_LE(split_backoff(2, 3, 5, 1ms, 200ms, ~0ull), 16ms);
  for (std::uint64_t r : {0ull, 77ull, ~0ull})
    EXPECT_LE(split_backoff(0, 5, 40, 1ms, 200ms, r), 200ms);
}

TEST(Retry, DelayStaysWithinBasePlusJitter) {
  for (std::uint64_t r : {0ull, 1ull, 99ull, 100ull, 101ull, ~0ull}) {
    auto d = retry_delay(200ms, 100ms, r);
    EXPECT_GE(d, 200ms);
    EXPECT_LE(d, 300ms);
  }
  EXPECT_EQ(retry_delay(200ms, 100ms, 0), 200ms);
  EXPECT_EQ(retry_delay(200ms, 100ms, 100), 300ms);
  EXPECT_EQ(retry_delay(50ms, 0ms, 12345), 50ms);
}

TEST(Retry, CountBudget) {
  Clock::time_point now{};
  EXPECT_TRUE(next_attempt(now, std::nullopt, 1, 4, 10ms));
  EXPECT_TRUE(next_attempt(now, std::nullopt, 3, 4, 10ms));
  EXPECT_FALSE(next_attempt(now, std::nullopt, 4, 4, 10ms));
  EXPECT_EQ(*next_attempt(now, std::nullopt, 1, 4, 10ms), now + 10ms);
}

TEST(Retry, DeadlineBudget) {
  Clock::time_point now{};
  auto deadline = now + 100ms;
  EXPECT_EQ(*next_attempt(now, deadline, 7, 0, 30ms), now + 30ms);
  // A delay running past the deadline is cut short: one last attempt just before it.
  auto last = next_attempt(now + 90ms, deadline, 8, 0, 30ms);
  ASSERT_TRUE(last);
  EXPECT_LT(*last, deadline);
  EXPECT_GE(*last, now + 90ms);
  EXPECT_FALSE(next_attempt(deadline, deadline, 9, 0, 30ms));
  EXPECT_FALSE(next_attempt(deadline + 1ms, deadline, 9, 0, 0ms));
}

TEST(Backoff, GrowsAndIsCapped) {
  for (std::uint64_t r : {0ull, 7ull, ~0ull}) {
    EXPECT_GE(reconnect_backoff(0, 50ms, 2'000ms, r), 25ms);
    EXPECT_LE(reconnect_backoff(0, 50ms, 2'000ms, r), 50ms);
    EXPECT_GE(reconnect_backoff(3, 50ms, 2'000ms, r), 200ms);
    EXPECT_LE(reconnect_backoff(3, 50ms, 2'000ms, r), 400ms);
    EXPECT_GE(reconnect_backoff(60, 50ms, 2'000ms, r), 1'000ms);
    EXPECT_LE(reconnect_backoff(60, 50ms, 2'000ms, r), 2'000ms);
  }
}

}  // namespace
}  // namespace redlock::detail
