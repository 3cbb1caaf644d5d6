// Old and new clients on the same nodes during a rolling migration (docs/migrating.md): our
// client beside the exact commands and scripts that node-redlock, redsync and Redisson send,
// against real redis-server processes. The peers' Lua texts below are protocol (what goes over
// the wire), copied from their public sources, each cited where it is defined.
//
// What is checked: mutual exclusion both ways (a holder of either kind refuses the other), that
// neither side's release or extension touches the other's lock, that a waiter of ours is served
// after a peer's release (which tells nobody), and, for Redisson's hash, that each side's
// commands fail with WRONGTYPE on the other's key: an error, never a grant.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <ostream>
#include <random>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "redis_server.hpp"
#include "redlock/redlock.hpp"
#include "test_config.hpp"

namespace redlock {
namespace {

using namespace std::chrono_literals;
using test::eventually;
using test::RedisCluster;
using test::RedisServer;

// node-redlock 5 (github.com/mike-marcacci/node-redlock, src/index.ts: ACQUIRE_SCRIPT,
// EXTEND_SCRIPT, RELEASE_SCRIPT), sent with EVALSHA/EVAL, KEYS = the resources as given (no
// prefix), ARGV = [value, duration in ms]; the value is randomBytes(16) in hex.
constexpr const char* kNodeRedlockAcquire = R"(
  -- Return 0 if an entry already exists.
  for i, key in ipairs(KEYS) do
    if redis.call("exists", key) == 1 then
      return 0
    end
  end

  -- Create an entry for each provided key.
  for i, key in ipairs(KEYS) do
    redis.call("set", key, ARGV[1], "PX", ARGV[2])
  end

  -- Return the number of entries added.
  return #KEYS
)";
constexpr const char* kNodeRedlockExtend = R"(
  -- Return 0 if an entry exists with a *different* lock value.
  for i, key in ipairs(KEYS) do
    if redis.call("get", key) ~= ARGV[1] then
      return 0
    end
  end

  -- Update the entry for each provided key.
  for i, key in ipairs(KEYS) do
    redis.call("set", key, ARGV[1], "PX", ARGV[2])
  end

  -- Return the number of entries updated.
  return #KEYS
)";
constexpr const char* kNodeRedlockRelease = R"(
  local count = 0
  for i, key in ipairs(KEYS) do
    -- Only remove entries for *this* lock value.
    if redis.call("get", key) == ARGV[1] then
      redis.pcall("del", key)
      count = count + 1
    end
  end

  -- Return the number of entries removed.
  return count
)";

// redsync v4 (github.com/go-redsync/redsync): the acquire is go-redis' SetNX(name, value,
// expiry) (mutex.go), which sends `SET name value px <ms> nx` for an expiry that is not whole
// seconds and `SET name value ex <s> nx` otherwise (go-redis, commands: SetNX); the value is
// 16 random bytes in standard base64. Release, extend and extend-or-take are scripts.go's
// deleteScript, touchScript and touchWithSetNXScript, KEYS = [name].
constexpr const char* kRedsyncDelete = R"(
	local val = redis.call("GET", KEYS[1])
	if val == ARGV[1] then
		return redis.call("DEL", KEYS[1])
	elseif val == false then
		return -1
	else
		return 0
	end
)";
constexpr const char* kRedsyncTouch = R"(
	if redis.call("GET", KEYS[1]) == ARGV[1] then
		return redis.call("PEXPIRE", KEYS[1], ARGV[2])
	else
		return 0
	end
)";
constexpr const char* kRedsyncTouchWithSetNX = R"(
	if redis.call("GET", KEYS[1]) == ARGV[1] then
		return redis.call("PEXPIRE", KEYS[1], ARGV[2])
	elseif redis.call("SET", KEYS[1], ARGV[1], "PX", ARGV[2], "NX") then
		return 1
	else
		return 0
	end
)";

// Redisson 3 (github.com/redisson/redisson, redisson/src/main/java/org/redisson/RedissonLock.java:
// tryLockInnerAsync, unlockInnerAsync, and renewExpirationAsync of RedissonBaseLock). KEYS[1] is
// the lock's name as given, a HASH whose field ARGV[2] (unlock: ARGV[3]) is "<uuid>:<thread id>"
// holding a hold count; ARGV[1] is the lease (lock, renew) or the unlock message; unlock's
// KEYS[2] is the channel redisson_lock__channel:{<name>} and ARGV[4] the command for it.
constexpr const char* kRedissonLock =
    "if ((redis.call('exists', KEYS[1]) == 0) "
    "or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then "
    "redis.call('hincrby', KEYS[1], ARGV[2], 1); "
    "redis.call('pexpire', KEYS[1], ARGV[1]); "
    "return nil; "
    "end; "
    "return redis.call('pttl', KEYS[1]);";
constexpr const char* kRedissonUnlock =
    "if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then "
    "return nil;"
    "end; "
    "local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); "
    "if (counter > 0) then "
    "redis.call('pexpire', KEYS[1], ARGV[2]); "
    "return 0; "
    "else "
    "redis.call('del', KEYS[1]); "
    "redis.call(ARGV[4], KEYS[2], ARGV[1]); "
    "return 1; "
    "end; "
    "return nil;";
constexpr const char* kRedissonRenew =
    "if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then "
    "redis.call('pexpire', KEYS[1], ARGV[1]); "
    "return 1; "
    "end; "
    "return 0;";

std::string random_bytes(std::size_t n) {
  static std::mt19937_64 rng{std::random_device{}()};
  std::string out(n, '\0');
  for (auto& c : out) c = static_cast<char>(rng() & 0xff);
  return out;
}

std::string hex(const std::string& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out.push_back(digits[c >> 4]);
    out.push_back(digits[c & 15]);
  }
  return out;
}

std::string base64(const std::string& bytes) {
  static const char* table = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  std::size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    std::uint32_t v = (std::uint32_t(std::uint8_t(bytes[i])) << 16) |
                      (std::uint32_t(std::uint8_t(bytes[i + 1])) << 8) | std::uint8_t(bytes[i + 2]);
    for (int s = 18; s >= 0; s -= 6) out.push_back(table[(v >> s) & 63]);
  }
  if (i + 1 == bytes.size()) {
    std::uint32_t v = std::uint32_t(std::uint8_t(bytes[i])) << 16;
    out += {table[(v >> 18) & 63], table[(v >> 12) & 63], '=', '='};
  } else if (i + 2 == bytes.size()) {
    std::uint32_t v = (std::uint32_t(std::uint8_t(bytes[i])) << 16) |
                      (std::uint32_t(std::uint8_t(bytes[i + 1])) << 8);
    out += {table[(v >> 18) & 63], table[(v >> 12) & 63], table[(v >> 6) & 63], '='};
  }
  return out;
}

// One peer client of plain string keys, as the commands it sends to one node.
struct StringPeer {
  const char* name;
  std::function<std::string()> new_value;
  // Each returns true where the node voted for the operation.
  std::function<bool(RedisServer&, const std::string& key, const std::string& value, long ms)>
      acquire_on;
  std::function<bool(RedisServer&, const std::string& key, const std::string& value, long ms)>
      extend_on;
  std::function<bool(RedisServer&, const std::string& key, const std::string& value)> release_on;
};

void PrintTo(const StringPeer& peer, std::ostream* os) { *os << peer.name; }

std::string eval(RedisServer& server, const char* script, const std::vector<std::string>& keys,
                 const std::vector<std::string>& args) {
  std::vector<std::string> argv{"EVAL", script, std::to_string(keys.size())};
  argv.insert(argv.end(), keys.begin(), keys.end());
  argv.insert(argv.end(), args.begin(), args.end());
  return server.command(argv);
}

StringPeer node_redlock() {
  return {"node_redlock", [] { return hex(random_bytes(16)); },
          [](RedisServer& s, const std::string& key, const std::string& value, long ms) {
            return eval(s, kNodeRedlockAcquire, {key}, {value, std::to_string(ms)}) == "1";
          },
          [](RedisServer& s, const std::string& key, const std::string& value, long ms) {
            return eval(s, kNodeRedlockExtend, {key}, {value, std::to_string(ms)}) == "1";
          },
          [](RedisServer& s, const std::string& key, const std::string& value) {
            return eval(s, kNodeRedlockRelease, {key}, {value}) == "1";
          }};
}

// `seconds`: an expiry of whole seconds, which go-redis sends as EX.
StringPeer redsync(bool seconds, bool touch_with_setnx) {
  return {seconds ? (touch_with_setnx ? "redsync_ex_setnx_touch" : "redsync_ex") : "redsync_px",
          [] { return base64(random_bytes(16)); },
          [seconds](RedisServer& s, const std::string& key, const std::string& value, long ms) {
            auto reply = seconds
                             ? s.command({"set", key, value, "ex", std::to_string(ms / 1000), "nx"})
                             : s.command({"set", key, value, "px", std::to_string(ms), "nx"});
            return reply == "OK";
          },
          [touch_with_setnx](RedisServer& s, const std::string& key, const std::string& value,
                             long ms) {
            return eval(s, touch_with_setnx ? kRedsyncTouchWithSetNX : kRedsyncTouch, {key},
                        {value, std::to_string(ms)}) == "1";
          },
          [](RedisServer& s, const std::string& key, const std::string& value) {
            return eval(s, kRedsyncDelete, {key}, {value}) == "1";
          }};
}

// The peer's whole operation over the cluster: granted on a quorum; a failed acquire releases
// where it was granted (as both node-redlock and redsync do).
bool peer_acquire(const StringPeer& peer, RedisCluster& cluster, const std::string& key,
                  const std::string& value, long ms) {
  std::size_t yes = 0;
  for (std::size_t i = 0; i < cluster.size(); ++i)
    yes += peer.acquire_on(cluster[i], key, value, ms);
  if (yes >= cluster.size() / 2 + 1) return true;
  for (std::size_t i = 0; i < cluster.size(); ++i) peer.release_on(cluster[i], key, value);
  return false;
}

std::size_t peer_extend(const StringPeer& peer, RedisCluster& cluster, const std::string& key,
                        const std::string& value, long ms) {
  std::size_t yes = 0;
  for (std::size_t i = 0; i < cluster.size(); ++i)
    yes += peer.extend_on(cluster[i], key, value, ms);
  return yes;
}

std::size_t peer_release(const StringPeer& peer, RedisCluster& cluster, const std::string& key,
                         const std::string& value) {
  std::size_t yes = 0;
  for (std::size_t i = 0; i < cluster.size(); ++i) yes += peer.release_on(cluster[i], key, value);
  return yes;
}

// Our client with the peers' key layout: no prefix, so that resource "job" is key "job" for
// both (docs/migrating.md, "Key layout").
Config shared_config(const RedisCluster& cluster) {
  Config c = test::fast_config(cluster);
  c.key_prefix = "";
  c.check_persistence = false;  // the fixture's servers run without persistence, knowingly
  return c;
}

AcquireRequest fenced(const std::string& resource) {
  AcquireRequest r({resource}, 5000ms, 0ms);
  r.fencing = true;
  return r;
}

class Migration : public ::testing::TestWithParam<StringPeer> {
 protected:
  RedisCluster cluster{3};
  Client ours{shared_config(cluster)};
  const StringPeer& peer = GetParam();
};

TEST_P(Migration, APeerHolderRefusesEveryFormOfOurAcquire) {
  const std::string value = peer.new_value();
  ASSERT_TRUE(peer_acquire(peer, cluster, "job", value, 10'000));
  ASSERT_EQ(cluster.count_holding("job", value), 3u);

  auto quick = ours.try_acquire("job", 5000ms);  // SET key token NX PX ttl GET
  EXPECT_FALSE(quick);
  EXPECT_EQ(quick.error, make_error_code(Errc::not_acquired)) << quick.message();
  EXPECT_GE(quick.votes.no(), 2u) << quick.message();  // the verdict comes at the quorum
  EXPECT_EQ(quick.votes.yes(), 0u) << quick.message();

  auto lined = ours.acquire("job", 5000ms, 300ms);  // acquire.lua, standing in line
  EXPECT_FALSE(lined) << lined.message();
  EXPECT_EQ(lined.votes.yes(), 0u) << lined.message();

  auto with_fence = ours.acquire(fenced("job"));  // acquire.lua with its fence counter
  EXPECT_FALSE(with_fence) << with_fence.message();
  EXPECT_EQ(with_fence.votes.yes(), 0u) << with_fence.message();

  // Our failed attempts cleaned up after themselves without touching the peer's key, nor
  // marking it (the mark is for our own tokens).
  EXPECT_EQ(cluster.count_holding("job", value), 3u);
  EXPECT_EQ(peer_extend(peer, cluster, "job", value, 10'000), 3u);
  EXPECT_EQ(peer_release(peer, cluster, "job", value), 3u);
}

TEST_P(Migration, OurHolderRefusesThePeerWhoseCommandsLeaveItAlone) {
  auto r = ours.try_acquire("job", 10'000ms);
  ASSERT_TRUE(r) << r.message();
  ASSERT_TRUE(eventually([&] { return cluster.count_holding("job", r.lock.token) == 3u; }));
  // Our token as the nodes keep it: 32 hex digits and '.' (or '!' where somebody waits).
  EXPECT_TRUE(std::regex_match(cluster[0].command({"GET", "job"}), std::regex("[0-9a-f]{32}[.!]")));

  const std::string value = peer.new_value();
  EXPECT_FALSE(peer_acquire(peer, cluster, "job", value, 10'000));
  EXPECT_EQ(peer_extend(peer, cluster, "job", value, 60'000), 0u);  // also redsync's take-if-free
  EXPECT_EQ(peer_release(peer, cluster, "job", value), 0u);
  EXPECT_EQ(cluster.count_holding("job", r.lock.token), 3u);
  // Nor did the peer's extension lengthen our lease: at most the 10 s we asked for.
  EXPECT_LE(std::stol(cluster[0].command({"PTTL", "job"})), 10'000);

  auto extended = ours.extend(r.lock, 10'000ms);
  EXPECT_TRUE(extended) << extended.message();
  ASSERT_TRUE(ours.release(r.lock));
  ASSERT_TRUE(eventually([&] { return cluster.count_existing("job") == 0u; }));
  EXPECT_TRUE(peer_acquire(peer, cluster, "job", value, 10'000));
  EXPECT_EQ(peer_release(peer, cluster, "job", value), 3u);
}

TEST_P(Migration, NeitherReleasesNorExtendsALockTheOtherTookAfterIt) {
  // Ours, released; then the peer's: our stale lock must not touch it.
  auto r = ours.try_acquire("job", 10'000ms);
  ASSERT_TRUE(r) << r.message();
  ASSERT_TRUE(ours.release(r.lock));
  ASSERT_TRUE(eventually([&] { return cluster.count_existing("job") == 0u; }));
  const std::string value = peer.new_value();
  ASSERT_TRUE(peer_acquire(peer, cluster, "job", value, 10'000));
  EXPECT_FALSE(ours.release(r.lock));
  EXPECT_FALSE(ours.extend(r.lock, 30'000ms));
  EXPECT_EQ(cluster.count_holding("job", value), 3u);
  EXPECT_LE(std::stol(cluster[0].command({"PTTL", "job"})), 10'000);

  // The peer's, released; then ours: the peer's stale value must not touch it.
  ASSERT_EQ(peer_release(peer, cluster, "job", value), 3u);
  auto again = ours.try_acquire("job", 10'000ms);
  ASSERT_TRUE(again) << again.message();
  ASSERT_TRUE(eventually([&] { return cluster.count_holding("job", again.lock.token) == 3u; }));
  EXPECT_EQ(peer_release(peer, cluster, "job", value), 0u);
  EXPECT_EQ(peer_extend(peer, cluster, "job", value, 60'000), 0u);
  EXPECT_EQ(cluster.count_holding("job", again.lock.token), 3u);
  EXPECT_TRUE(ours.release(again.lock));
}

// The peer releases with a plain DEL and tells nobody: our waiter hears it from its own
// fallback timer (retry_delay + jitter), well within its wait. It holds the lock on a quorum:
// the peer's DELs go node after node, so an attempt may come between two of them and be granted
// by the nodes already free while the last still refuses it (a clean-clone CI under TSan saw 2).
TEST_P(Migration, OurWaiterIsServedAfterThePeerReleases) {
  const std::string value = peer.new_value();
  ASSERT_TRUE(peer_acquire(peer, cluster, "job", value, 30'000));
  std::thread releaser([&] {
    std::this_thread::sleep_for(300ms);
    peer_release(peer, cluster, "job", value);
  });
  auto r = ours.acquire("job", 5000ms, 10'000ms);
  releaser.join();
  ASSERT_TRUE(r) << r.message();
  EXPECT_GE(cluster.count_holding("job", r.lock.token), 2u);
  EXPECT_TRUE(ours.release(r.lock));
}

// Both sides race for one resource, round after round: at most one of them holds it, and
// after both released nothing is left on any node.
TEST_P(Migration, RacingForOneResourceAtMostOneSideHoldsIt) {
  ASSERT_TRUE(eventually([&] { return test::connected_to_all(ours); }));
  int ours_won = 0, peer_won = 0;
  for (int round = 0; round < 40; ++round) {
    const std::string key = "race-" + std::to_string(round);
    const std::string value = peer.new_value();
    std::atomic<bool> go{false};
    bool peer_holds = false;
    std::thread rival([&] {
      while (!go.load()) std::this_thread::yield();
      peer_holds = peer_acquire(peer, cluster, key, value, 10'000);
    });
    go = true;
    auto r = ours.try_acquire(key, 10'000ms);
    rival.join();
    ASSERT_FALSE(r && peer_holds) << "round " << round << ": both hold " << key;
    ours_won += bool(r);
    peer_won += peer_holds;
    if (peer_holds) {
      EXPECT_GE(cluster.count_holding(key, value), 2u) << "round " << round;
      peer_release(peer, cluster, key, value);
    }
    if (r) {
      EXPECT_TRUE(ours.release(r.lock)) << "round " << round;
    }
    EXPECT_TRUE(eventually([&] { return cluster.count_existing(key) == 0u; })) << "round " << round;
  }
  // How often each side won depends on timing: reported, not asserted.
  RecordProperty("ours_won", ours_won);
  RecordProperty("peer_won", peer_won);
}

// The negative control of all the above: with our default prefix, "redlock:", resource "job"
// is another key than the peer's "job", and the two exclude nothing.
TEST_P(Migration, WithOurDefaultPrefixTheSameNameIsAnotherKeyAndNothingIsExcluded) {
  Client by_default(test::fast_config(cluster));
  const std::string value = peer.new_value();
  ASSERT_TRUE(peer_acquire(peer, cluster, "job", value, 10'000));
  auto r = by_default.try_acquire("job", 10'000ms);
  EXPECT_TRUE(r) << "both hold job: " << r.message();
  EXPECT_EQ(cluster.count_holding("job", value), 3u);
  if (r) {
    EXPECT_TRUE(by_default.release(r.lock));
  }
}

INSTANTIATE_TEST_SUITE_P(Peers, Migration,
                         ::testing::Values(node_redlock(), redsync(false, false),
                                           redsync(true, false), redsync(true, true)),
                         [](const ::testing::TestParamInfo<StringPeer>& info) {
                           return std::string(info.param.name);
                         });

// Redisson keeps a lock in a HASH. Each side's commands meet the other's key with WRONGTYPE:
// exclusion holds, as an error on the node and never as a grant, and the key is left alone.
class MigrationRedisson : public ::testing::Test {
 protected:
  RedisCluster cluster{3};
  Client ours{shared_config(cluster)};
  const std::string field = "8a7b3c4d-1e2f-4a5b-9c8d-7e6f5a4b3c2d:1";
  const std::string channel = "redisson_lock__channel:{job}";

  std::size_t redisson_lock(long ms) {
    std::size_t granted = 0;
    for (std::size_t i = 0; i < cluster.size(); ++i)
      granted += eval(cluster[i], kRedissonLock, {"job"}, {std::to_string(ms), field}) == "(nil)";
    return granted;
  }
  std::size_t hold_count_is(const std::string& count) {
    std::size_t n = 0;
    for (std::size_t i = 0; i < cluster.size(); ++i)
      n += cluster[i].command({"HGET", "job", field}) == count;
    return n;
  }
};

TEST_F(MigrationRedisson, ItsHashRefusesUsWithWrongtypeAndStaysUntouched) {
  ASSERT_EQ(redisson_lock(30'000), 3u);

  ASSERT_TRUE(eventually([&] { return test::connected_to_all(ours); }));
  auto quick = ours.try_acquire("job", 5000ms);
  EXPECT_FALSE(quick);
  EXPECT_EQ(quick.error, make_error_code(Errc::no_quorum)) << quick.message();
  EXPECT_EQ(quick.votes.yes(), 0u) << quick.message();
  EXPECT_GE(quick.votes.failed(), 2u) << quick.message();  // the verdict comes at the quorum
  for (const auto& v : quick.votes.nodes) {
    if (v.vote == Vote::pending) continue;
    EXPECT_EQ(v.vote, Vote::failed) << quick.message();
    EXPECT_EQ(v.error, make_error_code(Errc::redis_wrongtype)) << quick.message();
  }
  // A wait does not wait on a node that fails: retry_count such attempts end it.
  auto lined = ours.acquire("job", 5000ms, 10'000ms);
  EXPECT_FALSE(lined);
  EXPECT_EQ(lined.error, make_error_code(Errc::no_quorum)) << lined.message();
  EXPECT_EQ(lined.votes.yes(), 0u) << lined.message();
  EXPECT_LE(lined.attempts, 1 + shared_config(cluster).retry_count) << lined.message();
  auto with_fence = ours.acquire(fenced("job"));
  EXPECT_FALSE(with_fence);
  EXPECT_EQ(with_fence.votes.yes(), 0u) << with_fence.message();

  // A release or an extension with some token of ours: not held, nothing deleted.
  Lock stranger("job", "0123456789abcdef0123456789abcdef.");
  EXPECT_FALSE(ours.release(stranger));
  EXPECT_FALSE(ours.extend(stranger, 60'000ms));
  EXPECT_EQ(hold_count_is("1"), 3u);
  EXPECT_LE(std::stol(cluster[0].command({"PTTL", "job"})), 30'000);
  for (std::size_t i = 0; i < cluster.size(); ++i)
    EXPECT_EQ(eval(cluster[i], kRedissonUnlock, {"job", channel}, {"0", "30000", field, "PUBLISH"}),
              "1");
  EXPECT_EQ(cluster.count_existing("job"), 0u);
}

TEST_F(MigrationRedisson, OurStringRefusesItsScriptsWithWrongtypeAndStaysOurs) {
  auto r = ours.try_acquire("job", 10'000ms);
  ASSERT_TRUE(r) << r.message();
  ASSERT_TRUE(eventually([&] { return cluster.count_holding("job", r.lock.token) == 3u; }));

  for (std::size_t i = 0; i < cluster.size(); ++i) {
    auto lock = eval(cluster[i], kRedissonLock, {"job"}, {"30000", field});
    EXPECT_EQ(lock.rfind("(error) ", 0), 0u) << lock;
    EXPECT_NE(lock.find("WRONGTYPE"), std::string::npos) << lock;
    auto renew = eval(cluster[i], kRedissonRenew, {"job"}, {"30000", field});
    EXPECT_NE(renew.find("WRONGTYPE"), std::string::npos) << renew;
    auto unlock =
        eval(cluster[i], kRedissonUnlock, {"job", channel}, {"0", "30000", field, "PUBLISH"});
    EXPECT_NE(unlock.find("WRONGTYPE"), std::string::npos) << unlock;
  }
  EXPECT_EQ(cluster.count_holding("job", r.lock.token), 3u);
  EXPECT_LE(std::stol(cluster[0].command({"PTTL", "job"})), 10'000);
  EXPECT_TRUE(ours.release(r.lock));
  EXPECT_EQ(redisson_lock(30'000), 3u);  // and once ours is gone, Redisson takes it
}

// An RLock lives on one server: where that is one node of our three, we find a quorum without
// it, and both hold the name. Sharing nodes excludes only over the same quorum system.
TEST_F(MigrationRedisson, AnRLockOnOneOfOurNodesExcludesNothing) {
  ASSERT_EQ(eval(cluster[0], kRedissonLock, {"job"}, {"30000", field}), "(nil)");
  ASSERT_TRUE(eventually([&] { return test::connected_to_all(ours); }));
  auto r = ours.try_acquire("job", 10'000ms);
  EXPECT_TRUE(r) << "expected a grant from nodes 1 and 2: " << r.message();
  EXPECT_EQ(cluster[0].command({"HGET", "job", field}), "1");
  if (r) {
    EXPECT_TRUE(ours.release(r.lock));
  }
}

}  // namespace
}  // namespace redlock
