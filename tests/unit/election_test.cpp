// Leader election's pure rule (docs/guide-election.md): who leads, from each node's answer to
// leader.lua's read.
#include <gtest/gtest.h>

#include "proto/election.hpp"

namespace redlock::detail::proto {
namespace {

NodeVote leads(std::uint64_t term, std::string value) {
  NodeVote v;
  v.vote = Vote::yes;
  v.fence = term;
  v.holder = std::move(value);
  v.holder_ttl = Milliseconds(100 * static_cast<int>(term));
  return v;
}

NodeVote vote(Vote kind, Errc error = {}) {
  NodeVote v;
  v.vote = kind;
  if (error != Errc{}) v.error = make_error_code(error);
  return v;
}

TEST(Election, AQuorumReportingOneTermLeadsAtOnce) {
  std::vector<NodeVote> votes{leads(4, "a"), leads(4, "a"), leads(4, "a"), vote(Vote::pending),
                              vote(Vote::pending)};
  auto v = leader_verdict(votes, 3);
  ASSERT_TRUE(v.decided);
  EXPECT_TRUE(v.leads);
  EXPECT_EQ(v.term, 4u);
  EXPECT_EQ(v.value, "a");
  EXPECT_EQ(v.ttl_left, Milliseconds(400));
}

TEST(Election, WaitsWhileATermMayStillReachAQuorum) {
  std::vector<NodeVote> votes{leads(4, "a"), leads(4, "a"), vote(Vote::no), vote(Vote::pending),
                              vote(Vote::pending)};
  EXPECT_FALSE(leader_verdict(votes, 3).decided);
  votes[3] = vote(Vote::no);
  votes[4] = vote(Vote::no);
  auto v = leader_verdict(votes, 3);
  EXPECT_TRUE(v.decided);
  EXPECT_FALSE(v.leads) << "two nodes are no quorum: vacant";
  EXPECT_FALSE(v.error);
}

TEST(Election, TermsOrValuesThatDifferAreNotCountedTogether) {
  std::vector<NodeVote> votes{leads(4, "a"), leads(5, "b"), leads(4, "c")};
  auto v = leader_verdict(votes, 2);
  EXPECT_TRUE(v.decided);
  EXPECT_FALSE(v.leads);
}

TEST(Election, TooFewAnswersIsAnErrorNamingTheKeysWhenTheyAreTheCause) {
  std::vector<NodeVote> down{vote(Vote::failed, Errc::request_timeout),
                             vote(Vote::failed, Errc::connection_lost), vote(Vote::no)};
  auto v = leader_verdict(down, 2);
  ASSERT_TRUE(v.decided);
  EXPECT_EQ(v.error, Errc::no_quorum);
  std::vector<NodeVote> hostile{vote(Vote::failed, Errc::redis_wrongtype),
                                vote(Vote::failed, Errc::redis_wrongtype), vote(Vote::no)};
  EXPECT_EQ(leader_verdict(hostile, 2).error, Errc::redis_wrongtype);
}

TEST(Election, AFailedWriteOfTheLeaderNamesItsCause) {
  EXPECT_EQ(leader_write_error({vote(Vote::no), vote(Vote::no), vote(Vote::yes)}), Errc::lock_lost);
  EXPECT_EQ(leader_write_error({vote(Vote::failed), vote(Vote::failed), vote(Vote::yes)}),
            Errc::no_quorum);
  EXPECT_EQ(leader_write_error({vote(Vote::no, Errc::redis_wrongtype), vote(Vote::no)}),
            Errc::redis_wrongtype);
}

TEST(Election, TheChannelIsTheLockKeysOwn) {
  EXPECT_EQ(leader_channel("redlock:office"), "redlock:office:leader");
}

}  // namespace
}  // namespace redlock::detail::proto
