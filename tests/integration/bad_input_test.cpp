// Bad input at the API: each case has one defined answer (docs/errors.md, "Bad input"), never a
// crash, a hang or a grant that should not be. Zero / negative ttl, an empty resource name, a
// resource listed twice and an empty token are in errors_test.cpp (BadInput.*).
#include <gtest/gtest.h>

#include <future>
#include <string>
#include <thread>
#include <vector>

#include "redis_server.hpp"
#include "redlock/redlock.hpp"
#include "test_config.hpp"

namespace redlock {
namespace {

using namespace std::chrono_literals;
using test::RedisCluster;

Config quiet(Config c) {
  c.check_persistence = false;
  c.on_warning = [](const std::string&) {};
  return c;
}

// The configuration error that constructing a client with `c` throws, or none.
std::error_code construction_error(const Config& c, std::string* what = nullptr) {
  try {
    Client client(c);
  } catch (const Error& e) {
    if (what) *what = e.what();
    return e.code();
  }
  return {};
}

std::error_code parse_error(const std::string& list, std::string* what = nullptr) {
  try {
    (void)Config::from_node_list(list);
  } catch (const Error& e) {
    if (what) *what = e.what();
    return e.code();
  }
  return {};
}

TEST(BadInput, ZeroNodesIsAnInvalidConfiguration) {
  Config none;
  std::string what;
  EXPECT_EQ(construction_error(none, &what), Errc::invalid_config);
  EXPECT_NE(what.find("node"), std::string::npos) << what;
  for (const char* list : {"", " ", ",", " , "}) {
    EXPECT_EQ(parse_error(list, &what), Errc::invalid_config) << "'" << list << "'";
    EXPECT_NE(what.find("node"), std::string::npos) << what;
  }
}

// The node list refuses one address spelled twice: the host's case, zeros before the port, a
// database or credentials do not make it another server.
TEST(BadInput, OneAddressSpelledTwiceIsRefusedInTheList) {
  for (const char* list : {
           "redis://127.0.0.1:7001,redis://127.0.0.1:7001",
           "redis://LocalHost:7001,redis://localhost:7001",
           "redis://127.0.0.1:7001,redis://127.0.0.1:07001",
           "redis://127.0.0.1:7001,redis://127.0.0.1:7001/3",
           "redis://127.0.0.1:7001,redis://:pw@127.0.0.1:7001",
           "redis://127.0.0.1:7001,redis://user:pw@127.0.0.1:7001/0",
       }) {
    std::string what;
    EXPECT_EQ(parse_error(list, &what), Errc::invalid_config) << list;
    EXPECT_NE(what.find("7001"), std::string::npos) << what << ": names the entry";
    EXPECT_EQ(what.find("pw"), std::string::npos) << what << ": never shows a password";
  }
}

// Spellings the list cannot tell apart without asking the network (a name and its address):
// the server is then found by what it answers, and never votes twice.
TEST(BadInput, OneServerUnderTwoAddressesNeverVotesTwice) {
  RedisCluster cluster(1);
  std::string gone;
  {
    RedisCluster stopped(1);
    gone = stopped[0].url();  // a port nobody listens on
  }
  auto port = std::to_string(cluster[0].port());
  Config c = quiet(Config::from_node_list("redis://127.0.0.1:" + port +
                                          ",redis://localhost:" + port + "," + gone));
  c.request_timeout = 500ms;
  c.retry_count = 0;
  Client client(c);
  // Quorum 2 of 3: one server counted twice would grant alone.
  for (int i = 0; i < 3; ++i) {
    auto r = client.try_acquire("twice", 5000ms);
    EXPECT_FALSE(r) << "a false grant: " << r.message();
    EXPECT_TRUE(r.error == Errc::not_acquired || r.error == Errc::no_quorum) << r.message();
    EXPECT_LE(r.votes.yes(), 1u) << r.message();
    for (std::size_t n : {0u, 1u}) {
      const auto& v = r.votes.nodes[n];
      if (v.vote == Vote::failed) {
        EXPECT_TRUE(v.error == Errc::duplicate_node || v.error == Errc::connect_failed ||
                    v.error == Errc::not_connected)
            << r.message();
      }
    }
  }
  EXPECT_TRUE(test::eventually([&] { return cluster.count_existing("redlock:twice") == 0; }));
}

// Resource names are bytes: NUL, CR LF, RESP-looking text, invalid UTF-8 and braces are kept
// as they are, and each is a lock of its own.
TEST(BadInput, BinaryResourceNamesAreKeptByteForByte) {
  RedisCluster cluster(3);
  Client client(quiet(test::fast_config(cluster)));
  const std::vector<std::string> names = {
      std::string("a\x01"
                  "b",
                  3),
      "\r\n*1\r\n$8\r\nFLUSHALL\r\n",
      "\xff\xfe\x80",
      "with space",
      "{slot}tag",
      "\xe6\x97\xa5\xe6\x9c\xac",
  };
  std::vector<Lock> held;
  for (const auto& name : names) {
    auto r = client.try_acquire(name, 5000ms);
    ASSERT_TRUE(r) << r.message();
    EXPECT_EQ(r.lock.resource(), name);
    EXPECT_TRUE(test::eventually(
        [&] { return cluster.count_holding("redlock:" + name, r.lock.token) == 3; }));
    held.push_back(r.lock);
  }
  // "a\x01" "b" is not "a": a lock of its own.
  auto a = client.try_acquire("a", 5000ms);
  ASSERT_TRUE(a) << a.message();
  held.push_back(a.lock);
  EXPECT_EQ(cluster[0].command({"DBSIZE"}), std::to_string(names.size() + 1)) << "no other key";
  // The one byte no name may hold: it separates a lock's key from its auxiliary keys
  // (docs/architecture.md, "Keys").
  auto nul = client.try_acquire(std::string("a\0b", 3), 5000ms);
  EXPECT_EQ(nul.error, Errc::invalid_argument) << nul.message();
  for (const auto& lock : held) {
    auto rel = client.release(lock);
    EXPECT_TRUE(rel) << rel.message();
  }
  EXPECT_TRUE(test::eventually([&] { return cluster[0].command({"DBSIZE"}) == "0"; }));
}

TEST(BadInput, AHugeResourceNameWorksEndToEnd) {
  RedisCluster cluster(3);
  Config c = quiet(test::fast_config(cluster));
  c.request_timeout = 2000ms;
  Client client(c);
  std::string name(1 << 20, 'r');  // 1 MiB
  name[12345] = '\x01';
  auto r = client.try_acquire(name, 5000ms);
  ASSERT_TRUE(r) << r.message().substr(0, 300);
  EXPECT_TRUE(test::eventually(
      [&] { return cluster.count_holding("redlock:" + name, r.lock.token) == 3; }));
  auto e = client.extend(r.lock, 5000ms);
  EXPECT_TRUE(e) << e.message().substr(0, 300);
  auto rel = client.release(r.lock);
  EXPECT_TRUE(rel) << rel.message().substr(0, 300);
  EXPECT_TRUE(test::eventually([&] { return cluster[0].command({"DBSIZE"}) == "0"; }));
}

TEST(BadInput, TtlsAtAndBeyondTheLimits) {
  RedisCluster cluster(3);
  Client client(quiet(test::fast_config(cluster)));
  // Not above the drift allowance (ttl * 0.01 + 2 ms): nothing would be left of it.
  for (Milliseconds ttl : {1ms, 2ms}) {
    auto r = client.try_acquire("t", ttl);
    EXPECT_EQ(r.error, Errc::invalid_argument) << ttl.count();
    EXPECT_NE(r.detail.find("drift"), std::string::npos) << r.detail;
  }
  // Above the longest duration the library times, up to the largest value the type holds.
  for (Milliseconds ttl : {longest_duration + 1ms, Milliseconds::max()}) {
    auto r = client.try_acquire("t", ttl);
    EXPECT_EQ(r.error, Errc::invalid_argument) << ttl.count();
    EXPECT_NE(r.detail.find("longest"), std::string::npos) << r.detail;
  }
  auto most_negative = client.try_acquire("t", Milliseconds::min());
  EXPECT_EQ(most_negative.error, Errc::invalid_argument);
  EXPECT_EQ(cluster.count_existing("redlock:t"), 0u) << "nothing was sent";

  // The longest duration itself is a lock of about 34.8 years, on the servers too.
  auto longest = client.try_acquire("t", longest_duration);
  ASSERT_TRUE(longest) << longest.message();
  EXPECT_GT(longest.lock.validity_left(), longest_duration / 2);
  auto pttl = std::stoll(cluster[0].command({"PTTL", "redlock:t"}));
  EXPECT_GT(pttl, longest_duration.count() - 60'000);
  EXPECT_LE(pttl, longest_duration.count());

  // extend() checks its ttl the same way and leaves the lock as it was.
  Lock lock = longest.lock;
  auto before = lock.valid_until;
  for (Milliseconds ttl : {0ms, -1ms, 2ms, longest_duration + 1ms, Milliseconds::max()}) {
    auto e = client.extend(lock, ttl);
    EXPECT_EQ(e.error, Errc::invalid_argument) << ttl.count();
    EXPECT_EQ(lock.valid_until, before);
  }
  EXPECT_GT(std::stoll(cluster[0].command({"PTTL", "redlock:t"})), longest_duration.count() / 2);
  EXPECT_TRUE(client.release(lock));
}

// A wait that ended before it began is a caller error; a zero wait is one attempt.
TEST(BadInput, AWaitInThePastIsRefusedAndAZeroWaitTriesOnce) {
  RedisCluster cluster(3);
  Client client(quiet(test::fast_config(cluster)));
  for (Milliseconds wait : {-1ms, Milliseconds::min()}) {
    auto r = client.acquire("w", 5000ms, wait);
    EXPECT_EQ(r.error, Errc::invalid_argument) << wait.count();
    EXPECT_NE(r.detail.find("wait"), std::string::npos) << r.detail;
    EXPECT_EQ(r.attempts, 0);
  }
  EXPECT_EQ(cluster.count_existing("redlock:w"), 0u);
  auto held = client.try_acquire("w", 5000ms);
  ASSERT_TRUE(held) << held.message();
  auto once = client.acquire("w", 5000ms, 0ms);
  EXPECT_EQ(once.error, Errc::not_acquired) << once.message();
  EXPECT_EQ(once.attempts, 1);
  // A Mutex deadline in the past tries once too.
  Mutex m(client, "w");
  EXPECT_FALSE(m.try_lock_until(Clock::now() - 1h));
  EXPECT_TRUE(client.release(held.lock));
  Mutex free_one(client, "free");
  EXPECT_TRUE(free_one.try_lock_until(Clock::now() - 1h)) << "one attempt, on a free resource";
  free_one.unlock();
}

// Tokens are opaque: any non-empty one is looked up as it is, and only the holder's own
// matches. None of these releases or extends the holder's lock.
TEST(BadInput, MalformedTokensNeverMatchAHolder) {
  RedisCluster cluster(3);
  Client client(quiet(test::fast_config(cluster)));
  auto held = client.try_acquire("tok", 5000ms);
  ASSERT_TRUE(held) << held.message();
  const std::string& real = held.lock.token;
  std::string upper = real;
  for (auto& ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  ASSERT_NE(upper, real) << "the token has hex letters";
  const std::vector<std::string> tokens = {
      "zz",
      upper,
      real + "0",
      real.substr(0, 16),
      real.substr(0, 16) + std::string("\0", 1) + real.substr(17),
      " " + real,
      std::string(1 << 20, 'f'),
      "*",
      "' or 1 == 1 --",
  };
  for (const auto& t : tokens) {
    auto rel = client.release(Lock("tok", t));
    EXPECT_EQ(rel.error, Errc::not_held) << rel.message();
    EXPECT_EQ(rel.released, 0u);
    Lock forged("tok", t);
    auto e = client.extend(forged, 60'000ms);
    EXPECT_EQ(e.error, Errc::not_held) << e.message().substr(0, 200);
  }
  EXPECT_EQ(cluster.count_holding("redlock:tok", real), 3u);
  EXPECT_LE(std::stoll(cluster[0].command({"PTTL", "redlock:tok"})), 5000) << "not extended";
  EXPECT_TRUE(client.release(held.lock));
}

TEST(BadInput, RequestsWithoutAResourceAreInvalid) {
  RedisCluster cluster(1);
  Client client(quiet(test::fast_config(cluster)));
  auto none = client.acquire(AcquireRequest{{}, 1000ms, 0ms});
  EXPECT_EQ(none.error, Errc::invalid_argument);
  EXPECT_NE(none.detail.find("no resource"), std::string::npos) << none.detail;
  auto one_empty = client.acquire(AcquireRequest{{"a", ""}, 1000ms, 0ms});
  EXPECT_EQ(one_empty.error, Errc::invalid_argument);
  Lock nameless;
  nameless.token = "00ff";
  EXPECT_EQ(client.release(nameless).error, Errc::invalid_argument);
  EXPECT_EQ(client.extend(nameless, 1000ms).error, Errc::invalid_argument);
  // The asynchronous forms answer the same, once, through their callback.
  std::promise<AcquireResult> p;
  client.acquire_async(AcquireRequest{{}, 1000ms, 0ms},
                       [&p](AcquireResult r) { p.set_value(std::move(r)); });
  auto f = p.get_future();
  ASSERT_EQ(f.wait_for(5s), std::future_status::ready);
  EXPECT_EQ(f.get().error, Errc::invalid_argument);
  EXPECT_EQ(cluster[0].command({"DBSIZE"}), "0");
}

// After the client is gone: a Lock is plain data (another client can release it); a HeldLock
// is lost and its release says shutting_down; a Mutex throws shutting_down.
TEST(BadInput, UseAfterTheClientIsDestroyed) {
  RedisCluster cluster(3);
  Config c = quiet(test::fast_config(cluster));
  Lock plain;
  HeldLock kept;
  std::unique_ptr<Mutex> m;
  {
    Client client(c);
    auto r = client.try_acquire("plain", 5000ms);
    ASSERT_TRUE(r) << r.message();
    plain = r.lock;
    auto h = client.hold("kept");
    ASSERT_TRUE(h) << h.message();
    kept = std::move(h.lock);
    m = std::make_unique<Mutex>(client, "mutex");
  }
  EXPECT_FALSE(kept.valid());
  EXPECT_TRUE(kept.lost());
  EXPECT_EQ(kept.lost_flag().reason(), Errc::shutting_down);
  EXPECT_EQ(kept.release().error, Errc::shutting_down);
  try {
    m->lock();
    FAIL() << "expected redlock::Error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::shutting_down);
  }
  m.reset();
  Client other(c);
  auto rel = other.release(plain);
  EXPECT_TRUE(rel) << rel.message();
  EXPECT_GE(rel.released, 2u);  // counted at the quorum
  EXPECT_TRUE(test::eventually([&] { return cluster.count_existing("redlock:plain") == 0; }));
}

}  // namespace
}  // namespace redlock
