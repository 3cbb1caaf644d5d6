// The differential test of the simulated node: the same commands and script calls on a real
// redis-server 7.0 and on the node, replies compared exactly, keyspaces and the messages of
// subscribers compared after every step. Generic over the scripts' text: it never states what a
// script answers, only that the model answers the same, so it keeps holding while the scripts
// change.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "core/safeguards.hpp"
#include "scripts.hpp"
#include "twin.hpp"

namespace redlock::sim::test {
namespace {

std::string clock_file(const std::string& name) {
  return ::testing::TempDir() + "sim_redis_" + name + "_" + std::to_string(::getpid()) + ".clock";
}

// Literal scripts, one per conversion rule of sim/redis/README.md (and Redis 7.0's error texts).
const char* const kTinyScripts[] = {
    "return 3.9",
    "return -3.9",
    "return 0.5",
    "return 1e30",
    "return 'text'",
    "return ''",
    "return true",
    "return false",
    "return nil",
    "return {1, nil, 3}",
    "return {1, {2, false, 'x'}, true, {}}",
    "return {err = 'MY error'}",
    "return {err = 'two\\nlines'}",
    "return {err = '-ERR x'}",
    "return {ok = 'FINE'}",
    "return {ok = 'a', err = 'b'}",
    "return {ok = 5}",
    "return redis.error_reply('MINE x')",
    "return redis.error_reply('-MINE x')",
    "return redis.error_reply('MINE x').err",
    "return redis.status_reply('FINE')",
    "return redis.status_reply('x').ok",
    "return redis.sha1hex('')",
    "return redis.sha1hex('a\\0b')",
    "return redis.call('GET', 'nokey')",
    "return type(redis.call('GET', 'nokey'))",
    "return redis.call('SET', 'k', 'v')",
    "return type(redis.call('SET', 'k', 'v'))",
    "return redis.call('SET', 'k', 'v').ok",
    "redis.call('SET', 'k', 'v') return redis.call('INCR', 'k')",
    "redis.call('SET', 'k', 'v') return redis.pcall('INCR', 'k')",
    "redis.call('SET', 'k', 'v') return redis.pcall('INCR', 'k').err",
    "redis.call('SET', 'k', 'v') return redis.call('ZADD', 'k', 1, 'm')",
    "redis.call('SET', 'k', 'v') return type(redis.pcall('HGET', 'k', 'f'))",
    "redis.call('SET', 'n', 0.1) return redis.call('GET', 'n')",
    "redis.call('SET', 'n', 1764223618000) return redis.call('GET', 'n')",
    "redis.call('SET', 'n', 1/3) return redis.call('GET', 'n')",
    "redis.call('SET', 'n', -0) return redis.call('GET', 'n')",
    "redis.call('SET', 'n', -1/0 * 0 + 2^53) return redis.call('GET', 'n')",
    "redis.call('SET', 'n', 2^53 - 1) return redis.call('GET', 'n')",
    "redis.call('SET', 'n', 1e17) return redis.call('GET', 'n')",
    "redis.call('SET', 'n', -12345) return redis.call('GET', 'n')",
    "redis.call('SET', 'n', 1/0) return redis.call('GET', 'n')",
    "return redis.call('SET', 'n', true)",
    "return redis.pcall('SET', 'n', {})",
    "return redis.pcall()",
    "return redis.call()",
    "return redis.pcall('GET')",
    "return redis.pcall('SUBSCRIBE', 'x')",
    "return redis.pcall('EVAL', 'return 1', '0')",
    "return redis.call('PING')",
    "return redis.call('PING', 'x')",
    "return redis.call('TIME')[1] + 0 > 0",
    "return redis.call('EXISTS', 'nokey', 'k', 'k')",
    "x = 1",
    "return undefined_global",
    "string.foo = 1 return 1",
    "local t = {} t.x = 1 return t.x",
    "KEYS[1] = 'z' return KEYS[1]",
    "return #ARGV",
    "return tostring(1/3)",
    "return type(bit)",
    "return type(loadstring)",
    "return type(print)",
    "return type(io)",
    "return type(debug)",
    "return type(coroutine)",
    "return type(unpack)",
    "error('boom')",
    "error('x', 0)",
    "error(123)",
    "error({err = 'TABLE err'})",
    "local function f() error('in f') end\nf()",
    "local x = nil\n\nreturn x.y",
    "return nosuch()",
    "return (",
    "return {math.random(), math.random(10), math.random(3, 7)}",
    "return tostring(math.random())",
    "return string.format('%d', 7) .. string.rep('a', 3) .. table.concat({1, 2}, ',')",
    "return #KEYS + #ARGV",
};

TEST(SimRedisDifferential, TinyScriptsConvertLikeRedis) {
  Twin t(clock_file("tiny"));
  for (const char* body : kTinyScripts) {
    t.same({"FLUSHALL"});
    t.same({"EVAL", body, "1", "key", "arg"});
  }
  t.compare_keyspaces();
}

TEST(SimRedisDifferential, CommandsAndTheirErrors) {
  Twin t(clock_file("commands"));
  const std::vector<std::vector<std::string>> calls = {
      {"SET", "k", "v"},
      {"SET", "k", "v", "NX"},
      {"SET", "k", "w", "XX", "PX", "1000"},
      {"PTTL", "k"},
      {"SET", "k", "x", "XX", "KEEPTTL"},
      {"PTTL", "k"},
      {"SET", "k", "x", "NX", "XX"},
      {"SET", "k", "x", "KEEPTTL", "PX", "10"},
      {"SET", "k", "x", "PX", "10", "PX", "10"},
      {"SET", "k", "x", "PX"},
      {"SET", "k", "x", "BOGUS"},
      {"SET", "k", "x", "PX", "0"},
      {"SET", "k", "x", "PX", "-5"},
      {"SET", "k", "x", "PX", "abc"},
      {"SET", "k", "x", "PX", "01"},
      {"SET", "k", "x", "PX", "9223372036854775807"},
      {"SET", "k", "x", "PX", "9223372036854775"},
      {"SET", "k", "x", "EX", "10"},
      {"PTTL", "k"},
      {"SET", "q", "tok", "NX", "PX", "30000", "GET"},
      {"SET", "q", "tok2", "NX", "PX", "30000", "GET"},
      {"SET", "q", "tok3", "GET"},
      {"GET", "q"},
      {"SET", "nope", "v", "XX", "GET"},
      {"SET", "k", "v", "nx", "px", "100"},
      {"PEXPIRE", "k", "9223372036854775807"},
      {"PEXPIRE", "k", "1.5"},
      {"PEXPIRE", "nokey", "100"},
      {"PEXPIRE", "k", "500"},
      {"PTTL", "k"},
      {"PEXPIRE", "k", "0"},
      {"EXISTS", "k"},
      {"PTTL", "nokey"},
      {"SET", "i", "41"},
      {"INCR", "i"},
      {"INCR", "newi"},
      {"SET", "i", "9223372036854775807"},
      {"INCR", "i"},
      {"SET", "i", " 1"},
      {"INCR", "i"},
      {"SET", "i", "+1"},
      {"INCR", "i"},
      {"SETRANGE", "s", "0", ""},
      {"SETRANGE", "s", "5", "x"},
      {"GET", "s"},
      {"SETRANGE", "s", "1", "yz"},
      {"SETRANGE", "s", "-1", "yz"},
      {"SETRANGE", "s", "2", ""},
      {"GET", "s"},
      {"ZADD", "z", "1.5", "a", "2", "b", "1e20", "c", "0.1", "d", "-inf", "e"},
      {"ZADD", "z", "1", "a", "abc", "x"},
      {"ZADD", "z", "1", "a", "2"},
      {"ZADD", "z", "3", "a", "2", "b2"},
      {"ZRANGE", "z", "0", "-1", "WITHSCORES"},
      {"ZRANGE", "z", "0", "0"},
      {"ZRANGE", "z", "-2", "100"},
      {"ZRANGE", "z", "5", "1"},
      {"ZRANGE", "z", "x", "1"},
      {"ZRANGEBYSCORE", "z", "-inf", "+inf"},
      {"ZRANGEBYSCORE", "z", "(1.5", "3", "WITHSCORES"},
      {"ZRANGEBYSCORE", "z", "0", "10", "LIMIT", "1", "2"},
      {"ZRANGEBYSCORE", "z", "a", "10"},
      {"ZCARD", "z"},
      {"ZSCORE", "z", "d"},
      {"ZREM", "z", "a", "nope"},
      {"ZREMRANGEBYSCORE", "z", "-inf", "2"},
      {"ZRANGE", "z", "0", "-1", "WITHSCORES"},
      {"ZREM", "z", "c", "b2"},
      {"EXISTS", "z"},
      {"HSET", "h", "a", "1", "b", "2"},
      {"HSET", "h", "a", "3"},
      {"HSET", "h", "a"},
      {"HGET", "h", "a"},
      {"HGET", "h", "zz"},
      {"HDEL", "h", "a", "zz"},
      {"HDEL", "h", "b"},
      {"EXISTS", "h"},
      {"SADD", "st", "b", "a", "b"},
      {"SREM", "st", "a", "zz"},
      {"SMEMBERS", "st"},
      {"SREM", "st", "b"},
      {"EXISTS", "st"},
      {"PUBLISH", "ch", "m"},
      {"PUBSUB", "NUMSUB", "ch", "none"},
      {"GET"},
      {"DEL"},
      {"SELECT", "16"},
      {"SELECT", "x"},
      {"AUTH", "x"},
      {"ROLE"},
      {"CONFIG", "GET", "appendfsync"},
      {"CONFIG", "GET", "appendonly"},
      {"EVALSHA", "0000000000000000000000000000000000000000", "0"},
      {"EVALSHA", "abc", "0"},
      {"EVAL", "return 1", "-1"},
      {"EVAL", "return 1", "2", "a"},
      {"EVAL", "return 1", "x"},
      {"SCRIPT", "LOAD", "return 'loaded'"},
      {"EVALSHA", "2ec2c7e1bd0cfa2a36b4e9c7d0a80bd2bfb0b1d4", "0"},
      {"SCRIPT", "LOAD", "x ="},
      {"PING"},
      {"PING", "hello"},
      {"DEL", "k", "q", "s", "i", "newi", "nokey"},
  };
  for (const auto& c : calls) t.same(c);
  t.compare_keyspaces();
}

// A subscribed connection: what it may run, the counts its (un)subscriptions answer, and
// what PUBLISH counts and delivers.
TEST(SimRedisDifferential, SubscribedConnections) {
  Twin t(clock_file("pubsub"));
  std::size_t a = t.subscribe("ch");
  std::size_t b = t.subscribe("ch");
  t.same({"PUBLISH", "ch", "one"});
  t.compare_deliveries();  // a subscriber's next reply is its command's, not a message
  t.same({"PUBSUB", "NUMSUB", "ch", "other"});
  t.same_on_subscriber(a, {"GET", "k"});
  t.same_on_subscriber(a, {"SET", "k", "v"});
  t.same_on_subscriber(a, {"PING", "hi"});
  t.same_on_subscriber(a, {"SUBSCRIBE", "ch"});
  t.same_on_subscriber(a, {"SUBSCRIBE", "other"});
  t.same({"EVAL",
          "return {redis.call('PUBLISH', 'ch', 'two'), redis.call('PUBLISH', 'other', "
          "'three')}",
          "0"});
  t.compare_deliveries();
  t.same_on_subscriber(a, {"UNSUBSCRIBE", "nothing"});
  t.same_on_subscriber(b, {"UNSUBSCRIBE", "ch"});
  t.same({"PUBLISH", "ch", "four"});
  t.compare_deliveries();
  t.same_on_subscriber(b, {"GET", "k"});  // no subscription left: an ordinary connection again
}

// INFO and ROLE say what the safeguards read (lib/core/safeguards.hpp) the way Redis does.
TEST(SimRedisDifferential, InfoAsTheSafeguardsReadIt) {
  Twin t(clock_file("info"));
  for (const char* section : {"", "server", "replication", "persistence", "cluster"}) {
    std::vector<std::string> argv = {"INFO"};
    if (*section != '\0') argv.push_back(section);
    auto real = redlock::detail::parse_info(t.real(argv).str);
    auto sim = redlock::detail::parse_info(t.sim(argv).str);
    EXPECT_EQ(real.role, sim.role) << section;
    EXPECT_EQ(real.cluster_enabled, sim.cluster_enabled) << section;
    EXPECT_EQ(real.aof_enabled, sim.aof_enabled) << section;
    EXPECT_EQ(real.uptime_s.has_value(), sim.uptime_s.has_value()) << section;
    EXPECT_EQ(real.run_id.size(), sim.run_id.size()) << section;
    EXPECT_EQ(redlock::detail::info_value(t.real(argv).str, "redis_version"),
              redlock::detail::info_value(t.sim(argv).str, "redis_version"))
        << section;
  }
  t.same({"ROLE"});
  t.same({"CONFIG", "GET", "appendfsync"});
}

// A restart forgets the scripts; with persistence the keys and their deadlines stay, without it
// nothing does.
TEST(SimRedisDifferential, Restarts) {
  for (bool persistent : {true, false}) {
    Twin t(clock_file(persistent ? "restart_aof" : "restart"),
           persistent ? std::vector<std::string>{"--appendonly", "yes", "--appendfsync", "always"}
                      : std::vector<std::string>{});
    t.same({"SCRIPT", "LOAD", std::string(kAcquire.body)});
    t.same({"EVALSHA", std::string(kAcquire.sha), "1", "lock", "t.", "5000", "1"});
    t.same({"SET", "short", "v", "PX", "100"});
    t.same({"ZADD", std::string("lock\0queue", 10), "1", "a#1@100"});
    t.restart(persistent);
    t.compare_keyspaces();
    t.same({"EVALSHA", std::string(kAcquire.sha), "1", "lock", "u.", "5000", "1"});
    t.advance(200);
    t.compare_keyspaces();
    t.same({"EVAL", std::string(kAcquire.body), "1", "lock", "u.", "5000", "1"});
    t.compare_keyspaces();
  }
}

// Every command on a key of each other type answers WRONGTYPE alike.
TEST(SimRedisDifferential, WrongTypeEverywhere) {
  Twin t(clock_file("wrongtype"));
  const std::vector<std::vector<std::string>> make = {
      {"SET", "x", "v"}, {"HSET", "x", "f", "v"}, {"SADD", "x", "m"}, {"ZADD", "x", "1", "m"}};
  const std::vector<std::vector<std::string>> use = {
      {"GET", "x"},
      {"INCR", "x"},
      {"SETRANGE", "x", "0", "a"},
      {"ZADD", "x", "1", "a"},
      {"ZRANGE", "x", "0", "-1"},
      {"ZREM", "x", "a"},
      {"ZCARD", "x"},
      {"ZRANGEBYSCORE", "x", "0", "1"},
      {"ZREMRANGEBYSCORE", "x", "0", "1"},
      {"HSET", "x", "f", "v"},
      {"HGET", "x", "f"},
      {"HDEL", "x", "f"},
      {"HGETALL", "x"},
      {"SADD", "x", "a"},
      {"SREM", "x", "a"},
      {"SMEMBERS", "x"},
      {"SET", "x", "v", "GET"},
      {"SET", "x", "v", "NX"},
      {"PTTL", "x"},
      {"EXISTS", "x"},
      {"TYPE", "x"},
  };
  for (const auto& m : make)
    for (const auto& u : use) {
      t.same({"DEL", "x"});
      t.same(m);
      t.same(u);
      std::vector<std::string> in_script = {"EVAL", "return redis.pcall(unpack(ARGV))", "0"};
      in_script.insert(in_script.end(), u.begin(), u.end());
      t.same({"DEL", "x"});
      t.same(m);
      t.same(in_script);
      t.compare_keyspaces();
    }
}

// At maxmemory: plain writes refused, a script refused at its first write that may grow
// memory unless it wrote before, reads and deletes allowed.
TEST(SimRedisDifferential, OutOfMemory) {
  Twin t(clock_file("oom"));
  t.same({"SET", "a", "1"});
  t.same({"ZADD", "zq", "1", "x"});
  t.oom(true);
  const std::vector<std::vector<std::string>> calls = {
      {"SET", "b", "1"},
      {"GET", "a"},
      {"INCR", "a"},
      {"PEXPIRE", "a", "100000"},
      {"PUBLISH", "c", "m"},
      {"SCRIPT", "LOAD", "return 7"},
      {"EVAL", "return 1", "0"},
      {"EVAL", "local v = redis.call('GET', 'a') return redis.call('SET', 'a', '2')", "0"},
      {"EVAL",
       "local v = redis.pcall('SET', 'a', '1') return {v.err, redis.pcall('INCR', 'b').err, "
       "redis.call('DEL', 'zz'), redis.pcall('SET', 'c', '1')}",
       "0"},
      {"EVAL", "redis.call('ZREM', 'zq', 'nobody') return redis.call('SET', 'd', '1')", "0"},
      {"EVAL", "redis.call('PUBLISH', 'ch', 'x') return redis.pcall('SET', 'e', '1')", "0"},
      {"EVAL", "redis.pcall('HDEL', 'a', 'x') return redis.pcall('SET', 'f', '1')", "0"},
      {"EVAL", "redis.pcall('DEL') return redis.pcall('SET', 'g', '1')", "0"},
      {"EVAL", "return {redis.pcall('SETRANGE', 'a', 0, 'x'), redis.pcall('SADD', 's', 'x')}", "0"},
      {"EVAL", "return {redis.pcall('HSET', 'h', 'x', 'y'), redis.pcall('ZADD', 'z', 0, 'x')}",
       "0"},
      {"SET", "x", "y", "NX", "PX", "100", "GET"},
      {"DEL", "a"},
  };
  for (const auto& c : calls) t.same(c);
  t.compare_keyspaces();
  t.oom(false);
  t.same({"SET", "b", "1"});
}

// --- the project's scripts, many argument shapes, random sequences -------------------------

// The scripts the random sequences call: the project's own, or, when the environment variable
// REDLOCK_SIM_SCRIPTS names a directory with acquire.lua, release.lua, renew.lua and fence.lua,
// those (to check the model against scripts being written elsewhere).
struct Scripts {
  std::string text[4];  // acquire, release, renew, fence
  std::string sha[4];

  static Scripts load() {
    Scripts s;
    const ScriptText own[4] = {kAcquire, kRelease, kRenew, kFence};
    const char* dir = std::getenv("REDLOCK_SIM_SCRIPTS");
    RedisNode digest;
    for (int i = 0; i < 4; ++i) {
      if (dir != nullptr && *dir != '\0') {
        std::ifstream in(std::string(dir) + "/" + std::string(own[i].name) + ".lua",
                         std::ios::binary);
        if (!in) throw std::runtime_error("REDLOCK_SIM_SCRIPTS: cannot read a script");
        s.text[i].assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
      } else {
        s.text[i] = std::string(own[i].body);
      }
      s.sha[i] = digest.execute({"SCRIPT", "LOAD", s.text[i]}, 0, 1).str;
    }
    return s;
  }
};

class ScriptCalls {
 public:
  ScriptCalls(Twin& t, std::uint64_t seed, const Scripts& scripts)
      : t_(t), rng_(seed), scripts_(scripts) {}

  void run(int steps) {
    for (const char* ch : {"c1", "c2"}) t_.subscribe(ch);
    for (int i = 0; i < steps; ++i) {
      step();
      t_.compare_keyspaces();
      seen["deliveries"] += static_cast<long>(t_.compare_deliveries());
      if (::testing::Test::HasFailure()) {
        ADD_FAILURE() << "stopped at step " << i;
        return;
      }
    }
  }

 private:
  std::size_t pick(std::size_t n) {
    return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng_);
  }
  bool chance(double p) { return std::bernoulli_distribution(p)(rng_); }
  template <typename T>
  const T& one(const std::vector<T>& v) {
    return v[pick(v.size())];
  }

  std::string resource() { return one<std::string>({"r1", "r2", "r3", std::string("r\0x", 3)}); }
  std::string token() { return one<std::string>({"tA.", "tB.", "tC.", "tA!", "old-token", "-"}); }
  std::string ttl() {
    return one<std::string>({"50", "200", "1000", "30000", "100", "9007199254740993",
                             "9223372036854775", "0", "-1", "abc"});
  }
  std::string ticket() {
    return one<std::string>(
        {"", "c1#1@200", "c2#2@50", "c1#3", "gone#4@100", "c2#5@0", "noshape", "c1#6@99999999999"});
  }
  std::string place() { return one<std::string>({"1", "2", "3", "10", "0", "x"}); }

  std::vector<std::string> keys(std::size_t n) {
    std::vector<std::string> out;
    for (std::size_t i = 0; i < n; ++i) out.push_back(resource());
    return out;
  }

  // Sends a script by EVALSHA, and by EVAL after NOSCRIPT, as the library does.
  void script(int which, const std::vector<std::string>& ks, const std::vector<std::string>& args) {
    static const char* const names[4] = {"acquire", "release", "renew", "fence"};
    ScriptText s{names[which], scripts_.text[which], scripts_.sha[which]};
    std::vector<std::string> argv = {chance(0.15) ? "EVAL" : "EVALSHA",
                                     std::string(chance(0.15) ? s.body : s.sha),
                                     std::to_string(ks.size())};
    if (argv[0] == "EVAL") argv[1] = std::string(s.body);
    argv.insert(argv.end(), ks.begin(), ks.end());
    argv.insert(argv.end(), args.begin(), args.end());
    Value r = t_.same(argv);
    if (r.is_error() && r.error_code() == "NOSCRIPT") {
      ++seen["NOSCRIPT"];
      argv[0] = "EVAL";
      argv[1] = std::string(s.body);
      r = t_.same(argv);
    }
    count(s.name, r);
  }

 public:
  // What the replies were, to show the run covered the paths that matter: per script, grants
  // and refusals by their first element (or error code), and the messages delivered.
  std::map<std::string, long> seen;

 private:
  void count(std::string_view script, const Value& r) {
    std::string what = std::string(script) + " ";
    if (r.is_error())
      what += r.error_code();
    else if (r.kind == Value::Kind::array && !r.items.empty() &&
             r.items[0].kind == Value::Kind::integer)
      what += "[" + std::to_string(r.items[0].number) +
              (r.items.size() > 2 && r.items[2].str.rfind("turn:", 0) == 0 ? " turn" : "") + "]";
    else if (r.kind == Value::Kind::integer)
      what += std::to_string(r.number);
    else
      what += "other";
    ++seen[what];
  }

  // Something in the way of a script: a value of another type at a lock key or one of its
  // auxiliary keys (named both ways the scripts have used: "<key>:<kind>", "<key>\0<kind>").
  void hostile() {
    std::string key = resource();
    if (chance(0.7)) {
      std::string kind = one<std::string>({"queue", "turns", "others", "fence"});
      key += chance(0.5) ? ":" + kind : std::string(1, '\0') + kind;
    }
    switch (pick(5)) {
      case 0:
        t_.same({"SET", key, "junk"});
        break;
      case 1:
        t_.same({"HSET", key, "f", "v"});
        break;
      case 2:
        t_.same({"SADD", key, "m"});
        break;
      case 3:
        t_.same({"ZADD", key, "1", "m"});
        break;
      default:
        t_.same({"DEL", key});
        break;
    }
  }

  void step() {
    switch (pick(12)) {
      case 0:
      case 1:
      case 2: {  // acquire
        std::vector<std::string> args = {token(), ttl(), chance(0.5) ? "1" : "0"};
        if (chance(0.7)) {
          args.push_back(ticket());
          args.push_back(place());
          args.push_back(one<std::string>({"1000", "60000", "5"}));
          if (chance(0.9)) args.push_back(one<std::string>({"100", "200", "x"}));
        }
        script(0, keys(chance(0.8) ? 1 : 1 + pick(3)), args);
        break;
      }
      case 3:
      case 4: {  // release
        std::vector<std::string> args = {token()};
        if (chance(0.6)) args.push_back(one<std::string>({"0", "1"}));
        if (args.size() == 2 && chance(0.5)) {
          args.push_back(ticket());
          args.push_back(chance(0.5) ? "" : place());
          args.push_back(one<std::string>({"1000", "60000"}));
        }
        script(1, keys(chance(0.8) ? 1 : 1 + pick(3)), args);
        break;
      }
      case 5: {  // renew, a batch
        std::vector<std::string> ks, args;
        std::size_t locks = 1 + pick(3);
        for (std::size_t i = 0; i < locks; ++i) {
          std::size_t n = 1 + pick(2);
          auto k = keys(n);
          ks.insert(ks.end(), k.begin(), k.end());
          args.push_back(token());
          args.push_back(ttl());
          args.push_back(std::to_string(n));
        }
        script(2, ks, args);
        break;
      }
      case 6: {  // fencing write-back
        script(3, keys(1 + pick(2)),
               {token(), one<std::string>({"1", "5", "100", "9007199254740993"})});
        break;
      }
      case 7:  // quick acquire
        t_.same({"SET", resource(), token(), "NX", "PX", ttl(), "GET"});
        break;
      case 8:
        hostile();
        break;
      case 9:
        t_.advance(one<std::int64_t>({1, 20, 60, 150, 400, 2000}));
        break;
      case 10:
        if (chance(0.3)) t_.same({"SCRIPT", "FLUSH"});
        if (chance(0.3)) t_.oom(!t_.node().oom());
        break;
      default:
        if (chance(0.5))
          t_.same({"SCRIPT", "LOAD", scripts_.text[pick(4)]});
        else
          t_.same({"PTTL", resource()});
        break;
    }
  }

  Twin& t_;
  std::mt19937_64 rng_;
  const Scripts& scripts_;
};

TEST(SimRedisDifferential, ProjectScriptsRandomSequences) {
  Twin t(clock_file("scripts"));
  const Scripts scripts = Scripts::load();
  std::map<std::string, long> seen;
  // REDLOCK_SIM_DIFF_SEEDS: more seeds for a longer search (8 by default).
  std::uint64_t seeds = 8;
  if (const char* n = std::getenv("REDLOCK_SIM_DIFF_SEEDS")) seeds = std::strtoull(n, nullptr, 10);
  for (std::uint64_t seed = 1; seed <= seeds; ++seed) {
    t.same({"FLUSHALL"});
    if (t.node().oom()) t.oom(false);
    ScriptCalls calls(t, seed, scripts);
    calls.run(300);
    for (const auto& [k, n] : calls.seen) seen[k] += n;
    if (::testing::Test::HasFailure()) {
      ADD_FAILURE() << "seed " << seed;
      return;
    }
  }
  for (const auto& [k, n] : seen) std::printf("  %-24s %ld\n", k.c_str(), n);
  // The paths that the model must match were taken: grants, refusals, the errors the scripts
  // meet (another type, no memory, no script) and messages to subscribers.
  EXPECT_GT(seen["acquire [1]"], 0);
  EXPECT_GT(seen["acquire [0]"], 0);
  EXPECT_GT(seen["acquire WRONGTYPE"] + seen["release WRONGTYPE"] + seen["fence WRONGTYPE"], 0);
  EXPECT_GT(seen["acquire OOM"], 0);
  EXPECT_GT(seen["NOSCRIPT"], 0);
  EXPECT_GT(seen["deliveries"], 0);
}

}  // namespace
}  // namespace redlock::sim::test
