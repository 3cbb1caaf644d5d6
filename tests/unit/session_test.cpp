// The node session's rules (lib/core/session.hpp): what becomes of a command on one connection.
#include "core/session.hpp"

#include <gtest/gtest.h>

#include <cstdint>

namespace redlock::detail {
namespace {

TEST(Session, OnlyASessionTakesCommandsOnTheWire) {
  EXPECT_EQ(gate(SessionPhase::session), Gate::wire);
  // Behind an unanswered AUTH, SELECT or INFO a command would run as the default user, in
  // database 0, or on a node that is about to be found too young to vote: it waits.
  EXPECT_EQ(gate(SessionPhase::handshake), Gate::hold);
  EXPECT_EQ(gate(SessionPhase::connecting), Gate::hold);
  // Nobody is connecting (backing off): waiting would only delay the failure.
  EXPECT_EQ(gate(SessionPhase::down), Gate::fail);
}

TEST(Session, ANodeIsEligibleFromItsMomentOn) {
  EXPECT_FALSE(eligible<std::uint64_t>(99, 100));
  EXPECT_TRUE(eligible<std::uint64_t>(100, 100));
  EXPECT_TRUE(eligible<std::uint64_t>(101, 100));
  EXPECT_TRUE(eligible<std::uint64_t>(0, 0));  // INFO found it old enough
  EXPECT_FALSE(eligible<std::int64_t>(-1, 0));
}

TEST(Session, TheRestartGuardRefusesOnlyWhatMayGrant) {
  EXPECT_TRUE(guard_refuses(/*order_free=*/false, /*node_eligible=*/false));
  // A release, renewal or fencing write-back only touches the caller's own keys.
  EXPECT_FALSE(guard_refuses(true, false));
  EXPECT_FALSE(guard_refuses(false, true));
  EXPECT_FALSE(guard_refuses(true, true));
}

TEST(Session, WaitingCommandsGoOutAtTheStartUnlessLate) {
  EXPECT_EQ(at_start<std::uint64_t>(true, 100, 101), HeldFate::send);
  // Its deadline passed while it waited: issued, it would close the new connection at once.
  EXPECT_EQ(at_start<std::uint64_t>(true, 100, 100), HeldFate::late);
  EXPECT_EQ(at_start<std::uint64_t>(true, 100, 50), HeldFate::late);
}

TEST(Session, AnIneligibleNodeFailsEveryWaitingCommand) {
  // Whatever its deadline: the node will not vote for the rest of the guard.
  EXPECT_EQ(at_start<std::uint64_t>(false, 100, 101), HeldFate::restarting);
  EXPECT_EQ(at_start<std::uint64_t>(false, 100, 5000), HeldFate::restarting);
  EXPECT_EQ(at_start<std::uint64_t>(false, 100, 50), HeldFate::restarting);
}

TEST(Session, AfterNoscriptAnAcquireIsResentOnlyWithNothingBehindIt) {
  // Nothing issued behind it: re-sent now, it still runs in the order it was sent.
  EXPECT_EQ(after_noscript(/*order_free=*/false, /*issued_behind=*/false),
            NoscriptStep::resend_eval);
  // Its own clean-up may be behind it: re-sent, it would run after that clean-up.
  EXPECT_EQ(after_noscript(false, true), NoscriptStep::fail_and_load);
  // Order-free scripts (release, renewal, write-back) are always re-sent.
  EXPECT_EQ(after_noscript(true, true), NoscriptStep::resend_eval);
  EXPECT_EQ(after_noscript(true, false), NoscriptStep::resend_eval);
}

}  // namespace
}  // namespace redlock::detail
