// The read-write lock's turn rules, script by script on one real server: the line is laid out by
// hand (acquire.lua's layout: the queue by place, the turns by when each ends on the node's
// clock, a turn held on the lock key as "turn" NUL ticket), the waiters' clients are one hiredis
// connection subscribed to their channels, and acquire.lua runs as the client sends it. Each
// test is the case a rule of acquire.lua exists for; the simulator found the first two
// (docs/simulation.md, F1 and F2).
#include <gtest/gtest.h>
#include <hiredis/hiredis.h>

#include <string>
#include <vector>

#include "core/keys.hpp"
#include "redis_server.hpp"
#include "redlock_scripts.hpp"

namespace redlock {
namespace {

using test::RedisCluster;

const std::string kLock = "redlock:doc";
const std::string kWriterChannel = "redlock:turn:w";
const std::string kReaderChannel = "redlock:turn:r";
const std::string kToken = "0123456789abcdef0123456789abcdef.";

std::string aux(std::string_view kind) { return detail::aux_key(kLock, kind); }
std::string turn_value(const std::string& ticket) { return std::string("turn\0", 5) + ticket; }

// The waiters' clients: both channels have a subscriber, so every waiter below is alive.
class Listener {
 public:
  explicit Listener(int port) : c_(redisConnect("127.0.0.1", port)) {
    if (c_ == nullptr || c_->err) return;
    auto* r = static_cast<redisReply*>(
        redisCommand(c_, "SUBSCRIBE %s %s", kWriterChannel.c_str(), kReaderChannel.c_str()));
    if (r) freeReplyObject(r);
    // The second channel's confirmation.
    void* second = nullptr;
    if (redisGetReply(c_, &second) == REDIS_OK && second)
      freeReplyObject(static_cast<redisReply*>(second));
  }
  ~Listener() {
    if (c_) redisFree(c_);
  }
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;
  bool ok() const { return c_ != nullptr && c_->err == 0; }

 private:
  redisContext* c_;
};

long long node_now_ms(const test::RedisServer& node) {
  return std::stoll(node.command(
      {"EVAL", "local t = redis.call('TIME') return t[1] * 1000 + math.floor(t[2] / 1000)", "0"}));
}

// acquire.lua as the client sends it for a waiter: ttl 5 s, no fencing, its ticket and place,
// the line kept 10 s, turns of 200 ms; a reader adds 'shared'.
std::string ask(const test::RedisServer& node, const std::string& ticket, long long place,
                bool reader) {
  std::vector<std::string> argv{
      "EVAL", detail::lua::acquire_body, "1",     kLock, kToken, "5000", "0",
      ticket, std::to_string(place),     "10000", "200"};
  if (reader) argv.push_back("shared");
  return node.command(argv);
}

// A line of two whose turns both run (1.5 s left), `first` before `second`, and the lock key
// holding the turn of `second`, the waiter that then asks at its turn.
void two_turns(const test::RedisServer& node, const std::string& first, const std::string& second) {
  auto now = node_now_ms(node);
  node.command({"ZADD", aux(detail::kQueue), "100", first, "200", second});
  node.command({"HSET", aux(detail::kTurns), first, std::to_string(now + 1500), second,
                std::to_string(now + 1500)});
  node.command({"SET", kLock, turn_value(second), "PX", "1500"});
}

// A reader that is not yet in this node's line, whose place is before a waiting writer's, is
// not held back by that writer: it comes first (its place is the same on every node).
TEST(ReadWriteTurns, AWriterBehindAReadersPlaceDoesNotHoldItBack) {
  RedisCluster cluster(1);
  Listener listener(cluster[0].port());
  ASSERT_TRUE(listener.ok());
  const std::string writer = kWriterChannel + "#1@200";
  cluster[0].command({"ZADD", aux(detail::kQueue), "200", writer});
  auto r = ask(cluster[0], kReaderChannel + "#r1@200", 100, true);
  EXPECT_EQ(r.substr(0, 1), "1") << "refused: " << r;
  EXPECT_NE(cluster[0].command({"ZSCORE", aux(detail::kReaders), kToken}), "(nil)");
  EXPECT_EQ(cluster[0].command({"HGET", aux(detail::kTurns), writer}), "(nil)")
      << "the writer behind the reader was given a turn";
}

// Where a reader before a waiting writer has a turn that runs, a reader behind that writer (on
// a free lock key) is refused, and the writer's turn does not begin beside the reader's: the
// reader ahead comes first, and two turns never run at once.
TEST(ReadWriteTurns, AWritersTurnWaitsForAReaderAheadWhoseTurnRuns) {
  RedisCluster cluster(1);
  Listener listener(cluster[0].port());
  ASSERT_TRUE(listener.ok());
  const std::string first = kReaderChannel + "#r0@2000";
  const std::string writer = kWriterChannel + "#1@200";
  auto now = node_now_ms(cluster[0]);
  cluster[0].command({"ZADD", aux(detail::kQueue), "100", first, "200", writer});
  cluster[0].command({"HSET", aux(detail::kTurns), first, std::to_string(now + 2000)});
  auto r = ask(cluster[0], kReaderChannel + "#r2@200", 300, true);
  EXPECT_EQ(r.substr(0, 1), "0") << "granted past a waiting writer: " << r;
  EXPECT_EQ(cluster[0].command({"HGET", aux(detail::kTurns), writer}), "(nil)")
      << "the writer's turn began beside the reader's";
  EXPECT_NE(cluster[0].command({"GET", kLock}), turn_value(writer));
}

// A reader asking at its own turn, refused for a writer ahead whose turn runs, stands in line
// again (its turn ends); the lock key then holds the writer's turn, not the reader's ended one,
// which would refuse everyone, the writer too, until its ttl (F1).
TEST(ReadWriteTurns, AReaderRefusedAtItsTurnLeavesTheKeyToTheTurnAhead) {
  RedisCluster cluster(1);
  Listener listener(cluster[0].port());
  ASSERT_TRUE(listener.ok());
  const std::string writer = kWriterChannel + "#1@200";
  const std::string reader = kReaderChannel + "#r1@200";
  two_turns(cluster[0], writer, reader);
  auto r = ask(cluster[0], reader, 200, true);
  EXPECT_EQ(r.substr(0, 1), "0") << "granted past a waiting writer: " << r;
  EXPECT_EQ(cluster[0].command({"GET", kLock}), turn_value(writer));
}

// The mutex's side of it: a writer asking at its own turn, refused for an earlier turn that
// runs (a reader's, since readers share theirs), stands in line again; the lock key then holds
// that earlier turn, not the writer's ended one (F2).
TEST(ReadWriteTurns, AWriterRefusedAtItsTurnLeavesTheKeyToTheTurnAhead) {
  RedisCluster cluster(1);
  Listener listener(cluster[0].port());
  ASSERT_TRUE(listener.ok());
  const std::string first = kReaderChannel + "#r0@2000";
  const std::string writer = kWriterChannel + "#1@200";
  two_turns(cluster[0], first, writer);
  auto r = ask(cluster[0], writer, 200, false);
  EXPECT_EQ(r.substr(0, 1), "0") << "granted past a turn that runs: " << r;
  EXPECT_EQ(cluster[0].command({"GET", kLock}), turn_value(first));
}

// A reader's refusal that drops a waiter whose turn was missed (its client no longer listens)
// while the lock key holds that turn leaves the key to the turn that runs ahead: a turn whose
// waiter has left the turns is no turn but a value that refuses everyone until its ttl (found
// by the simulator with every kind on: seed 360657, docs/simulation.md).
TEST(ReadWriteTurns, AReadersRefusalDropsAMissedTurnFromTheKeyToo) {
  RedisCluster cluster(1);
  Listener listener(cluster[0].port());
  ASSERT_TRUE(listener.ok());
  const std::string gone = "redlock:turn:gone#1@200";  // nobody listens on its channel
  const std::string writer = kWriterChannel + "#2@200";
  two_turns(cluster[0], gone, writer);
  cluster[0].command({"SET", kLock, turn_value(gone), "PX", "1500"});
  auto r = ask(cluster[0], kReaderChannel + "#r3@200", 300, true);
  EXPECT_EQ(r.substr(0, 1), "0") << "granted past a waiting writer: " << r;
  EXPECT_EQ(cluster[0].command({"HGET", aux(detail::kTurns), gone}), "(nil)")
      << "the missed turn was not dropped";
  EXPECT_EQ(cluster[0].command({"GET", kLock}), turn_value(writer))
      << "the lock key kept the dropped turn";
}

}  // namespace
}  // namespace redlock
