// A real redis-server and a simulated node side by side, on the same clock: the differential
// tests send each command to both and compare the replies, the keyspaces and the messages
// subscribers received. The real server runs under the clock shim (chaos/support) with its
// clock stopped, so that TTLs and TIME-derived values compare exactly; advance() moves both
// clocks. One thread.
#pragma once

#include <hiredis/hiredis.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <ostream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "clock_skew.hpp"
#include "hiredis_reply.hpp"
#include "node.hpp"
#include "redis_server.hpp"

namespace redlock::sim {
// gtest prints values this way in its messages.
inline void PrintTo(const Value& v, std::ostream* os) { *os << v.to_string(); }
}  // namespace redlock::sim

namespace redlock::sim::test {

struct ContextDeleter {
  void operator()(redisContext* c) const { redisFree(c); }
};
using Context = std::unique_ptr<redisContext, ContextDeleter>;

inline Context connect_to(const redlock::test::RedisServer& server) {
  Context c(redisConnect("127.0.0.1", server.port()));
  if (!c || c->err) throw std::runtime_error("cannot connect to the test server");
  timeval tv{5, 0};
  redisSetTimeout(c.get(), tv);
  return c;
}

inline Value real_command(redisContext* c, const std::vector<std::string>& argv) {
  std::vector<const char*> ptrs;
  std::vector<std::size_t> lens;
  for (const auto& a : argv) {
    ptrs.push_back(a.data());
    lens.push_back(a.size());
  }
  auto* r = static_cast<redisReply*>(
      redisCommandArgv(c, static_cast<int>(argv.size()), ptrs.data(), lens.data()));
  if (r == nullptr) throw std::runtime_error("the test server did not answer");
  Value v = from_hiredis(r);
  freeReplyObject(r);
  return v;
}

inline std::string show(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) {
    std::string s = a.size() > 60 ? a.substr(0, 60) + "..." : a;
    out += "\"" + escape_bytes(s) + "\" ";
  }
  return out;
}

class Twin {
 public:
  // `extra`: more redis-server arguments (e.g. persistence).
  explicit Twin(const std::string& clock_file, std::vector<std::string> extra = {})
      : skew_(clock_file),
        server_(with(std::vector<std::string>{"--maxmemory-policy", "noeviction"}, extra),
                std::string(), skew_.env()),
        real_(connect_to(server_)),
        node_(NodeOptions{}, 0) {
    skew_.set(std::chrono::milliseconds(0), 0.0);  // the real clock stops
    settle();
  }

  redlock::test::RedisServer& server() { return server_; }
  RedisNode& node() { return node_; }
  std::int64_t now() const { return now_; }

  Value real(const std::vector<std::string>& argv) { return real_command(real_.get(), argv); }
  Value sim(const std::vector<std::string>& argv) { return node_.execute(argv, now_, 1); }

  // Runs argv on both; the replies must be equal. Returns the real one.
  Value same(const std::vector<std::string>& argv) {
    Value r = real(argv);
    Value s = sim(argv);
    EXPECT_EQ(r, s) << "command: " << show(argv) << "\n real: " << r.to_string()
                    << "\n  sim: " << s.to_string() << "\n sim keys:\n"
                    << node_.dump(now_);
    return r;
  }

  // Both restart: the real server as a new process (its data kept when it persists), the node
  // with restart(keep_data). Subscribers are gone.
  void restart(bool keep_data) {
    subscribers_.clear();
    real_.reset();
    server_.restart();
    real_ = connect_to(server_);
    node_.restart(keep_data, now_);
    settle();
  }

  // Both clocks forward by `ms`.
  void advance(std::int64_t ms) {
    skew_.jump(std::chrono::milliseconds(ms));
    settle();
  }

  // Maxmemory on both: real with maxmemory 1 (noeviction), the node with set_oom.
  void oom(bool on) {
    Value r = real({"CONFIG", "SET", "maxmemory", on ? "1" : "0"});
    ASSERT_EQ(r, Value::status("OK"));
    node_.set_oom(on);
  }

  // A subscriber on both: `channel` on a connection of its own. Returns its index.
  std::size_t subscribe(const std::string& channel) {
    subscribers_.push_back(Subscriber{connect_to(server_), 1000 + subscribers_.size(), channel});
    auto& s = subscribers_.back();
    Value r = real_command(s.ctx.get(), {"SUBSCRIBE", channel});
    Value m = node_.execute({"SUBSCRIBE", channel}, now_, s.conn);
    EXPECT_EQ(r, m);
    return subscribers_.size() - 1;
  }

  // Runs argv on subscriber `index`'s connection on both; the replies must be equal.
  Value same_on_subscriber(std::size_t index, const std::vector<std::string>& argv) {
    auto& s = subscribers_.at(index);
    Value r = real_command(s.ctx.get(), argv);
    Value m = node_.execute(argv, now_, s.conn);
    EXPECT_EQ(r, m) << "command: " << show(argv);
    return r;
  }

  // The messages each subscriber received since the last call must be the same on both.
  // Returns how many the node delivered.
  std::size_t compare_deliveries() {
    auto delivered = node_.take_deliveries();
    for (auto& s : subscribers_) {
      std::vector<Value> got_real, got_sim;
      // A PING goes behind every message published before it: read up to its answer.
      redisAppendCommand(s.ctx.get(), "PING");
      for (int i = 0; i < 100000; ++i) {
        void* raw = nullptr;
        if (redisGetReply(s.ctx.get(), &raw) != REDIS_OK || raw == nullptr)
          throw std::runtime_error("subscriber connection failed");
        Value v = from_hiredis(static_cast<redisReply*>(raw));
        freeReplyObject(raw);
        // ["pong", ""] while subscribed, +PONG once it has no subscription left.
        if (v.kind == Value::Kind::array && !v.items.empty() && v.items[0].str == "pong") break;
        if (v == Value::status("PONG")) break;
        got_real.push_back(v);
      }
      for (const auto& d : delivered)
        if (d.connection == s.conn) got_sim.push_back(d.as_reply());
      EXPECT_EQ(got_real, got_sim) << "messages on " << s.channel;
    }
    return delivered.size();
  }

  // Every key of both keyspaces: name, type, contents, ttl.
  void compare_keyspaces() {
    Value real_keys = real({"KEYS", "*"});
    std::vector<std::string> names;
    for (const auto& k : real_keys.items) names.push_back(k.str);
    std::sort(names.begin(), names.end());
    EXPECT_EQ(names, node_.keys(now_)) << "sim keys:\n" << node_.dump(now_);
    for (const auto& k : names) {
      auto view = node_.key(k, now_);
      if (!view) continue;
      std::string type = real({"TYPE", k}).str;
      EXPECT_EQ(type, type_name(view->type)) << escape_bytes(k);
      Value contents;
      if (type == "string") {
        contents = real({"GET", k});
      } else if (type == "hash") {
        contents = sorted_pairs(real({"HGETALL", k}));
      } else if (type == "set") {
        contents = real({"SMEMBERS", k});
        std::sort(contents.items.begin(), contents.items.end(),
                  [](const Value& a, const Value& b) { return a.str < b.str; });
      } else if (type == "zset") {
        contents = real({"ZRANGE", k, "0", "-1", "WITHSCORES"});
      }
      EXPECT_EQ(contents, view->value) << escape_bytes(k);
      EXPECT_EQ(real({"PTTL", k}), Value::integer(view->pttl)) << escape_bytes(k);
    }
  }

 private:
  static std::vector<std::string> with(std::vector<std::string> a,
                                       const std::vector<std::string>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  }

  static Value sorted_pairs(Value v) {
    std::vector<std::pair<std::string, std::string>> pairs;
    for (std::size_t i = 0; i + 1 < v.items.size(); i += 2)
      pairs.emplace_back(v.items[i].str, v.items[i + 1].str);
    std::sort(pairs.begin(), pairs.end());
    Value out = Value::array({});
    for (auto& [a, b] : pairs) {
      out.items.push_back(Value::bulk(a));
      out.items.push_back(Value::bulk(b));
    }
    return out;
  }

  // Waits until the shim has read its file (it re-reads every 2 ms) and takes the stopped
  // clock's millisecond as the node's.
  void settle() {
    std::int64_t last = -1;
    for (int i = 0; i < 200; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(3));
      Value t = real({"TIME"});
      std::int64_t ms = std::stoll(t.items[0].str) * 1000 + std::stoll(t.items[1].str) / 1000;
      if (ms == last) {
        now_ = ms;
        return;
      }
      last = ms;
    }
    throw std::runtime_error("the real server's clock did not stop");
  }

  struct Subscriber {
    Context ctx;
    std::uint64_t conn;
    std::string channel;
  };

  redlock::chaos::ClockSkew skew_;
  redlock::test::RedisServer server_;
  Context real_;
  RedisNode node_;
  std::int64_t now_ = 0;
  std::vector<Subscriber> subscribers_;
};

}  // namespace redlock::sim::test
