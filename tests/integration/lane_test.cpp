// The blocking calls on the caller's lane (lib/client/lane.hpp) against real Redis masters: what
// the lane serves, what it hands to the loop, and that a failed lane connection is opened again.
// Each test asserts outcomes (results, keys on the servers, the lane's counters), never timing.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <mutex>
#include <sstream>
#include <thread>

#include "client/lane.hpp"
#include "core/keys.hpp"
#include "redis_server.hpp"
#include "redlock/redlock.hpp"
#include "test_config.hpp"

namespace redlock {
namespace {

using namespace std::chrono_literals;
using detail::lane_counters;
using test::RedisCluster;

std::uint64_t served() { return lane_counters().served.load(); }
std::uint64_t handed() { return lane_counters().handed.load(); }
std::uint64_t opened() { return lane_counters().opened.load(); }
std::uint64_t busy() { return lane_counters().busy.load(); }
std::uint64_t open_failed() { return lane_counters().open_failed.load(); }
std::uint64_t behind() { return lane_counters().behind.load(); }

// A client whose loop has a session with every node (the lane follows the loop's sessions).
Config lane_config(const RedisCluster& cluster) {
  Config c = test::fast_config(cluster);
  c.request_timeout = 300ms;
  return c;
}

void wait_connected(Client& client) {
  ASSERT_TRUE(test::eventually([&] { return test::connected_to_all(client); }, 5s));
}

// One lock taken and released on the lane, so that its connections are open.
void open_lane(Client& client, const std::string& key) {
  auto r = client.try_acquire(key, 5000ms);
  ASSERT_TRUE(r) << r.message();
  ASSERT_TRUE(client.release(r.lock));
}

TEST(Lane, TheReadmesCallGrantsAndReleasesOnTheLane) {
  RedisCluster cluster(3);
  Client client(lane_config(cluster));
  wait_connected(client);
  const auto served_before = served();
  auto r = client.acquire("lane:readme", 10s, 2s);
  ASSERT_TRUE(r) << r.message();
  EXPECT_GE(r.votes.yes(), 2u) << r.message();
  EXPECT_TRUE(test::eventually(
      [&] { return cluster.count_holding("redlock:lane:readme", r.lock.token) == 3u; }));
  auto ext = client.extend(r.lock, 5s);
  ASSERT_TRUE(ext) << ext.message();
  auto rel = client.release(r.lock);
  ASSERT_TRUE(rel) << rel.message();
  EXPECT_GE(rel.released, 2u);
  EXPECT_TRUE(test::eventually([&] { return cluster.count_existing("redlock:lane:readme") == 0; }));
  EXPECT_EQ(served() - served_before, 3u) << "acquire, extend and release on the lane";
  EXPECT_GE(opened(), 3u);
}

TEST(Lane, AContendedTryAcquireIsRefusedOnTheLaneAndLeavesNoKeyOfItsOwn) {
  RedisCluster cluster(3);
  Client a(lane_config(cluster)), b(lane_config(cluster));
  wait_connected(a);
  wait_connected(b);
  auto held = a.try_acquire("lane:contended", 5000ms);
  ASSERT_TRUE(held) << held.message();
  const auto served_before = served();
  auto refused = b.try_acquire("lane:contended", 5000ms);
  EXPECT_FALSE(refused);
  EXPECT_EQ(refused.error, Errc::not_acquired) << refused.message();
  EXPECT_EQ(served() - served_before, 1u);
  EXPECT_TRUE(test::eventually(
      [&] { return cluster.count_holding("redlock:lane:contended", held.lock.token) == 3u; }));
  ASSERT_TRUE(a.release(held.lock));
}

TEST(Lane, AWaitingAcquireRefusedOnTheLaneIsHandedToTheLoopAndServedByTheRelease) {
  RedisCluster cluster(3);
  Client a(lane_config(cluster)), b(lane_config(cluster));
  wait_connected(a);
  wait_connected(b);
  auto held = a.try_acquire("lane:wait", 5000ms);
  ASSERT_TRUE(held) << held.message();
  const auto handed_before = handed();
  auto waiter = std::async(std::launch::async, [&] { return b.acquire("lane:wait", 5000ms, 10s); });
  // The waiter's quick command was refused on the lane and its wait handed to the loop.
  ASSERT_TRUE(test::eventually([&] { return handed() > handed_before; }, 5s));
  ASSERT_TRUE(a.release(held.lock));
  auto got = waiter.get();
  ASSERT_TRUE(got) << got.message();
  EXPECT_NE(got.lock.token, held.lock.token);
  EXPECT_GE(cluster.count_holding("redlock:lane:wait", got.lock.token), 2u);
  ASSERT_TRUE(b.release(got.lock));
}

TEST(Lane, AFailedLaneConnectionIsOpenedAgainAfterItsRest) {
  RedisCluster cluster(3);
  Client client(lane_config(cluster));
  wait_connected(client);
  ASSERT_NO_FATAL_FAILURE(open_lane(client, "lane:down"));

  // Another client holds a key on every node; node 2 is paused. Our attempt at that key is
  // refused by nodes 0 and 1 and waits for node 2's reply (a refused attempt reads its replies
  // and its clean-up's) until the request timeout: the lane's connection to node 2 is closed.
  Client other(lane_config(cluster));
  auto held = other.try_acquire("lane:down:held", 10000ms);
  ASSERT_TRUE(held) << held.message();
  ASSERT_TRUE(test::eventually(
      [&] { return cluster.count_holding("redlock:lane:down:held", held.lock.token) == 3u; }));
  const auto opened_before = opened();
  const auto served_before = served();
  cluster[2].pause();
  auto refused = client.try_acquire("lane:down:held", 5000ms);
  EXPECT_FALSE(refused);
  EXPECT_EQ(refused.error, Errc::not_acquired) << refused.message();
  EXPECT_EQ(served() - served_before, 1u);
  cluster[2].resume();

  // A call after the node's rest opens the lane's connection to it again and finds its vote
  // there (a call made during the rest, or while the loop reconnects to the node after its own
  // timeout, goes to the loop: bounded retry).
  bool three = false;
  for (int i = 0; i < 100 && !three; ++i) {
    const auto before = served();
    auto again = client.try_acquire("lane:down:again", 5000ms);
    ASSERT_TRUE(again) << again.message();
    three = served() > before &&
            test::eventually(
                [&] {
                  return cluster.count_holding("redlock:lane:down:again", again.lock.token) == 3u;
                },
                200ms);
    ASSERT_TRUE(client.release(again.lock));
    if (!three) std::this_thread::sleep_for(20ms);
  }
  EXPECT_TRUE(three);
  EXPECT_GT(opened(), opened_before);
}

// A lane connection the server closed while it was idle (CLIENT KILL of it alone: the loop's
// session goes on) is found closed before the next call, which opens it again rather than
// failing its request. The check is made once the connection has not been heard from for a
// while (half a second, lane.cpp): a server closes an idle client after a second at least.
TEST(Lane, AnIdleConnectionTheServerClosedIsOpenedAgainNotFailed) {
  RedisCluster cluster(1);
  Client client(lane_config(cluster));
  wait_connected(client);
  ASSERT_NO_FATAL_FAILURE(open_lane(client, "lane:idle"));
  // The lane's connection: the last that ran the release script (the loop ran none).
  std::istringstream list(cluster[0].command({"CLIENT", "LIST"}));
  std::string line, id;
  while (std::getline(list, line))
    if (line.find(" cmd=evalsha") != std::string::npos) id = line.substr(3, line.find(' ') - 3);
  ASSERT_FALSE(id.empty()) << "no connection ran the release";
  ASSERT_EQ(cluster[0].command({"CLIENT", "KILL", "ID", id}), "1");  // one killed
  std::this_thread::sleep_for(700ms);                                // idle past the lane's check
  const auto opened_before = opened();
  const auto served_before = served();
  auto again = client.try_acquire("lane:idle", 5000ms);
  ASSERT_TRUE(again) << again.message();
  EXPECT_EQ(served() - served_before, 1u) << "served on the lane";
  EXPECT_EQ(opened() - opened_before, 1u) << "its connection opened again";
  EXPECT_TRUE(client.release(again.lock));
}

TEST(Lane, ARestartedServerIsUsedByTheLaneOnlyOnceTheLoopVerifiedItAgain) {
  RedisCluster cluster(3);
  Client client(lane_config(cluster));
  wait_connected(client);
  ASSERT_NO_FATAL_FAILURE(open_lane(client, "lane:restart"));
  cluster[1].restart();  // another run_id: the lane's connection to the old server is closed
  const auto opened_before = opened();
  bool three = false;
  for (int i = 0; i < 200 && !three; ++i) {
    const auto before = served();
    auto r = client.try_acquire("lane:restart", 5000ms);
    if (r) {
      three =
          served() > before && cluster.count_holding("redlock:lane:restart", r.lock.token) == 3u;
      ASSERT_TRUE(client.release(r.lock));
    }
    if (!three) std::this_thread::sleep_for(20ms);
  }
  EXPECT_TRUE(three);
  EXPECT_GT(opened(), opened_before);
}

TEST(Lane, TwoBlockingCallersAtOnceOneOnTheLaneOneOnTheLoopBothServed) {
  RedisCluster cluster(3);
  Config c = lane_config(cluster);
  c.retry_count = 100;  // the first caller keeps the lane for its retries
  c.retry_delay = 20ms;
  Client holder(lane_config(cluster)), client(c);
  wait_connected(holder);
  wait_connected(client);
  auto held = holder.try_acquire("lane:busy", 10000ms);
  ASSERT_TRUE(held) << held.message();
  const auto busy_before = busy();
  std::atomic<bool> retrying_done{false};
  // Retries on the lane (wait unset): refused each time, the lane taken meanwhile.
  auto retrying = std::async(std::launch::async, [&] {
    auto r = client.acquire(AcquireRequest({"lane:busy"}, 5000ms));
    retrying_done = true;
    return r;
  });
  int cycles = 0;
  while (!retrying_done && busy() == busy_before && cycles < 2000) {
    auto r = client.try_acquire("lane:other", 5000ms);
    ASSERT_TRUE(r) << r.message();
    ASSERT_TRUE(client.release(r.lock));
    ++cycles;
  }
  EXPECT_GT(busy(), busy_before) << "a call found the lane taken and used the loop";
  auto r = retrying.get();
  EXPECT_FALSE(r);
  EXPECT_EQ(r.error, Errc::not_acquired) << r.message();
  EXPECT_TRUE(test::eventually([&] { return cluster.count_existing("redlock:lane:other") == 0; }));
  ASSERT_TRUE(holder.release(held.lock));
}

TEST(Lane, HoldStaysOnTheLoop) {
  RedisCluster cluster(3);
  Client client(lane_config(cluster));
  wait_connected(client);
  const auto served_before = served();
  auto held = client.hold(AcquireRequest({"lane:hold"}, std::nullopt, 1000ms));
  ASSERT_TRUE(held) << held.message();
  EXPECT_TRUE(held.lock.valid());
  EXPECT_EQ(served(), served_before);
  ASSERT_TRUE(held.lock.release());
  EXPECT_EQ(served(), served_before);
}

TEST(Lane, ATlsNodeKeepsEveryCallOnTheLoop) {
  test::TlsFiles files;
  RedisCluster cluster(3, test::TlsMode::of(files));
  Config c = test::fast_config(cluster.tls_node_list());
  c.tls.ca_file = files.ca_cert;
  c.request_timeout = 500ms;  // a handshake under sanitizers takes longer
  c.connect_timeout = 1000ms;
  Client client(c);
  wait_connected(client);
  const auto served_before = served();
  auto r = client.acquire("lane:tls", 5000ms, 1000ms);
  ASSERT_TRUE(r) << r.message();
  ASSERT_TRUE(client.extend(r.lock));
  ASSERT_TRUE(client.release(r.lock));
  EXPECT_EQ(served(), served_before);
}

struct ThreadRecorder : Observer {
  void on_operation(const OperationEvent& e) override {
    std::lock_guard<std::mutex> lock(mutex);
    ops.emplace_back(e.operation, std::this_thread::get_id());
  }
  std::mutex mutex;
  std::vector<std::pair<Operation, std::thread::id>> ops;
};

TEST(Lane, TheObserverHearsALaneCallOnTheCallersThread) {
  RedisCluster cluster(3);
  auto rec = std::make_shared<ThreadRecorder>();
  Config c = lane_config(cluster);
  c.observer = rec;
  Client client(c);
  wait_connected(client);
  const auto served_before = served();
  auto r = client.acquire("lane:observed", 5000ms, 1000ms);
  ASSERT_TRUE(r) << r.message();
  ASSERT_TRUE(client.release(r.lock));
  ASSERT_EQ(served() - served_before, 2u);
  std::lock_guard<std::mutex> lock(rec->mutex);
  ASSERT_EQ(rec->ops.size(), 2u);
  EXPECT_EQ(rec->ops[0].first, Operation::acquire);
  EXPECT_EQ(rec->ops[1].first, Operation::release);
  for (const auto& op : rec->ops) EXPECT_EQ(op.second, std::this_thread::get_id());
}

TEST(Lane, EverySocketOfTheLaneIsCloseOnExec) {
  RedisCluster cluster(3);
  Client client(lane_config(cluster));
  wait_connected(client);
  auto r = client.try_acquire("lane:cloexec", 5000ms);
  ASSERT_TRUE(r) << r.message();
  ASSERT_TRUE(client.release(r.lock));
  std::size_t sockets = 0;
  DIR* dir = opendir("/proc/self/fd");
  ASSERT_NE(dir, nullptr);
  while (dirent* e = readdir(dir)) {
    int fd = atoi(e->d_name);
    struct stat st {};
    if (e->d_name[0] == '.' || fd == dirfd(dir) || fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode))
      continue;
    ++sockets;
    EXPECT_TRUE(fcntl(fd, F_GETFD) & FD_CLOEXEC) << "socket " << fd;
  }
  closedir(dir);
  EXPECT_GE(sockets, 6u);  // the loop's three and the lane's three
}

// A node that timed out on the lane rests: the calls made during its rest go to the loop without
// trying to open the lane's connection to it again (which, to a paused server, costs each call
// that tries up to the connect or request timeout before it goes to the loop anyway).
TEST(Lane, APausedNodeRestsInsteadOfCostingEachLaterCallAnOpenAttempt) {
  RedisCluster cluster(3);
  Client client(lane_config(cluster)), other(lane_config(cluster));
  wait_connected(client);
  wait_connected(other);
  ASSERT_NO_FATAL_FAILURE(open_lane(client, "lane:rest"));
  auto held = other.try_acquire("lane:rest:held", 10000ms);
  ASSERT_TRUE(held) << held.message();
  ASSERT_TRUE(test::eventually(
      [&] { return cluster.count_holding("redlock:lane:rest:held", held.lock.token) == 3u; }));
  cluster[2].pause();
  // Refused by nodes 0 and 1; node 2's reply is late: its lane connection is closed.
  const auto served_before = served();
  auto refused = client.try_acquire("lane:rest:held", 5000ms);
  EXPECT_EQ(refused.error, Errc::not_acquired) << refused.message();
  EXPECT_EQ(served() - served_before, 1u);
  const auto failed_before = open_failed();
  for (int i = 0; i < 3; ++i) {
    auto r = client.try_acquire("lane:rest:" + std::to_string(i), 5000ms);
    ASSERT_TRUE(r) << r.message();  // nodes 0 and 1 on the loop
    ASSERT_TRUE(client.release(r.lock));
  }
  EXPECT_EQ(open_failed(), failed_before) << "no call tried to open the paused node's connection";
  cluster[2].resume();
  ASSERT_TRUE(other.release(held.lock));
}

struct LostCounter : Observer {
  void on_lost(const LostEvent&) override { ++lost; }
  std::atomic<int> lost{0};
};

template <typename Result, typename Start>
Result on_the_loop(Start start) {
  std::promise<Result> promise;
  auto future = promise.get_future();
  start([&](Result r) { promise.set_value(std::move(r)); });
  return future.get();
}

// A lock of acquire() whose keys are gone is reported lost once, whichever path finds it first:
// an extend on the lane and then a release on the loop, or an extend on the loop and then a
// release on the lane.
TEST(Lane, ALostLockIsReportedOnceByTheLaneAndTheLoopTogether) {
  RedisCluster cluster(3);
  auto counter = std::make_shared<LostCounter>();
  Config c = lane_config(cluster);
  c.observer = counter;
  Client client(c);
  wait_connected(client);
  auto gone = [&](const std::string& resource) {
    for (std::size_t i = 0; i < 3; ++i) cluster[i].command({"DEL", "redlock:" + resource});
  };

  auto a = client.try_acquire("lane:lost:a", 5000ms);
  ASSERT_TRUE(a) << a.message();
  gone("lane:lost:a");
  const auto served_before = served();
  auto ext = client.extend(a.lock, 5000ms);
  EXPECT_EQ(ext.error, Errc::not_held) << ext.message();
  EXPECT_EQ(served() - served_before, 1u) << "the extend on the lane";
  EXPECT_EQ(counter->lost.load(), 1);
  auto rel =
      on_the_loop<ReleaseResult>([&](auto done) { client.release_async(a.lock, std::move(done)); });
  EXPECT_EQ(rel.error, Errc::not_held) << rel.message();
  EXPECT_EQ(counter->lost.load(), 1) << "the loop's release found it lost too: not told again";

  auto b = client.try_acquire("lane:lost:b", 5000ms);
  ASSERT_TRUE(b) << b.message();
  gone("lane:lost:b");
  auto ext_b = on_the_loop<ExtendResult>(
      [&](auto done) { client.extend_async(b.lock, 5000ms, std::move(done)); });
  EXPECT_EQ(ext_b.error, Errc::not_held) << ext_b.message();
  EXPECT_EQ(counter->lost.load(), 2);
  // The extend returned at its quorum: let its last reply in, so that the release takes the lane
  // (not behind the loop's request still on its way).
  std::this_thread::sleep_for(100ms);
  const auto served_mid = served();
  auto rel_b = client.release(b.lock);
  EXPECT_EQ(rel_b.error, Errc::not_held) << rel_b.message();
  EXPECT_EQ(served() - served_mid, 1u) << "the release on the lane";
  EXPECT_EQ(counter->lost.load(), 2) << "the lane's release found it lost too: not told again";
}

// A call returns at its verdict and leaves a slow node's reply on the way; the next call reads it
// first and matches only its own reply to its request: a refused attempt finds node 2's "no"
// (the first call's key there), never the first call's late "yes".
TEST(Lane, TheNextCallReadsTheLateRepliesOfTheLastBeforeItsOwn) {
  RedisCluster cluster(3);
  Client client(lane_config(cluster));
  wait_connected(client);
  ASSERT_NO_FATAL_FAILURE(open_lane(client, "lane:late:warm"));
  const auto opened_before = opened();
  const auto served_before = served();
  cluster[2].pause();
  auto granted = client.try_acquire("lane:late", 5000ms);  // at the quorum of nodes 0 and 1
  cluster[2].resume();
  ASSERT_TRUE(granted) << granted.message();
  auto refused = client.try_acquire("lane:late", 5000ms);
  EXPECT_EQ(refused.error, Errc::not_acquired) << refused.message();
  ASSERT_EQ(refused.votes.nodes.size(), 3u);
  // Node 2's vote is its "no", or still pending at the verdict: never the first call's "yes".
  for (std::size_t i = 0; i < 3; ++i)
    EXPECT_NE(refused.votes.nodes[i].vote, Vote::yes) << "node " << i;
  // The refusal is decided at any two "no"s: the third node's vote may still be on its way.
  EXPECT_GE(refused.votes.count(Vote::no), 2u);
  EXPECT_TRUE(test::eventually(
      [&] { return cluster.count_holding("redlock:lane:late", granted.lock.token) == 3u; }));
  auto rel = client.release(granted.lock);
  ASSERT_TRUE(rel) << rel.message();
  EXPECT_TRUE(test::eventually([&] { return cluster.count_existing("redlock:lane:late") == 0; }));
  EXPECT_EQ(served() - served_before, 3u);
  EXPECT_EQ(opened(), opened_before) << "no lane connection was closed for a stray reply";
}

// A permit of a semaphore (AcquireRequest::permits) that does not wait is served on the lane:
// one slot asked, a refusal that names a free slot asked again at once, permits_mismatch at once;
// extend and release act on its slot. A waiting one goes to the loop from its first attempt.
TEST(Lane, APermitIsServedOnTheLaneAndAWaitingOneOnTheLoop) {
  RedisCluster cluster(3);
  Client a(lane_config(cluster)), b(lane_config(cluster));
  wait_connected(a);
  wait_connected(b);
  auto permit = [](unsigned k, Milliseconds wait) {
    AcquireRequest r({"lane:pool"}, 5000ms, wait);
    r.permits = k;
    return r;
  };
  const auto served_before = served();
  auto one = a.acquire(permit(2, 0ms));
  ASSERT_TRUE(one) << one.message();
  auto two = b.acquire(permit(2, 0ms));  // the other slot, asked at once when hinted
  ASSERT_TRUE(two) << two.message();
  EXPECT_NE(one.lock.permit, two.lock.permit);
  EXPECT_EQ(served() - served_before, 2u);
  auto third = b.acquire(permit(2, 0ms));
  EXPECT_EQ(third.error, Errc::not_acquired) << third.message();
  auto other_k = b.acquire(permit(3, 0ms));
  EXPECT_EQ(other_k.error, Errc::permits_mismatch) << other_k.message();
  EXPECT_EQ(served() - served_before, 4u);
  const auto handed_before = handed();
  auto waited = b.acquire(permit(2, 100ms));
  EXPECT_EQ(waited.error, Errc::not_acquired) << waited.message();
  EXPECT_EQ(served() - served_before, 4u) << "the waiting permit on the loop";
  EXPECT_EQ(handed(), handed_before) << "not tried on the lane first";
  // Its leaving of the line is still on its way when it returns: let it in, so that what
  // follows takes the lane (not behind the loop's requests).
  std::this_thread::sleep_for(100ms);
  ASSERT_TRUE(a.extend(one.lock, 5000ms));
  ASSERT_TRUE(a.release(one.lock));
  ASSERT_TRUE(b.release(two.lock));
  EXPECT_EQ(served() - served_before, 7u);
  EXPECT_TRUE(test::eventually([&] {
    return cluster.count_existing(detail::slot_key("redlock:lane:pool", 0)) == 0 &&
           cluster.count_existing(detail::slot_key("redlock:lane:pool", 1)) == 0;
  }));
}

// A grant on the loop returns at its quorum with its request to a paused node still on its way
// on the loop's connection. The release that follows goes to the loop, behind it on the same
// connection: on the lane's it could run first on that node, which would then keep the key
// until its ttl.
TEST(Lane, AReleaseAfterALoopGrantStillOnItsWayGoesBehindItOnTheLoop) {
  RedisCluster cluster(3);
  Client client(lane_config(cluster));
  wait_connected(client);
  ASSERT_NO_FATAL_FAILURE(open_lane(client, "lane:behind:warm"));
  cluster[2].pause();
  auto granted = on_the_loop<AcquireResult>([&](auto done) {
    client.acquire_async(AcquireRequest({"lane:behind"}, 5000ms, 0ms), std::move(done));
  });
  ASSERT_TRUE(granted) << granted.message();
  const auto served_before = served();
  const auto behind_before = behind();
  auto rel = client.release(granted.lock);
  cluster[2].resume();
  ASSERT_TRUE(rel) << rel.message();
  EXPECT_EQ(served(), served_before) << "the release went to the loop";
  EXPECT_GT(behind(), behind_before);
  EXPECT_TRUE(test::eventually([&] { return cluster.count_existing("redlock:lane:behind") == 0; }));
}

}  // namespace
}  // namespace redlock
