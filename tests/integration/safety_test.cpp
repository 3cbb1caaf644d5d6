// Safety defects found under review, each pinned by a test that failed before its fix:
// no two holders, no grant undone by its own clean-up, no signal killing the host, no lock
// command on a connection whose handshake failed, per-connection order kept, batches that do
// not couple fates, waiters that do not spin.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <future>
#include <set>
#include <thread>

#include "core/keys.hpp"
#include "fake_server.hpp"
#include "intervals.hpp"
#include "redis_server.hpp"
#include "redlock/redlock.hpp"
#include "redlock_scripts.hpp"
#include "test_config.hpp"

namespace redlock {
namespace {

using namespace std::chrono_literals;
using test::eventually;
using test::RedisCluster;

long long pttl(const test::RedisServer& server, const std::string& key) {
  return std::stoll(server.command({"PTTL", key}));
}

// The commands one server runs, seen through MONITOR on a connection of its own.
class Monitor {
 public:
  explicit Monitor(const test::RedisServer& server) {
    timeval tv{0, 100'000};
    ctx_ = redisConnectWithTimeout("127.0.0.1", server.port(), tv);
    if (ctx_ == nullptr || ctx_->err) throw std::runtime_error("monitor: cannot connect");
    redisSetTimeout(ctx_, tv);
    auto* r = static_cast<redisReply*>(redisCommand(ctx_, "MONITOR"));
    if (r == nullptr) throw std::runtime_error("monitor: no reply");
    freeReplyObject(r);
  }
  ~Monitor() { redisFree(ctx_); }
  Monitor(const Monitor&) = delete;
  Monitor& operator=(const Monitor&) = delete;

  // Lines seen until `quiet` passes without a new one (bounded by `limit`).
  std::vector<std::string> drain(std::chrono::milliseconds quiet = 300ms,
                                 std::chrono::milliseconds limit = 5s) {
    std::vector<std::string> lines;
    auto end = std::chrono::steady_clock::now() + limit;
    auto last = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() < end &&
           std::chrono::steady_clock::now() - last < quiet) {
      void* reply = nullptr;
      if (redisGetReply(ctx_, &reply) != REDIS_OK || reply == nullptr) {
        // A read timeout leaves the context in error: reset it and keep reading.
        ctx_->err = 0;
        continue;
      }
      auto* r = static_cast<redisReply*>(reply);
      if (r->type == REDIS_REPLY_STATUS) lines.emplace_back(r->str, r->len);
      freeReplyObject(r);
      last = std::chrono::steady_clock::now();
    }
    return lines;
  }

 private:
  redisContext* ctx_ = nullptr;
};

// The quoted arguments of a MONITOR line: `123.4 [0 127.0.0.1:5] "EVALSHA" "sha" "1" ...`.
std::vector<std::string> monitor_args(const std::string& line) {
  std::vector<std::string> args;
  for (std::size_t i = line.find('"'); i != std::string::npos; i = line.find('"', i + 1)) {
    std::string arg;
    for (++i; i < line.size() && line[i] != '"'; ++i) {
      if (line[i] == '\\' && i + 1 < line.size()) ++i;
      arg += line[i];
    }
    args.push_back(arg);
  }
  return args;
}

// The payloads PUBLISHed on `channel` among `lines` (by default, what `monitor` sees next).
std::vector<std::string> published(Monitor& monitor, const std::string& channel,
                                   std::vector<std::string> lines = {}) {
  if (lines.empty()) lines = monitor.drain();
  std::vector<std::string> payloads;
  for (const auto& line : lines) {
    auto args = monitor_args(line);
    if (args.size() == 3 && args[0] == "PUBLISH" && args[1] == channel) payloads.push_back(args[2]);
  }
  return payloads;
}

// Defect: extend to a shorter ttl set the keys' PTTL to it while the client kept its old,
// later deadline; a second client then got the lock while the first still held a valid one.
TEST(Safety, ExtendToAShorterTtlNeverLetsASecondHolderIn) {
  RedisCluster cluster(5);
  Client a(test::fast_config(cluster)), b(test::fast_config(cluster));
  auto r = a.try_acquire("res", 10000ms);
  ASSERT_TRUE(r) << r.message();
  auto e = a.extend(r.lock, 500ms);
  ASSERT_TRUE(e) << e.message();
  std::this_thread::sleep_for(700ms);
  ASSERT_TRUE(r.lock.valid()) << "the holder still believes in its lock";
  auto other = b.try_acquire("res", 5000ms);
  EXPECT_EQ(other.error, Errc::not_acquired) << "two holders: " << other.message();
  // What the holder believes is covered by every key: none was shortened (a shortened key is
  // gone by now). The margin below the 10 s is for a loaded machine.
  for (std::size_t i = 0; i < cluster.size(); ++i)
    EXPECT_GT(pttl(cluster[i], "redlock:res"), 3000) << "node " << i;
}

// Defect: a bare-quorum holder whose failed extend reached one of its three nodes shortened
// that key, and so held no quorum any more until its (unchanged) deadline.
TEST(Safety, AFailedExtendThatReachedSomeNodesKeepsTheHoldersQuorum) {
  RedisCluster cluster(5);
  for (std::size_t i : {3u, 4u})
    cluster[i].command({"SET", "redlock:res", "foreign", "PX", "30000"});
  auto config = test::fast_config(cluster);
  Client a(config), b(config);
  auto r = a.try_acquire("res", 10000ms);
  ASSERT_TRUE(r) << r.message();
  ASSERT_EQ(r.votes.yes(), 3u) << "a bare quorum: nodes 0, 1, 2";
  auto deadline = r.lock.valid_until;

  cluster[1].pause();
  cluster[2].pause();
  auto e = a.extend(r.lock, 300ms);  // reaches node 0; 1 and 2 time out; 3 and 4 say no
  EXPECT_FALSE(e);
  EXPECT_EQ(r.lock.valid_until, deadline) << "a failed extend changes nothing";
  cluster[1].resume();  // the extend queued on 1 and 2 runs now
  cluster[2].resume();
  std::this_thread::sleep_for(500ms);
  for (std::size_t i : {3u, 4u}) cluster[i].command({"DEL", "redlock:res"});

  ASSERT_TRUE(r.lock.valid());
  auto other = b.try_acquire("res", 5000ms);
  EXPECT_EQ(other.error, Errc::not_acquired) << "two holders: " << other.message();
  // A key the failed extend shortened has 300 ms or less left, or is gone (-2). The margin below
  // the 10 s the lock was taken for is for a loaded machine: pausing, resuming and the wait
  // above can take seconds there.
  for (std::size_t i : {0u, 1u, 2u})
    EXPECT_GT(pttl(cluster[i], "redlock:res"), 3000) << "node " << i << " key was shortened";
}

// Defect: every attempt of one acquire sent the same token, so a failed attempt's late
// compare-and-delete could delete a later attempt's grant. Each attempt now has its own token,
// and each clean-up names only its own attempt's token.
TEST(Safety, EveryAttemptHasAFreshTokenAndCleansUpOnlyItsOwn) {
  RedisCluster cluster(5);
  for (std::size_t i : {0u, 1u, 2u})
    cluster[i].command({"SET", "redlock:res", "foreign", "PX", "600"});
  auto config = test::fast_config(cluster);
  Monitor monitor(cluster[4]);
  Client a(config);
  auto r = a.acquire("res", 5000ms, 3000ms);
  ASSERT_TRUE(r) << r.message();
  ASSERT_GE(r.attempts, 2);

  std::vector<std::string> acquired, cleaned;
  for (const auto& line : monitor.drain()) {
    auto args = monitor_args(line);
    // A waiter's first attempt is the quick command: SET key token NX PX ttl GET.
    if (args.size() >= 4 && args[0] == "SET" && args[3] == "NX") {
      acquired.push_back(args[2]);
      continue;
    }
    if (args.size() < 5 || (args[0] != "EVALSHA" && args[0] != "EVAL")) continue;
    if (args[1] == detail::lua::acquire_sha || args[1] == detail::lua::acquire_body)
      acquired.push_back(args[4]);
    else if ((args[1] == detail::lua::release_sha || args[1] == detail::lua::release_body) &&
             args[4] != "-")  // "-" is no token: a waiter leaving the line deletes nothing
      cleaned.push_back(args[4]);
  }
  ASSERT_EQ(acquired.size(), static_cast<std::size_t>(r.attempts));
  EXPECT_EQ(std::set<std::string>(acquired.begin(), acquired.end()).size(), acquired.size())
      << "a token was reused across attempts";
  EXPECT_EQ(acquired.back(), r.lock.token);
  // Every failed attempt cleaned up with its own token, never with the granted one.
  std::set<std::string> failed(acquired.begin(), acquired.end() - 1);
  EXPECT_EQ(std::set<std::string>(cleaned.begin(), cleaned.end()), failed);
}

// Defect: a node closing a connection while the library wrote to it killed the host process
// with SIGPIPE. The host (a program of its own) keeps SIGPIPE's default disposition, as most
// programs do, and hammers two real nodes and three that reset every connection.
TEST(Safety, ASocketClosedUnderAWriteNeverKillsTheHost) {
  RedisCluster cluster(2);
  // Three nodes that accept connections and close them at once (a crashing node, `maxclients`).
  test::FakeServer closing[3] = {test::FakeServer(test::FakeServer::Mode::close_at_once),
                                 test::FakeServer(test::FakeServer::Mode::close_at_once),
                                 test::FakeServer(test::FakeServer::Mode::close_at_once)};
  std::string nodes = cluster.node_list();
  for (auto& c : closing) nodes += "," + c.url();
  test::Process host({REDLOCK_FAULTY_HOST_PATH, nodes, "1500"});
  auto result = host.wait(20s);
  ASSERT_FALSE(result.timed_out) << "the host hung";
  EXPECT_EQ(result.exit_code, 0) << "the host died (of a signal when -1); stderr: " << result.err;
}

// The same, without depending on timing: the handshake gate leaves the test above few writes to a
// closed peer, so it does not always provoke one. Every callback runs on the loop thread: there,
// SIGPIPE is blocked, and a write to a socket whose peer is gone fails with EPIPE (unblocked, with
// the default disposition, that write would end the process).
TEST(Safety, OnTheLoopThreadAWriteToAClosedPeerFailsWithEpipe) {
  RedisCluster cluster(1);
  Client client(test::fast_config(cluster));
  std::promise<std::pair<bool, int>> seen;
  client.acquire_async(AcquireRequest({"sigpipe"}, 1000ms), [&](AcquireResult) {
    sigset_t mask;
    pthread_sigmask(SIG_BLOCK, nullptr, &mask);
    const bool blocked = sigismember(&mask, SIGPIPE) == 1;
    int error = 0;
    if (blocked) {  // never provoke the signal where it would end the test run
      int fds[2];
      if (::socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0) {
        ::close(fds[1]);
        if (::write(fds[0], "x", 1) < 0) error = errno;
        ::close(fds[0]);
      }
    }
    seen.set_value({blocked, error});
  });
  auto [blocked, error] = seen.get_future().get();
  EXPECT_TRUE(blocked) << "SIGPIPE is deliverable on the loop thread";
  if (blocked) {
    EXPECT_EQ(error, EPIPE);
  }
}

// Defect: the acquire script pipelined behind a failing AUTH ran anyway, as the default user.
TEST(Safety, NoLockCommandRunsOnAConnectionWhoseAuthFailed) {
  RedisCluster cluster(3, {"--user", "alice", "on", ">secret", "~*", "&*", "+@all"});
  for (std::size_t i = 0; i < cluster.size(); ++i)  // as any earlier client would have left it
    cluster[i].command({"SCRIPT", "LOAD", detail::lua::acquire_body});
  Client client(test::fast_config(cluster, "alice:wrong"));
  auto r = client.try_acquire("res", 10000ms);
  EXPECT_FALSE(r);
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(cluster.count_existing("redlock:res"), 0u)
      << "the script ran as the default user: " << r.message();
}

// Defect: ... and behind a failing SELECT, in database 0.
TEST(Safety, NoLockCommandRunsOnAConnectionWhoseSelectFailed) {
  RedisCluster cluster(3);
  std::string nodes;
  for (std::size_t i = 0; i < cluster.size(); ++i) {
    nodes += (i ? "," : "") + cluster[i].url() + "/20";  // 16 databases: out of range
    cluster[i].command({"SCRIPT", "LOAD", detail::lua::acquire_body});
  }
  Config config = Config::from_node_list(nodes);
  config.request_timeout = 200ms;
  Client client(config);
  auto r = client.try_acquire("res", 10000ms);
  EXPECT_FALSE(r);
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(cluster.count_existing("redlock:res"), 0u)
      << "the script ran in database 0: " << r.message();
}

// Defect: the EVAL re-sent after NOSCRIPT went to the back of the connection, behind the
// clean-up release queued after it, and so ran after its own clean-up: a ghost key for a ttl.
TEST(Safety, AnAcquireIsNeverRunAfterItsOwnCleanUp) {
  RedisCluster cluster(5);
  auto config = test::fast_config(cluster);
  config.request_timeout = 2000ms;
  Client a(config);
  auto warm = a.try_acquire("warm", 1000ms);
  ASSERT_TRUE(warm) << warm.message();
  // Node 0 forgets the acquire script but has the release script.
  ASSERT_EQ(cluster[0].command({"SCRIPT", "FLUSH"}), "OK");
  ASSERT_EQ(cluster[0].command({"SCRIPT", "LOAD", detail::lua::release_body}),
            detail::lua::release_sha);
  for (std::size_t i : {1u, 2u, 3u})
    cluster[i].command({"SET", "redlock:res", "foreign", "PX", "30000"});
  // Node 0 answers late: the verdict (three no) and the clean-up come before its reply. The
  // acquire must be the script (fenced: a try_acquire without fencing is a plain SET).
  ASSERT_EQ(cluster[0].command({"CLIENT", "PAUSE", "300", "WRITE"}), "OK");
  AcquireRequest scripted({"res"}, 10000ms, 0ms);
  scripted.fencing = true;
  auto r = a.acquire(scripted);
  EXPECT_EQ(r.error, Errc::not_acquired) << r.message();
  std::this_thread::sleep_for(800ms);
  EXPECT_EQ(cluster[0].command({"EXISTS", "redlock:res"}), "0")
      << "the acquire ran after its own clean-up";
}

// Defect: one held lock's key of the wrong type failed the whole batched renewal, and every
// held lock was reported lost.
TEST(Safety, OneBadKeyDoesNotPoisonTheOtherHeldLocks) {
  RedisCluster cluster(3);
  auto config = test::fast_config(cluster);
  config.watchdog_lease = 900ms;
  Client client(config);
  // Taken at once, so that their renewals fall due together and share one batch.
  std::vector<std::future<HoldResult>> holds;
  for (int i = 0; i < 10; ++i)
    holds.push_back(std::async(std::launch::async,
                               [&client, i] { return client.hold("res" + std::to_string(i)); }));
  std::vector<HeldLock> locks;
  for (auto& f : holds) {
    auto h = f.get();
    ASSERT_TRUE(h) << h.message();
    locks.push_back(std::move(h.lock));
  }
  for (std::size_t n = 0; n < cluster.size(); ++n) {
    cluster[n].command({"DEL", "redlock:res0"});
    cluster[n].command({"HSET", "redlock:res0", "f", "v"});
  }
  std::this_thread::sleep_for(1500ms);  // several renewals, past the first lease
  EXPECT_TRUE(locks[0].lost());
  for (int i = 1; i < 10; ++i)
    EXPECT_TRUE(locks[i].valid()) << "lock " << i
                                  << " lost: " << locks[i].lost_flag().reason().message();
}

// A release notice names the releaser as acquire.lua names a holder, also once a waiter has
// marked the holder's token (lib/core/token.hpp): a waiter that was refused by that holder knows
// its key is free (the name is the client's digest of its token, which the release script no
// longer computes). Here the waiter in line (b) hears the release as the start of its turn.
TEST(Notices, AReleaseIsAnnouncedUnderTheNameTheAcquireScriptGivesItsHolder) {
  RedisCluster cluster(3);
  auto patient = test::fast_config(cluster);
  patient.retry_delay = 20000ms;  // only a notice wakes b within the test
  Client a(test::fast_config(cluster)), b(patient), c(test::fast_config(cluster));
  ASSERT_TRUE(eventually([&] { return test::connected_to_all(a); }));
  auto held = a.try_acquire("res", 10000ms);
  ASSERT_TRUE(held) << held.message();
  auto waiting = std::async(std::launch::async, [&] { return b.acquire("res", 10000ms, 5000ms); });
  ASSERT_TRUE(eventually([&] {
    auto value = cluster[0].command({"GET", "redlock:res"});
    return !value.empty() && value.back() == '!';
  })) << "b did not mark the holder's token";
  AcquireRequest scripted({"res"}, 10000ms, 0ms);
  scripted.fencing = true;  // the script names the holder in its refusal
  auto refused = c.acquire(scripted);
  ASSERT_EQ(refused.error, Errc::not_acquired) << refused.message();
  std::string holder;
  for (const auto& v : refused.votes.nodes)
    if (v.vote == Vote::no && !v.holder.empty()) holder = v.holder;
  ASSERT_EQ(holder.size(), 16u);
  // b's client listens for its turn on node 0: a turn that nobody hears passes, and the release
  // is then announced twice there (the turn, then the key's channel), both under the same name.
  ASSERT_TRUE(eventually([&] {
    return !cluster[0].command({"PUBSUB", "CHANNELS", "redlock:turn:*"}).empty();
  }));

  Monitor monitor(cluster[0]);
  ASSERT_TRUE(a.release(held.lock));
  auto got = waiting.get();
  ASSERT_TRUE(got) << got.message();
  std::vector<std::string> names;
  for (const auto& line : monitor.drain()) {
    auto args = monitor_args(line);
    if (args.size() == 3 && args[0] == "PUBLISH") names.push_back(args[2].substr(0, 16));
  }
  EXPECT_EQ(names, std::vector<std::string>{holder});
  EXPECT_TRUE(b.release(got.lock));
}

// A release that nobody waits for (its token unmarked: no line, no waiter for several keys)
// tells nobody, and asks nothing: the common release costs a node a GET and a DEL, and is sent
// with the token alone (every argument costs each node time: docs/performance.md).
TEST(Notices, AReleaseNobodyWaitsForIsNotAnnounced) {
  RedisCluster cluster(3);
  Client a(test::fast_config(cluster));
  auto held = a.try_acquire("res", 10000ms);
  ASSERT_TRUE(held) << held.message();
  Monitor monitor(cluster[0]);
  ASSERT_TRUE(a.release(held.lock));
  auto lines = monitor.drain();
  EXPECT_TRUE(std::any_of(lines.begin(), lines.end(), [](const std::string& l) {
    return l.find("\"DEL\"") != std::string::npos;
  })) << "the release did not run on the node";
  EXPECT_TRUE(published(monitor, "redlock:res:released", lines).empty());
  for (const auto& l : lines) EXPECT_EQ(l.find("\"EXISTS\""), std::string::npos) << l;
  std::vector<std::vector<std::string>> releases;
  for (const auto& l : lines) {
    auto args = monitor_args(l);
    if (args.size() >= 2 && args[0] == "EVALSHA" && args[1] == detail::lua::release_sha)
      releases.push_back(args);
  }
  ASSERT_EQ(releases.size(), 1u);
  EXPECT_EQ(releases[0], (std::vector<std::string>{"EVALSHA", detail::lua::release_sha, "1",
                                                   "redlock:res", held.lock.token}));
}

// A token of an older client (32 hex digits, which nobody marks) tells nothing about waiters:
// releasing it (here as the CLI would, from the token) asks the line. A node where nobody waits
// stays silent; a node whose ACL denies EXISTS cannot tell, still deletes the key, and counts
// as somebody waiting (the notice goes out on the key's channel).
TEST(Notices, AReleaseOfAnOlderClientsTokenAsksWhoWaitsAndADenialCountsAsSomebody) {
  RedisCluster cluster(3);
  const std::string token = "0123456789abcdef0123456789abcdef";
  for (std::size_t i = 0; i < cluster.size(); ++i)
    ASSERT_EQ(cluster[i].command({"SET", "redlock:res", token, "PX", "10000"}), "OK");
  ASSERT_EQ(cluster[0].command({"ACL", "SETUSER", "default", "-exists"}), "OK");
  Client a(test::fast_config(cluster));
  ASSERT_TRUE(eventually([&] { return test::connected_to_all(a); }));
  Monitor denied(cluster[0]), quiet(cluster[1]);
  auto released = a.release(Lock("res", token));
  ASSERT_TRUE(released) << released.message();
  // The release is done at its quorum; the third node's may still be on its way.
  ASSERT_TRUE(eventually([&] { return cluster.count_existing("redlock:res") == 0u; }));
  auto names = published(denied, "redlock:res:released");
  ASSERT_EQ(names.size(), 1u);
  EXPECT_EQ(names[0].size(), 16u);
  auto lines = quiet.drain();
  EXPECT_TRUE(std::any_of(lines.begin(), lines.end(), [](const std::string& l) {
    return l.find("\"EXISTS\"") != std::string::npos;
  })) << "the release did not ask who waits";
  EXPECT_TRUE(published(quiet, "redlock:res:released", lines).empty());
}

// A waiter's mark (the holder's token with its last character changed, lib/core/token.hpp)
// makes the key no easier to take: a release or an extend under any other token, marked-looking
// or not, leaves the holder's lock, its mark and its ttl as they were.
TEST(Safety, AMarkedLockIsReleasedAndExtendedOnlyByItsHolder) {
  RedisCluster cluster(3);
  auto patient = test::fast_config(cluster);
  patient.retry_delay = 20000ms;
  Client a(test::fast_config(cluster)), b(patient), c(test::fast_config(cluster));
  ASSERT_TRUE(eventually([&] { return test::connected_to_all(a); }));
  auto held = a.try_acquire("res", 10000ms);
  ASSERT_TRUE(held) << held.message();
  std::string marked = held.lock.token;
  marked.back() = '!';
  auto waiting = std::async(std::launch::async, [&] { return b.acquire("res", 10000ms, 5000ms); });
  ASSERT_TRUE(eventually([&] { return cluster.count_existing("redlock:res") == 3u; }));
  for (std::size_t i = 0; i < cluster.size(); ++i)
    ASSERT_TRUE(eventually([&] {
      return cluster[i].command({"GET", "redlock:res"}) == marked;
    })) << "node "
        << i;
  std::string other = "fedcba9876543210fedcba9876543210.";
  for (const std::string& t : {other, std::string("fedcba9876543210fedcba9876543210!"),
                               held.lock.token.substr(0, 32), held.lock.token.substr(1)}) {
    Lock theirs("res", t);
    auto rel = c.release(theirs);
    EXPECT_EQ(rel.released, 0u) << t;
    auto ext = c.extend(theirs, 60000ms);
    EXPECT_FALSE(ext) << t;
  }
  for (std::size_t i = 0; i < cluster.size(); ++i) {
    EXPECT_EQ(cluster[i].command({"GET", "redlock:res"}), marked) << "node " << i;
    EXPECT_LE(std::stoll(cluster[i].command({"PTTL", "redlock:res"})), 10000) << "node " << i;
  }
  ASSERT_TRUE(a.release(held.lock));
  auto got = waiting.get();
  ASSERT_TRUE(got) << got.message();
  EXPECT_TRUE(b.release(got.lock));
}

// The fencing write-back (fence.lua) takes the holder's token marked by a waiter as its own,
// and no other token, marked-looking or not.
TEST(Safety, TheFenceWriteBackTakesAMarkedTokenOnlyAsItsHoldersOwn) {
  RedisCluster cluster(1);
  const std::string token = "0123456789abcdef0123456789abcdef.";
  ASSERT_EQ(
      cluster[0].command({"SET", "redlock:f", "0123456789abcdef0123456789abcdef!", "PX", "10000"}),
      "OK");
  auto fence = [&](const std::string& t, const std::string& n) {
    return cluster[0].command({"EVAL", detail::lua::fence_body, "1", "redlock:f", t, n});
  };
  EXPECT_EQ(fence("fedcba9876543210fedcba9876543210.", "7"), "0");
  EXPECT_EQ(fence("fedcba9876543210fedcba9876543210!", "7"), "0");
  EXPECT_EQ(cluster[0].command({"EXISTS", detail::aux_key("redlock:f", detail::kFence)}), "0");
  EXPECT_EQ(fence(token, "7"), "1");
  EXPECT_EQ(cluster[0].command({"GET", detail::aux_key("redlock:f", detail::kFence)}), "7");
}

// A failed attempt's clean-up is no release: it tells nobody, even on a node where somebody
// waits for the key (here a waiter for several keys of another client, signed up on node 2).
// A try_acquire's clean-up there finds its token as given; a waiter's grant on node 2 is marked
// (somebody waits), so only the clean-up's own rule keeps its notice back, whether the waiter
// takes its place in line again (a later attempt follows) or stops waiting (its last attempt).
TEST(Notices, ACleanUpTellsNobodyEvenWhereSomebodyWaits) {
  RedisCluster cluster(3);
  cluster[0].command({"SET", "redlock:x", "crashed-contender-1", "PX", "30000"});
  cluster[1].command({"SET", "redlock:x", "crashed-contender-2", "PX", "30000"});
  // A sign-up that has not ended (scored by its end, in ms on the node's clock).
  ASSERT_EQ(cluster[2].command({"ZADD", detail::aux_key("redlock:x", detail::kOthers),
                                "99999999999999", "a-client#1"}),
            "1");
  auto config = test::fast_config(cluster);
  config.retry_delay = 50ms;
  config.retry_jitter = 20ms;
  Client a(config);
  ASSERT_TRUE(eventually([&] { return a.status()[2].up; }));
  Monitor monitor(cluster[2]);
  auto r = a.try_acquire("x", 10000ms);  // node 2 says yes, nodes 0 and 1 no
  EXPECT_EQ(r.error, Errc::not_acquired) << r.message();
  r = a.acquire("x", 10000ms, 400ms);  // the same, several times, as a waiter in line
  EXPECT_EQ(r.error, Errc::not_acquired) << r.message();
  EXPECT_GE(r.attempts, 2);
  auto lines = monitor.drain();
  EXPECT_EQ(cluster[2].command({"EXISTS", "redlock:x"}), "0");
  // On a loaded machine some attempts may miss node 2 (a request timeout): what counts is that
  // grants there were marked and then cleaned up, and that no clean-up told anybody.
  auto has = [](const std::string& line, const std::string& text) {
    return line.find(text) != std::string::npos;
  };
  auto marked = std::find_if(lines.begin(), lines.end(),
                             [&](const std::string& l) { return has(l, "\"KEEPTTL\""); });
  ASSERT_NE(marked, lines.end()) << "the waiter's grants on node 2 were not marked";
  EXPECT_TRUE(std::any_of(marked, lines.end(), [&](const std::string& l) {
    return has(l, "\"DEL\" \"redlock:x\"");
  })) << "no marked grant was cleaned up on node 2";
  for (const auto& l : lines) EXPECT_EQ(l.find("\"PUBLISH\""), std::string::npos) << l;
}

// A failed attempt cleans up only where it may have left its token: not on the nodes that refused
// it (their script wrote nothing), but on a node whose answer had not come when the attempt was
// lost, and which grants it afterwards.
TEST(Safety, ACleanUpSparesTheNodesThatRefusedButFollowsALateGrant) {
  RedisCluster cluster(3);
  cluster[0].command({"SET", "redlock:res", "other-holder.", "PX", "30000"});
  cluster[1].command({"SET", "redlock:res", "other-holder.", "PX", "30000"});
  auto config = test::fast_config(cluster);
  config.request_timeout = 5000ms;  // node 2's answer is late, not lost
  Client c(config);
  ASSERT_TRUE(eventually([&] { return test::connected_to_all(c); }));
  Monitor monitor(cluster[0]);
  cluster[2].pause();
  auto r = c.try_acquire("res", 10000ms);  // lost at two refusals; node 2's answer still to come
  EXPECT_EQ(r.error, Errc::not_acquired) << r.message();
  std::this_thread::sleep_for(100ms);
  cluster[2].resume();
  // Node 2 runs the acquire, then the clean-up queued behind it on the same connection.
  EXPECT_TRUE(eventually([&] {
    return cluster[2].command({"EXISTS", "redlock:res"}) == "0";
  })) << "the late grant on node 2 was not cleaned up: "
      << cluster[2].command({"GET", "redlock:res"});
  EXPECT_EQ(cluster[0].command({"GET", "redlock:res"}), "other-holder.");
  for (const auto& l : monitor.drain())
    EXPECT_EQ(l.find("\"EVALSHA\""), std::string::npos) << "node 0 refused, yet: " << l;
}

// Defect: a failed attempt's clean-up published a release notice that woke the same waiter,
// which then spun (thousands of attempts a second).
TEST(Safety, AWaiterIsNotWokenByItsOwnCleanUp) {
  RedisCluster cluster(5);
  auto config = test::fast_config(cluster);
  config.retry_delay = 200ms;
  config.retry_jitter = 100ms;
  for (std::size_t i : {0u, 1u, 2u})
    cluster[i].command({"SET", "redlock:res", "holder", "PX", "3000"});
  Client a(config);
  auto r = a.acquire("res", 5000ms, 1000ms);
  EXPECT_EQ(r.error, Errc::not_acquired) << r.message();
  EXPECT_LE(r.attempts, 15) << "the waiter spun";
}

// Every node answers yes, but only after the lock's validity window has closed: that quorum is
// worth nothing. (The suite used to pass with this check deleted.)
TEST(Safety, AQuorumThatArrivesAfterTheValidityWindowGrantsNothing) {
  RedisCluster cluster(3);
  auto config = test::fast_config(cluster);
  config.request_timeout = 3000ms;
  Client a(config);
  ASSERT_TRUE(a.try_acquire("warm", 1000ms));
  for (std::size_t i = 0; i < cluster.size(); ++i)
    ASSERT_EQ(cluster[i].command({"CLIENT", "PAUSE", "700", "WRITE"}), "OK");
  auto r = a.try_acquire("res", 400ms);
  EXPECT_EQ(r.error, Errc::validity_expired) << r.message();
  EXPECT_GE(r.votes.yes(), 2u) << "the nodes did say yes, too late";
  EXPECT_FALSE(r.lock.valid());
  EXPECT_TRUE(eventually([&] { return cluster.count_existing("redlock:res") == 0u; }))
      << "the late grants were cleaned up";
}

TEST(Safety, AnExtendWhoseQuorumArrivesAfterItsWindowGrantsNothing) {
  RedisCluster cluster(3);
  auto config = test::fast_config(cluster);
  config.request_timeout = 3000ms;
  Client a(config);
  auto r = a.try_acquire("res", 10000ms);
  ASSERT_TRUE(r) << r.message();
  auto deadline = r.lock.valid_until;
  for (std::size_t i = 0; i < cluster.size(); ++i)
    ASSERT_EQ(cluster[i].command({"CLIENT", "PAUSE", "700", "WRITE"}), "OK");
  auto e = a.extend(r.lock, 400ms);
  EXPECT_EQ(e.error, Errc::validity_expired) << e.message();
  EXPECT_EQ(r.lock.valid_until, deadline);
}

// One server listed twice under two spellings must not vote twice: with a fresh token for every
// attempt, a grant that finds its own token already there can only be such an alias.
TEST(Safety, OneServerListedTwiceVotesOnce) {
  RedisCluster cluster(2);
  cluster[1].command({"SET", "redlock:res", "foreign", "PX", "30000"});
  std::string p = std::to_string(cluster[0].port());
  Config config = Config::from_node_list("redis://127.0.0.1:" + p + ",redis://localhost:" + p +
                                         "," + cluster[1].url());
  config.request_timeout = 500ms;
  Client a(config);
  auto r = a.try_acquire("res", 5000ms);
  EXPECT_EQ(r.error, Errc::not_acquired) << "one server made a quorum of two: " << r.message();
}

// Many independent clients (as separate processes would be) contend for one resource; every
// critical section is recorded, and no two claimed intervals may overlap. A short hold inside
// makes an overlap, if the lock ever allowed one, visible both as intervals and as lost updates.
TEST(Safety, ContendingClientsNeverOverlap) {
  RedisCluster cluster(3);
  auto config = test::fast_config(cluster);
  test::SectionLog log;
  // Updated read-modify-write inside the critical section (a load, then a store: not one atomic
  // step), so an overlap shows as a lost update; atomic only to keep the test free of UB.
  std::atomic<int> counter{0};
  std::atomic<int> grants{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      Client client(config);
      for (int i = 0; i < 12; ++i) {
        auto r = client.acquire("counter", 2000ms, 5000ms);
        if (!r) continue;
        test::Section s;
        s.entered = Clock::now();
        s.valid_until = r.lock.valid_until;
        s.holder = t;
        int read = counter.load();
        std::this_thread::sleep_for(2ms);
        counter.store(read + 1);
        s.left = Clock::now();
        log.add(s);
        ++grants;
        (void)client.release(r.lock);
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(grants.load(), 48) << "every contender was served";
  EXPECT_EQ(test::count_overlaps(log.sections(), /*claimed=*/true), 0u);
  EXPECT_EQ(counter.load(), grants.load()) << "lost updates";
}

}  // namespace
}  // namespace redlock
