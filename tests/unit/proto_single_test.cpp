// The fan-out tally, extend and release, and the script contracts.
#include <gtest/gtest.h>

#include "proto/fanout.hpp"
#include "proto/scripts.hpp"
#include "proto/single.hpp"
#include "proto_harness.hpp"

namespace redlock::detail::proto::test {
namespace {

constexpr auto kDrift = 102ms;  // of a 10 s lease with drift factor 0.01

TEST(ProtoFanOut, DecidedAtTheQuorumSettledWhenEveryNodeAnswered) {
  FanOutTally f(5, 1, at(0ms));
  EXPECT_EQ(f.asked(), nodes({0, 1, 2, 3, 4}));
  EXPECT_TRUE(f.record(0, yes()).empty());
  EXPECT_TRUE(f.record(1, yes()).empty());
  EXPECT_TRUE(f.record(1, no()).empty()) << "a node is heard once";
  EXPECT_EQ(f.tally().yes, 2u);
  EXPECT_EQ(f.record(4, yes()), std::vector<std::size_t>{0});
  EXPECT_EQ(f.verdict(), Verdict::won);
  EXPECT_FALSE(f.settled());
  EXPECT_TRUE(f.record(2, no()).empty()) << "decided once";
  f.record(3, failed());
  EXPECT_TRUE(f.settled());
  EXPECT_EQ(f.votes()[3].error, Errc::request_timeout);
}

TEST(ProtoFanOut, LostAsSoonAsTheQuorumIsOutOfReach) {
  FanOutTally f(5, 1, at(0ms));
  f.record(0, no());
  f.record(1, failed());
  EXPECT_EQ(f.verdict(), Verdict::pending);
  EXPECT_EQ(f.record(2, no()), std::vector<std::size_t>{0});
  EXPECT_EQ(f.verdict(), Verdict::lost);
  EXPECT_EQ(f.tally().loss_reason(Errc::not_held), Errc::not_held);
}

TEST(ProtoFanOut, AMissingOrPendingVoteIsAProtocolError) {
  FanOutTally f(3, 2, at(0ms));
  f.record(0, {NodeVote{}});
  EXPECT_EQ(f.votes(0)[0].error, Errc::protocol_error);
  EXPECT_EQ(f.votes(1)[0].error, Errc::protocol_error);
}

TEST(ProtoFanOut, KnownVotesAreNotAskedAgain) {
  std::vector<NodeVote> known(3);
  known[1].vote = Vote::yes;
  FanOutTally f(3, 1, at(0ms), false, &known);
  EXPECT_EQ(f.asked(), nodes({0, 2}));
  EXPECT_EQ(f.tally().yes, 1u);
  EXPECT_EQ(f.record(2, yes()), std::vector<std::size_t>{0});
}

TEST(ProtoFanOut, ItemsAreDecidedEachAtItsOwnQuorum) {
  FanOutTally f(3, 2, at(0ms));
  NodeVote y, n;
  y.vote = Vote::yes;
  n.vote = Vote::no;
  f.record(0, {y, n});
  EXPECT_EQ(f.record(1, {y, n}), (std::vector<std::size_t>{0, 1}));
  EXPECT_EQ(f.verdict(0), Verdict::won);
  EXPECT_EQ(f.verdict(1), Verdict::lost);
}

TEST(ProtoFanOut, WaitAllDecidesOnlyWhenEveryNodeAnswered) {
  FanOutTally f(3, 1, at(0ms), /*wait_all=*/true);
  f.record(0, yes());
  EXPECT_TRUE(f.record(1, yes()).empty());
  EXPECT_EQ(f.record(2, failed()), std::vector<std::size_t>{0});
}

// Who answered: a known node, a node heard once (whatever it said, a pending vote included), and
// in a fan-out of no items too; record_decides tells the same decisions as record.
TEST(ProtoFanOut, AnsweredNodesAreHeardOnceWhateverTheyVoted) {
  std::vector<NodeVote> known(3);
  known[0].vote = Vote::yes;
  FanOutTally f(3, 1, at(0ms), false, &known);
  EXPECT_TRUE(f.answered(0));
  EXPECT_FALSE(f.answered(1));
  EXPECT_FALSE(f.record_decides(1, {NodeVote{}}));
  EXPECT_TRUE(f.answered(1)) << "a pending vote is heard, as a protocol error";
  EXPECT_FALSE(f.record_decides(1, yes())) << "heard once";
  EXPECT_EQ(f.tally().yes, 1u);
  EXPECT_EQ(f.tally().failed, 1u);
  EXPECT_FALSE(f.record_decides(7, yes())) << "no node of this fan-out";
  EXPECT_TRUE(f.record_decides(2, yes()));
  EXPECT_EQ(f.verdict(), Verdict::won);
  EXPECT_TRUE(f.settled());

  FanOutTally none(2, 0, at(0ms));
  EXPECT_EQ(none.asked(), nodes({0, 1}));
  EXPECT_FALSE(none.record_decides(0, {}));
  EXPECT_TRUE(none.answered(0));
  EXPECT_FALSE(none.answered(1));
  EXPECT_FALSE(none.settled());
  none.record(0, {});
  EXPECT_FALSE(none.settled()) << "heard once";
  none.record(1, {});
  EXPECT_TRUE(none.settled());
}

Lock held(Clock::time_point valid_until) {
  Lock lock("res", token(1));
  lock.valid_until = valid_until;
  lock.ttl = 10'000ms;
  return lock;
}

TEST(ProtoExtend, AWonExtendCountsFromItsSendTime) {
  Harness h(3);
  ExtendMachine m(h.context(), 9, held(at(3000ms)), 10'000ms);
  Actions out;
  m.start(at(1000ms), out);
  auto send = only<Send>(out);
  EXPECT_EQ(send.request->script, ScriptId::renew);
  EXPECT_EQ(send.request->keys, std::vector<std::string>{"redlock:res"});
  EXPECT_EQ(send.request->args, (std::vector<std::string>{token(1), "10000", "1"}));
  out.clear();
  m.on_reply(send.id, 0, yes(), at(1005ms), out);
  m.on_reply(send.id, 2, yes(), at(1010ms), out);
  auto done = only<DeliverExtend>(out);
  EXPECT_EQ(done.op, 9u);
  ASSERT_TRUE(done.result.ok());
  EXPECT_EQ(done.result.valid_until, at(11'000ms) - kDrift)
      << "what the quorum guarantees: from the send, not from the answer";
}

TEST(ProtoExtend, NeverShortensTheDeadlineAHolderHas) {
  Harness h(3);
  ExtendMachine m(h.context(), 1, held(at(20'000ms)), 10'000ms);
  Actions out;
  m.start(at(1000ms), out);
  auto send = only<Send>(out);
  m.on_reply(send.id, 0, yes(), at(1001ms), out);
  m.on_reply(send.id, 1, yes(), at(1001ms), out);
  auto done = only<DeliverExtend>(out);
  EXPECT_TRUE(done.result.ok());
  EXPECT_EQ(done.result.valid_until, at(20'000ms));
}

TEST(ProtoExtend, ARefusedOrLateExtendKeepsThePreviousDeadline) {
  Harness h(3);
  {
    ExtendMachine m(h.context(), 1, held(at(3000ms)), 10'000ms);
    Actions out;
    m.start(at(1000ms), out);
    auto send = only<Send>(out);
    m.on_reply(send.id, 0, no(), at(1001ms), out);
    m.on_reply(send.id, 1, no(), at(1001ms), out);
    auto done = only<DeliverExtend>(out);
    EXPECT_EQ(done.result.error, Errc::not_held);
    EXPECT_EQ(done.result.valid_until, at(3000ms));
  }
  {
    ExtendMachine m(h.context(), 2, held(at(3000ms)), 10'000ms);
    Actions out;
    m.start(at(1000ms), out);
    auto send = only<Send>(out);
    m.on_reply(send.id, 0, yes(), at(1001ms), out);
    m.on_reply(send.id, 1, yes(), at(11'000ms) - kDrift, out);
    auto done = only<DeliverExtend>(out);
    EXPECT_EQ(done.result.error, Errc::validity_expired);
    EXPECT_EQ(done.result.valid_until, at(3000ms));
  }
  {
    ExtendMachine m(h.context(), 3, held(at(3000ms)), 10'000ms);
    Actions out;
    m.start(at(1000ms), out);
    auto send = only<Send>(out);
    m.on_reply(send.id, 0, failed(), at(1001ms), out);
    m.on_reply(send.id, 1, failed(), at(1001ms), out);
    EXPECT_EQ(only<DeliverExtend>(out).result.error, Errc::no_quorum);
  }
}

TEST(ProtoRelease, ReleasedAtTheQuorumWithTheTokenAlone) {
  Harness h(5);
  ReleaseMachine m(h.context(), 4, held(at(0ms)));
  Actions out;
  m.start(at(0ms), out);
  auto send = only<Send>(out);
  EXPECT_EQ(send.request->script, ScriptId::release);
  EXPECT_EQ(send.request->args, std::vector<std::string>{token(1)}) << "a real release";
  out.clear();
  m.on_reply(send.id, 0, yes(), at(1ms), out);
  m.on_reply(send.id, 1, no(), at(1ms), out);
  m.on_reply(send.id, 2, yes(), at(1ms), out);
  EXPECT_TRUE(out.empty());
  m.on_reply(send.id, 3, yes(), at(1ms), out);
  auto done = only<DeliverRelease>(out);
  EXPECT_TRUE(done.result.ok());
  EXPECT_EQ(done.result.released, 3u);
  out.clear();
  m.on_reply(send.id, 4, yes(), at(2ms), out);
  EXPECT_TRUE(out.empty()) << "delivered once";
}

// With reuse on (the loop's context), a request nobody holds any more is filled in again, whole:
// nothing of its earlier form is left; one still held is never touched.
TEST(ProtoRelease, AReusedRequestIsFilledInWholeAndOnlyOnceFree) {
  Harness h(3);
  h.context().reuse_requests();
  auto quick = h.context().request(Context::Reused::quick_acquire);
  fill_quick_acquire(*quick, "redlock:a-rather-long-resource-name", token(1), 500ms);
  EXPECT_EQ(quick->args,
            quick_acquire_request("redlock:a-rather-long-resource-name", token(1), 500ms).args);
  Request held_copy = *quick;
  EXPECT_NE(h.context().request(Context::Reused::quick_acquire), quick) << "still held";
  EXPECT_EQ(quick->args, held_copy.args);
  const Request* first = quick.get();
  quick.reset();  // every node answered: only the context holds it
  auto again = h.context().request(Context::Reused::quick_acquire);
  EXPECT_EQ(again.get(), first) << "reused";
  fill_quick_acquire(*again, "redlock:b", token(2), 700ms);
  EXPECT_EQ(again->args, quick_acquire_request("redlock:b", token(2), 700ms).args);
  EXPECT_TRUE(again->keys.empty());
  // Whatever a request held before (only the words of a quick acquire are left in place).
  for (auto before : {release_request({"redlock:c"}, token(3)),
                      Request{ScriptId::none, {}, {"SET", "x", "y", "XX", "PX", "1", "GET"}}}) {
    fill_quick_acquire(before, "redlock:c", token(3), 900ms);
    EXPECT_EQ(before.args, quick_acquire_request("redlock:c", token(3), 900ms).args);
    EXPECT_EQ(before.script, ScriptId::none);
    EXPECT_TRUE(before.keys.empty());
  }

  // A release machine's request, reused: the same as release_request's.
  for (int i = 0; i < 2; ++i) {
    ReleaseMachine m(h.context(), 4, held(at(0ms)));
    Actions out;
    m.start(at(0ms), out);
    auto send = only<Send>(out);
    auto expected = release_request(h.context().keys_of({"res"}), token(1));
    EXPECT_EQ(send.request->script, expected.script);
    EXPECT_EQ(send.request->decoder, expected.decoder);
    EXPECT_EQ(send.request->items, expected.items);
    EXPECT_EQ(send.request->keys, expected.keys);
    EXPECT_EQ(send.request->args, expected.args);
  }
}

TEST(ProtoRelease, NotHeldWithoutAQuorum) {
  Harness h(3);
  ReleaseMachine m(h.context(), 4, held(at(0ms)));
  Actions out;
  m.start(at(0ms), out);
  auto send = only<Send>(out);
  m.on_reply(send.id, 0, yes(), at(1ms), out);
  m.on_reply(send.id, 1, no(), at(1ms), out);
  m.on_reply(send.id, 2, no(), at(1ms), out);
  auto done = only<DeliverRelease>(out);
  EXPECT_EQ(done.result.error, Errc::not_held);
  EXPECT_EQ(done.result.released, 1u);
}

TEST(ProtoScripts, TheReleaseFormsAndTheirArguments) {
  std::vector<std::string> keys{"k"};
  EXPECT_EQ(release_request(keys, "t").args, std::vector<std::string>{"t"});
  EXPECT_EQ(release_request(keys, "t", false).args, (std::vector<std::string>{"t", "0"}));
  Line line{"ticket", "12", 3000ms};
  EXPECT_EQ(release_request(keys, "t", false, &line).args,
            (std::vector<std::string>{"t", "0", "ticket", "12", "3000"}));
  EXPECT_EQ(release_request(keys, "t", true, &line).args,
            (std::vector<std::string>{"t", "1", "ticket", "12", "3000"}));
  EXPECT_EQ(leave_line_request("k", "ticket").args,
            (std::vector<std::string>{"-", "0", "ticket", "", "0"}));
}

TEST(ProtoScripts, ARenewBatchPutsEveryLocksKeysInOrder) {
  std::vector<std::string> a{"a1", "a2"}, b{"b"};
  std::string ta = "ta", tb = "tb";
  auto r = renew_request({Renewal{&a, &ta, 1000ms}, Renewal{&b, &tb, 2000ms}});
  EXPECT_EQ(r.items, 2u);
  EXPECT_EQ(r.decoder, Decoder::renew);
  EXPECT_EQ(r.keys, (std::vector<std::string>{"a1", "a2", "b"}));
  EXPECT_EQ(r.args, (std::vector<std::string>{"ta", "1000", "2", "tb", "2000", "1"}));
}

TEST(ProtoScripts, AcquireWithoutATicketHasNoPlace) {
  auto r = acquire_request({"k"}, "t", 500ms, true, "", "99", 1000ms, 200ms);
  EXPECT_EQ(r.args, (std::vector<std::string>{"t", "500", "1", "", "0", "1000", "200"}));
  EXPECT_EQ(fence_request({"k"}, "t", 42).args, (std::vector<std::string>{"t", "42"}));
  EXPECT_EQ(status_request().args, (std::vector<std::string>{"INFO", "server"}));
}

TEST(ProtoScripts, EveryScriptHasItsTextAndDigest) {
  for (auto s : {ScriptId::acquire, ScriptId::renew, ScriptId::release, ScriptId::fence}) {
    EXPECT_FALSE(script_body(s).empty());
    EXPECT_EQ(script_sha(s).size(), 40u);
  }
  EXPECT_TRUE(script_body(ScriptId::none).empty());
  EXPECT_FALSE(script_order_free(ScriptId::acquire)) << "it creates a lock";
  EXPECT_TRUE(script_order_free(ScriptId::release));
}

TEST(ProtoScripts, OnlyTheSyntaxErrorOfAFailedVoteIsTheQuickAcquiresRefusal) {
  EXPECT_TRUE(is_syntax_error(failed(Errc::redis_error, "ERR syntax error")[0]));
  EXPECT_FALSE(is_syntax_error(failed(Errc::redis_error, "ERR unknown command")[0]));
  auto v = no()[0];
  v.detail = "ERR syntax error";
  EXPECT_FALSE(is_syntax_error(v));
}

}  // namespace
}  // namespace redlock::detail::proto::test

namespace redlock::detail::proto::test {
namespace {

// The reader forms of the read-write lock (scripts/acquire.lua ARGV[8] 'shared', release.lua
// ARGV[6] 'shared', renew.lua 'r', fence.lua ARGV[3] 'shared').
TEST(ProtoScripts, TheReaderFormsAddTheirSelectorToTheMutexsArguments) {
  auto a = reader_request("k", "t", 500ms, false, "ch#r7@200", "99", 1000ms, 200ms);
  EXPECT_EQ(a.script, ScriptId::acquire);
  EXPECT_EQ(a.decoder, Decoder::acquire);
  EXPECT_EQ(a.keys, std::vector<std::string>{"k"});
  EXPECT_EQ(a.args, (std::vector<std::string>{"t", "500", "0", "ch#r7@200", "99", "1000", "200",
                                              "shared"}));
  EXPECT_EQ(reader_release_request("k", "t").args,
            (std::vector<std::string>{"t", "1", "", "", "0", "shared"}));
  Line line{"ch#r7@200", "12", 3000ms};
  EXPECT_EQ(reader_release_request("k", "t", false, &line).args,
            (std::vector<std::string>{"t", "0", "ch#r7@200", "12", "3000", "shared"}));
  EXPECT_EQ(leave_reader_request("k", "ch#r7@200").args,
            (std::vector<std::string>{"-", "0", "ch#r7@200", "", "0", "shared"}));
  std::vector<std::string> a1{"a"}, b1{"b"};
  std::string ta = "ta", tb = "tb";
  auto r = renew_request({Renewal{&a1, &ta, 1000ms, false, true}, Renewal{&b1, &tb, 2000ms}});
  EXPECT_EQ(r.keys, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(r.args, (std::vector<std::string>{"ta", "1000", "r", "tb", "2000", "1"}));
  EXPECT_EQ(fence_request({"k"}, "t", 42, true).args,
            (std::vector<std::string>{"t", "42", "shared"}));
}

}  // namespace
}  // namespace redlock::detail::proto::test
