// A simulated Redis 7.0 node: an in-memory keyspace that runs the project's own Lua scripts
// through Lua 5.1, deterministic and single-threaded. No I/O, no clock reads, no randomness:
// every call is judged at the node's clock `now_ms`, which the simulator gives (it may jump back
// or forward). Anything the model does not cover throws std::logic_error("sim: command not
// modelled: ..."), so a gap never passes silently. One node, one thread at a time; the nodes of
// one thread share that thread's Lua state (each script compiled once per thread).
//
//   RedisNode node(NodeOptions{}, /*now_ms=*/0);
//   node.execute({"SCRIPT", "LOAD", body}, now, conn);              // -> bulk sha
//   Value v = node.execute({"EVALSHA", sha, "1", "k", "tok", "30000"}, now, conn);
//   node.execute({"SET", "k", "tok", "NX", "PX", "30000", "GET"}, now, conn);  // quick acquire
//   node.subscribe(conn2, "chan");                  // or execute({"SUBSCRIBE", "chan"}, ...)
//   for (auto& d : node.take_deliveries()) ...      // {connection, channel, message}, in order
//   node.set_oom(true);                            // writes refused as at maxmemory
//   node.restart(/*keep_data=*/false, now);        // scripts, subscriptions, connections gone
//   std::cout << node.dump(now);                   // live keys, types, values, ttls
//
// What Redis 7.0 does and the model mirrors (sim/redis/README.md, tests in sim/redis/tests):
// - A key whose deadline has passed (now > deadline) exists for no command. Every command (a
//   script counts as one) first drops the keys expired at its `now_ms`, so a key once seen
//   expired stays gone even if the clock later steps back, as Redis' active expiry would.
// - A script is atomic and sees one time: expiry inside it is judged at the script's start
//   (Redis 7.0's script time snapshot) and TIME answers `now_ms` (microseconds = ms * 1000).
// - OOM (set_oom(true)): a plain command that may grow memory (SET, INCR, SETRANGE, ZADD, HSET,
//   SADD) answers -OOM; a script (without shebang flags) runs until its first such command,
//   which fails with -OOM unless the script has already written something (then Redis lets it
//   finish: it cannot stop in the middle).
// - A script's errors carry Redis 7.0's text (first word: the error code) and the
//   " script: <sha>, on @user_script:<line>." suffix.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "value.hpp"

struct lua_State;

namespace redlock::sim {

// How the node describes itself (INFO, ROLE, CONFIG GET) and whether it asks for AUTH.
struct NodeOptions {
  std::string run_id;  // INFO's run_id; empty: 40 hex digits derived from `name`
  std::string name = "node";
  std::string version = "7.0.15";
  std::uint16_t port = 6379;  // INFO tcp_port
  bool aof_enabled = false;   // INFO aof_enabled, CONFIG GET appendonly
  std::string appendfsync = "everysec";
  bool replica = false;          // INFO role:slave, ROLE "slave", writes: -READONLY
  bool read_only = true;         // a replica's writes: -READONLY; false: a writable replica
  bool cluster_enabled = false;  // INFO cluster_enabled:1
  std::string password;          // non-empty: commands before AUTH answer -NOAUTH
};

// A message a subscriber's connection receives (RESP2: ["message", channel, message]).
struct Delivery {
  std::uint64_t connection = 0;
  std::string channel;
  std::string message;
  Value as_reply() const {
    return Value::array({Value::bulk("message"), Value::bulk(channel), Value::bulk(message)});
  }
  friend bool operator==(const Delivery& a, const Delivery& b) {
    return a.connection == b.connection && a.channel == b.channel && a.message == b.message;
  }
};

// The SHA1 of `text` as 40 lowercase hex digits (Lua's redis.sha1hex).
std::string sha1_hex(const std::string& text);

enum class KeyType { string, hash, set, zset };
const char* type_name(KeyType t);  // "string", "hash", "set", "zset" (as TYPE answers)

// A live key, for checkers and traces.
struct KeyView {
  KeyType type = KeyType::string;
  // string: bulk; hash: array field, value, ... by field; set: array of members, sorted;
  // zset: array member, score, ... in ZRANGE order (scores as Redis prints them).
  Value value;
  std::int64_t pttl = -1;  // ms left; -1: no expiry
};

class RedisNode {
 public:
  // `now_ms`: the node's clock at its start (INFO uptime counts from it).
  explicit RedisNode(NodeOptions options = {}, std::int64_t now_ms = 0);
  ~RedisNode();
  RedisNode(const RedisNode&) = delete;
  RedisNode& operator=(const RedisNode&) = delete;

  // One command as a client sent it on `connection` (any id the simulator chooses; a new id is
  // a new connection in database 0). Replies as Redis 7.0 does over RESP2; SUBSCRIBE and
  // UNSUBSCRIBE take exactly one channel and answer [verb, channel, count].
  Value execute(const std::vector<std::string>& argv, std::int64_t now_ms,
                std::uint64_t connection);

  // Pub/sub outside execute(): the same as SUBSCRIBE / UNSUBSCRIBE of every channel.
  void subscribe(std::uint64_t connection, const std::string& channel);
  void unsubscribe_all(std::uint64_t connection);
  // The connection closed: its subscriptions, database and AUTH go. Its undelivered messages
  // stay in take_deliveries() (the simulator drops them with the connection).
  void disconnect(std::uint64_t connection);
  // Messages published since the last call, in publication order (subscribers of one message
  // by connection id).
  std::vector<Delivery> take_deliveries();

  // Memory at maxmemory with the noeviction policy (see above).
  void set_oom(bool on) { oom_ = on; }
  bool oom() const { return oom_; }

  // A restart at `now_ms`: loaded scripts, subscriptions, connections' state and undelivered
  // messages are gone; the keyspace stays when `keep_data` (persistence), else it is emptied;
  // INFO's uptime counts from now_ms. Keys that expired meanwhile stay gone.
  void restart(bool keep_data, std::int64_t now_ms);

  // --- inspection (no effect on the node; expired keys are not shown) ---
  // Every live key of database `db` with its type, value and ttl, one per line, sorted by key,
  // bytes outside printable ASCII escaped (\x00). Empty keyspace: "(empty)\n".
  std::string dump(std::int64_t now_ms, int db = 0) const;
  std::vector<std::string> keys(std::int64_t now_ms, int db = 0) const;  // sorted
  std::optional<KeyView> key(const std::string& name, std::int64_t now_ms, int db = 0) const;
  std::size_t scripts_loaded() const;
  // How many connections subscribe to `channel` (PUBSUB NUMSUB).
  std::size_t subscribers(const std::string& channel) const;
  std::int64_t started_at_ms() const { return started_ms_; }
  const NodeOptions& options() const { return options_; }

  struct Impl;  // the keyspace and the command table (node.cpp)

 private:
  NodeOptions options_;
  std::int64_t started_ms_ = 0;
  bool oom_ = false;
  std::unique_ptr<Impl> impl_;
};

}  // namespace redlock::sim
