// The hand-off floor: the least time a hand-off from a holder to the first waiter in line takes
// on these nodes, with the library's own scripts on the wire and one bare hiredis client playing
// both sides (no library, no threads, no validity arithmetic). It is to the contention gap what
// the floor (floor.cpp) is to the uncontended cycle. Two protocols, in alternating blocks:
// - "line", the library's (lib/scripts): the holder's release runs on every node, and each node
//   gives the first in line its turn (PUBLISH on the waiter's channel). At the first turn heard
//   the waiter sends its attempt to every node; done at the quorum of grants.
// - "direct", not in the library (docs/performance.md, "Reading the table"): the release
//   script also writes the waiter's token into the key before it publishes the turn; done when a
//   quorum of turns is heard. What a direct hand-off could reach, not a protocol we run.
// Each cycle starts from the same state on every node: the key held by a marked token (so the
// release announces), the waiter first in line and another waiter behind it.
// Each protocol is measured twice, in the same alternation: "hot", the release sent right after
// the cycle's set-up, and "after the hold", the release sent once the probe has slept as long as
// a contention worker holds the lock (--hold-ms). In the contention scenario nothing runs while
// the lock is held, and a hand-off that follows a millisecond of quiet takes longer than one
// right after other traffic (CPUs to wake from idle, colder caches; docs/performance.md measures
// the effect, not its parts): the floor after the hold is what the scenario's gap is to be
// compared with. The hot figure is the wire and the servers at their quickest.
#include <hiredis/hiredis.h>
#include <poll.h>

#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "../lib/core/keys.hpp"  // where the line lives on a node
#include "common.hpp"
#include "redlock_scripts.hpp"  // the library's scripts, generated from lib/scripts
#include "scenarios.hpp"
#include "server_probe.hpp"

namespace bench {
namespace {

// Where the direct variant writes the waiter's token: right before the release publishes a turn.
constexpr const char* kTurnPublish = "local heard = try('PUBLISH', channel,";

// hiredis's argv form of a command.
struct Argv {
  explicit Argv(const std::vector<std::string>& args) {
    for (const auto& a : args) {
      v.push_back(a.data());
      len.push_back(a.size());
    }
  }
  int argc() const { return static_cast<int>(v.size()); }
  std::vector<const char*> v;
  std::vector<std::size_t> len;
};

std::string call_string(redisContext* c, const std::vector<std::string>& args) {
  Argv a(args);
  auto* r = static_cast<redisReply*>(redisCommandArgv(c, a.argc(), a.v.data(), a.len.data()));
  if (r == nullptr || r->type == REDIS_REPLY_ERROR) {
    std::string why = r ? std::string(r->str, r->len) : "connection lost";
    if (r) freeReplyObject(r);
    throw std::runtime_error("handoff_floor: " + args[0] + " failed: " + why);
  }
  std::string out = r->type == REDIS_REPLY_STRING ? std::string(r->str, r->len) : "";
  freeReplyObject(r);
  return out;
}

class HandoffFloor {
 public:
  explicit HandoffFloor(const std::vector<std::uint16_t>& ports) {
    std::string release = redlock::detail::lua::release_body;
    auto at = release.find(kTurnPublish);
    if (at == std::string::npos)
      throw std::runtime_error(
          "handoff_floor: lib/scripts/release.lua no longer publishes a turn as this probe "
          "expects; update bench/handoff_floor.cpp");
    // The token the direct release writes is fixed in its text: the release's ARGV[3] and on
    // have a meaning of their own. Every cycle starts by deleting the key.
    std::string tag = random_hex(8);
    std::string direct = release;
    direct.insert(at, "redis.call('SET', key, 'w" + tag + ".', 'PX', 10000) ");
    key_ = "redlock:bench:handoff:" + tag;
    channel_ = key_ + ":waiter";
    ticket_ = channel_ + "#1@200";
    for (auto port : ports) {
      Node n{connect_local(port, "handoff_floor"), connect_local(port, "handoff_floor")};
      nodes_.push_back(n);
      sha_line_ = call_string(n.cmd, {"SCRIPT", "LOAD", release});
      sha_direct_ = call_string(n.cmd, {"SCRIPT", "LOAD", direct});
      sha_acquire_ = call_string(n.cmd, {"SCRIPT", "LOAD", redlock::detail::lua::acquire_body});
      call_string(n.sub, {"SUBSCRIBE", channel_});
    }
    quorum_ = nodes_.size() / 2 + 1;
  }
  ~HandoffFloor() {
    for (auto& n : nodes_) {
      redisFree(n.cmd);
      redisFree(n.sub);
    }
  }
  HandoffFloor(const HandoffFloor&) = delete;
  HandoffFloor& operator=(const HandoffFloor&) = delete;

  std::size_t quorum() const { return quorum_; }

  // One hand-off, in µs; `direct` picks the protocol, `hold` how long the probe sleeps between
  // the set-up and the release. Negative for a split: the waiter's one attempt (line) found too
  // many nodes whose release had not run yet. The library's waiter would clean up and ask again;
  // the probe only counts it.
  double cycle(bool direct, std::chrono::microseconds hold) {
    std::string holder = "h" + random_hex(31) + ".", waiter = "w" + random_hex(31) + ".";
    std::string marked = holder.substr(0, holder.size() - 1) + "!";
    for (auto& n : nodes_) {
      // The line's keys as the scripts name them (lib/core/keys.hpp).
      const auto queue = redlock::detail::aux_key(key_, redlock::detail::kQueue);
      const auto turns = redlock::detail::aux_key(key_, redlock::detail::kTurns);
      append(n.cmd, {"DEL", key_, turns, queue});
      append(n.cmd, {"SET", key_, marked, "PX", "10000"});
      append(n.cmd, {"ZADD", queue, "1", ticket_, "2", key_ + ":other#2"});
      append(n.cmd, {"PEXPIRE", queue, "60000"});
    }
    for (auto& n : nodes_)
      for (int i = 0; i < 4; ++i) call_reply(n.cmd);
    if (hold.count() > 0) std::this_thread::sleep_for(hold);

    auto t0 = Clock::now();
    for (auto& n : nodes_)
      append(n.cmd, {"EVALSHA", direct ? sha_direct_ : sha_line_, "1", key_, holder});
    flush();
    std::size_t turns = 0, released = 0, attempts_sent = 0, attempt_replies = 0, grants = 0;
    double done_us = -1;
    auto limit = t0 + std::chrono::seconds(2);
    while (turns < nodes_.size() || released < nodes_.size() || attempt_replies < attempts_sent) {
      if (Clock::now() > limit) throw std::runtime_error("handoff_floor: a hand-off took > 2 s");
      std::vector<pollfd> fds;
      for (auto& n : nodes_) {
        fds.push_back(pollfd{n.cmd->fd, POLLIN, 0});
        fds.push_back(pollfd{n.sub->fd, POLLIN, 0});
      }
      if (poll(fds.data(), fds.size(), 100) <= 0) continue;
      for (std::size_t i = 0; i < nodes_.size(); ++i) {
        if (fds[2 * i + 1].revents)
          for (redisReply* r : read(nodes_[i].sub)) {
            ++turns;
            freeReplyObject(r);
            if (direct && turns == quorum_ && done_us < 0) done_us = us_between(t0, Clock::now());
            if (!direct && attempts_sent == 0) {
              for (auto& n : nodes_)
                append(n.cmd, {"EVALSHA", sha_acquire_, "1", key_, waiter, "10000", "0", ticket_,
                               "1", "60000", "200"});
              attempts_sent = nodes_.size();
              flush();
            }
          }
        if (fds[2 * i].revents)
          for (redisReply* r : read(nodes_[i].cmd)) {
            if (r->type == REDIS_REPLY_ERROR) {
              std::string why(r->str, r->len);
              freeReplyObject(r);
              throw std::runtime_error("handoff_floor: " + why);
            }
            if (r->type == REDIS_REPLY_ARRAY) {
              ++attempt_replies;
              if (r->elements > 0 && r->element[0]->integer == 1 && ++grants == quorum_ &&
                  done_us < 0)
                done_us = us_between(t0, Clock::now());
            } else {
              ++released;
            }
            freeReplyObject(r);
          }
      }
    }
    return done_us;
  }

 private:
  struct Node {
    redisContext* cmd;  // commands
    redisContext* sub;  // the waiter's subscription
  };

  static void append(redisContext* c, const std::vector<std::string>& args) {
    Argv a(args);
    redisAppendCommandArgv(c, a.argc(), a.v.data(), a.len.data());
  }
  void flush() {
    for (auto& n : nodes_) {
      int done = 0;
      while (!done)
        if (redisBufferWrite(n.cmd, &done) == REDIS_ERR)
          throw std::runtime_error("handoff_floor: write failed");
    }
  }
  static void call_reply(redisContext* c) {
    void* r = nullptr;
    if (redisGetReply(c, &r) != REDIS_OK || r == nullptr)
      throw std::runtime_error("handoff_floor: connection lost");
    auto* reply = static_cast<redisReply*>(r);
    bool error = reply->type == REDIS_REPLY_ERROR;
    std::string why = error ? std::string(reply->str, reply->len) : "";
    freeReplyObject(reply);
    if (error) throw std::runtime_error("handoff_floor: " + why);
  }
  static std::vector<redisReply*> read(redisContext* c) {
    if (redisBufferRead(c) == REDIS_ERR) throw std::runtime_error("handoff_floor: connection lost");
    std::vector<redisReply*> out;
    void* r = nullptr;
    while (redisGetReplyFromReader(c, &r) == REDIS_OK && r != nullptr)
      out.push_back(static_cast<redisReply*>(r));
    return out;
  }

  std::vector<Node> nodes_;
  std::string key_, channel_, ticket_, sha_line_, sha_direct_, sha_acquire_;
  std::size_t quorum_ = 1;
};

}  // namespace

void handoff_floor(const Options& o) {
  HandoffFloor f(o.ports);
  // Four kinds in turn, a block of each: line and direct, hot and after the hold.
  struct Kind {
    bool direct;
    std::chrono::microseconds hold;
    std::vector<double> us;
  };
  const std::chrono::microseconds hold(o.hold_us);
  Kind kinds[] = {{false, {}, {}}, {true, {}, {}}, {false, hold, {}}, {true, hold, {}}};
  constexpr int kKinds = 4, kBlock = 100;
  long long splits = 0;
  auto limit = Clock::now() + std::chrono::seconds(60);
  for (int i = 0; i < kKinds * (o.warmup + o.iters) && Clock::now() < limit; ++i) {
    Kind& k = kinds[(i / kBlock) % kKinds];
    double us = f.cycle(k.direct, k.hold);
    if (i < kKinds * o.warmup) continue;
    if (us < 0)
      ++splits;
    else
      k.us.push_back(us);
  }
  JsonLine()
      .str("impl", "hiredis-floor")
      .str("label", o.label)
      .str("scenario", "handoff_floor")
      .integer("nodes", static_cast<long long>(o.ports.size()))
      .integer("quorum", static_cast<long long>(f.quorum()))
      .stats("line_us", summarize(kinds[0].us))
      .integer("line_splits", splits)
      .stats("direct_us", summarize(kinds[1].us))
      .num("hold_ms", o.hold_us / 1000.0)
      .stats("line_after_hold_us", summarize(kinds[2].us))
      .stats("direct_after_hold_us", summarize(kinds[3].us))
      .emit();
}

}  // namespace bench
