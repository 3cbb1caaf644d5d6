// The acquire job as a state machine: scripted replies, an injected clock, scripted tokens and a
// fixed random draw; every check is on the actions it returns.
#include <gtest/gtest.h>

#include "core/keys.hpp"
#include "core/quorum.hpp"
#include "proto/acquire.hpp"
#include "proto/notices.hpp"
#include "proto_harness.hpp"

namespace redlock::detail::proto::test {
namespace {

AcquireRequest one(std::optional<Milliseconds> wait = std::nullopt, bool fencing = false) {
  AcquireRequest r({"res"}, std::nullopt, wait);
  r.fencing = fencing;
  return r;
}

// The drift allowance of a 10 s lease: 10 s * 0.01 + 2 ms.
constexpr auto kDrift = 102ms;

TEST(ProtoAcquire, QuickAcquireGrantsAtTheQuorumWithValidityFromTheSendTime) {
  Harness h(5);
  AcquireMachine m(h.context(), one(), 10'000ms, at(0ms), 0);
  Actions out;
  m.start(at(0ms), out);
  auto send = only<Send>(out);
  EXPECT_EQ(send.nodes, nodes({0, 1, 2, 3, 4}));
  EXPECT_EQ(send.job, m.id());
  EXPECT_EQ(send.issued_at, at(0ms)) << "the driver counts the replies' latency from it";
  EXPECT_EQ(send.request->script, ScriptId::none);
  EXPECT_EQ(send.request->decoder, Decoder::quick_acquire);
  EXPECT_EQ(send.request->args,
            (std::vector<std::string>{"SET", "redlock:res", token(1), "NX", "PX", "10000", "GET"}));
  out.clear();
  m.on_reply(send.id, 0, yes(), at(3ms), out);
  m.on_reply(send.id, 3, no("someone"), at(4ms), out);
  m.on_reply(send.id, 1, yes(), at(5ms), out);
  EXPECT_TRUE(out.empty()) << "two yes of five are no quorum";
  m.on_reply(send.id, 4, yes(), at(7ms), out);
  auto done = only<DeliverAcquire>(out);
  ASSERT_TRUE(done.result.ok()) << done.result.message();
  EXPECT_EQ(done.job, m.id());
  EXPECT_EQ(done.result.lock.token, token(1));
  EXPECT_EQ(done.result.lock.resources, std::vector<std::string>{"res"});
  EXPECT_EQ(done.result.lock.valid_until, at(10'000ms) - kDrift);
  EXPECT_EQ(done.result.attempts, 1);
  EXPECT_EQ(done.result.votes.yes(), 3u);
  EXPECT_TRUE(m.finished());
  EXPECT_FALSE(m.done()) << "node 2 has not answered yet";
  out.clear();
  m.on_reply(send.id, 2, yes(), at(8ms), out);
  EXPECT_TRUE(out.empty());
  EXPECT_TRUE(m.done());
}

TEST(ProtoAcquire, RefusedAsSoonAsNoQuorumIsPossibleAndCleansUpOnlyWhereItMayHoldTheKey) {
  Harness h(5);
  AcquireMachine m(h.context(), one(0ms), 10'000ms, at(0ms), 0);
  Actions out;
  m.start(at(0ms), out);
  auto send = only<Send>(out);
  out.clear();
  m.on_reply(send.id, 0, no("holder", 5000ms), at(1ms), out);
  m.on_reply(send.id, 1, yes(), at(1ms), out);
  m.on_reply(send.id, 2, no("holder", 5000ms), at(1ms), out);
  EXPECT_TRUE(out.empty());
  m.on_reply(send.id, 4, no("holder", 5000ms), at(2ms), out);
  // Three "no" of five: refused now, node 3 still pending. A holder has a quorum: no split.
  auto done = only<DeliverAcquire>(out);
  EXPECT_EQ(done.result.error, Errc::not_acquired);
  EXPECT_EQ(done.result.attempts, 1);
  auto cleanup = only<Send>(out);
  EXPECT_FALSE(cleanup.reply_wanted);
  EXPECT_EQ(cleanup.nodes, nodes({1, 3})) << "the nodes that refused hold nothing of the token";
  EXPECT_EQ(cleanup.request->script, ScriptId::release);
  EXPECT_EQ(cleanup.request->keys, std::vector<std::string>{"redlock:res"});
  EXPECT_EQ(cleanup.request->args, (std::vector<std::string>{token(1), "0"})) << "silently";
}

TEST(ProtoAcquire, AQuorumThatArrivesTooLateIsValidityExpired) {
  Harness h(3);
  AcquireMachine m(h.context(), one(0ms), 10'000ms, at(0ms), 0);
  Actions out;
  m.start(at(0ms), out);
  auto send = only<Send>(out);
  out.clear();
  m.on_reply(send.id, 0, yes(), at(100ms), out);
  // The deadline is t0 + 10 s - 102 ms: a quorum complete at that instant is worth nothing.
  m.on_reply(send.id, 1, yes(), at(10'000ms) - kDrift, out);
  auto done = only<DeliverAcquire>(out);
  EXPECT_EQ(done.result.error, Errc::validity_expired);
  auto cleanup = only<Send>(out);
  EXPECT_EQ(cleanup.nodes, nodes({0, 1, 2}));
}

// The least validity a grant must have left (Config::min_validity_ratio 0.1 of a 10 s lease).
constexpr auto kLeast = 1'000ms;

TEST(ProtoAcquire, AQuorumWithMoreThanTheLeastValidityLeftIsGranted) {
  Harness h(3);
  AcquireMachine m(h.context(), one(0ms), 10'000ms, at(0ms), 0);
  Actions out;
  m.start(at(0ms), out);
  auto send = only<Send>(out);
  m.on_reply(send.id, 0, yes(), at(100ms), out);
  m.on_reply(send.id, 1, yes(), at(10'000ms) - kDrift - kLeast - 1us, out);
  auto done = only<DeliverAcquire>(out);
  ASSERT_TRUE(done.result.ok()) << done.result.message();
  EXPECT_EQ(done.result.lock.valid_until, at(10'000ms) - kDrift)
      << "the least validity decides, it does not shorten the grant";
}

TEST(ProtoAcquire, AQuorumWithOnlyTheLeastValidityLeftIsNoGrant) {
  Harness h(3);
  AcquireMachine m(h.context(), one(0ms), 10'000ms, at(0ms), 0);
  Actions out;
  m.start(at(0ms), out);
  auto send = only<Send>(out);
  out.clear();
  m.on_reply(send.id, 0, yes(), at(100ms), out);
  m.on_reply(send.id, 1, yes(), at(10'000ms) - kDrift - kLeast, out);
  auto done = only<DeliverAcquire>(out);
  EXPECT_EQ(done.result.error, Errc::validity_expired);
  EXPECT_EQ(only<Send>(out).nodes, nodes({0, 1, 2})) << "the grant is cleaned up";
}

TEST(ProtoAcquire, TheLeastValidityFollowsMinValidityRatio) {
  Harness h(3);
  h.config.min_validity_ratio = 0.5;
  AcquireMachine m(h.context(), one(0ms), 10'000ms, at(0ms), 0);
  Actions out;
  m.start(at(0ms), out);
  auto send = only<Send>(out);
  m.on_reply(send.id, 0, yes(), at(1ms), out);
  m.on_reply(send.id, 1, yes(), at(10'000ms) - kDrift - 5'000ms, out);
  EXPECT_EQ(only<DeliverAcquire>(out).result.error, Errc::validity_expired);
}

TEST(ProtoAcquire, AServerTooOldForTheQuickAcquireGetsTheScriptInstead) {
  Harness h(3);
  AcquireMachine m(h.context(), one(0ms), 10'000ms, at(0ms), 0);
  Actions out;
  m.start(at(0ms), out);
  auto send = only<Send>(out);
  out.clear();
  m.on_reply(send.id, 2, failed(Errc::redis_error, "ERR syntax error"), at(1ms), out);
  EXPECT_FALSE(h.context().quick_acquire());
  auto fallback = only<Send>(out);
  EXPECT_EQ(fallback.nodes, nodes({2}));
  EXPECT_EQ(fallback.request->script, ScriptId::acquire);
  EXPECT_EQ(fallback.request->decoder, Decoder::acquire);
  EXPECT_EQ(fallback.request->args,
            (std::vector<std::string>{token(1), "10000", "0", "", "0", "3600000", "200"}));
  out.clear();
  m.on_reply(send.id, 0, yes(), at(2ms), out);
  EXPECT_FALSE(has<DeliverAcquire>(out));
  m.on_reply(fallback.id, 2, yes(), at(3ms), out);
  EXPECT_TRUE(only<DeliverAcquire>(out).result.ok()) << "the fallback's vote counts";
  // The next job of this client uses the script from the start.
  AcquireMachine next(h.context(), one(0ms), 10'000ms, at(5ms), 0);
  out.clear();
  next.start(at(5ms), out);
  EXPECT_EQ(only<Send>(out).request->script, ScriptId::acquire);
}

// The script is built only once a node refuses the command's form, once per round, and carries
// the round's token: the nodes that refuse share it, a refusal after the verdict gets none.
TEST(ProtoAcquire, TheQuickAcquiresFallbackIsBuiltOncePerRoundForTheNodesThatRefuse) {
  Harness h(5);
  AcquireMachine m(h.context(), one(0ms), 10'000ms, at(0ms), 0);
  Actions out;
  m.start(at(0ms), out);
  auto send = only<Send>(out);
  EXPECT_EQ(send.request->script, ScriptId::none);
  out.clear();
  m.on_reply(send.id, 3, failed(Errc::redis_error, "ERR syntax error"), at(1ms), out);
  auto first = only<Send>(out);
  out.clear();
  m.on_reply(send.id, 1, failed(Errc::redis_error, "ERR syntax error"), at(2ms), out);
  auto second = only<Send>(out);
  EXPECT_EQ(first.request, second.request) << "one script for the round";
  EXPECT_NE(first.id, second.id);
  EXPECT_EQ(first.nodes, nodes({3}));
  EXPECT_EQ(second.nodes, nodes({1}));
  EXPECT_EQ(first.request->args,
            (std::vector<std::string>{token(1), "10000", "0", "", "0", "3600000", "200"}));
  out.clear();
  m.on_reply(send.id, 0, yes(), at(3ms), out);
  m.on_reply(first.id, 3, yes(), at(3ms), out);
  m.on_reply(second.id, 1, yes(), at(3ms), out);
  EXPECT_TRUE(only<DeliverAcquire>(out).result.ok());
  out.clear();
  m.on_reply(send.id, 4, failed(Errc::redis_error, "ERR syntax error"), at(4ms), out);
  EXPECT_FALSE(has<Send>(out)) << "decided: a late refusal counts as a failed vote";
}

TEST(ProtoAcquire, RetriesAfterTheDelayWithItsJitterAndAFreshToken) {
  Harness h(3);
  h.random = 1042;  // jitter: 1042 % 101 = 32 ms
  AcquireMachine m(h.context(), one(), 10'000ms, at(0ms), 0);
  Actions out;
  m.start(at(0ms), out);
  auto send = only<Send>(out);
  out.clear();
  m.on_reply(send.id, 0, no("holder", 5000ms), at(1ms), out);
  m.on_reply(send.id, 1, no("holder", 5000ms), at(2ms), out);
  EXPECT_FALSE(has<DeliverAcquire>(out));
  auto timer = only<ArmTimer>(out);
  EXPECT_EQ(timer.at, at(2ms + 232ms));
  EXPECT_EQ(timer.job, m.id());
  out.clear();
  m.on_timer(timer.id, timer.at, out);
  auto again = only<Send>(out);
  EXPECT_NE(again.id, send.id);
  EXPECT_EQ(again.request->args[2], token(2)) << "every attempt has a token of its own";
  EXPECT_EQ(m.attempts(), 2);
}

TEST(ProtoAcquire, GivesUpAfterRetryCountRetries) {
  Harness h(3);
  h.config.retry_count = 2;
  AcquireMachine m(h.context(), one(), 10'000ms, at(0ms), 0);
  Actions out;
  m.start(at(0ms), out);
  auto now = at(0ms);
  for (int attempt = 1; attempt <= 3; ++attempt) {
    auto send = only<Send>(out);
    out.clear();
    m.on_reply(send.id, 0, no("holder"), now, out);
    m.on_reply(send.id, 1, no("holder"), now, out);
    if (attempt < 3) {
      auto timer = only<ArmTimer>(out);
      out.clear();
      now = timer.at;
      m.on_timer(timer.id, now, out);
    }
  }
  auto done = only<DeliverAcquire>(out);
  EXPECT_EQ(done.result.error, Errc::not_acquired);
  EXPECT_EQ(done.result.attempts, 3);
}

TEST(ProtoAcquire, NoQuorumOfReachableNodesEndsAWaitAfterRetryCountRounds) {
  Harness h(3);
  h.config.retry_count = 1;
  AcquireMachine m(h.context(), one(60'000ms), 10'000ms, at(0ms), 0);
  Actions out;
  m.start(at(0ms), out);
  auto now = at(0ms);
  for (int attempt = 1; attempt <= 2; ++attempt) {
    auto send = only<Send>(out);
    out.clear();
    m.on_reply(send.id, 0, failed(), now, out);
    m.on_reply(send.id, 1, failed(), now, out);
    if (attempt < 2) {
      auto timer = only<ArmTimer>(out);
      out.clear();
      now = timer.at;
      m.on_timer(timer.id, now, out);
    }
  }
  EXPECT_EQ(only<DeliverAcquire>(out).result.error, Errc::no_quorum);
}

TEST(ProtoAcquire, ANodeKeptOutByTheRestartGuardIsNotUnreachable) {
  Harness h(3);
  h.config.retry_count = 0;
  AcquireMachine m(h.context(), one(60'000ms), 10'000ms, at(0ms), 0);
  Actions out;
  m.start(at(0ms), out);
  auto send = only<Send>(out);
  out.clear();
  m.on_reply(send.id, 0, failed(Errc::node_restarting), at(1ms), out);
  m.on_reply(send.id, 1, failed(), at(1ms), out);
  EXPECT_FALSE(has<DeliverAcquire>(out)) << "it waits for the node to become eligible";
  EXPECT_TRUE(has<ArmTimer>(out));
}

// Tokens are drawn as token(n); their names are what the scripts call them.
TEST(ProtoAcquire, TheSplitWinnerKeepsItsKeyAndAsksOnlyTheNodesItLacks) {
  Harness h(3);
  AcquireMachine m(h.context(), one(0ms), 10'000ms, at(0ms), 0);
  Actions out;
  m.start(at(0ms), out);
  auto first = only<Send>(out);
  out.clear();
  // Names above every hex digest: we are the contender with the smallest name.
  m.on_reply(first.id, 0, yes(), at(1ms), out);
  m.on_reply(first.id, 1, no("zz-other-1", 10'000ms), at(2ms), out);
  m.on_reply(first.id, 2, no("zz-other-2", 10'000ms), at(3ms), out);
  EXPECT_FALSE(has<DeliverAcquire>(out));
  auto fill = only<Send>(out);
  EXPECT_EQ(fill.nodes, nodes({1, 2})) << "the kept key is not asked again";
  EXPECT_EQ(fill.request->args[2], token(1)) << "the same token: the kept key is ours";
  out.clear();
  m.on_reply(fill.id, 1, yes(), at(20ms), out);
  auto done = only<DeliverAcquire>(out);
  ASSERT_TRUE(done.result.ok()) << done.result.message();
  EXPECT_EQ(done.result.lock.valid_until, at(10'000ms) - kDrift)
      << "validity counts from the first round, which set the kept key";
  EXPECT_EQ(done.result.attempts, 2) << "the attempt and its fill-in round";
}

TEST(ProtoAcquire, AFillInGivesUpOnANewHolderAndCleansUpEverywhere) {
  Harness h(3);
  AcquireMachine m(h.context(), one(0ms), 10'000ms, at(0ms), 0);
  Actions out;
  m.start(at(0ms), out);
  auto first = only<Send>(out);
  out.clear();
  m.on_reply(first.id, 0, yes(), at(1ms), out);
  m.on_reply(first.id, 1, no("zz-other-1"), at(2ms), out);
  m.on_reply(first.id, 2, no("zz-other-2"), at(3ms), out);
  auto fill = only<Send>(out);
  out.clear();
  m.on_reply(fill.id, 1, no("zz-newcomer"), at(4ms), out);
  EXPECT_TRUE(out.empty());
  m.on_reply(fill.id, 2, no("zz-other-2"), at(4ms), out);
  auto done = only<DeliverAcquire>(out);
  EXPECT_EQ(done.result.error, Errc::not_acquired);
  auto cleanup = only<Send>(out);
  EXPECT_EQ(cleanup.nodes, nodes({0, 1, 2})) << "after a fill-in round, no node is spared";
}

TEST(ProtoAcquire, TheFillInRoundsStopAfterFourInARow) {
  Harness h(3);
  AcquireMachine m(h.context(), one(0ms), 10'000ms, at(0ms), 0);
  Actions out;
  m.start(at(0ms), out);
  auto send = only<Send>(out);
  out.clear();
  m.on_reply(send.id, 0, yes(), at(1ms), out);
  m.on_reply(send.id, 1, no("zz-other-1"), at(1ms), out);
  m.on_reply(send.id, 2, no("zz-other-2"), at(1ms), out);
  auto now = at(1ms);
  int rounds = 0;
  for (int i = 0; i < 10 && !has<DeliverAcquire>(out); ++i) {
    if (has<ArmTimer>(out)) {  // the fourth round waits a millisecond
      auto timer = only<ArmTimer>(out);
      EXPECT_EQ(timer.at, now + 1ms);
      out.clear();
      now = timer.at;
      m.on_timer(timer.id, now, out);
      continue;
    }
    auto fill = only<Send>(out);
    ++rounds;
    out.clear();
    // The beaten contenders still hold their keys: it may still win, and asks again.
    m.on_reply(fill.id, 1, no("zz-other-1"), now, out);
    m.on_reply(fill.id, 2, no("zz-other-2"), now, out);
  }
  EXPECT_EQ(rounds, AcquireMachine::kMaxFills);
  EXPECT_EQ(only<DeliverAcquire>(out).result.attempts, 1 + AcquireMachine::kMaxFills);
}

TEST(ProtoAcquire, ASplitLoserCleansUpAndRetriesSoonerThanTheRetryDelay) {
  Harness h(3);
  AcquireMachine m(h.context(), one(), 10'000ms, at(0ms), 0);
  Actions out;
  m.start(at(0ms), out);
  auto send = only<Send>(out);
  out.clear();
  // A name below every hex digest wins: we lose.
  m.on_reply(send.id, 0, yes(), at(1ms), out);
  m.on_reply(send.id, 1, no("  winner"), at(1ms), out);
  EXPECT_TRUE(out.empty()) << "a split is judged on the whole picture";
  m.on_reply(send.id, 2, no("  other"), at(2ms), out);
  auto cleanup = only<Send>(out);
  EXPECT_EQ(cleanup.nodes, nodes({0}));
  // Split back-off: one vote missing (rank 0), window one unit of 5 ms (the picture was whole),
  // 42 % 6 = 0, at least one unit: 5 ms.
  EXPECT_EQ(only<ArmTimer>(out).at, at(2ms + 5ms));
  EXPECT_EQ(h.draws, 2) << "the retry delay, then the split back-off";
}

TEST(ProtoAcquire, AWaiterStandsInLineAndSleepsUntilTheHoldersLeaseRunsOut) {
  Harness h(3);
  // From the first attempt through the script (as on a server without SET ... GET): this test is
  // about the line, which a waiter's quick first attempt does not join.
  h.context().no_quick_acquire();
  AcquireMachine m(h.context(), one(10'000ms), 5'000ms, at(0ms), 1234567);
  Actions out;
  m.start(at(0ms), out);
  auto send = only<Send>(out);
  auto ticket = "redlock:turn:00000000000000aa#" + std::to_string(m.id()) + "@200";
  EXPECT_EQ(m.ticket(), ticket);
  EXPECT_TRUE(m.in_line());
  EXPECT_EQ(send.request->script, ScriptId::acquire) << "a waiter never takes the quick acquire";
  EXPECT_EQ(send.request->args,
            (std::vector<std::string>{token(1), "5000", "0", ticket, "1234567", "15000", "200"}));
  out.clear();
  m.on_reply(send.id, 0, no("holder", 80ms), at(10ms), out);
  m.on_reply(send.id, 1, no("holder", 70ms), at(10ms), out);
  EXPECT_FALSE(has<DeliverAcquire>(out));
  auto cleanup = only<Send>(out);
  EXPECT_EQ(cleanup.nodes, nodes({2}));
  EXPECT_EQ(cleanup.request->args,
            (std::vector<std::string>{token(1), "0", ticket, "1234567", "14990"}))
      << "it keeps its place where it may have been granted";
  EXPECT_EQ(only<Subscribe>(out).channel, "redlock:turn:00000000000000aa")
      << "a waiter in line listens on its client's turn channel only";
  EXPECT_EQ(only<ArmTimer>(out).at, at(10ms + 71ms)) << "the holder's ttl left, and 1 ms";

  // Its turn comes: it asks at once.
  out.clear();
  h.context().notices().on_message(0, "redlock:turn:00000000000000aa",
                                   "releaser|" + ticket + "|redlock:res", at(30ms), out);
  EXPECT_TRUE(has<CancelTimer>(out));
  auto again = only<Send>(out);
  EXPECT_EQ(again.request->args[0], token(2));
  out.clear();
  m.on_reply(again.id, 0, yes(), at(31ms), out);
  m.on_reply(again.id, 1, yes(), at(31ms), out);
  auto done = only<DeliverAcquire>(out);
  EXPECT_TRUE(done.result.ok());
  EXPECT_FALSE(has<Unsubscribe>(out)) << "it never subscribed the key's channel";
}

// A waiter's first attempt is the quick command (rules.hpp): it takes a free key that holds no
// waiter's turn. Refused, the waiter listens and asks again at once, with a fresh token, through
// the script, which puts it in line; an attempt that a release notice began is the script's.
TEST(ProtoAcquire, AWaitersFirstAttemptIsTheQuickCommandAndARefusalAsksAgainAtOnceInLine) {
  Harness h(3);
  AcquireMachine m(h.context(), one(10'000ms), 5'000ms, at(0ms), 1234567);
  Actions out;
  m.start(at(0ms), out);
  auto quick = only<Send>(out);
  EXPECT_EQ(quick.request->decoder, Decoder::quick_acquire);
  EXPECT_EQ(quick.request->args,
            (std::vector<std::string>{"SET", "redlock:res", token(1), "NX", "PX", "5000", "GET"}));
  out.clear();
  m.on_reply(quick.id, 0, no("turn:0123456789a", 80ms), at(10ms), out);
  m.on_reply(quick.id, 1, no("holder", 70ms), at(10ms), out);
  EXPECT_FALSE(has<DeliverAcquire>(out));
  EXPECT_TRUE(has<Subscribe>(out)) << "it listens before it stands in line";
  auto timer = all_of<ArmTimer>(out).back();
  EXPECT_EQ(timer.at, at(10ms)) << "a refused quick attempt asks again at once";
  out.clear();
  m.on_timer(timer.id, timer.at, out);
  auto lined = only<Send>(out);
  EXPECT_EQ(lined.request->decoder, Decoder::acquire);
  EXPECT_EQ(lined.request->args[0], token(2)) << "every attempt has a token of its own";
  EXPECT_EQ(lined.request->args[3], m.ticket()) << "the script puts it in line";
  // Refused in line, it sleeps until a notice (or its fallback), and the notice's attempt is
  // the script's too.
  out.clear();
  m.on_reply(lined.id, 0, no("holder", 80ms), at(20ms), out);
  m.on_reply(lined.id, 1, no("holder", 70ms), at(20ms), out);
  EXPECT_GT(all_of<ArmTimer>(out).back().at, at(20ms));
  out.clear();
  h.context().notices().on_message(0, "redlock:turn:00000000000000aa",
                                   "releaser|" + m.ticket() + "|redlock:res", at(30ms), out);
  auto turn = only<Send>(out);
  EXPECT_EQ(turn.request->decoder, Decoder::acquire);
  EXPECT_EQ(turn.request->args[0], token(3));
}

TEST(ProtoAcquire, AWaiterGrantedWhileALateNodeRefusesLeavesTheLineThere) {
  Harness h(3);
  AcquireMachine m(h.context(), one(10'000ms), 5'000ms, at(0ms), 7);
  Actions out;
  m.start(at(0ms), out);
  auto send = only<Send>(out);
  out.clear();
  m.on_reply(send.id, 0, yes(), at(1ms), out);
  m.on_reply(send.id, 1, yes(), at(1ms), out);
  EXPECT_TRUE(only<DeliverAcquire>(out).result.ok());
  EXPECT_FALSE(has<Send>(out));
  out.clear();
  m.on_reply(send.id, 2, no("holder"), at(2ms), out);
  auto leave = only<Send>(out);
  EXPECT_EQ(leave.request->args, (std::vector<std::string>{"-", "0", m.ticket(), "", "0"}));
  EXPECT_TRUE(m.done());
}

TEST(ProtoAcquire, ACancelledWaiterLeavesTheLineAndStopsItsTimer) {
  Harness h(3);
  AcquireMachine m(h.context(), one(10'000ms), 5'000ms, at(0ms), 7);
  Actions out;
  m.start(at(0ms), out);
  auto send = only<Send>(out);
  m.on_reply(send.id, 0, no("holder", 3000ms), at(1ms), out);
  m.on_reply(send.id, 1, no("holder", 3000ms), at(1ms), out);
  out.clear();
  m.cancel(Errc::cancelled, at(50ms), out);
  auto done = only<DeliverAcquire>(out);
  EXPECT_EQ(done.result.error, Errc::cancelled);
  EXPECT_EQ(done.result.votes.no(), 2u) << "the votes of its last attempt";
  EXPECT_TRUE(has<CancelTimer>(out));
  auto leave = only<Send>(out);
  EXPECT_EQ(leave.request->keys, std::vector<std::string>{"redlock:res"});
  EXPECT_EQ(leave.request->args[0], "-");
  EXPECT_EQ(leave.request->args[3], "") << "an empty place leaves the line";
}

TEST(ProtoAcquire, ACancelDuringAnAttemptEndsItWhenItIsAnswered) {
  Harness h(3);
  AcquireMachine m(h.context(), one(10'000ms), 5'000ms, at(0ms), 7);
  Actions out;
  m.start(at(0ms), out);
  auto send = only<Send>(out);
  out.clear();
  m.cancel(Errc::cancelled, at(1ms), out);
  EXPECT_TRUE(out.empty());
  m.on_reply(send.id, 0, yes(), at(2ms), out);
  m.on_reply(send.id, 1, yes(), at(2ms), out);
  auto done = only<DeliverAcquire>(out);
  EXPECT_EQ(done.result.error, Errc::cancelled) << "a grant after the cancel is cleaned up";
  auto sends = all_of<Send>(out);
  ASSERT_EQ(sends.size(), 2u);
  EXPECT_EQ(sends[0].request->args.size(), 2u) << "clean-up without keeping the place";
  EXPECT_EQ(sends[1].request->args[0], "-") << "then it leaves the line";
}

TEST(ProtoAcquire, CancelledBeforeItBeganSendsNothing) {
  Harness h(3);
  AcquireMachine m(h.context(), one(), 5'000ms, at(0ms), 0);
  Actions out;
  m.cancel(Errc::cancelled, at(0ms), out);
  EXPECT_EQ(only<DeliverAcquire>(out).result.error, Errc::cancelled);
  EXPECT_FALSE(has<Send>(out));
  out.clear();
  m.start(at(0ms), out);
  EXPECT_TRUE(out.empty());
}

TEST(ProtoAcquire, AFencedGrantIsHandedOutOnlyAfterTheWriteBackOfTheHighestCounter) {
  Harness h(3);
  AcquireMachine m(h.context(), one(std::nullopt, true), 10'000ms, at(0ms), 0);
  Actions out;
  m.start(at(0ms), out);
  auto send = only<Send>(out);
  EXPECT_EQ(send.request->args[2], "1");
  out.clear();
  m.on_reply(send.id, 0, yes(5), at(1ms), out);
  m.on_reply(send.id, 2, yes(7), at(2ms), out);
  EXPECT_FALSE(has<DeliverAcquire>(out));
  auto fence = only<Send>(out);
  EXPECT_EQ(fence.request->script, ScriptId::fence);
  EXPECT_EQ(fence.nodes, nodes({0, 1, 2}));
  EXPECT_EQ(fence.request->args, (std::vector<std::string>{token(1), "7"}));
  out.clear();
  m.on_reply(fence.id, 1, yes(), at(3ms), out);
  EXPECT_FALSE(has<DeliverAcquire>(out)) << "one write-back is no quorum";
  m.on_reply(fence.id, 2, yes(), at(4ms), out);
  auto done = only<DeliverAcquire>(out);
  ASSERT_TRUE(done.result.ok());
  EXPECT_EQ(done.result.lock.fencing_token, 7u);
  EXPECT_EQ(done.result.lock.valid_until, at(10'000ms) - kDrift);
}

TEST(ProtoAcquire, AFailedWriteBackIsAFailedAttemptThatCleansUpEverywhere) {
  Harness h(3);
  AcquireMachine m(h.context(), one(0ms, true), 10'000ms, at(0ms), 0);
  Actions out;
  m.start(at(0ms), out);
  auto send = only<Send>(out);
  m.on_reply(send.id, 0, yes(5), at(1ms), out);
  m.on_reply(send.id, 1, yes(5), at(1ms), out);
  auto fence = all_of<Send>(out).back();
  out.clear();
  m.on_reply(fence.id, 0, no(), at(2ms), out);
  m.on_reply(fence.id, 1, no(), at(2ms), out);
  auto done = only<DeliverAcquire>(out);
  EXPECT_EQ(done.result.error, Errc::not_acquired);
  EXPECT_EQ(done.result.lock.fencing_token, 0u);
  EXPECT_EQ(only<Send>(out).nodes, nodes({0, 1, 2}));
}

TEST(ProtoAcquire, AReleaseNoticeWakesAWaiterForSeveralKeysAtOnce) {
  Harness h(3);
  AcquireRequest request({"a", "b"}, std::nullopt, 10'000ms);
  AcquireMachine m(h.context(), request, 5'000ms, at(0ms), 7);
  EXPECT_FALSE(m.in_line());
  Actions out;
  m.start(at(0ms), out);
  auto send = only<Send>(out);
  out.clear();
  m.on_reply(send.id, 0, no("holder", 4000ms), at(1ms), out);
  m.on_reply(send.id, 1, no("holder", 4000ms), at(1ms), out);
  auto subs = all_of<Subscribe>(out);
  ASSERT_EQ(subs.size(), 3u);
  EXPECT_EQ(subs[1].channel, "redlock:a:released");
  EXPECT_EQ(subs[2].channel, "redlock:b:released");
  EXPECT_EQ(only<ArmTimer>(out).at, at(1ms + 242ms)) << "the retry delay: under the holder's ttl";
  out.clear();
  h.context().notices().on_message(1, "redlock:b:released", "holder", at(9ms), out);
  EXPECT_EQ(only<Send>(out).request->args[0], token(2));
}

TEST(ProtoAcquire, AWaiterRefusedByAHolderWhoseReleaseWasAnnouncedAsksAgainAtOnce) {
  Harness h(3);
  // From the first attempt through the script (as on a server without SET ... GET): this test is
  // about the line, which a waiter's quick first attempt does not join.
  h.context().no_quick_acquire();
  AcquireMachine m(h.context(), one(10'000ms), 5'000ms, at(0ms), 7);
  Actions out;
  m.start(at(0ms), out);
  auto send = only<Send>(out);
  m.on_reply(send.id, 0, no("holder", 4000ms), at(1ms), out);
  m.on_reply(send.id, 1, no("holder", 4000ms), at(1ms), out);
  auto timer = all_of<ArmTimer>(out).back();
  EXPECT_EQ(timer.at, at(1ms + 242ms));
  // The holder's release is announced to another client's waiter: ours is not woken by it.
  out.clear();
  h.context().notices().on_message(0, "redlock:turn:00000000000000aa", "holder||redlock:res",
                                   at(100ms), out);
  EXPECT_TRUE(out.empty());
  out.clear();
  m.on_timer(timer.id, timer.at, out);
  auto again = only<Send>(out);
  out.clear();
  // Nodes that have not deleted the key yet still name that holder: it asks again at once.
  m.on_reply(again.id, 0, no("holder", 3000ms), at(250ms), out);
  m.on_reply(again.id, 1, no("holder", 3000ms), at(250ms), out);
  EXPECT_EQ(only<ArmTimer>(out).at, at(250ms));
}

TEST(ProtoAcquire, ACancelBetweenTwoFillInRoundsCleansUpAtOnce) {
  Harness h(3);
  AcquireMachine m(h.context(), one(0ms), 10'000ms, at(0ms), 0);
  Actions out;
  m.start(at(0ms), out);
  auto send = only<Send>(out);
  out.clear();
  m.on_reply(send.id, 0, yes(), at(1ms), out);
  m.on_reply(send.id, 1, no("zz-other-1"), at(1ms), out);
  m.on_reply(send.id, 2, no("zz-other-2"), at(1ms), out);
  for (int round = 1; round <= 3; ++round) {
    auto fill = only<Send>(out);
    out.clear();
    m.on_reply(fill.id, 1, no("zz-other-1"), at(2ms), out);
    m.on_reply(fill.id, 2, no("zz-other-2"), at(2ms), out);
  }
  ASSERT_TRUE(has<ArmTimer>(out)) << "the fourth round waits a millisecond";
  EXPECT_FALSE(has<Send>(out));
  out.clear();
  m.cancel(Errc::cancelled, at(2ms), out);
  EXPECT_TRUE(has<CancelTimer>(out));
  auto cleanup = only<Send>(out);
  EXPECT_EQ(cleanup.nodes, nodes({0, 1, 2})) << "the kept key is deleted with the rest";
  EXPECT_EQ(cleanup.request->args, (std::vector<std::string>{token(1), "0"}));
  EXPECT_EQ(only<DeliverAcquire>(out).result.error, Errc::cancelled);
  EXPECT_TRUE(m.done());
}

// A split winner's fill-in rounds go on only while more than the least validity is left of
// its first round's window. `reply_at`: when the fill-in round's refusals come in.
Actions fill_in_refused_at(Harness& h, Clock::time_point reply_at) {
  AcquireMachine m(h.context(), one(0ms), 10'000ms, at(0ms), 0);
  Actions out;
  m.start(at(0ms), out);
  auto send = only<Send>(out);
  out.clear();
  m.on_reply(send.id, 0, yes(), at(1ms), out);
  m.on_reply(send.id, 1, no("zz-other-1"), at(1ms), out);
  m.on_reply(send.id, 2, no("zz-other-2"), at(1ms), out);
  auto fill = only<Send>(out);
  out.clear();
  m.on_reply(fill.id, 1, no("zz-other-1"), reply_at, out);
  m.on_reply(fill.id, 2, no("zz-other-2"), reply_at, out);
  return out;
}

TEST(ProtoAcquire, AFillInGoesOnWithMoreThanTheLeastValidityLeft) {
  Harness h(3);
  auto out = fill_in_refused_at(h, at(10'000ms) - kDrift - kLeast - 1us);
  EXPECT_FALSE(has<DeliverAcquire>(out));
  auto again = only<Send>(out);
  EXPECT_EQ(again.nodes, nodes({1, 2})) << "another fill-in round";
}

TEST(ProtoAcquire, AFillInStopsWhenOnlyTheLeastValidityIsLeft) {
  Harness h(3);
  auto out = fill_in_refused_at(h, at(10'000ms) - kDrift - kLeast);
  EXPECT_EQ(only<DeliverAcquire>(out).result.error, Errc::not_acquired);
  EXPECT_EQ(only<Send>(out).nodes, nodes({0, 1, 2})) << "it cleans up, the kept key too";
}

// A fenced grant whose write-back completes at `reply_at`.
DeliverAcquire fenced_at(Harness& h, Clock::time_point reply_at) {
  AcquireMachine m(h.context(), one(0ms, true), 10'000ms, at(0ms), 0);
  Actions out;
  m.start(at(0ms), out);
  auto send = only<Send>(out);
  m.on_reply(send.id, 0, yes(3), at(1ms), out);
  m.on_reply(send.id, 1, yes(4), at(1ms), out);
  auto fence = all_of<Send>(out).back();
  EXPECT_EQ(fence.request->script, ScriptId::fence);
  out.clear();
  m.on_reply(fence.id, 0, yes(), reply_at, out);
  m.on_reply(fence.id, 1, yes(), reply_at, out);
  return only<DeliverAcquire>(out);
}

TEST(ProtoAcquire, AWriteBackIsKeptWithMoreThanTheLeastValidityLeft) {
  Harness h(3);
  auto done = fenced_at(h, at(10'000ms) - kDrift - kLeast - 1us);
  ASSERT_TRUE(done.result.ok()) << done.result.message();
  EXPECT_EQ(done.result.lock.fencing_token, 4u);
}

TEST(ProtoAcquire, AWriteBackWithOnlyTheLeastValidityLeftIsNoGrant) {
  Harness h(3);
  auto done = fenced_at(h, at(10'000ms) - kDrift - kLeast);
  EXPECT_EQ(done.result.error, Errc::validity_expired);
  EXPECT_EQ(done.result.lock.fencing_token, 0u);
}

AcquireRequest two(Milliseconds wait) { return AcquireRequest({"a", "b"}, std::nullopt, wait); }

TEST(ProtoAcquire, AWaiterForSeveralKeysGrantedWhileALateNodeRefusesLeavesItsSignUpsThere) {
  Harness h(3);
  AcquireMachine m(h.context(), two(10'000ms), 5'000ms, at(0ms), 7);
  ASSERT_FALSE(m.ticket().empty());
  Actions out;
  m.start(at(0ms), out);
  auto send = only<Send>(out);
  out.clear();
  m.on_reply(send.id, 0, yes(), at(1ms), out);
  m.on_reply(send.id, 1, yes(), at(1ms), out);
  EXPECT_TRUE(only<DeliverAcquire>(out).result.ok());
  EXPECT_FALSE(has<Send>(out));
  EXPECT_FALSE(m.done()) << "it awaits the late vote";
  out.clear();
  m.on_reply(send.id, 2, no("holder"), at(2ms), out);
  ASSERT_EQ(all_of<Send>(out).size(), 1u) << "it leaves its sign-ups";
  auto leave = only<Send>(out);
  EXPECT_EQ(leave.request->script, ScriptId::release);
  EXPECT_EQ(leave.request->keys, (std::vector<std::string>{"redlock:a", "redlock:b"}));
  EXPECT_EQ(leave.request->args, (std::vector<std::string>{"-", "0", m.ticket(), "", "0"}));
  EXPECT_FALSE(leave.reply_wanted);
  EXPECT_TRUE(m.done());
}

TEST(ProtoAcquire, AWaiterForSeveralKeysGrantedEverywhereLeavesNothing) {
  Harness h(3);
  AcquireMachine m(h.context(), two(10'000ms), 5'000ms, at(0ms), 7);
  Actions out;
  m.start(at(0ms), out);
  auto send = only<Send>(out);
  out.clear();
  m.on_reply(send.id, 0, yes(), at(1ms), out);
  m.on_reply(send.id, 1, yes(), at(1ms), out);
  m.on_reply(send.id, 2, yes(), at(2ms), out);
  EXPECT_TRUE(only<DeliverAcquire>(out).result.ok());
  EXPECT_FALSE(has<Send>(out));
}

TEST(ProtoAcquire, ACancelledWaiterForSeveralKeysLeavesItsSignUps) {
  Harness h(3);
  AcquireMachine m(h.context(), two(10'000ms), 5'000ms, at(0ms), 7);
  Actions out;
  m.start(at(0ms), out);
  auto send = only<Send>(out);
  m.on_reply(send.id, 0, no("holder", 3000ms), at(1ms), out);
  m.on_reply(send.id, 1, no("holder", 3000ms), at(1ms), out);
  out.clear();
  m.cancel(Errc::cancelled, at(50ms), out);
  EXPECT_EQ(only<DeliverAcquire>(out).result.error, Errc::cancelled);
  ASSERT_EQ(all_of<Send>(out).size(), 1u) << "it leaves its sign-ups";
  auto leave = only<Send>(out);
  EXPECT_EQ(leave.request->keys, (std::vector<std::string>{"redlock:a", "redlock:b"}));
  EXPECT_EQ(leave.request->args, (std::vector<std::string>{"-", "0", m.ticket(), "", "0"}));
}

TEST(ProtoAcquire, AWaiterForSeveralKeysAsksAgainBeforeItsSignUpsLapse) {
  Harness h(3);
  h.config.retry_delay = 30'000ms;
  AcquireMachine m(h.context(), two(60'000ms), 5'000ms, at(0ms), 7);
  Actions out;
  m.start(at(0ms), out);
  auto send = only<Send>(out);
  out.clear();
  m.on_reply(send.id, 0, no("holder"), at(1ms), out);
  m.on_reply(send.id, 1, no("holder"), at(1ms), out);
  EXPECT_EQ(only<ArmTimer>(out).at, at(1ms) + kSignUpRefresh)
      << "the retry delay, 30 s, is cut to the sign-ups' refresh";
  EXPECT_LT(kSignUpRefresh, kSignUpLife);
}

TEST(ProtoAcquire, AWaiterForOneKeyKeepsItsLongerRetryDelay) {
  Harness h(3);
  h.config.retry_delay = 30'000ms;
  // From the first attempt through the script (as on a server without SET ... GET): this test is
  // about the line, which a waiter's quick first attempt does not join.
  h.context().no_quick_acquire();
  AcquireMachine m(h.context(), one(60'000ms), 5'000ms, at(0ms), 7);
  Actions out;
  m.start(at(0ms), out);
  auto send = only<Send>(out);
  out.clear();
  m.on_reply(send.id, 0, no("holder"), at(1ms), out);
  m.on_reply(send.id, 1, no("holder"), at(1ms), out);
  EXPECT_GE(only<ArmTimer>(out).at, at(1ms) + 30'000ms) << "a line needs no refresh";
}

TEST(ProtoAcquire, AWaiterTellsOnceThatItBeganToWait) {
  Harness h(3);
  AcquireMachine m(h.context(), one(10'000ms), 5'000ms, at(0ms), 7);
  Actions out;
  m.start(at(0ms), out);
  EXPECT_FALSE(has<WaitBegan>(out)) << "not before it is refused";
  auto send = only<Send>(out);
  out.clear();
  m.on_reply(send.id, 0, no("holder", 100ms), at(1ms), out);
  m.on_reply(send.id, 1, no("holder", 100ms), at(1ms), out);
  EXPECT_EQ(only<WaitBegan>(out).job, m.id());
  auto timer = only<ArmTimer>(out);
  out.clear();
  m.on_timer(timer.id, timer.at, out);
  auto again = only<Send>(out);
  out.clear();
  m.on_reply(again.id, 0, no("holder", 100ms), timer.at, out);
  m.on_reply(again.id, 1, no("holder", 100ms), timer.at, out);
  EXPECT_FALSE(has<WaitBegan>(out)) << "a second refusal is the same wait";
}

TEST(ProtoAcquire, AnAcquireThatDoesNotWaitNeverBeginsToWait) {
  Harness h(3);
  AcquireMachine m(h.context(), one(), 5'000ms, at(0ms), 0);
  Actions out;
  m.start(at(0ms), out);
  auto send = only<Send>(out);
  m.on_reply(send.id, 0, no("holder", 100ms), at(1ms), out);
  m.on_reply(send.id, 1, no("holder", 100ms), at(1ms), out);
  EXPECT_FALSE(has<WaitBegan>(out));
}

TEST(ProtoRules, SignUpRefreshCapsOnlyAWaiterForSeveralKeys) {
  EXPECT_EQ(sign_up_refresh(20'000ms, true, 2), kSignUpRefresh);
  EXPECT_EQ(sign_up_refresh(kSignUpRefresh + 1ms, true, 3), kSignUpRefresh);
  EXPECT_EQ(sign_up_refresh(kSignUpRefresh, true, 2), kSignUpRefresh);
  EXPECT_EQ(sign_up_refresh(300ms, true, 2), 300ms) << "a shorter delay stays";
  EXPECT_EQ(sign_up_refresh(20'000ms, true, 1), 20'000ms) << "one key: a line, no sign-up";
  EXPECT_EQ(sign_up_refresh(20'000ms, false, 2), 20'000ms) << "no wait, no sign-up";
}

TEST(ProtoScripts, ALeavingWaiterTakesItsLineOrItsSignUpsOut) {
  auto line = leave_waiting_request({"k"}, "ch#1@200");
  EXPECT_EQ(line.keys, std::vector<std::string>{"k"});
  EXPECT_EQ(line.args, (std::vector<std::string>{"-", "0", "ch#1@200", "", "0"}));
  auto sign_ups = leave_waiting_request({"a", "b"}, "ch#2@200");
  EXPECT_EQ(sign_ups.script, ScriptId::release);
  EXPECT_EQ(sign_ups.keys, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(sign_ups.args, (std::vector<std::string>{"-", "0", "ch#2@200", "", "0"}));
}

TEST(ProtoContext, KeysAreTheLockKeysOfTheResources) {
  Harness h(3);
  EXPECT_EQ(h.context().keys_of({"a", "b"}),
            (std::vector<std::string>{lock_key("redlock:", "a"), lock_key("redlock:", "b")}));
}

TEST(ProtoContext, TicketsAndTurnChannelsAsTheScriptsReadThem) {
  Harness h(3);
  h.config.request_timeout = 50ms;
  EXPECT_EQ(h.context().turn_length(), 100ms) << "at least 100 ms";
  EXPECT_EQ(h.context().new_ticket(12), "redlock:turn:00000000000000aa#12@100");
  EXPECT_EQ(turn_channel_name("p:", 0xabcdef), "p:turn:0000000000abcdef");
  EXPECT_EQ(h.context().keys_of({"a", "b"}), (std::vector<std::string>{"redlock:a", "redlock:b"}));
}

// A reader of a read-write lock never asks with the quick command: its first attempt, even one
// that does not wait, is the script's reader form; its ticket says it is a reader; its clean-up,
// its leaving the line and its grant are a reader's.
TEST(ProtoAcquire, AReaderSendsTheReaderFormNeverTheQuickCommand) {
  Harness h(3);
  auto request = one(10'000ms);
  request.shared = true;
  AcquireMachine m(h.context(), request, 5'000ms, at(0ms), 1234567);
  EXPECT_NE(m.ticket().find("#r"), std::string::npos) << m.ticket();
  Actions out;
  m.start(at(0ms), out);
  auto first = only<Send>(out);
  EXPECT_EQ(first.request->script, ScriptId::acquire);
  ASSERT_EQ(first.request->args.size(), 8u);
  EXPECT_EQ(first.request->args[3], m.ticket());
  EXPECT_EQ(first.request->args[7], "shared");
  out.clear();
  m.on_reply(first.id, 0, yes(), at(5ms), out);
  m.on_reply(first.id, 1, no("turn:0123456789a", 80ms), at(5ms), out);
  m.on_reply(first.id, 2, no("turn:0123456789a", 80ms), at(5ms), out);
  auto cleanup = only<Send>(out);
  EXPECT_EQ(cleanup.request->script, ScriptId::release);
  EXPECT_EQ(cleanup.request->args.back(), "shared");
  EXPECT_EQ(cleanup.request->args[1], "0") << "a clean-up wakes nobody";
  auto timer = all_of<ArmTimer>(out).back();
  out.clear();
  m.on_timer(timer.id, timer.at, out);
  auto second = only<Send>(out);
  EXPECT_EQ(second.request->args[7], "shared");
  out.clear();
  m.on_reply(second.id, 0, yes(), timer.at + 1ms, out);
  m.on_reply(second.id, 1, yes(), timer.at + 1ms, out);
  auto done = only<DeliverAcquire>(out);
  ASSERT_TRUE(done.result.ok()) << done.result.message();
  EXPECT_TRUE(done.result.lock.shared);
  out.clear();
  m.on_reply(second.id, 2, no("writer", 80ms), timer.at + 2ms, out);
  auto leave = only<Send>(out);
  EXPECT_EQ(leave.request->args,
            (std::vector<std::string>{"-", "0", m.ticket(), "", "0", "shared"}));
}

TEST(ProtoAcquire, AReaderThatDoesNotWaitIsTheScriptsToo) {
  Harness h(3);
  auto request = one(0ms);
  request.shared = true;
  AcquireMachine m(h.context(), request, 5'000ms, at(0ms), 0);
  Actions out;
  m.start(at(0ms), out);
  auto first = only<Send>(out);
  EXPECT_EQ(first.request->script, ScriptId::acquire);
  EXPECT_EQ(first.request->args.back(), "shared");
  EXPECT_EQ(first.request->args[3], "") << "no ticket: it does not wait";
}

// The turn of a reader of ours that is gone ("#r<job>" in its ticket) is handed on at once with
// the reader's leave form.
TEST(ProtoAcquire, AGoneReadersTurnIsHandedOnWithTheReadersLeaveForm) {
  Harness h(3);
  Actions out;
  const std::string ticket = "redlock:turn:00000000000000aa#r99@200";
  h.context().notices().on_message(0, "redlock:turn:00000000000000aa",
                                   "releaser|" + ticket + "|redlock:res", at(0ms), out);
  auto leave = only<Send>(out);
  EXPECT_EQ(leave.request->keys, std::vector<std::string>{"redlock:res"});
  EXPECT_EQ(leave.request->args, (std::vector<std::string>{"-", "0", ticket, "", "0", "shared"}));
}

}  // namespace
}  // namespace redlock::detail::proto::test
