// The winner of a split vote (quorum.hpp: split_winner) keeps the keys of its first round and
// asks again only the nodes it lacks. Those keys were set in the first round, so its validity
// counts from there, whatever round completes the quorum. Slow nodes come from fault proxies
// (chaos/support) that hold every chunk back a fixed time.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "fault_proxy.hpp"
#include "redis_server.hpp"
#include "redlock/redlock.hpp"
#include "test_config.hpp"

namespace redlock {
namespace {

using namespace std::chrono_literals;
using chaos::FaultProxy;
using chaos::ProxyMode;
using test::RedisCluster;

// Two crashed contenders, named by digests no fresh token of ours can beat (token_digest:
// SHA-1 "ffffff7a…" and "ffffffde…"): we are the split's winner but for one chance in 2^24.
constexpr const char* kContenderB = "split-contender-30002000";
constexpr const char* kContenderC = "split-contender-37639298";

TEST(SplitVote, AWinnerWhoseLastRoundEndsPastTheFirstRoundsWindowGetsNoLock) {
  RedisCluster cluster(5);
  // Nodes 2, 3 and 4 answer 300 ms after they are asked (150 ms each way); 0 and 1 at once.
  constexpr auto kOneWay = 150ms;
  std::vector<std::unique_ptr<FaultProxy>> proxies;
  std::string nodes = "redis://127.0.0.1:" + std::to_string(cluster[0].port()) +
                      ",redis://127.0.0.1:" + std::to_string(cluster[1].port());
  for (std::size_t i : {2u, 3u, 4u}) {
    proxies.push_back(
        std::make_unique<FaultProxy>(cluster[i].port(), 0, ProxyMode::delay, kOneWay));
    nodes += ",redis://127.0.0.1:" + std::to_string(proxies.back()->port());
  }
  Config config = test::fast_config(nodes);
  config.request_timeout = 2000ms;  // slow is not failed: every node answers
  config.retry_count = 0;           // one attempt (and its fill-in rounds)
  config.check_persistence = false;
  Client client(config);
  ASSERT_TRUE(test::eventually(
      [&] {
        auto rows = client.status();
        return std::all_of(rows.begin(), rows.end(), [](const NodeStatus& s) { return s.up; });
      },
      10000ms));

  // The first blocking call opens the client's lane (a connect and a handshake through the
  // proxies, 300 ms): done here, so that the attempt below begins at once.
  auto warm = client.try_acquire("split:warm", 5000ms);
  ASSERT_TRUE(warm) << warm.message();
  ASSERT_TRUE(client.release(warm.lock));

  // The picture the first round sees, complete 300 ms after it began: us on 0 and 1, B on 2
  // and 3, C on 4. Nobody has a quorum of 3: a split, which we win. B's keys are gone at 300 ms,
  // before our fill-in round reaches 2 and 3 (450 ms): that round completes the quorum at about
  // 600 ms, past the 450 ms lease that the first round's keys have. Every step has about 150 ms
  // to spare.
  constexpr auto kTtl = 450ms;
  const auto start = Clock::now();
  for (std::size_t i : {2u, 3u})
    cluster[i].command({"SET", "redlock:split", kContenderB, "PX", "300"});
  cluster[4].command({"SET", "redlock:split", kContenderC, "PX", "60000"});
  auto r = client.try_acquire("split", kTtl);

  EXPECT_GE(r.attempts, 2) << "the split was not settled by fill-in rounds: " << r.message();
  if (r) {
    // Never valid past the first keys' expiry (they were set after `start`).
    EXPECT_LE(r.lock.valid_until, start + kTtl)
        << "validity counted from a later round: " << r.message();
    client.release(r.lock);
  } else {
    EXPECT_EQ(r.error, Errc::validity_expired) << r.message();
  }
}

}  // namespace
}  // namespace redlock
