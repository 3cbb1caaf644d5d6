// The simulated node alone: expiry on its own clock (and the one time of a script), WRONGTYPE,
// OOM at a script's first write, NOSCRIPT, pub/sub, restarts, inspection, the conversions of
// sim/redis/README.md one by one, and its replies decoded by the library's own decoders.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <hiredis/hiredis.h>

#include "core/replies.hpp"
#include "core/safeguards.hpp"
#include "hiredis_reply.hpp"
#include "node.hpp"
#include "scripts.hpp"

namespace redlock::sim {

inline void PrintTo(const Value& v, std::ostream* os) { *os << v.to_string(); }

namespace {

using Args = std::vector<std::string>;

Value arr(std::vector<Value> v) { return Value::array(std::move(v)); }
Value i(std::int64_t n) { return Value::integer(n); }
Value b(std::string s) { return Value::bulk(std::move(s)); }
std::string redis_sha(const std::string& body) {
  RedisNode n;
  return n.execute({"SCRIPT", "LOAD", body}, 0, 1).str;
}

class NodeTest : public ::testing::Test {
 protected:
  Value run(const Args& argv, std::uint64_t conn = 1) { return node.execute(argv, now, conn); }
  Value eval(const std::string& body, const Args& keys = {}, const Args& args = {}) {
    Args argv = {"EVAL", body, std::to_string(keys.size())};
    argv.insert(argv.end(), keys.begin(), keys.end());
    argv.insert(argv.end(), args.begin(), args.end());
    return run(argv);
  }

  RedisNode node{NodeOptions{}, 0};
  std::int64_t now = 1000;
};

TEST_F(NodeTest, KeyLivesUntilItsDeadlineOnTheNodesClock) {
  EXPECT_EQ(run({"SET", "k", "v", "PX", "100"}), Value::status("OK"));
  now += 100;  // at the deadline: still there (Redis expires when now > deadline)
  EXPECT_EQ(run({"PTTL", "k"}), i(0));
  EXPECT_EQ(run({"GET", "k"}), b("v"));
  now += 1;
  EXPECT_EQ(run({"GET", "k"}), Value::nil());
  EXPECT_EQ(run({"EXISTS", "k"}), i(0));
  EXPECT_EQ(run({"PTTL", "k"}), i(-2));
  EXPECT_TRUE(node.keys(now).empty());
}

TEST_F(NodeTest, ExpiredKeyStaysGoneWhenTheClockStepsBack) {
  run({"SET", "k", "v", "PX", "100"});
  now += 500;
  EXPECT_EQ(run({"TIME"}), arr({b("1"), b("500000")}));  // any command drops expired keys
  now -= 450;                                            // back before the deadline
  EXPECT_EQ(run({"GET", "k"}), Value::nil());
}

TEST_F(NodeTest, InspectionNeverShowsExpiredKeys) {
  run({"SET", "k", "v", "PX", "100"});
  EXPECT_TRUE(node.key("k", now + 100).has_value());
  EXPECT_FALSE(node.key("k", now + 101).has_value());
  EXPECT_TRUE(node.keys(now + 101).empty());
  EXPECT_EQ(node.dump(now + 101), "(empty)\n");
}

TEST_F(NodeTest, AScriptSeesOneTime) {
  run({"SET", "k", "v", "PX", "10"});
  // Within one script the key's fate and TIME come from the script's start.
  EXPECT_EQ(eval("local a = redis.call('GET', 'k') local t = redis.call('TIME') "
                 "return {a, redis.call('PTTL', 'k'), t[1], t[2]}"),
            arr({b("v"), i(10), b("1"), b("0")}));
  now += 11;
  EXPECT_EQ(eval("return redis.call('GET', 'k')"), Value::nil());
}

TEST_F(NodeTest, TimeAnswersMilliseconds) {
  now = 1764223618123;
  EXPECT_EQ(run({"TIME"}), arr({b("1764223618"), b("123000")}));
}

TEST_F(NodeTest, WrongTypeFromEveryCommandOnAnotherType) {
  const std::string wrong = "WRONGTYPE Operation against a key holding the wrong kind of value";
  run({"HSET", "h", "f", "v"});
  for (const Args& c : std::vector<Args>{{"GET", "h"},
                                         {"INCR", "h"},
                                         {"SETRANGE", "h", "0", "x"},
                                         {"ZADD", "h", "1", "m"},
                                         {"ZRANGE", "h", "0", "-1"},
                                         {"SADD", "h", "m"},
                                         {"SMEMBERS", "h"},
                                         {"SET", "h", "v", "GET"}})
    EXPECT_EQ(run(c), Value::error(wrong)) << c[0];
  EXPECT_EQ(run({"HGET", "h", "f"}), b("v"));
  // In a script: redis.call raises it with the script's place, redis.pcall returns it.
  Value raised = eval("return redis.call('GET', 'h')");
  EXPECT_EQ(raised.error_code(), "WRONGTYPE");
  EXPECT_NE(raised.str.find(" script: "), std::string::npos);
  EXPECT_NE(raised.str.find(", on @user_script:1."), std::string::npos);
  EXPECT_EQ(eval("return redis.pcall('GET', 'h').err"), b(wrong));
  // SET without GET overwrites any type.
  EXPECT_EQ(run({"SET", "h", "v"}), Value::status("OK"));
}

TEST_F(NodeTest, OutOfMemoryRefusesAtAScriptsFirstWrite) {
  const Value oom = Value::error("OOM command not allowed when used memory > 'maxmemory'.");
  run({"SET", "a", "1"});
  node.set_oom(true);
  EXPECT_EQ(run({"SET", "b", "1"}), oom);
  EXPECT_EQ(run({"GET", "a"}), b("1"));
  EXPECT_EQ(run({"DEL", "nokey"}), i(0));  // deletes never grow memory
  // The reads before the first write ran: the error is the SET's, at line 2.
  Value r = eval("local v = redis.call('GET', 'a')\nredis.call('SET', 'x', v)\nreturn 1");
  EXPECT_EQ(r.error_code(), "OOM");
  EXPECT_NE(r.str.find("@user_script:2."), std::string::npos) << r.str;
  EXPECT_FALSE(node.key("x", now).has_value());
  // A script that wrote already (even a write that grows nothing) goes on to the end.
  EXPECT_EQ(eval("redis.call('DEL', 'nokey') return redis.call('SET', 'x', '1')"),
            Value::status("OK"));
  node.set_oom(false);
  EXPECT_EQ(run({"SET", "b", "1"}), Value::status("OK"));
}

TEST_F(NodeTest, EvalshaOfAnUnknownDigestAnswersNoscript) {
  const Value noscript = Value::error("NOSCRIPT No matching script. Please use EVAL.");
  EXPECT_EQ(run({"EVALSHA", std::string(kRelease.sha), "1", "k", "t."}), noscript);
  EXPECT_EQ(run({"SCRIPT", "LOAD", std::string(kRelease.body)}), b(std::string(kRelease.sha)));
  EXPECT_EQ(node.scripts_loaded(), 1u);
  EXPECT_EQ(run({"EVALSHA", std::string(kRelease.sha), "1", "k", "t."}), i(0));
  // Upper case digests are the same script, as in Redis.
  std::string upper(kRelease.sha);
  for (auto& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  EXPECT_EQ(run({"EVALSHA", upper, "1", "k", "t."}), i(0));
  node.restart(true, now);
  EXPECT_EQ(run({"EVALSHA", std::string(kRelease.sha), "1", "k", "t."}), noscript);
  // EVAL loads it too.
  EXPECT_EQ(run({"EVAL", std::string(kRelease.body), "1", "k", "t."}), i(0));
  EXPECT_EQ(run({"EVALSHA", std::string(kRelease.sha), "1", "k", "t."}), i(0));
}

TEST_F(NodeTest, PublishCountsSubscribersAndQueuesDeliveries) {
  node.subscribe(7, "ch");
  EXPECT_EQ(run({"SUBSCRIBE", "ch"}, 5), arr({b("subscribe"), b("ch"), i(1)}));
  EXPECT_EQ(run({"SUBSCRIBE", "other"}, 5), arr({b("subscribe"), b("other"), i(2)}));
  EXPECT_EQ(run({"PUBSUB", "NUMSUB", "ch", "none"}), arr({b("ch"), i(2), b("none"), i(0)}));
  EXPECT_EQ(run({"PUBLISH", "ch", "m1"}), i(2));
  EXPECT_EQ(eval("return redis.call('PUBLISH', 'other', 'm2')"), i(1));
  EXPECT_EQ(run({"PUBLISH", "nobody", "m3"}), i(0));
  std::vector<Delivery> want = {{5, "ch", "m1"}, {7, "ch", "m1"}, {5, "other", "m2"}};
  EXPECT_EQ(node.take_deliveries(), want);
  EXPECT_TRUE(node.take_deliveries().empty());
  // A subscribed connection may only (un)subscribe and PING.
  EXPECT_EQ(run({"GET", "k"}, 5).error_code(), "ERR");
  EXPECT_EQ(run({"PING"}, 5), arr({b("pong"), b("")}));
  EXPECT_EQ(run({"UNSUBSCRIBE", "ch"}, 5), arr({b("unsubscribe"), b("ch"), i(1)}));
  node.disconnect(5);
  EXPECT_EQ(run({"PUBLISH", "other", "m"}), i(0));
  node.unsubscribe_all(7);
  EXPECT_EQ(run({"PUBLISH", "ch", "m"}), i(0));
}

TEST_F(NodeTest, RestartKeepsDataOnlyWhenAsked) {
  node.subscribe(3, "ch");
  run({"SET", "k", "v"});
  run({"SET", "short", "v", "PX", "50"});
  run({"SCRIPT", "LOAD", "return 1"});
  run({"SELECT", "2"}, 9);
  now = 61000;
  node.restart(true, now);
  EXPECT_EQ(run({"GET", "k"}), b("v"));
  EXPECT_EQ(run({"GET", "short"}), Value::nil());
  EXPECT_EQ(node.scripts_loaded(), 0u);
  EXPECT_EQ(run({"PUBLISH", "ch", "m"}), i(0));
  EXPECT_EQ(run({"GET", "k"}, 9), b("v"));  // the connection's SELECT is gone with it
  auto facts = redlock::detail::parse_info(run({"INFO"}).str);
  EXPECT_EQ(facts.uptime_s, 0);
  EXPECT_EQ(facts.role, "master");
  EXPECT_FALSE(facts.cluster_enabled);
  EXPECT_EQ(facts.run_id.size(), 40u);
  EXPECT_EQ(facts.aof_enabled, false);
  now += 2500;
  EXPECT_EQ(redlock::detail::parse_info(run({"INFO", "server"}).str).uptime_s, 2);
  node.restart(false, now);
  EXPECT_TRUE(node.keys(now).empty());
}

TEST_F(NodeTest, InfoDescribesReplicasAndClusters) {
  NodeOptions o;
  o.replica = true;
  o.cluster_enabled = true;
  o.aof_enabled = true;
  o.appendfsync = "always";
  RedisNode replica(o, 0);
  auto facts = redlock::detail::parse_info(replica.execute({"INFO"}, 0, 1).str);
  EXPECT_EQ(facts.role, "slave");
  EXPECT_TRUE(facts.cluster_enabled);
  EXPECT_EQ(facts.aof_enabled, true);
  EXPECT_EQ(replica.execute({"CONFIG", "GET", "appendfsync"}, 0, 1),
            arr({b("appendfsync"), b("always")}));
  EXPECT_EQ(replica.execute({"SET", "k", "v"}, 0, 1).error_code(), "READONLY");
}

// replica-read-only no: still a replica in INFO (the handshake must refuse it), but it takes
// writes, so a vote it gives would look like any master's.
TEST_F(NodeTest, AWritableReplicaTakesWritesAndStillSaysSlave) {
  NodeOptions o;
  o.replica = true;
  o.read_only = false;
  RedisNode replica(o, 0);
  EXPECT_EQ(redlock::detail::parse_info(replica.execute({"INFO"}, 0, 1).str).role, "slave");
  EXPECT_EQ(replica.execute({"SET", "k", "v"}, 0, 1), Value::status("OK"));
  EXPECT_EQ(replica.execute({"GET", "k"}, 0, 1), b("v"));
}

TEST_F(NodeTest, SubscribersCountsAsPubsubNumsub) {
  EXPECT_EQ(node.subscribers("c"), 0u);
  node.subscribe(7, "c");
  node.subscribe(8, "c");
  EXPECT_EQ(node.subscribers("c"), 2u);
  EXPECT_EQ(run({"PUBSUB", "NUMSUB", "c"}), arr({b("c"), Value::integer(2)}));
  node.disconnect(7);
  EXPECT_EQ(node.subscribers("c"), 1u);
  EXPECT_EQ(sha1_hex("abc"), "a9993e364706816aba3e25717850c26c9cd0d89d");
}

TEST_F(NodeTest, AuthWhenAPasswordIsSet) {
  NodeOptions o;
  o.password = "pw";
  RedisNode locked(o, 0);
  EXPECT_EQ(locked.execute({"GET", "k"}, 0, 1).error_code(), "NOAUTH");
  EXPECT_EQ(locked.execute({"AUTH", "bad"}, 0, 1).error_code(), "WRONGPASS");
  EXPECT_EQ(locked.execute({"AUTH", "pw"}, 0, 1), Value::status("OK"));
  EXPECT_EQ(locked.execute({"GET", "k"}, 0, 1), Value::nil());
  locked.disconnect(1);
  EXPECT_EQ(locked.execute({"GET", "k"}, 0, 1).error_code(), "NOAUTH");
}

TEST_F(NodeTest, CommandsNotModelledFailLoudly) {
  EXPECT_THROW(run({"LPUSH", "l", "x"}), std::logic_error);
  EXPECT_THROW(run({"CLIENT", "SETNAME", "x"}), std::logic_error);
  EXPECT_THROW(eval("return redis.call('LPUSH', 'l', 'x')"), std::logic_error);
  // Even where the script would have caught the error.
  EXPECT_THROW(eval("return redis.pcall('LPUSH', 'l', 'x')"), std::logic_error);
  EXPECT_THROW(eval("return pcall(redis.call, 'LPUSH', 'l', 'x')"), std::logic_error);
  // The node is still fine afterwards.
  EXPECT_EQ(eval("return 1"), i(1));
}

TEST_F(NodeTest, ARunawayScriptFailsLoudly) {
  EXPECT_THROW(eval("while true do end"), std::logic_error);
  EXPECT_EQ(eval("return 2"), i(2));
}

// sim/redis/README.md, "Script return value -> reply", row by row.
TEST_F(NodeTest, ScriptValuesBecomeReplies) {
  EXPECT_EQ(eval("return 3.9"), i(3));
  EXPECT_EQ(eval("return -3.9"), i(-3));
  EXPECT_EQ(eval("return 'x'"), b("x"));
  EXPECT_EQ(eval("return true"), i(1));
  EXPECT_EQ(eval("return false"), Value::nil());
  EXPECT_EQ(eval("return nil"), Value::nil());
  EXPECT_EQ(eval("return {err = 'E x', ok = 'y'}"), Value::error("E x"));
  EXPECT_EQ(eval("return {ok = 'y'}"), Value::status("y"));
  EXPECT_EQ(eval("return {1, nil, 3}"), arr({i(1)}));
  EXPECT_EQ(eval("return {1, {2, 'a'}}"), arr({i(1), arr({i(2), b("a")})}));
}

// sim/redis/README.md, "Command reply -> what redis.call returns", row by row.
TEST_F(NodeTest, RepliesBecomeScriptValues) {
  run({"SET", "s", "v"});
  EXPECT_EQ(eval("return type(redis.call('EXISTS', 's'))"), b("number"));
  EXPECT_EQ(eval("return type(redis.call('GET', 's'))"), b("string"));
  EXPECT_EQ(eval("return type(redis.call('TIME'))"), b("table"));
  EXPECT_EQ(eval("return redis.call('SET', 's', 'w').ok"), b("OK"));
  EXPECT_EQ(eval("return redis.call('GET', 'none') == false"), i(1));
  EXPECT_EQ(eval("return redis.pcall('INCR', 's').err"),
            b("ERR value is not an integer or out of range"));
  EXPECT_EQ(eval("return redis.call('INCR', 's')").error_code(), "ERR");
}

TEST_F(NodeTest, BinaryKeysAndValues) {
  const std::string key("k\0queue", 7), value("a\0b", 3);
  EXPECT_EQ(eval("return redis.call('SET', KEYS[1], ARGV[1])", {key}, {value}),
            Value::status("OK"));
  EXPECT_EQ(run({"GET", key}), b(value));
  EXPECT_FALSE(node.key("k", now).has_value());
  EXPECT_EQ(eval("return #KEYS[1] + #redis.call('GET', KEYS[1])", {key}), i(10));
  EXPECT_EQ(node.dump(now), "\"k\\x00queue\" string \"a\\x00b\" (no ttl)\n");
}

TEST_F(NodeTest, GlobalsAreReadOnly) {
  EXPECT_NE(eval("x = 1").str.find("Attempt to modify a readonly table"), std::string::npos);
  EXPECT_NE(eval("return y").str.find("nonexistent global variable 'y'"), std::string::npos);
  EXPECT_EQ(eval("return type(io)").error_code(), "ERR");
  EXPECT_EQ(eval("return bit.band(12, 10) + bit.bor(1, 2)"), i(11));
}

TEST_F(NodeTest, DumpIsSortedAndShowsTypesAndTtls) {
  run({"ZADD", "z", "2", "b", "1", "a"});
  run({"HSET", "h", "y", "2", "x", "1"});
  run({"SADD", "s", "q", "p"});
  run({"SET", "k", "v", "PX", "500"});
  EXPECT_EQ(node.dump(now + 100),
            "\"h\" hash [\"x\", \"1\", \"y\", \"2\"] (no ttl)\n"
            "\"k\" string \"v\" (pttl 400)\n"
            "\"s\" set [\"p\", \"q\"] (no ttl)\n"
            "\"z\" zset [\"a\", \"1\", \"b\", \"2\"] (no ttl)\n");
}

// The library's own decoders read the node's replies through to_hiredis.
TEST_F(NodeTest, LibraryDecodersReadSimulatedReplies) {
  run({"SCRIPT", "LOAD", std::string(kAcquire.body)});
  auto acquire = [&](const std::string& token) {
    return run({"EVALSHA", std::string(kAcquire.sha), "1", "lock", token, "30000", "1"});
  };
  NodeVote yes;
  detail::acquire_vote(to_hiredis(acquire("a.")).get(), yes);
  EXPECT_EQ(yes.vote, Vote::yes);
  NodeVote no;
  detail::acquire_vote(to_hiredis(acquire("b.")).get(), no);
  EXPECT_EQ(no.vote, Vote::no);
  EXPECT_EQ(no.holder_ttl.count(), 30000);
  NodeVote quick;
  detail::quick_acquire_vote(to_hiredis(run({"SET", "free", "t.", "NX", "PX", "100", "GET"})).get(),
                             quick);
  EXPECT_EQ(quick.vote, Vote::yes);
  NodeVote release;
  detail::release_vote(
      to_hiredis(run({"EVAL", std::string(kRelease.body), "1", "lock", "a."})).get(), 1, release);
  EXPECT_EQ(release.vote, Vote::yes);
  // An error reply is never a vote (the session classifies it by its first word).
  NodeVote failed;
  node.set_oom(true);
  auto oom = to_hiredis(acquire("c."));
  detail::acquire_vote(oom.get(), failed);
  EXPECT_EQ(failed.vote, Vote::pending);
  EXPECT_EQ(oom->type, REDIS_REPLY_ERROR);
  EXPECT_EQ(std::string(oom->str, 3), "OOM");
}

// Nodes share their thread's Lua state: a node used from another thread compiles there what it
// loaded, and one node's SCRIPT FLUSH or restart leaves another node's scripts loaded.
TEST_F(NodeTest, NodesShareAThreadsLuaStateWithoutSharingScripts) {
  RedisNode other;
  EXPECT_EQ(run({"SCRIPT", "LOAD", "return 'mine'"}), b(redis_sha("return 'mine'")));
  EXPECT_EQ(other.execute({"EVALSHA", redis_sha("return 'mine'"), "0"}, 0, 1).error_code(),
            "NOSCRIPT");
  other.execute({"SCRIPT", "LOAD", "return 'mine'"}, 0, 1);
  node.restart(false, now);
  EXPECT_EQ(other.execute({"EVALSHA", redis_sha("return 'mine'"), "0"}, 0, 1), b("mine"));
  other.execute({"SCRIPT", "LOAD", std::string(kFence.body)}, 0, 1);
  Value from_thread;
  std::thread t([&] {
    from_thread = other.execute({"EVALSHA", std::string(kFence.sha), "1", "k", "t.", "1"}, 0, 1);
  });
  t.join();
  EXPECT_EQ(from_thread, i(0));
}

TEST(HiredisReply, RoundTripsEveryKind) {
  const Value v = arr({Value::nil(), i(-5), b(std::string("a\0b", 3)), Value::status("OK"),
                       Value::error("ERR x"), arr({}), arr({b("")})});
  auto r = to_hiredis(v);
  EXPECT_EQ(from_hiredis(r.get()), v);
}

}  // namespace
}  // namespace redlock::sim
