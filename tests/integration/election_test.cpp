// Leader election (docs/guide-election.md) on real redis-server processes: one leader at a time,
// terms that grow strictly, failover at a crashed leader's ttl, faults of a minority, observers
// told of a change without polling, and hostile keys on the nodes.
#include <gtest/gtest.h>

#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>

#include "core/keys.hpp"
#include "redis_server.hpp"
#include "redlock/election.hpp"
#include "redlock/redlock.hpp"
#include "test_config.hpp"

namespace redlock {
namespace {

using namespace std::chrono_literals;
using test::eventually;
using test::RedisCluster;

CampaignRequest ask(std::string office, std::string value, Milliseconds ttl = 3000ms,
                    Milliseconds wait = 5000ms) {
  CampaignRequest r;
  r.office = std::move(office);
  r.value = std::move(value);
  r.ttl = ttl;
  r.wait = wait;
  return r;
}

std::string leader_key(const std::string& office) {
  return detail::aux_key("redlock:" + office, "leader");
}

TEST(Election, OneOfTwoCampaignersLeadsAndTheOtherLeadsAfterItResigns) {
  RedisCluster cluster(3);
  Client ca(test::fast_config(cluster)), cb(test::fast_config(cluster));
  Election a(ca), b(cb);
  auto first = a.campaign(ask("office", "10.0.0.1:80"));
  ASSERT_TRUE(first) << first.message();
  EXPECT_TRUE(first.office.valid());
  EXPECT_GT(first.office.term(), 0u);
  EXPECT_EQ(first.office.value(), "10.0.0.1:80");

  auto second = std::async(std::launch::async, [&] { return b.campaign(ask("office", "b")); });
  EXPECT_EQ(second.wait_for(300ms), std::future_status::timeout) << "two leaders at once";
  auto seen = a.leader("office");
  ASSERT_TRUE(seen) << seen.message();
  ASSERT_TRUE(seen.leader);
  EXPECT_EQ(seen.leader->value, "10.0.0.1:80");
  EXPECT_EQ(seen.leader->term, first.office.term());

  auto t0 = Clock::now();
  ASSERT_TRUE(first.office.resign());
  auto next = second.get();
  ASSERT_TRUE(next) << next.message();
  EXPECT_LT(Clock::now() - t0, 1000ms) << "woken by the release, not by the lease's end";
  EXPECT_GT(next.office.term(), first.office.term());
  auto now = b.leader("office");
  ASSERT_TRUE(now.leader);
  EXPECT_EQ(now.leader->value, "b");
  EXPECT_EQ(now.leader->term, next.office.term());
  ASSERT_TRUE(next.office.resign());
  EXPECT_TRUE(b.leader("office").vacant()) << "a resigned leader reads as vacant";
}

TEST(Election, TermsStrictlyIncreaseFromTermToTerm) {
  RedisCluster cluster(5);
  Client ca(test::fast_config(cluster)), cb(test::fast_config(cluster));
  Election a(ca), b(cb);
  std::uint64_t last = 0;
  for (int i = 0; i < 8; ++i) {
    Election& e = i % 2 ? a : b;
    auto r = e.campaign(ask("terms", "c" + std::to_string(i)));
    ASSERT_TRUE(r) << r.message();
    EXPECT_GT(r.office.term(), last) << "term " << i;
    last = r.office.term();
    auto seen = e.leader("terms");
    ASSERT_TRUE(seen.leader);
    EXPECT_EQ(seen.leader->term, last);
    ASSERT_TRUE(r.office.resign());
  }
}

TEST(Election, LeadsAndIsObservedWithANodeDown) {
  RedisCluster cluster(3);
  cluster[2].kill9();
  Client c(test::fast_config(cluster));
  Election e(c);
  auto r = e.campaign(ask("down", "v"));
  ASSERT_TRUE(r) << r.message();
  auto seen = e.leader("down");
  ASSERT_TRUE(seen) << seen.message();
  ASSERT_TRUE(seen.leader);
  EXPECT_EQ(seen.leader->term, r.office.term());
  EXPECT_EQ(seen.votes.nodes[2].vote == Vote::failed || seen.votes.nodes[2].vote == Vote::pending,
            true);
}

TEST(Election, AMinorityPausedSlowsNeitherTheCampaignNorTheRead) {
  RedisCluster cluster(5);
  Client c(test::fast_config(cluster));
  ASSERT_TRUE(eventually([&] { return test::connected_to_all(c); }));
  Election e(c);
  cluster[0].pause();
  cluster[1].pause();
  auto t0 = Clock::now();
  auto r = e.campaign(ask("paused", "v"));
  auto seen = e.leader("paused");
  auto took = Clock::now() - t0;
  cluster[0].resume();
  cluster[1].resume();
  ASSERT_TRUE(r) << r.message();
  ASSERT_TRUE(seen.leader) << seen.message();
  EXPECT_EQ(seen.leader->term, r.office.term());
  // Waiting for the paused nodes' timeouts (200 ms each) would take 600 ms at least.
  EXPECT_LT(took, 350ms) << "decided at the quorum, not at the paused nodes' timeout";
  ASSERT_TRUE(r.office.resign());
}

TEST(Election, ACrashedLeaderIsFailedOverAtItsTtl) {
  RedisCluster cluster(3);
  auto crashed = std::make_unique<Client>(test::fast_config(cluster));
  Client cb(test::fast_config(cluster));
  Election b(cb);
  Office gone;
  {
    Election a(*crashed);
    auto r = a.campaign(ask("crash", "a", 800ms));
    ASSERT_TRUE(r) << r.message();
    gone = std::move(r.office);
  }
  auto crashed_at = Clock::now();
  crashed.reset();  // no resign: its keys stay until their ttl
  auto seen = b.leader("crash");
  ASSERT_TRUE(seen.leader) << "the crashed leader still leads until its ttl";
  EXPECT_EQ(seen.leader->value, "a");
  auto next = b.campaign(ask("crash", "b", 3000ms, 5000ms));
  ASSERT_TRUE(next) << next.message();
  auto took = Clock::now() - crashed_at;
  EXPECT_LT(took, 800ms + 500ms) << "failover at the crashed leader's ttl";
  EXPECT_GT(next.office.term(), gone.term());
  ASSERT_TRUE(next.office.resign());
}

TEST(Election, ALostOfficeIsSignalledBeforeItsDeadline) {
  RedisCluster cluster(3);
  Client c(test::fast_config(cluster));
  Election e(c);
  std::mutex m;
  std::condition_variable cv;
  Clock::time_point lost_at{};
  auto r = e.campaign(ask("lost", "v", 900ms), [&](std::error_code) {
    std::lock_guard<std::mutex> l(m);
    lost_at = Clock::now();
    cv.notify_all();
  });
  ASSERT_TRUE(r) << r.message();
  // Someone else's token on every node: the next renewal finds the office gone.
  for (std::size_t i = 0; i < cluster.size(); ++i)
    cluster[i].command({"SET", "redlock:lost", "intruder", "PX", "60000"});
  auto deadline = r.office.valid_until();
  std::unique_lock<std::mutex> l(m);
  ASSERT_TRUE(cv.wait_for(l, 3s, [&] { return lost_at != Clock::time_point{}; }));
  EXPECT_LE(lost_at, deadline);
  EXPECT_FALSE(r.office.valid());
  EXPECT_TRUE(e.leader("lost").vacant()) << "nobody holds the leader's token any more";
}

TEST(Election, AnObserverIsToldOfEachChangeWithoutPolling) {
  RedisCluster cluster(3);
  Config config = test::fast_config(cluster);
  config.watchdog_lease = 30s;  // the fallback read would come only after this
  Client c(config), cb(test::fast_config(cluster));
  Election e(c), b(cb);
  std::mutex m;
  std::condition_variable cv;
  std::vector<LeaderResult> seen;
  auto watch = e.observe("watched", [&](const LeaderResult& r) {
    std::lock_guard<std::mutex> l(m);
    seen.push_back(r);
    cv.notify_all();
  });
  ASSERT_TRUE(watch.active());
  auto wait_for = [&](std::size_t n) {
    std::unique_lock<std::mutex> l(m);
    return cv.wait_for(l, 2s, [&] { return seen.size() >= n; });
  };
  ASSERT_TRUE(wait_for(1));
  EXPECT_TRUE(seen[0].vacant());
  auto r = b.campaign(ask("watched", "first", 30000ms));
  ASSERT_TRUE(r) << r.message();
  ASSERT_TRUE(wait_for(2)) << "told of the new leader by its notice";
  {
    std::lock_guard<std::mutex> l(m);
    ASSERT_TRUE(seen[1].leader);
    EXPECT_EQ(seen[1].leader->value, "first");
    EXPECT_EQ(seen[1].leader->term, r.office.term());
  }
  ASSERT_TRUE(r.office.resign());
  ASSERT_TRUE(wait_for(3)) << "told of the resignation by the release notice";
  {
    std::lock_guard<std::mutex> l(m);
    EXPECT_TRUE(seen[2].vacant());
  }
  watch.stop();
  auto again = b.campaign(ask("watched", "second"));
  ASSERT_TRUE(again);
  std::this_thread::sleep_for(200ms);
  std::lock_guard<std::mutex> l(m);
  EXPECT_EQ(seen.size(), 3u) << "no call after stop()";
}

TEST(Election, HostileLeaderKeysAreErrorsNeverLeaders) {
  RedisCluster cluster(3);
  Client c(test::fast_config(cluster));
  Election e(c);
  // A string not of our form.
  for (std::size_t i = 0; i < cluster.size(); ++i)
    cluster[i].command({"SET", leader_key("h1"), "garbage"});
  auto r1 = e.leader("h1");
  EXPECT_EQ(r1.error, Errc::protocol_error) << r1.message();
  EXPECT_FALSE(r1.leader);
  // Our form, a term beyond 64 bits, under a lock key that holds its token.
  for (std::size_t i = 0; i < cluster.size(); ++i) {
    cluster[i].command({"SET", "redlock:h2", "tok"});
    cluster[i].command({"SET", leader_key("h2"), "99999999999999999999999|tok|v"});
  }
  auto r2 = e.leader("h2");
  EXPECT_TRUE(r2.error) << "no leader from a term that does not fit";
  EXPECT_FALSE(r2.leader);
  // Another type: the read and the campaign fail with WRONGTYPE, and the campaign lets go.
  for (std::size_t i = 0; i < cluster.size(); ++i)
    cluster[i].command({"HSET", leader_key("h3"), "f", "v"});
  EXPECT_EQ(e.leader("h3").error, Errc::redis_wrongtype);
  auto camp = e.campaign(ask("h3", "v"));
  EXPECT_EQ(camp.error, Errc::redis_wrongtype) << camp.message();
  EXPECT_FALSE(camp.office.held());
  EXPECT_TRUE(eventually([&] { return cluster.count_existing("redlock:h3") == 0; }))
      << "the grant was released";
  for (std::size_t i = 0; i < cluster.size(); ++i)
    EXPECT_EQ(cluster[i].command({"TYPE", leader_key("h3")}), "hash") << "left untouched";
}

// Campaigns and reads reach Config::observer, with the term, before the caller has the result.
TEST(Election, CampaignsAndReadsAreReportedToTheObserver) {
  struct Recorder : Observer {
    std::mutex m;
    std::vector<std::pair<Operation, std::uint64_t>> ops;
    void on_operation(const OperationEvent& e) override {
      if (e.operation != Operation::campaign && e.operation != Operation::leader) return;
      std::lock_guard<std::mutex> l(m);
      ops.emplace_back(e.operation, e.term);
      EXPECT_EQ(e.resources->front(), "seen");
    }
  };
  RedisCluster cluster(3);
  auto rec = std::make_shared<Recorder>();
  Config config = test::fast_config(cluster);
  config.observer = rec;
  Client c(config);
  Election e(c);
  auto r = e.campaign(ask("seen", "v"));
  ASSERT_TRUE(r) << r.message();
  {
    std::lock_guard<std::mutex> l(rec->m);
    ASSERT_EQ(rec->ops.size(), 1u);
    EXPECT_EQ(rec->ops[0].first, Operation::campaign);
    EXPECT_EQ(rec->ops[0].second, r.office.term());
  }
  ASSERT_TRUE(e.leader("seen").leader);
  std::lock_guard<std::mutex> l(rec->m);
  ASSERT_EQ(rec->ops.size(), 2u);
  EXPECT_EQ(rec->ops[1].first, Operation::leader);
  EXPECT_EQ(rec->ops[1].second, r.office.term());
}

// The leader key lies in the lock key's Redis Cluster hash slot, as every key of a resource does
// (docs/proposal-kinds.md, "Keys ready for Redis Cluster voters").
TEST(Election, TheLeaderKeyLiesInTheOfficesHashSlot) {
  test::RedisServer slots({"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"});
  auto slot = [&](const std::string& key) { return slots.command({"CLUSTER", "KEYSLOT", key}); };
  for (const std::string office : {"orders:42", "{user:7}:lock"}) {
    const std::string lock = "redlock:" + office;
    EXPECT_EQ(slot(detail::aux_key(lock, detail::kLeader)), slot(lock)) << office;
    EXPECT_EQ(leader_key(office), detail::aux_key(lock, detail::kLeader));
  }
}

TEST(Election, BadInputIsRefusedBeforeAnyCommand) {
  RedisCluster cluster(3);
  Client c(test::fast_config(cluster));
  Election e(c);
  EXPECT_EQ(e.campaign(ask("", "v")).error, Errc::invalid_argument);
  EXPECT_EQ(e.campaign(ask(std::string("a\0b", 3), "v")).error, Errc::invalid_argument);
  EXPECT_EQ(e.campaign(ask("o", "v", 0ms)).error, Errc::invalid_argument);
  EXPECT_EQ(e.campaign(ask("o", std::string(CampaignRequest::max_value + 1, 'x'))).error,
            Errc::invalid_argument);
  EXPECT_EQ(e.leader("").error, Errc::invalid_argument);
  EXPECT_FALSE(e.observe("", [](const LeaderResult&) {}).active());
  // A value with the separator and NUL bytes comes back whole.
  auto r = e.campaign(ask("o", std::string("a|b\0c", 5)));
  ASSERT_TRUE(r) << r.message();
  auto seen = e.leader("o");
  ASSERT_TRUE(seen.leader);
  EXPECT_EQ(seen.leader->value, std::string("a|b\0c", 5));
}

}  // namespace
}  // namespace redlock
