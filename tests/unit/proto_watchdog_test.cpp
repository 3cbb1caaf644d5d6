// The watchdog machine (renewals in batches, the lost-lock deadline) and the notice dispatch.
#include <gtest/gtest.h>

#include "proto/notices.hpp"
#include "proto/watchdog.hpp"
#include "proto_harness.hpp"

namespace redlock::detail::proto::test {
namespace {

// A lease of 9 s granted at `granted`: valid until granted + 9 s - 92 ms, renewed after 3 s.
LeaseInfo lease(Clock::time_point granted, bool renew = true, std::string key = "redlock:res") {
  LeaseInfo info;
  info.keys = {std::move(key)};
  info.token = token(1);
  info.ttl = 9000ms;
  info.renew = renew;
  info.valid_until = granted + 9000ms - 92ms;
  info.next_renewal = granted + 3000ms;
  return info;
}

TEST(ProtoWatchdog, RenewsAtAThirdOfTheTtlAndExtendsFromTheSendTime) {
  Harness h(3);
  WatchdogMachine w(h.context());
  Actions out;
  w.add(1, lease(at(0ms)), at(0ms), out);
  auto timer = only<ArmTimer>(out);
  EXPECT_EQ(timer.at, at(3000ms));
  out.clear();
  w.on_timer(timer.id, at(3000ms), out);
  auto send = only<Send>(out);
  EXPECT_EQ(send.request->script, ScriptId::renew);
  EXPECT_EQ(send.request->args, (std::vector<std::string>{token(1), "9000", "1"}));
  EXPECT_EQ(only<ArmTimer>(out).at, at(9000ms - 92ms - 100ms)) << "now its lost deadline";
  out.clear();
  w.on_reply(send.id, 0, yes(), at(3004ms), out);
  EXPECT_TRUE(out.empty());
  w.on_reply(send.id, 1, yes(), at(3005ms), out);
  auto renewed = only<Renewed>(out);
  EXPECT_EQ(renewed.lease, 1u);
  EXPECT_EQ(renewed.valid_until, at(3000ms + 9000ms - 92ms));
  EXPECT_EQ(w.valid_until(1), renewed.valid_until);
  EXPECT_EQ(only<ArmTimer>(out).at, at(6000ms));
}

// A grant that came back late (little of its ttl left, as Config::min_validity_ratio allows) is
// renewed halfway through what it has left, not after a third of its ttl: by then it would have
// been declared lost with its keys intact.
TEST(ProtoWatchdog, ALockGrantedWithLittleValidityLeftIsRenewedBeforeItsDeadline) {
  Harness h(3);
  WatchdogMachine w(h.context());
  Lock lock;
  lock.resources = {"res"};
  lock.token = token(1);
  lock.ttl = 9000ms;
  lock.valid_until = at(2000ms);  // granted at 0 with 2 s of its 9 s left
  auto info = lease_of(lock, {"redlock:res"}, true, at(0ms));
  EXPECT_EQ(info.next_renewal, at(950ms)) << "halfway to 1900 ms, where it would be given up";
  Actions out;
  w.add(1, info, at(0ms), out);
  auto timer = only<ArmTimer>(out);
  EXPECT_LE(timer.at, at(1000ms));
  out.clear();
  w.on_timer(timer.id, timer.at, out);
  auto send = only<Send>(out);
  EXPECT_EQ(send.request->script, ScriptId::renew);
  out.clear();
  w.on_reply(send.id, 0, yes(), timer.at + 5ms, out);
  w.on_reply(send.id, 1, yes(), timer.at + 5ms, out);
  EXPECT_GT(only<Renewed>(out).valid_until, at(2000ms)) << "renewed, never lost";
  EXPECT_EQ(first_renewal(at(0ms), at(9000ms), 9000ms), at(3000ms)) << "a full lease: a third";
  EXPECT_EQ(first_renewal(at(0ms), at(134ms), 1000ms), at(42ms)) << "given up at 84 ms";
  EXPECT_EQ(first_renewal(at(0ms), at(30ms), 1000ms), at(0ms)) << "inside the margin: at once";
}

TEST(ProtoWatchdog, RenewalsFallingDueTogetherGoOutAsOneCall) {
  Harness h(3);
  WatchdogMachine w(h.context());
  Actions out;
  w.add(1, lease(at(0ms)), at(0ms), out);
  w.add(2, lease(at(500ms), true, "redlock:other"), at(500ms), out);  // due 500 ms later
  w.add(3, lease(at(2000ms), true, "redlock:third"), at(2000ms), out);
  out.clear();
  w.on_timer(h.context().next_timer() - 1, at(3000ms), out);
  auto send = only<Send>(out);
  EXPECT_EQ(send.request->items, 2u) << "within a twelfth of the ttl of being due";
  EXPECT_EQ(send.request->keys, (std::vector<std::string>{"redlock:res", "redlock:other"}));
  out.clear();
  NodeVote y, n;
  y.vote = Vote::yes;
  n.vote = Vote::no;
  w.on_reply(send.id, 0, {y, n}, at(3001ms), out);
  w.on_reply(send.id, 1, {y, n}, at(3001ms), out);
  EXPECT_EQ(only<Renewed>(out).lease, 1u);
  EXPECT_EQ(only<Lost>(out).lease, 2u) << "two of three nodes say the token is gone";
  EXPECT_EQ(only<Lost>(out).why, Errc::lock_lost);
  EXPECT_FALSE(w.watched(2));
}

TEST(ProtoWatchdog, ALockIsNeverHeldPastItsDeadlineWithoutAQuorum) {
  Harness h(3);
  WatchdogMachine w(h.context());
  Actions out;
  auto info = lease(at(0ms));
  auto deadline = info.valid_until;
  w.add(1, info, at(0ms), out);
  auto now = at(0ms);
  std::optional<Lost> lost;
  ArmTimer armed;  // a timer armed again replaces its time
  bool is_armed = false;
  int renewals = 0;
  for (int i = 0; i < 1000 && !lost; ++i) {
    for (const auto& t : all_of<ArmTimer>(out)) armed = t, is_armed = true;
    auto sends = all_of<Send>(out);
    out.clear();
    for (const auto& s : sends) {
      ++renewals;
      for (auto n : s.nodes) w.on_reply(s.id, n, failed(), now + 1ms, out);
    }
    if (sends.empty()) {
      ASSERT_TRUE(is_armed);
      is_armed = false;
      now = armed.at;
      w.on_timer(armed.id, now, out);
    }
    for (const auto& l : all_of<Lost>(out)) lost = l;
    EXPECT_FALSE(has<Renewed>(out));
  }
  ASSERT_TRUE(lost);
  EXPECT_EQ(lost->why, Errc::lock_lost);
  EXPECT_LT(now, deadline) << "told before the window closes";
  EXPECT_GE(now, deadline - 100ms) << "not before its margin";
  EXPECT_GT(renewals, 3) << "it kept trying while validity remained";
}

TEST(ProtoWatchdog, AWatchedLockThatIsNotRenewedIsLostAtItsDeadline) {
  Harness h(3);
  WatchdogMachine w(h.context());
  Actions out;
  w.add(7, lease(at(0ms), false), at(0ms), out);
  auto timer = only<ArmTimer>(out);
  EXPECT_EQ(timer.at, at(9000ms - 92ms - 100ms));
  out.clear();
  w.on_timer(timer.id, timer.at, out);
  EXPECT_EQ(only<Lost>(out).lease, 7u);
  EXPECT_FALSE(has<Send>(out));
}

TEST(ProtoWatchdog, ARemovedLeaseIsNeitherRenewedNorLost) {
  Harness h(3);
  WatchdogMachine w(h.context());
  Actions out;
  w.add(1, lease(at(0ms)), at(0ms), out);
  auto timer = only<ArmTimer>(out);
  out.clear();
  w.remove(1, at(10ms), out);
  EXPECT_TRUE(has<CancelTimer>(out));
  out.clear();
  w.on_timer(timer.id, at(10'000ms), out);
  EXPECT_TRUE(out.empty());
}

TEST(ProtoWatchdog, AtMostTwoCallsAreOnTheirWayAtOnce) {
  Harness h(3);
  WatchdogMachine w(h.context());
  Actions out;
  for (std::uint64_t id = 1; id <= 3; ++id) {
    auto info = lease(at(0ms));
    info.keys.assign(WatchdogMachine::max_batch_keys, "redlock:k" + std::to_string(id));
    w.add(id, info, at(0ms), out);
  }
  auto timer = all_of<ArmTimer>(out).front();
  out.clear();
  w.on_timer(timer.id, at(3000ms), out);
  auto sends = all_of<Send>(out);
  ASSERT_EQ(sends.size(), 2u);
  out.clear();
  for (auto n : {0, 1}) w.on_reply(sends[0].id, n, yes(), at(3001ms), out);
  auto third = only<Send>(out);
  EXPECT_EQ(third.request->keys.front(), "redlock:k3");
}

// One timer takes the renewals that are due and at most max_early_per_timer of those falling due
// within a twelfth of the ttl: a client holding a million locks otherwise took a quarter of a
// million in one timer, and its loop answered nothing else for longer than a request timeout.
// The ones left behind are taken when their own renewal comes, long before their deadline.
TEST(ProtoWatchdog, OneTimerTakesTheDueRenewalsAndABoundedNumberOfEarlyOnes) {
  Harness h(3);
  WatchdogMachine w(h.context());
  Actions out;
  constexpr std::size_t kEarly = WatchdogMachine::max_early_per_timer;
  const std::size_t leases = kEarly + 500;
  // Granted 100 µs apart: renewals due from 3 s on, all within 750 ms (a twelfth of 9 s).
  auto granted = [](std::size_t i) { return at(0ms) + std::chrono::microseconds(100 * i); };
  for (std::size_t i = 0; i < leases; ++i)
    w.add(i + 1, lease(granted(i), true, "redlock:k" + std::to_string(i)), granted(i), out);
  auto timer = all_of<ArmTimer>(out).front().id;
  out.clear();
  // Fired 5 ms late: the first 51 are due, and kEarly more go with them.
  const auto fired = at(3005ms);
  w.on_timer(timer, fired, out);
  std::size_t sent = 0;
  for (const auto& send : all_of<Send>(out)) sent += send.request->items;
  EXPECT_EQ(sent, WatchdogMachine::max_batch_keys * WatchdogMachine::max_calls_in_flight)
      << "two calls on their way, the rest waits for them";
  auto next = all_of<ArmTimer>(out);
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(next.front().at, granted(51 + kEarly) + 3000ms)
      << "the first lease left behind: at its own renewal";
  out.clear();
  // At that renewal, the rest (due or within the twelfth) are taken; none was lost meanwhile.
  w.on_timer(timer, next.front().at, out);
  EXPECT_TRUE(all_of<Lost>(out).empty());
  EXPECT_EQ(w.size(), leases);
}

TEST(ProtoWatchdog, ShutdownLosesEveryLease) {
  Harness h(3);
  WatchdogMachine w(h.context());
  Actions out;
  w.add(1, lease(at(0ms)), at(0ms), out);
  out.clear();
  w.shutdown(at(1ms), out);
  EXPECT_EQ(only<Lost>(out).why, Errc::shutting_down);
  out.clear();
  w.add(2, lease(at(2ms)), at(2ms), out);
  auto lost = only<Lost>(out);
  EXPECT_FALSE(lost.notify) << "a lease added after shutdown is marked lost, nobody called";
}

// A waiter that records its wake-ups.
struct FakeWaiter final : Waiter {
  explicit FakeWaiter(bool line = false) : line_(line) {}
  bool wake(const std::string* channel, Clock::time_point, Actions&) override {
    woken.push_back(channel != nullptr ? *channel : "(subscribed)");
    return true;
  }
  bool busy() const override { return is_busy; }
  const std::string& ticket() const override { return ticket_; }
  bool in_line() const override { return line_; }
  std::vector<std::string> woken;
  bool is_busy = false;
  std::string ticket_ = "redlock:turn:00000000000000aa#5@200";
  bool line_;
};

TEST(ProtoNotices, ANoticeWakesOneIdleWaiterOnceThenTheNext) {
  Harness h(3);
  auto& n = h.context().notices();
  FakeWaiter a, b;
  Actions out;
  n.add("redlock:x:released", &a, out);
  n.add("redlock:x:released", &b, out);
  auto subs = all_of<Subscribe>(out);
  ASSERT_EQ(subs.size(), 2u);
  EXPECT_EQ(subs[0].channel, "redlock:turn:00000000000000aa");
  EXPECT_EQ(subs[1].channel, "redlock:x:released");
  a.is_busy = true;
  n.on_message(0, "redlock:x:released", "releaser1", at(0ms), out);
  n.on_message(1, "redlock:x:released", "releaser1", at(0ms), out);  // the same, from node 1
  EXPECT_TRUE(a.woken.empty()) << "a busy waiter is passed over";
  EXPECT_EQ(b.woken.size(), 1u);
  a.is_busy = false;
  n.on_message(0, "redlock:x:released", "releaser2", at(1ms), out);
  EXPECT_EQ(a.woken.size(), 1u);
  EXPECT_TRUE(n.released("redlock:x:released", "releaser1"));
  EXPECT_FALSE(n.released("redlock:x:released", "somebody"));
  n.pass("redlock:x:released", at(2ms), out);
  EXPECT_EQ(b.woken.size(), 2u) << "a notice handed on goes to one that has not had it";
  n.pass("redlock:x:released", at(2ms), out);
  EXPECT_EQ(a.woken.size() + b.woken.size(), 3u) << "every waiter had it";
  out.clear();
  n.remove("redlock:x:released", &a, out);
  EXPECT_FALSE(has<Unsubscribe>(out));
  n.remove("redlock:x:released", &b, out);
  EXPECT_EQ(only<Unsubscribe>(out).channel, "redlock:x:released");
  EXPECT_EQ(n.channels(), 0u);
}

TEST(ProtoNotices, ATurnWakesTheWaiterItNamesAndATurnOfAGoneWaiterIsHandedOn) {
  Harness h(3);
  auto& ctx = h.context();
  auto& n = ctx.notices();
  FakeWaiter waiter(/*line=*/true);
  ctx.add_job(5, &waiter);
  Actions out;
  n.add("redlock:x:released", &waiter, out);
  EXPECT_EQ(all_of<Subscribe>(out).size(), 1u) << "in line: the turn channel only";
  const std::string turn = "redlock:turn:00000000000000aa";
  n.on_message(0, turn, "rel|" + waiter.ticket_ + "|redlock:x", at(0ms), out);
  ASSERT_EQ(waiter.woken.size(), 1u);
  EXPECT_EQ(waiter.woken[0], "redlock:x:released");
  n.on_message(1, turn, "rel|" + waiter.ticket_ + "|redlock:x", at(0ms), out);
  EXPECT_EQ(waiter.woken.size(), 2u) << "a copy is still news to the waiter it names";
  out.clear();
  const std::string gone = turn + "#77@200";
  n.on_message(0, turn, "rel|" + gone + "|redlock:x", at(1ms), out);
  auto leave = only<Send>(out);
  EXPECT_EQ(leave.request->keys, std::vector<std::string>{"redlock:x"});
  EXPECT_EQ(leave.request->args, (std::vector<std::string>{"-", "0", gone, "", "0"}));
  out.clear();
  n.on_message(1, turn, "rel|" + gone + "|redlock:x", at(1ms), out);
  EXPECT_TRUE(out.empty()) << "its copies are the same turn";
  n.on_message(0, turn, "garbage", at(1ms), out);
  n.on_message(0, turn, "rel|redlock:turn:00000000000000aa#x@1|redlock:x", at(1ms), out);
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(waiter.woken.size(), 2u);
}

TEST(ProtoNotices, AConfirmedSubscriptionMakesWaitersLookAgainOnceAndAfterAReconnect) {
  Harness h(3);
  auto& n = h.context().notices();
  FakeWaiter a;
  Actions out;
  n.add("redlock:x:released", &a, out);
  n.on_subscribed(0, "redlock:x:released", at(0ms), out);
  EXPECT_EQ(a.woken.size(), 1u);
  n.on_subscribed(1, "redlock:x:released", at(0ms), out);
  EXPECT_EQ(a.woken.size(), 1u) << "a second node confirming adds nothing";
  n.on_subscribed(0, "redlock:x:released", at(5ms), out);
  EXPECT_EQ(a.woken.size(), 2u) << "node 0 again: it reconnected and may have missed one";
}

}  // namespace
}  // namespace redlock::detail::proto::test
