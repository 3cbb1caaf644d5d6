// The simulated Redis 7.0 node (node.hpp): keyspace, command table, pub/sub and the Lua 5.1
// scripting environment. Every behaviour here was checked against redis-server 7.0 (the
// differential tests in sim/redis/tests run the same calls on both).
#include "node.hpp"

#include <openssl/sha.h>

#include <algorithm>
#include <cinttypes>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <unordered_map>
#include <utility>

extern "C" {
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
}

namespace redlock::sim {

namespace {

constexpr char kWrongType[] = "WRONGTYPE Operation against a key holding the wrong kind of value";
constexpr char kOom[] = "OOM command not allowed when used memory > 'maxmemory'.";
constexpr char kNotInteger[] = "ERR value is not an integer or out of range";
constexpr char kSyntax[] = "ERR syntax error";
constexpr int kDatabases = 16;
// A script that runs longer than this many Lua instructions is a bug in the scripts or the
// simulator (Redis would answer BUSY to everyone else): fail loudly instead of hanging.
constexpr int kHookEvery = 100000;
constexpr long kMaxHooks = 2000;  // 2e8 instructions

[[noreturn]] void not_modelled(const std::string& what) {
  throw std::logic_error("sim: command not modelled: " + what);
}

// ASCII only, as Redis compares command names and options (strcasecmp).
std::string lower(std::string s) {
  for (auto& c : s)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return s;
}

// A Lua number as redis.call passes it to the command: "%.17g" (Redis 7.0, script_lua.c). The
// integers the scripts pass (counts, offsets, times in ms) take a shorter way to the same text.
std::string number_arg(double d) {
  if (d == std::floor(d) && std::fabs(d) < 9007199254740992.0 && !(d == 0 && std::signbit(d)))
    return std::to_string(static_cast<long long>(d));
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", d);
  return buf;
}

std::string sha1_hex(const char* data, std::size_t len) {
  unsigned char digest[SHA_DIGEST_LENGTH];
  SHA1(reinterpret_cast<const unsigned char*>(data), len, digest);
  static const char hex[] = "0123456789abcdef";
  std::string out(40, '0');
  for (int i = 0; i < SHA_DIGEST_LENGTH; ++i) {
    out[2 * i] = hex[digest[i] >> 4];
    out[2 * i + 1] = hex[digest[i] & 15];
  }
  return out;
}

// Redis' string2ll: an optional '-', then "0" or a digit 1-9 and digits; no spaces, no '+', no
// leading zeros; within 64 bits.
bool parse_ll(const std::string& s, long long& out) {
  if (s.empty() || s.size() > 20) return false;
  if (s == "0") {
    out = 0;
    return true;
  }
  std::size_t i = 0;
  bool negative = false;
  if (s[0] == '-') {
    negative = true;
    i = 1;
    if (s.size() == 1) return false;
  }
  if (s[i] < '1' || s[i] > '9') return false;
  unsigned long long v = 0;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    unsigned long long d = static_cast<unsigned long long>(s[i] - '0');
    if (v > (ULLONG_MAX - d) / 10) return false;
    v = v * 10 + d;
  }
  if (negative) {
    if (v > static_cast<unsigned long long>(LLONG_MAX) + 1) return false;
    out = v == static_cast<unsigned long long>(LLONG_MAX) + 1 ? LLONG_MIN
                                                              : -static_cast<long long>(v);
  } else {
    if (v > static_cast<unsigned long long>(LLONG_MAX)) return false;
    out = static_cast<long long>(v);
  }
  return true;
}

// Redis' string2d (ZADD scores): strtod of the whole text, no spaces, not NaN.
bool parse_double(const std::string& s, double& out) {
  if (s.empty() || std::isspace(static_cast<unsigned char>(s[0]))) return false;
  char* end = nullptr;
  errno = 0;
  out = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || std::isnan(out)) return false;
  if (errno == ERANGE && !std::isinf(out) && out != 0) return false;
  return true;
}

// A score as Redis 7.0 prints it.
std::string format_double(double d) {
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", d);
  return buf;
}

struct Entry {
  KeyType type = KeyType::string;
  std::string str;
  std::map<std::string, std::string> hash;
  std::set<std::string> set;
  std::map<std::string, double> zscore;
  std::set<std::pair<double, std::string>> zorder;  // ZRANGE order: score, then member bytes
  std::int64_t deadline = -1;                       // -1: no expiry
};

struct Db {
  std::map<std::string, Entry> keys;
  std::set<std::pair<std::int64_t, std::string>> expiries;  // (deadline, key)
};

struct Conn {
  int db = 0;
  bool authed = false;
  std::set<std::string> channels;
};

// Score range bound of ZRANGEBYSCORE ("(1.5", "-inf", "+inf").
struct Bound {
  double value = 0;
  bool exclusive = false;
};

bool parse_bound(const std::string& s, Bound& b) {
  if (!s.empty() && s[0] == '(') {
    b.exclusive = true;
    return parse_double(s.substr(1), b.value);
  }
  return parse_double(s, b.value);
}

using Args = std::vector<std::string>;

}  // namespace

struct RedisNode::Impl {
  using Handler = Value (Impl::*)(const Args&);
  struct Command {
    Handler run;
    int arity;       // Redis' convention: n exactly, -n at least n
    bool write;      // marks a script as having written (then OOM no longer stops it)
    bool denyoom;    // refused at maxmemory
    bool noscript;   // not callable from a script
    bool pubsub_ok;  // allowed on a connection in subscribed mode
  };

  RedisNode& node;
  std::vector<Db> dbs = std::vector<Db>(kDatabases);
  std::map<std::uint64_t, Conn> conns;
  std::map<std::string, std::set<std::uint64_t>> channels;
  std::vector<Delivery> deliveries;
  std::map<std::string, std::string> scripts;      // sha -> body; compiled functions in Lua
  std::unordered_map<std::string, Command> table;  // looked up only, never listed
  // The Lua state is one per thread, shared by the nodes on it (vm() below): a node is cheap
  // to make, and each script is compiled once per thread however many nodes load it. Nothing
  // of one node's scripts can reach another's: globals are read-only, KEYS and ARGV are set
  // for every call, and the node that runs a script is `current`. Which scripts a node has
  // loaded (NOSCRIPT) is the node's own: `scripts`.
  struct LuaVM {
    lua_State* L = nullptr;
    int scripts_ref = LUA_NOREF;  // registry: sha -> compiled function
    int handler_ref = LUA_NOREF;  // registry: the error handler (as Redis 7.0's)
    int globals_ref = LUA_NOREF;  // registry: the real globals (KEYS and ARGV go there)
    ~LuaVM() {
      if (L != nullptr) lua_close(L);
    }
  };
  static LuaVM& vm() {
    thread_local LuaVM v;
    if (v.L == nullptr) build_vm(v);
    return v;
  }
  static inline thread_local Impl* current = nullptr;  // the node running a script
  lua_State* L = nullptr;
  int scripts_ref = LUA_NOREF;
  int handler_ref = LUA_NOREF;
  int globals_ref = LUA_NOREF;
  void bind() {
    LuaVM& v = vm();
    L = v.L;
    scripts_ref = v.scripts_ref;
    handler_ref = v.handler_ref;
    globals_ref = v.globals_ref;
  }

  // The command being run.
  std::int64_t now = 0;
  int db = 0;
  Conn* conn = nullptr;
  std::uint64_t conn_id = 0;
  bool in_script = false;
  bool script_dirty = false;
  long hooks = 0;
  std::string script_sha;
  std::string pending_logic_error;  // a std::logic_error raised inside Lua, rethrown after

  explicit Impl(RedisNode& n) : node(n) { build_table(); }

  // ----------------------------------------------------------------------------------------
  // Keyspace

  Db& cur() { return dbs[static_cast<std::size_t>(db)]; }

  void drop_expired(Db& d) {
    while (!d.expiries.empty() && d.expiries.begin()->first < now) {
      auto key = d.expiries.begin()->second;
      d.expiries.erase(d.expiries.begin());
      d.keys.erase(key);
    }
  }

  Entry* find(const std::string& key) {
    auto& d = cur();
    auto it = d.keys.find(key);
    if (it == d.keys.end()) return nullptr;
    if (it->second.deadline >= 0 && now > it->second.deadline) {
      d.expiries.erase({it->second.deadline, key});
      d.keys.erase(it);
      return nullptr;
    }
    return &it->second;
  }

  // The entry of `key` when it has type `t` (nullptr: missing); `wrong` set when another type.
  Entry* find_typed(const std::string& key, KeyType t, bool& wrong) {
    Entry* e = find(key);
    wrong = e != nullptr && e->type != t;
    return wrong ? nullptr : e;
  }

  Entry& create(const std::string& key, KeyType t) {
    Entry& e = cur().keys[key];
    e = Entry{};
    e.type = t;
    return e;
  }

  void erase(const std::string& key) {
    auto& d = cur();
    auto it = d.keys.find(key);
    if (it == d.keys.end()) return;
    if (it->second.deadline >= 0) d.expiries.erase({it->second.deadline, key});
    d.keys.erase(it);
  }

  void set_deadline(const std::string& key, Entry& e, std::int64_t deadline) {
    auto& d = cur();
    if (e.deadline >= 0) d.expiries.erase({e.deadline, key});
    e.deadline = deadline;
    if (deadline >= 0) d.expiries.insert({deadline, key});
  }

  // A container left empty by a removal is deleted, as in Redis.
  void drop_if_empty(const std::string& key, Entry& e) {
    bool empty = (e.type == KeyType::hash && e.hash.empty()) ||
                 (e.type == KeyType::set && e.set.empty()) ||
                 (e.type == KeyType::zset && e.zscore.empty());
    if (empty) erase(key);
  }

  static Value ok() { return Value::status("OK"); }
  static Value err(std::string text) { return Value::error(std::move(text)); }
  static Value wrongtype() { return Value::error(kWrongType); }

  // ----------------------------------------------------------------------------------------
  // Dispatch

  void build_table() {
    // name, handler, arity, write, denyoom, noscript, pubsub_ok
    auto add = [&](const char* name, Handler h, int arity, bool write, bool denyoom,
                   bool noscript = false, bool pubsub_ok = false) {
      table[name] = Command{h, arity, write, denyoom, noscript, pubsub_ok};
    };
    add("ping", &Impl::cmd_ping, -1, false, false, false, true);
    add("get", &Impl::cmd_get, 2, false, false);
    add("set", &Impl::cmd_set, -3, true, true);
    add("del", &Impl::cmd_del, -2, true, false);
    add("exists", &Impl::cmd_exists, -2, false, false);
    add("type", &Impl::cmd_type, 2, false, false);
    add("pttl", &Impl::cmd_pttl, 2, false, false);
    add("pexpire", &Impl::cmd_pexpire, -3, true, false);
    add("incr", &Impl::cmd_incr, 2, true, true);
    add("setrange", &Impl::cmd_setrange, 4, true, true);
    add("time", &Impl::cmd_time, 1, false, false);
    add("zadd", &Impl::cmd_zadd, -4, true, true);
    add("zrange", &Impl::cmd_zrange, -4, false, false);
    add("zrem", &Impl::cmd_zrem, -3, true, false);
    add("zrangebyscore", &Impl::cmd_zrangebyscore, -4, false, false);
    add("zremrangebyscore", &Impl::cmd_zremrangebyscore, 4, true, false);
    add("zcard", &Impl::cmd_zcard, 2, false, false);
    add("zscore", &Impl::cmd_zscore, 3, false, false);
    add("hset", &Impl::cmd_hset, -4, true, true);
    add("hget", &Impl::cmd_hget, 3, false, false);
    add("hdel", &Impl::cmd_hdel, -3, true, false);
    add("hgetall", &Impl::cmd_hgetall, 2, false, false);
    add("sadd", &Impl::cmd_sadd, -3, true, true);
    add("srem", &Impl::cmd_srem, -3, true, false);
    add("smembers", &Impl::cmd_smembers, 2, false, false);
    add("publish", &Impl::cmd_publish, 3, false, false);
    add("pubsub", &Impl::cmd_pubsub, -2, false, false);
    add("subscribe", &Impl::cmd_subscribe, -2, false, false, true, true);
    add("unsubscribe", &Impl::cmd_unsubscribe, -1, false, false, true, true);
    add("info", &Impl::cmd_info, -1, false, false);
    add("role", &Impl::cmd_role, 1, false, false, true);
    add("config", &Impl::cmd_config, -2, false, false, true);
    add("select", &Impl::cmd_select, 2, false, false);
    add("auth", &Impl::cmd_auth, -2, false, false, true);
    add("eval", &Impl::cmd_eval, -3, false, false, true);
    add("evalsha", &Impl::cmd_evalsha, -3, false, false, true);
    add("script", &Impl::cmd_script, -2, false, false, true);
    add("flushall", &Impl::cmd_flushall, -1, true, false);
    add("dbsize", &Impl::cmd_dbsize, 1, false, false);
  }

  static bool arity_ok(const Command& c, std::size_t argc) {
    auto n = static_cast<std::size_t>(std::abs(c.arity));
    return c.arity > 0 ? argc == n : argc >= n;
  }

  // A client's command (not from a script).
  Value client_command(const Args& argv, std::int64_t now_ms, std::uint64_t connection) {
    if (argv.empty()) not_modelled("an empty command");
    now = now_ms;
    conn = &conns[connection];
    conn_id = connection;
    db = conn->db;
    bind();
    for (auto& d : dbs) drop_expired(d);
    std::string name = lower(argv[0]);
    auto it = table.find(name);
    if (it == table.end()) not_modelled(argv[0]);
    const Command& c = it->second;
    // The order of Redis 7.0's checks (server.c, processCommand).
    if (!arity_ok(c, argv.size()))
      return err("ERR wrong number of arguments for '" + name + "' command");
    if (!node.options_.password.empty() && !conn->authed && name != "auth")
      return err("NOAUTH Authentication required.");
    if (c.denyoom && node.oom_) return err(kOom);
    if (c.write && node.options_.replica && node.options_.read_only)
      return err("READONLY You can't write against a read only replica.");
    if (!conn->channels.empty() && !c.pubsub_ok)
      return err("ERR Can't execute '" + name +
                 "': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed "
                 "in this context");
    return (this->*c.run)(argv);
  }

  // ----------------------------------------------------------------------------------------
  // Strings and keys

  Value cmd_ping(const Args& a) {
    if (a.size() > 2) return err("ERR wrong number of arguments for 'ping' command");
    if (conn != nullptr && !conn->channels.empty() && !in_script)
      return Value::array({Value::bulk("pong"), Value::bulk(a.size() == 2 ? a[1] : "")});
    return a.size() == 2 ? Value::bulk(a[1]) : Value::status("PONG");
  }

  Value cmd_get(const Args& a) {
    bool wrong;
    Entry* e = find_typed(a[1], KeyType::string, wrong);
    if (wrong) return wrongtype();
    return e ? Value::bulk(e->str) : Value::nil();
  }

  Value cmd_set(const Args& a) {
    // As Redis 7.0 parses them (t_string.c): a repeated option is allowed, PX after EX (or
    // either with KEEPTTL) is not; the last PX or EX given counts.
    bool nx = false, xx = false, get = false, keepttl = false, px = false, ex = false;
    const std::string* expire = nullptr;
    for (std::size_t j = 3; j < a.size(); ++j) {
      std::string opt = lower(a[j]);
      bool has_next = j + 1 < a.size();
      if (opt == "nx" && !xx) {
        nx = true;
      } else if (opt == "xx" && !nx) {
        xx = true;
      } else if (opt == "get") {
        get = true;
      } else if (opt == "keepttl" && !px && !ex) {
        keepttl = true;
      } else if (opt == "px" && !keepttl && !ex && has_next) {
        px = true;
        expire = &a[++j];
      } else if (opt == "ex" && !keepttl && !px && has_next) {
        ex = true;
        expire = &a[++j];
      } else if (opt == "pxat" || opt == "exat" || opt == "persist") {
        not_modelled("SET " + a[j]);
      } else {
        return err(kSyntax);
      }
    }
    const bool seconds = ex;
    std::int64_t deadline = -1;
    if (expire != nullptr) {
      long long ms;
      if (!parse_ll(*expire, ms)) return err(kNotInteger);
      if (ms <= 0 || (seconds && ms > LLONG_MAX / 1000))
        return err("ERR invalid expire time in 'set' command");
      if (seconds) ms *= 1000;
      long long when = 0;
      if (__builtin_add_overflow(now, ms, &when))
        return err("ERR invalid expire time in 'set' command");
      deadline = when;
    }
    Value old = Value::nil();
    Entry* e = find(a[1]);
    if (get) {
      if (e != nullptr && e->type != KeyType::string) return wrongtype();
      if (e != nullptr) old = Value::bulk(e->str);
    }
    if ((nx && e != nullptr) || (xx && e == nullptr)) return get ? old : Value::nil();
    std::int64_t keep = keepttl && e != nullptr ? e->deadline : -1;
    if (e != nullptr && e->deadline >= 0) cur().expiries.erase({e->deadline, a[1]});
    Entry& n = create(a[1], KeyType::string);
    n.str = a[2];
    set_deadline(a[1], n, expire != nullptr ? deadline : keep);
    return get ? old : ok();
  }

  Value cmd_del(const Args& a) {
    long long n = 0;
    for (std::size_t i = 1; i < a.size(); ++i)
      if (find(a[i]) != nullptr) {
        erase(a[i]);
        ++n;
      }
    return Value::integer(n);
  }

  Value cmd_exists(const Args& a) {
    long long n = 0;
    for (std::size_t i = 1; i < a.size(); ++i)
      if (find(a[i]) != nullptr) ++n;
    return Value::integer(n);
  }

  Value cmd_type(const Args& a) {
    Entry* e = find(a[1]);
    return Value::status(e ? type_name(e->type) : "none");
  }

  Value cmd_pttl(const Args& a) {
    Entry* e = find(a[1]);
    if (e == nullptr) return Value::integer(-2);
    if (e->deadline < 0) return Value::integer(-1);
    return Value::integer(e->deadline - now);
  }

  Value cmd_pexpire(const Args& a) {
    if (a.size() > 3) not_modelled("PEXPIRE with options");
    long long ms;
    if (!parse_ll(a[2], ms)) return err(kNotInteger);
    long long when = 0;
    if (ms > 0 && __builtin_add_overflow(now, ms, &when))
      return err("ERR invalid expire time in 'pexpire' command");
    Entry* e = find(a[1]);
    if (e == nullptr) return Value::integer(0);
    if (ms <= 0) {
      erase(a[1]);  // already expired: deleted at once
      return Value::integer(1);
    }
    set_deadline(a[1], *e, when);
    return Value::integer(1);
  }

  Value cmd_incr(const Args& a) {
    bool wrong;
    Entry* e = find_typed(a[1], KeyType::string, wrong);
    if (wrong) return wrongtype();
    long long v = 0;
    if (e != nullptr && !parse_ll(e->str, v)) return err(kNotInteger);
    if (v == LLONG_MAX) return err("ERR increment or decrement would overflow");
    ++v;
    if (e == nullptr) e = &create(a[1], KeyType::string);
    e->str = std::to_string(v);
    return Value::integer(v);
  }

  Value cmd_setrange(const Args& a) {
    long long offset;
    if (!parse_ll(a[2], offset)) return err(kNotInteger);
    if (offset < 0) return err("ERR offset is out of range");
    bool wrong;
    Entry* e = find_typed(a[1], KeyType::string, wrong);
    if (wrong) return wrongtype();
    const std::string& value = a[3];
    if (e == nullptr) {
      if (value.empty()) return Value::integer(0);
      if (offset + static_cast<long long>(value.size()) > 512LL * 1024 * 1024)
        return err("ERR string exceeds maximum allowed size (proto-max-bulk-len)");
      e = &create(a[1], KeyType::string);
    } else {
      if (value.empty()) return Value::integer(static_cast<long long>(e->str.size()));
      if (offset + static_cast<long long>(value.size()) > 512LL * 1024 * 1024)
        return err("ERR string exceeds maximum allowed size (proto-max-bulk-len)");
    }
    auto need = static_cast<std::size_t>(offset) + value.size();
    if (e->str.size() < need) e->str.resize(need, '\0');
    e->str.replace(static_cast<std::size_t>(offset), value.size(), value);
    return Value::integer(static_cast<long long>(e->str.size()));
  }

  Value cmd_time(const Args&) {
    std::int64_t s = now >= 0 ? now / 1000 : -((-now + 999) / 1000);
    std::int64_t us = (now - s * 1000) * 1000;
    return Value::array({Value::bulk(std::to_string(s)), Value::bulk(std::to_string(us))});
  }

  // ----------------------------------------------------------------------------------------
  // Sorted sets

  static void zset_put(Entry& e, const std::string& member, double score) {
    auto it = e.zscore.find(member);
    if (it != e.zscore.end()) {
      e.zorder.erase({it->second, member});
      it->second = score;
    } else {
      e.zscore.emplace(member, score);
    }
    e.zorder.insert({score, member});
  }

  static bool zset_remove(Entry& e, const std::string& member) {
    auto it = e.zscore.find(member);
    if (it == e.zscore.end()) return false;
    e.zorder.erase({it->second, member});
    e.zscore.erase(it);
    return true;
  }

  Value cmd_zadd(const Args& a) {
    std::string first = lower(a[2]);
    if (first == "nx" || first == "xx" || first == "gt" || first == "lt" || first == "ch" ||
        first == "incr")
      not_modelled("ZADD " + a[2]);
    if ((a.size() - 2) % 2 != 0) return err(kSyntax);
    std::vector<double> scores;
    for (std::size_t i = 2; i < a.size(); i += 2) {
      double d;
      if (!parse_double(a[i], d)) return err("ERR value is not a valid float");
      scores.push_back(d);
    }
    bool wrong;
    Entry* e = find_typed(a[1], KeyType::zset, wrong);
    if (wrong) return wrongtype();
    if (e == nullptr) e = &create(a[1], KeyType::zset);
    long long added = 0;
    for (std::size_t i = 2, k = 0; i < a.size(); i += 2, ++k) {
      if (e->zscore.count(a[i + 1]) == 0) ++added;
      zset_put(*e, a[i + 1], scores[k]);
    }
    return Value::integer(added);
  }

  static void push_member(std::vector<Value>& out, const std::pair<double, std::string>& m,
                          bool withscores) {
    out.push_back(Value::bulk(m.second));
    if (withscores) out.push_back(Value::bulk(format_double(m.first)));
  }

  Value cmd_zrange(const Args& a) {
    bool withscores = false;
    for (std::size_t i = 4; i < a.size(); ++i) {
      if (lower(a[i]) == "withscores")
        withscores = true;
      else
        not_modelled("ZRANGE " + a[i]);
    }
    long long start, stop;
    if (!parse_ll(a[2], start) || !parse_ll(a[3], stop)) return err(kNotInteger);
    bool wrong;
    Entry* e = find_typed(a[1], KeyType::zset, wrong);
    if (wrong) return wrongtype();
    std::vector<Value> out;
    if (e == nullptr) return Value::array({});
    auto n = static_cast<long long>(e->zorder.size());
    if (start < 0) start += n;
    if (stop < 0) stop += n;
    if (start < 0) start = 0;
    if (start > stop || start >= n) return Value::array({});
    if (stop >= n) stop = n - 1;
    auto it = e->zorder.begin();
    std::advance(it, start);
    for (long long i = start; i <= stop; ++i, ++it) push_member(out, *it, withscores);
    return Value::array(std::move(out));
  }

  static bool in_range(double s, const Bound& min, const Bound& max) {
    bool above = min.exclusive ? s > min.value : s >= min.value;
    bool below = max.exclusive ? s < max.value : s <= max.value;
    return above && below;
  }

  Value cmd_zrangebyscore(const Args& a) {
    bool withscores = false;
    long long offset = 0, count = -1;
    for (std::size_t i = 4; i < a.size(); ++i) {
      std::string opt = lower(a[i]);
      if (opt == "withscores") {
        withscores = true;
      } else if (opt == "limit" && i + 2 < a.size()) {
        if (!parse_ll(a[i + 1], offset) || !parse_ll(a[i + 2], count)) return err(kNotInteger);
        i += 2;
      } else {
        return err(kSyntax);
      }
    }
    Bound min, max;
    if (!parse_bound(a[2], min) || !parse_bound(a[3], max))
      return err("ERR min or max is not a float");
    bool wrong;
    Entry* e = find_typed(a[1], KeyType::zset, wrong);
    if (wrong) return wrongtype();
    std::vector<Value> out;
    if (e == nullptr || offset < 0) return Value::array({});
    for (const auto& m : e->zorder) {
      if (!in_range(m.first, min, max)) continue;
      if (offset > 0) {
        --offset;
        continue;
      }
      if (count == 0) break;
      push_member(out, m, withscores);
      if (count > 0) --count;
    }
    return Value::array(std::move(out));
  }

  Value cmd_zremrangebyscore(const Args& a) {
    Bound min, max;
    if (!parse_bound(a[2], min) || !parse_bound(a[3], max))
      return err("ERR min or max is not a float");
    bool wrong;
    Entry* e = find_typed(a[1], KeyType::zset, wrong);
    if (wrong) return wrongtype();
    if (e == nullptr) return Value::integer(0);
    std::vector<std::string> gone;
    for (const auto& m : e->zorder)
      if (in_range(m.first, min, max)) gone.push_back(m.second);
    for (const auto& m : gone) zset_remove(*e, m);
    drop_if_empty(a[1], *e);
    return Value::integer(static_cast<long long>(gone.size()));
  }

  Value cmd_zrem(const Args& a) {
    bool wrong;
    Entry* e = find_typed(a[1], KeyType::zset, wrong);
    if (wrong) return wrongtype();
    if (e == nullptr) return Value::integer(0);
    long long n = 0;
    for (std::size_t i = 2; i < a.size(); ++i) n += zset_remove(*e, a[i]) ? 1 : 0;
    drop_if_empty(a[1], *e);
    return Value::integer(n);
  }

  Value cmd_zcard(const Args& a) {
    bool wrong;
    Entry* e = find_typed(a[1], KeyType::zset, wrong);
    if (wrong) return wrongtype();
    return Value::integer(e ? static_cast<long long>(e->zscore.size()) : 0);
  }

  Value cmd_zscore(const Args& a) {
    bool wrong;
    Entry* e = find_typed(a[1], KeyType::zset, wrong);
    if (wrong) return wrongtype();
    if (e == nullptr) return Value::nil();
    auto it = e->zscore.find(a[2]);
    return it == e->zscore.end() ? Value::nil() : Value::bulk(format_double(it->second));
  }

  // ----------------------------------------------------------------------------------------
  // Hashes and sets

  Value cmd_hset(const Args& a) {
    if (a.size() % 2 != 0) return err("ERR wrong number of arguments for 'hset' command");
    bool wrong;
    Entry* e = find_typed(a[1], KeyType::hash, wrong);
    if (wrong) return wrongtype();
    if (e == nullptr) e = &create(a[1], KeyType::hash);
    long long added = 0;
    for (std::size_t i = 2; i < a.size(); i += 2) {
      auto r = e->hash.insert_or_assign(a[i], a[i + 1]);
      if (r.second) ++added;
    }
    return Value::integer(added);
  }

  Value cmd_hget(const Args& a) {
    bool wrong;
    Entry* e = find_typed(a[1], KeyType::hash, wrong);
    if (wrong) return wrongtype();
    if (e == nullptr) return Value::nil();
    auto it = e->hash.find(a[2]);
    return it == e->hash.end() ? Value::nil() : Value::bulk(it->second);
  }

  Value cmd_hdel(const Args& a) {
    bool wrong;
    Entry* e = find_typed(a[1], KeyType::hash, wrong);
    if (wrong) return wrongtype();
    if (e == nullptr) return Value::integer(0);
    long long n = 0;
    for (std::size_t i = 2; i < a.size(); ++i) n += static_cast<long long>(e->hash.erase(a[i]));
    drop_if_empty(a[1], *e);
    return Value::integer(n);
  }

  Value cmd_hgetall(const Args& a) {
    bool wrong;
    Entry* e = find_typed(a[1], KeyType::hash, wrong);
    if (wrong) return wrongtype();
    std::vector<Value> out;
    if (e != nullptr)
      for (const auto& [f, v] : e->hash) {
        out.push_back(Value::bulk(f));
        out.push_back(Value::bulk(v));
      }
    return Value::array(std::move(out));
  }

  Value cmd_sadd(const Args& a) {
    bool wrong;
    Entry* e = find_typed(a[1], KeyType::set, wrong);
    if (wrong) return wrongtype();
    if (e == nullptr) e = &create(a[1], KeyType::set);
    long long n = 0;
    for (std::size_t i = 2; i < a.size(); ++i) n += e->set.insert(a[i]).second ? 1 : 0;
    return Value::integer(n);
  }

  Value cmd_srem(const Args& a) {
    bool wrong;
    Entry* e = find_typed(a[1], KeyType::set, wrong);
    if (wrong) return wrongtype();
    if (e == nullptr) return Value::integer(0);
    long long n = 0;
    for (std::size_t i = 2; i < a.size(); ++i) n += static_cast<long long>(e->set.erase(a[i]));
    drop_if_empty(a[1], *e);
    return Value::integer(n);
  }

  Value cmd_smembers(const Args& a) {
    bool wrong;
    Entry* e = find_typed(a[1], KeyType::set, wrong);
    if (wrong) return wrongtype();
    std::vector<Value> out;
    if (e != nullptr)
      for (const auto& m : e->set) out.push_back(Value::bulk(m));
    return Value::array(std::move(out));
  }

  // ----------------------------------------------------------------------------------------
  // Pub/sub

  Value cmd_publish(const Args& a) {
    auto it = channels.find(a[1]);
    if (it == channels.end()) return Value::integer(0);
    for (auto c : it->second) deliveries.push_back(Delivery{c, a[1], a[2]});
    return Value::integer(static_cast<long long>(it->second.size()));
  }

  Value cmd_pubsub(const Args& a) {
    if (lower(a[1]) != "numsub") not_modelled("PUBSUB " + a[1]);
    std::vector<Value> out;
    for (std::size_t i = 2; i < a.size(); ++i) {
      auto it = channels.find(a[i]);
      out.push_back(Value::bulk(a[i]));
      out.push_back(
          Value::integer(it == channels.end() ? 0 : static_cast<long long>(it->second.size())));
    }
    return Value::array(std::move(out));
  }

  void add_subscription(std::uint64_t id, Conn& c, const std::string& channel) {
    c.channels.insert(channel);
    channels[channel].insert(id);
  }

  void drop_subscription(std::uint64_t id, Conn& c, const std::string& channel) {
    c.channels.erase(channel);
    auto it = channels.find(channel);
    if (it == channels.end()) return;
    it->second.erase(id);
    if (it->second.empty()) channels.erase(it);
  }

  Value cmd_subscribe(const Args& a) {
    if (a.size() != 2) not_modelled("SUBSCRIBE of several channels in one command");
    add_subscription(conn_id, *conn, a[1]);
    return Value::array({Value::bulk("subscribe"), Value::bulk(a[1]),
                         Value::integer(static_cast<long long>(conn->channels.size()))});
  }

  Value cmd_unsubscribe(const Args& a) {
    if (a.size() != 2) not_modelled("UNSUBSCRIBE of all or several channels in one command");
    drop_subscription(conn_id, *conn, a[1]);
    return Value::array({Value::bulk("unsubscribe"), Value::bulk(a[1]),
                         Value::integer(static_cast<long long>(conn->channels.size()))});
  }

  // ----------------------------------------------------------------------------------------
  // Server

  std::string info_section(const std::string& s) {
    const NodeOptions& o = node.options_;
    std::int64_t up = (now - node.started_ms_) / 1000;
    if (up < 0) up = 0;
    std::string t;
    auto line = [&](const std::string& k, const std::string& v) { t += k + ":" + v + "\r\n"; };
    if (s == "server") {
      t += "# Server\r\n";
      line("redis_version", o.version);
      line("redis_mode", "standalone");
      line("run_id", o.run_id);
      line("tcp_port", std::to_string(o.port));
      line("uptime_in_seconds", std::to_string(up));
      line("uptime_in_days", std::to_string(up / 86400));
    } else if (s == "persistence") {
      t += "# Persistence\r\n";
      line("loading", "0");
      line("aof_enabled", o.aof_enabled ? "1" : "0");
    } else if (s == "replication") {
      t += "# Replication\r\n";
      if (o.replica) {
        line("role", "slave");
        line("master_host", "127.0.0.1");
        line("master_port", "6379");
        line("master_link_status", "up");
      } else {
        line("role", "master");
        line("connected_slaves", "0");
      }
    } else if (s == "cluster") {
      t += "# Cluster\r\n";
      line("cluster_enabled", o.cluster_enabled ? "1" : "0");
    } else if (s == "keyspace") {
      t += "# Keyspace\r\n";
      for (int i = 0; i < kDatabases; ++i) {
        auto& d = dbs[static_cast<std::size_t>(i)];
        if (d.keys.empty()) continue;
        line("db" + std::to_string(i), "keys=" + std::to_string(d.keys.size()) + ",expires=" +
                                           std::to_string(d.expiries.size()) + ",avg_ttl=0");
      }
    }
    return t;
  }

  Value cmd_info(const Args& a) {
    static const char* const defaults[] = {"server", "persistence", "replication", "cluster",
                                           "keyspace"};
    std::vector<std::string> wanted;
    for (std::size_t i = 1; i < a.size(); ++i) {
      std::string s = lower(a[i]);
      if (s == "default" || s == "all" || s == "everything")
        wanted.assign(std::begin(defaults), std::end(defaults));
      else
        wanted.push_back(s);
    }
    if (a.size() == 1) wanted.assign(std::begin(defaults), std::end(defaults));
    std::string text;
    for (const auto& s : wanted) {
      std::string part = info_section(s);
      if (part.empty()) continue;
      if (!text.empty()) text += "\r\n";
      text += part;
    }
    return Value::bulk(text);
  }

  Value cmd_role(const Args&) {
    if (node.options_.replica)
      return Value::array({Value::bulk("slave"), Value::bulk("127.0.0.1"), Value::integer(6379),
                           Value::bulk("connected"), Value::integer(0)});
    return Value::array({Value::bulk("master"), Value::integer(0), Value::array({})});
  }

  Value cmd_config(const Args& a) {
    if (lower(a[1]) != "get" || a.size() != 3) not_modelled("CONFIG " + a[1]);
    std::string p = lower(a[2]);
    const NodeOptions& o = node.options_;
    std::string v;
    if (p == "appendonly")
      v = o.aof_enabled ? "yes" : "no";
    else if (p == "appendfsync")
      v = o.appendfsync;
    else if (p == "maxmemory")
      v = node.oom_ ? "1" : "0";
    else if (p == "maxmemory-policy")
      v = "noeviction";
    else
      not_modelled("CONFIG GET " + a[2]);
    return Value::array({Value::bulk(p), Value::bulk(v)});
  }

  Value cmd_select(const Args& a) {
    long long n;
    if (!parse_ll(a[1], n)) return err(kNotInteger);
    if (n < 0 || n >= kDatabases) return err("ERR DB index is out of range");
    db = static_cast<int>(n);
    if (!in_script) conn->db = db;  // Redis 7: a script's SELECT ends with the script
    return ok();
  }

  Value cmd_auth(const Args& a) {
    if (a.size() > 3) return err(kSyntax);
    const std::string& pw = node.options_.password;
    if (pw.empty())
      return err(
          "ERR AUTH <password> called without any password configured for the default user. "
          "Are you sure your configuration is correct?");
    bool user_ok = a.size() == 2 || a[1] == "default";
    if (!user_ok || a.back() != pw)
      return err("WRONGPASS invalid username-password pair or user is disabled.");
    conn->authed = true;
    return ok();
  }

  Value cmd_flushall(const Args&) {
    for (auto& d : dbs) d = Db{};
    return ok();
  }

  Value cmd_dbsize(const Args&) {
    return Value::integer(static_cast<long long>(cur().keys.size()));
  }

  // ----------------------------------------------------------------------------------------
  // Scripts

  Value cmd_script(const Args& a) {
    std::string sub = lower(a[1]);
    if (sub == "load") {
      if (a.size() != 3) return err("ERR wrong number of arguments for 'script|load' command");
      std::string sha;
      Value e = compile(a[2], sha);
      return e.is_error() ? e : Value::bulk(sha);
    }
    if (sub == "flush") {
      forget_scripts();
      return ok();
    }
    if (sub == "exists") {
      std::vector<Value> out;
      for (std::size_t i = 2; i < a.size(); ++i)
        out.push_back(Value::integer(scripts.count(lower(a[i])) ? 1 : 0));
      return Value::array(std::move(out));
    }
    not_modelled("SCRIPT " + a[1]);
  }

  Value cmd_eval(const Args& a) {
    std::string sha;
    Value e = compile(a[1], sha);
    if (e.is_error()) return e;
    return run_script(sha, a);
  }

  Value cmd_evalsha(const Args& a) {
    std::string sha = lower(a[1]);
    if (scripts.count(sha) == 0) return err("NOSCRIPT No matching script. Please use EVAL.");
    return run_script(sha, a);
  }

  // Compiles `body` once (a loaded script is not compiled again); `sha` its digest.
  Value compile(const std::string& body, std::string& sha) {
    sha = sha1_hex(body.data(), body.size());
    if (scripts.count(sha)) return Value::nil();
    if (body.size() >= 2 && body[0] == '#' && body[1] == '!')
      not_modelled("scripts with a shebang (flags)");
    Value e = load_function(sha, body);
    if (e.is_error()) return e;
    scripts[sha] = body;
    return Value::nil();
  }

  // The thread's compiled function for `sha`, compiled now if this thread has none yet.
  Value load_function(const std::string& sha, const std::string& body) {
    lua_rawgeti(L, LUA_REGISTRYINDEX, scripts_ref);
    lua_getfield(L, -1, sha.c_str());
    bool compiled = lua_isfunction(L, -1);
    lua_pop(L, 1);
    if (!compiled) {
      if (luaL_loadbuffer(L, body.data(), body.size(), "@user_script") != 0) {
        std::string msg = lua_tostring(L, -1);
        lua_pop(L, 2);
        return err("ERR Error compiling script (new function): " + msg);
      }
      // Its globals are the read-only view (see build_vm).
      lua_rawgeti(L, LUA_REGISTRYINDEX, globals_ref);
      lua_getfield(L, -1, "__sim_env");
      lua_setfenv(L, -3);
      lua_pop(L, 1);
      lua_setfield(L, -2, sha.c_str());
    }
    lua_pop(L, 1);
    return Value::nil();
  }

  // The node forgets; the thread's compiled function stays for the next node that loads it.
  void forget_scripts() { scripts.clear(); }

  // The global array `name` (KEYS or ARGV) from a[from, to).
  void set_array(const char* name, const Args& a, std::size_t from, std::size_t to) {
    lua_rawgeti(L, LUA_REGISTRYINDEX, globals_ref);
    lua_createtable(L, static_cast<int>(to - from), 0);
    for (std::size_t i = from; i < to; ++i) {
      lua_pushlstring(L, a[i].data(), a[i].size());
      lua_rawseti(L, -2, static_cast<int>(i - from + 1));
    }
    lua_setfield(L, -2, name);
    lua_pop(L, 1);
  }

  Value run_script(const std::string& sha, const Args& a) {
    long long numkeys;
    if (!parse_ll(a[2], numkeys)) return err(kNotInteger);
    if (numkeys > static_cast<long long>(a.size() - 3))
      return err("ERR Number of keys can't be greater than number of args");
    if (numkeys < 0) return err("ERR Number of keys can't be negative");
    auto first_arg = 3 + static_cast<std::size_t>(numkeys);
    set_array("KEYS", a, 3, first_arg);
    set_array("ARGV", a, first_arg, a.size());
    // Loaded by this node on another thread: that thread compiled it, this one has not yet.
    load_function(sha, scripts[sha]);

    int base = lua_gettop(L);
    lua_rawgeti(L, LUA_REGISTRYINDEX, handler_ref);
    lua_rawgeti(L, LUA_REGISTRYINDEX, scripts_ref);
    lua_getfield(L, -1, sha.c_str());
    lua_remove(L, -2);
    int saved_db = db;
    in_script = true;
    script_dirty = false;
    hooks = 0;
    script_sha = sha;
    pending_logic_error.clear();
    current = this;
    lua_sethook(L, &Impl::count_hook, LUA_MASKCOUNT, kHookEvery);
    int rc = lua_pcall(L, 0, 1, base + 1);
    lua_sethook(L, nullptr, 0, 0);
    in_script = false;
    db = saved_db;
    Value out;
    if (!pending_logic_error.empty()) {
      lua_settop(L, base);
      std::string what = std::move(pending_logic_error);
      pending_logic_error.clear();
      throw std::logic_error(what);
    }
    if (rc == 0) {
      out = from_lua(-1);
    } else {
      out = script_error();
    }
    lua_settop(L, base);
    return out;
  }

  static void count_hook(lua_State* L, lua_Debug*) {
    Impl* self = current;
    if (++self->hooks > kMaxHooks) {
      self->pending_logic_error = "sim: a script ran for more than 2e8 Lua instructions";
      luaL_error(L, "script ran too long");
    }
  }

  // The error a failed script answers: as Redis 7.0 builds it from the table its error handler
  // made ({err, source, line}).
  Value script_error() {
    std::string msg = "ERR unknown error";
    std::string where;
    if (lua_istable(L, -1)) {
      lua_getfield(L, -1, "err");
      if (lua_isstring(L, -1)) {
        std::size_t n;
        const char* s = lua_tolstring(L, -1, &n);
        msg.assign(s, n);
      }
      lua_pop(L, 1);
      lua_getfield(L, -1, "source");
      lua_getfield(L, -2, "line");
      if (lua_isstring(L, -2) && lua_isnumber(L, -1)) {
        where = std::string(lua_tostring(L, -2)) + ":" +
                std::to_string(static_cast<long long>(lua_tonumber(L, -1)));
      }
      lua_pop(L, 2);
    } else if (lua_isstring(L, -1)) {
      msg = "ERR " + std::string(lua_tostring(L, -1));
    }
    std::string text = msg + " script: " + script_sha;
    if (!where.empty()) text += ", on " + where + ".";
    for (auto& c : text)
      if (c == '\r' || c == '\n') c = ' ';
    return err(text);
  }

  // A script's return value as a reply (SIMULATION.md's table, checked against Redis 7.0).
  Value from_lua(int index) {
    int idx = index < 0 ? lua_gettop(L) + index + 1 : index;
    switch (lua_type(L, idx)) {
      case LUA_TNUMBER: {
        // Truncated toward zero; out of range (or NaN) as x86's conversion gives it.
        double d = lua_tonumber(L, idx);
        if (!(d > -9223372036854775808.0 && d < 9223372036854775808.0))
          return Value::integer(LLONG_MIN);
        return Value::integer(static_cast<long long>(d));
      }
      case LUA_TSTRING: {
        std::size_t n;
        const char* s = lua_tolstring(L, idx, &n);
        return Value::bulk(std::string(s, n));
      }
      case LUA_TBOOLEAN:
        return lua_toboolean(L, idx) ? Value::integer(1) : Value::nil();
      case LUA_TTABLE: {
        lua_getfield(L, idx, "err");
        if (lua_type(L, -1) == LUA_TSTRING) {
          std::size_t n;
          const char* s = lua_tolstring(L, -1, &n);
          std::string text(s, n);
          lua_pop(L, 1);
          for (auto& c : text)
            if (c == '\r' || c == '\n') c = ' ';
          return err(text);
        }
        lua_pop(L, 1);
        lua_getfield(L, idx, "ok");
        if (lua_type(L, -1) == LUA_TSTRING) {
          std::size_t n;
          const char* s = lua_tolstring(L, -1, &n);
          std::string text(s, n);
          lua_pop(L, 1);
          for (auto& c : text)
            if (c == '\r' || c == '\n') c = ' ';
          return Value::status(text);
        }
        lua_pop(L, 1);
        std::vector<Value> items;
        for (int j = 1;; ++j) {
          lua_rawgeti(L, idx, j);
          if (lua_isnil(L, -1)) {
            lua_pop(L, 1);
            break;
          }
          items.push_back(from_lua(-1));
          lua_pop(L, 1);
        }
        return Value::array(std::move(items));
      }
      default:
        return Value::nil();
    }
  }

  // A reply as redis.call returns it.
  void to_lua(const Value& v) {
    switch (v.kind) {
      case Value::Kind::nil:
        lua_pushboolean(L, 0);
        break;
      case Value::Kind::integer:
        lua_pushnumber(L, static_cast<lua_Number>(v.number));
        break;
      case Value::Kind::bulk:
        lua_pushlstring(L, v.str.data(), v.str.size());
        break;
      case Value::Kind::status:
        lua_newtable(L);
        lua_pushlstring(L, v.str.data(), v.str.size());
        lua_setfield(L, -2, "ok");
        break;
      case Value::Kind::error:
        lua_newtable(L);
        lua_pushlstring(L, v.str.data(), v.str.size());
        lua_setfield(L, -2, "err");
        break;
      case Value::Kind::array:
        lua_createtable(L, static_cast<int>(v.items.size()), 0);
        for (std::size_t i = 0; i < v.items.size(); ++i) {
          to_lua(v.items[i]);
          lua_rawseti(L, -2, static_cast<int>(i + 1));
        }
        break;
    }
  }

  // One command from redis.call / redis.pcall: the reply, or an error reply with what a script
  // hears instead of the command's own checks.
  Value script_command(lua_State* L) {
    int argc = lua_gettop(L);
    if (argc == 0) return err("ERR Please specify at least one argument for this redis lib call");
    Args argv;
    argv.reserve(static_cast<std::size_t>(argc));
    for (int j = 1; j <= argc; ++j) {
      if (lua_type(L, j) == LUA_TNUMBER) {
        argv.push_back(number_arg(static_cast<double>(lua_tonumber(L, j))));
      } else if (lua_type(L, j) == LUA_TSTRING) {
        std::size_t n;
        const char* s = lua_tolstring(L, j, &n);
        argv.emplace_back(s, n);
      } else {
        return err("ERR Lua redis lib command arguments must be strings or integers");
      }
    }
    std::string name = lower(argv[0]);
    auto it = table.find(name);
    if (it == table.end()) not_modelled(argv[0] + " (from a script)");
    const Command& c = it->second;
    if (c.noscript) return err("ERR This Redis command is not allowed from script");
    if (!arity_ok(c, argv.size()))
      return err("ERR Wrong number of args calling Redis command from script");
    // Redis 7.0 (script.c, scriptVerifyOOM): at maxmemory, a command that may grow memory is
    // refused while the script has not written yet; after a write it cannot stop midway.
    if (c.denyoom && node.oom_ && !script_dirty) return err(kOom);
    if (c.write && node.options_.replica && node.options_.read_only)
      return err("READONLY You can't write against a read only replica.");
    if (c.write) script_dirty = true;
    return (this->*c.run)(argv);
  }

  static Impl* self_of(lua_State*) { return current; }

  // redis.call (raise) and redis.pcall. Lua raises errors with longjmp: every C++ object here
  // (the reply, an exception) is gone before lua_error runs, or its destructor would be skipped.
  static int lua_redis_command(lua_State* L, bool raise) {
    Impl* self = self_of(L);
    bool failed = false, is_error = false;
    try {
      Value v = self->script_command(L);
      lua_settop(L, 0);
      self->to_lua(v);
      is_error = v.is_error();
    } catch (const std::logic_error& e) {
      self->pending_logic_error = e.what();
      failed = true;
    } catch (const std::exception& e) {
      self->pending_logic_error = std::string("sim: ") + e.what();
      failed = true;
    }
    if (failed) {
      lua_settop(L, 0);
      lua_pushstring(L, "sim: the command failed in the simulator");
      return lua_error(L);
    }
    if (is_error && raise) return lua_error(L);
    return 1;
  }
  static int lua_call_fn(lua_State* L) { return lua_redis_command(L, true); }
  static int lua_pcall_fn(lua_State* L) { return lua_redis_command(L, false); }

  static int lua_sha1hex(lua_State* L) {
    if (lua_gettop(L) != 1) {
      lua_pushstring(L, "wrong number of arguments");
      return lua_error(L);
    }
    std::size_t n;
    const char* s = lua_tolstring(L, 1, &n);
    std::string hex = sha1_hex(s ? s : "", s ? n : 0);
    lua_pushlstring(L, hex.data(), hex.size());
    return 1;
  }

  // redis.error_reply / redis.status_reply: {err = text} (a leading '-' dropped), {ok = text}.
  static int lua_reply_table(lua_State* L, const char* field) {
    if (lua_gettop(L) != 1 || lua_type(L, 1) != LUA_TSTRING) {
      luaL_error(L, "wrong number or type of arguments");
      return 0;
    }
    std::size_t n;
    const char* s = lua_tolstring(L, 1, &n);
    if (field[0] == 'e' && n > 0 && s[0] == '-') {
      ++s;
      --n;
    }
    lua_newtable(L);
    lua_pushlstring(L, s, n);
    lua_setfield(L, -2, field);
    return 1;
  }
  static int lua_error_reply(lua_State* L) { return lua_reply_table(L, "err"); }
  static int lua_status_reply(lua_State* L) { return lua_reply_table(L, "ok"); }
  // Raised from C, as Redis' own are: the error handler then places them at the script's line.
  static int lua_readonly_error(lua_State* L) {
    return luaL_error(L, "Attempt to modify a readonly table");
  }
  static int lua_missing_global(lua_State* L) {
    lua_getglobal(L, "tostring");
    lua_pushvalue(L, 2);
    lua_call(L, 1, 1);
    return luaL_error(L, "Script attempted to access nonexistent global variable '%s'",
                      lua_tostring(L, -1));
  }
  static int lua_noop(lua_State*) { return 0; }
  static int lua_true(lua_State* L) {
    lua_pushboolean(L, 1);
    return 1;
  }

  // LuaBitOp 1.0 (Redis' `bit`): 32-bit operations on numbers normalised as it does.
  static std::uint32_t tobit(lua_State* L, int i) {
    double n = luaL_checknumber(L, i) + 6755399441055744.0;  // 2^52 + 2^51: low word is the int
    std::uint64_t b;
    std::memcpy(&b, &n, sizeof b);
    return static_cast<std::uint32_t>(b);
  }
  static int push_bits(lua_State* L, std::uint32_t b) {
    lua_pushnumber(L, static_cast<lua_Number>(static_cast<std::int32_t>(b)));
    return 1;
  }
  static int bit_tobit(lua_State* L) { return push_bits(L, tobit(L, 1)); }
  static int bit_bnot(lua_State* L) { return push_bits(L, ~tobit(L, 1)); }
  template <int Op>
  static int bit_fold(lua_State* L) {
    std::uint32_t b = tobit(L, 1);
    for (int i = lua_gettop(L); i > 1; --i) {
      std::uint32_t x = tobit(L, i);
      b = Op == 0 ? (b & x) : Op == 1 ? (b | x) : (b ^ x);
    }
    return push_bits(L, b);
  }
  template <int Op>
  static int bit_shift(lua_State* L) {
    std::uint32_t b = tobit(L, 1);
    std::uint32_t n = tobit(L, 2) & 31;
    switch (Op) {
      case 0:
        b = b << n;
        break;
      case 1:
        b = b >> n;
        break;
      case 2:
        b = static_cast<std::uint32_t>(static_cast<std::int32_t>(b) >> n);
        break;
      case 3:
        b = n == 0 ? b : (b << n) | (b >> (32 - n));
        break;
      default:
        b = n == 0 ? b : (b >> n) | (b << (32 - n));
        break;
    }
    return push_bits(L, b);
  }
  static int bit_bswap(lua_State* L) {
    std::uint32_t b = tobit(L, 1);
    b = (b >> 24) | ((b >> 8) & 0xff00) | ((b & 0xff00) << 8) | (b << 24);
    return push_bits(L, b);
  }
  static int bit_tohex(lua_State* L) {
    std::uint32_t b = tobit(L, 1);
    std::int32_t n = lua_isnone(L, 2) ? 8 : static_cast<std::int32_t>(tobit(L, 2));
    const char* hexdigits = "0123456789abcdef";
    char buf[8];
    if (n < 0) {
      n = -n;
      hexdigits = "0123456789ABCDEF";
    }
    if (n > 8) n = 8;
    for (int i = n; --i >= 0;) {
      buf[i] = hexdigits[b & 15];
      b >>= 4;
    }
    lua_pushlstring(L, buf, static_cast<std::size_t>(n));
    return 1;
  }
  static void open_bit(lua_State* L) {
    static const luaL_Reg fns[] = {
        {"tobit", bit_tobit},     {"bnot", bit_bnot},        {"band", bit_fold<0>},
        {"bor", bit_fold<1>},     {"bxor", bit_fold<2>},     {"lshift", bit_shift<0>},
        {"rshift", bit_shift<1>}, {"arshift", bit_shift<2>}, {"rol", bit_shift<3>},
        {"ror", bit_shift<4>},    {"bswap", bit_bswap},      {"tohex", bit_tohex},
        {nullptr, nullptr}};
    luaL_register(L, "bit", fns);
    lua_pop(L, 1);
  }

  // The Lua world of Redis 7.0: base, table, string, math; redis.*; no io, os, require,
  // loadfile, dofile, print, debug; globals read-only and a missing global an error.
  static void build_vm(LuaVM& v) {
    lua_State* L = luaL_newstate();
    v.L = L;
    if (L == nullptr) throw std::bad_alloc();
    const std::pair<const char*, lua_CFunction> libs[] = {{"", luaopen_base},
                                                          {LUA_TABLIBNAME, luaopen_table},
                                                          {LUA_STRLIBNAME, luaopen_string},
                                                          {LUA_MATHLIBNAME, luaopen_math},
                                                          {LUA_DBLIBNAME, luaopen_debug}};
    for (const auto& [name, open] : libs) {
      lua_pushcfunction(L, open);
      lua_pushstring(L, name);
      lua_call(L, 1, 0);
    }
    open_bit(L);

    lua_newtable(L);  // redis
    const std::pair<const char*, lua_CFunction> fns[] = {{"call", &Impl::lua_call_fn},
                                                         {"pcall", &Impl::lua_pcall_fn}};
    for (const auto& [name, fn] : fns) {
      lua_pushcfunction(L, fn);
      lua_setfield(L, -2, name);
    }
    const std::pair<const char*, lua_CFunction> plain[] = {
        {"sha1hex", &Impl::lua_sha1hex},
        {"error_reply", &Impl::lua_error_reply},
        {"status_reply", &Impl::lua_status_reply},
        {"log", &Impl::lua_noop},
        {"set_repl", &Impl::lua_noop},
        {"replicate_commands", &Impl::lua_true}};
    for (const auto& [name, fn] : plain) {
      lua_pushcfunction(L, fn);
      lua_setfield(L, -2, name);
    }
    const std::pair<const char*, int> consts[] = {
        {"LOG_DEBUG", 0},  {"LOG_VERBOSE", 1},
        {"LOG_NOTICE", 2}, {"LOG_WARNING", 3},
        {"REPL_NONE", 0},  {"REPL_AOF", 1},
        {"REPL_SLAVE", 2}, {"REPL_REPLICA", 2},
        {"REPL_ALL", 3},   {"REDIS_VERSION_NUM", 0x07000f}};
    for (const auto& [name, v] : consts) {
      lua_pushinteger(L, v);
      lua_setfield(L, -2, name);
    }
    lua_pushstring(L, "7.0.15");
    lua_setfield(L, -2, "REDIS_VERSION");
    lua_setglobal(L, "redis");

    // Redis 7.0's error handler (eval.c), and the globals' protection: its Lua 5.1 makes _G
    // and the libraries read-only tables; here the scripts see a view that raises the same
    // errors, and KEYS and ARGV are set in the real table under it.
    static const char kSetup[] = R"lua(
local dbg = debug
local handler = function (err)
  local i = dbg.getinfo(2, 'nSl')
  if i and i.what == 'C' then i = dbg.getinfo(3, 'nSl') end
  if type(err) ~= 'table' then err = {err = 'ERR ' .. tostring(err)} end
  if i then
    err['source'] = i.source
    err['line'] = i.currentline
  end
  return err
end
local G = _G
for _, name in ipairs({'loadfile', 'dofile', 'print', 'debug', 'module', 'require',
                       'package', 'gcinfo', 'newproxy'}) do
  rawset(G, name, nil)
end
local readonly_error, missing_global = ...
local function readonly(real)
  local view = {}
  setmetatable(view, {__index = real, __newindex = readonly_error, __metatable = false})
  return view
end
for _, name in ipairs({'string', 'table', 'math', 'redis', 'coroutine', 'bit'}) do
  rawset(G, name, readonly(rawget(G, name)))
end
local env = readonly(G)
setmetatable(G, {__index = missing_global})
rawset(G, '_G', env)
rawset(G, '__sim_env', env)
return handler
)lua";
    if (luaL_loadbuffer(L, kSetup, sizeof kSetup - 1, "=sim_setup") != 0)
      throw std::logic_error(std::string("sim: Lua setup failed: ") + lua_tostring(L, -1));
    lua_pushcfunction(L, &Impl::lua_readonly_error);
    lua_pushcfunction(L, &Impl::lua_missing_global);
    if (lua_pcall(L, 2, 1, 0) != 0)
      throw std::logic_error(std::string("sim: Lua setup failed: ") + lua_tostring(L, -1));
    v.handler_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    lua_pushvalue(L, LUA_GLOBALSINDEX);
    v.globals_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    lua_newtable(L);
    v.scripts_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    // math.random as Redis' own (rand48, the same sequence for every script): not by the C
    // library's global state.
    lua_rawgeti(L, LUA_REGISTRYINDEX, v.globals_ref);
    lua_getfield(L, -1, "math");
    lua_getmetatable(L, -1);
    lua_getfield(L, -1, "__index");  // the real math table
    lua_pushcfunction(L, &Impl::lua_random);
    lua_setfield(L, -2, "random");
    lua_pushcfunction(L, &Impl::lua_randomseed);
    lua_setfield(L, -2, "randomseed");
    lua_pop(L, 4);
  }

  // Redis' rand48 (rand.c): one state for the server, from rand48's default seed at its start,
  // carried from script to script (Redis 7.0 does not reseed it per script).
  std::uint64_t rand48 = 0x1234ABCD330EULL;
  void rand_seed(std::int32_t seed) {
    rand48 = (static_cast<std::uint64_t>(static_cast<std::uint32_t>(seed)) << 16) | 0x330E;
  }
  std::int32_t rand_next() {
    rand48 = (rand48 * 0x5DEECE66DULL + 0xB) & ((1ULL << 48) - 1);
    return static_cast<std::int32_t>(rand48 >> 17);
  }
  static Impl* registry_self(lua_State*) { return current; }
  static int lua_random(lua_State* L) {
    Impl* self = registry_self(L);
    const double max = 2147483647.0;
    lua_Number r = static_cast<lua_Number>(self->rand_next() % 2147483647) / max;
    switch (lua_gettop(L)) {
      case 0:
        lua_pushnumber(L, r);
        break;
      case 1: {
        int u = luaL_checkint(L, 1);
        luaL_argcheck(L, 1 <= u, 1, "interval is empty");
        lua_pushnumber(L, std::floor(r * u) + 1);
        break;
      }
      case 2: {
        int l = luaL_checkint(L, 1);
        int u = luaL_checkint(L, 2);
        luaL_argcheck(L, l <= u, 2, "interval is empty");
        lua_pushnumber(L, std::floor(r * (u - l + 1)) + l);
        break;
      }
      default:
        return luaL_error(L, "wrong number of arguments");
    }
    return 1;
  }
  static int lua_randomseed(lua_State* L) {
    registry_self(L)->rand_seed(luaL_checkint(L, 1));
    return 0;
  }
};

const char* type_name(KeyType t) {
  switch (t) {
    case KeyType::string:
      return "string";
    case KeyType::hash:
      return "hash";
    case KeyType::set:
      return "set";
    case KeyType::zset:
      return "zset";
  }
  return "none";
}

RedisNode::RedisNode(NodeOptions options, std::int64_t now_ms)
    : options_(std::move(options)), started_ms_(now_ms) {
  if (options_.run_id.empty())
    options_.run_id = sha1_hex(options_.name.data(), options_.name.size());
  impl_ = std::make_unique<Impl>(*this);
}

RedisNode::~RedisNode() = default;

Value RedisNode::execute(const std::vector<std::string>& argv, std::int64_t now_ms,
                         std::uint64_t connection) {
  return impl_->client_command(argv, now_ms, connection);
}

void RedisNode::subscribe(std::uint64_t connection, const std::string& channel) {
  impl_->add_subscription(connection, impl_->conns[connection], channel);
}

void RedisNode::unsubscribe_all(std::uint64_t connection) {
  auto it = impl_->conns.find(connection);
  if (it == impl_->conns.end()) return;
  auto channels = it->second.channels;
  for (const auto& c : channels) impl_->drop_subscription(connection, it->second, c);
}

void RedisNode::disconnect(std::uint64_t connection) {
  unsubscribe_all(connection);
  impl_->conns.erase(connection);
}

std::vector<Delivery> RedisNode::take_deliveries() {
  std::vector<Delivery> out;
  std::swap(out, impl_->deliveries);
  return out;
}

void RedisNode::restart(bool keep_data, std::int64_t now_ms) {
  started_ms_ = now_ms;
  impl_->conns.clear();
  impl_->channels.clear();
  impl_->deliveries.clear();
  impl_->forget_scripts();
  impl_->rand48 = 0x1234ABCD330EULL;
  if (!keep_data) {
    for (auto& d : impl_->dbs) d = Db{};
  } else {
    impl_->now = now_ms;
    for (auto& d : impl_->dbs) impl_->drop_expired(d);
  }
}

namespace {

bool live(const Entry& e, std::int64_t now_ms) { return e.deadline < 0 || now_ms <= e.deadline; }

}  // namespace

std::vector<std::string> RedisNode::keys(std::int64_t now_ms, int db) const {
  std::vector<std::string> out;
  if (db < 0 || db >= kDatabases) return out;
  for (const auto& [k, e] : impl_->dbs[static_cast<std::size_t>(db)].keys)
    if (live(e, now_ms)) out.push_back(k);
  return out;
}

std::optional<KeyView> RedisNode::key(const std::string& name, std::int64_t now_ms, int db) const {
  if (db < 0 || db >= kDatabases) return std::nullopt;
  const auto& d = impl_->dbs[static_cast<std::size_t>(db)];
  auto it = d.keys.find(name);
  if (it == d.keys.end() || !live(it->second, now_ms)) return std::nullopt;
  const Entry& e = it->second;
  KeyView v;
  v.type = e.type;
  v.pttl = e.deadline < 0 ? -1 : e.deadline - now_ms;
  std::vector<Value> items;
  switch (e.type) {
    case KeyType::string:
      v.value = Value::bulk(e.str);
      return v;
    case KeyType::hash:
      for (const auto& [f, x] : e.hash) {
        items.push_back(Value::bulk(f));
        items.push_back(Value::bulk(x));
      }
      break;
    case KeyType::set:
      for (const auto& m : e.set) items.push_back(Value::bulk(m));
      break;
    case KeyType::zset:
      for (const auto& [s, m] : e.zorder) {
        items.push_back(Value::bulk(m));
        items.push_back(Value::bulk(format_double(s)));
      }
      break;
  }
  v.value = Value::array(std::move(items));
  return v;
}

std::string RedisNode::dump(std::int64_t now_ms, int db) const {
  std::string out;
  for (const auto& k : keys(now_ms, db)) {
    auto v = key(k, now_ms, db);
    out += "\"" + escape_bytes(k) + "\" " + type_name(v->type) + " ";
    out += v->value.to_string();
    out += v->pttl < 0 ? " (no ttl)" : " (pttl " + std::to_string(v->pttl) + ")";
    out += "\n";
  }
  return out.empty() ? "(empty)\n" : out;
}

std::size_t RedisNode::scripts_loaded() const { return impl_->scripts.size(); }

std::size_t RedisNode::subscribers(const std::string& channel) const {
  auto it = impl_->channels.find(channel);
  return it == impl_->channels.end() ? 0 : it->second.size();
}

std::string sha1_hex(const std::string& text) { return sha1_hex(text.data(), text.size()); }

}  // namespace redlock::sim
