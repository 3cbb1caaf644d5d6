// What the machines of one client share: the configuration, the injected sources of tokens and
// randomness, the ids, the client's turn channel, whether the quick acquire still works, the
// running acquire jobs (by id, for turns) and the notice dispatch. One per client. Pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <system_error>
#include <unordered_map>
#include <vector>

#include "../core/recycled.hpp"
#include "actions.hpp"
#include "redlock/config.hpp"

namespace redlock::detail::proto {

class Notices;

// Something that sleeps until a resource may have been released (an acquire job that waits).
class Waiter {
 public:
  // A release notice on `channel` (null: a fresh subscription, on any of its channels). False
  // when it can no longer use it (it is finishing), so that the notice goes to another waiter.
  virtual bool wake(const std::string* channel, Clock::time_point now, Actions& out) = 0;
  // True while an attempt of its own is on its way (a notice then only makes it try again).
  virtual bool busy() const = 0;
  // Its name in the nodes' queues ("<turn channel>#<job>@<turn's length in ms>").
  virtual const std::string& ticket() const = 0;
  // True when it stands in its key's queue (one key): it asks only when its turn comes.
  virtual bool in_line() const = 0;

 protected:
  ~Waiter() = default;
};

class Context {
 public:
  // Fills its argument with a fresh token (lib/core/token.hpp: new_token; the simulator: a seeded
  // generator), or fails.
  using TokenSource = std::function<std::error_code(std::string& out)>;
  // A uniform 64-bit draw, for jitter (the library: a std::mt19937_64 seeded by random_seed()).
  using Random = std::function<std::uint64_t()>;

  // `turn_channel`: the client's channel for turns (turn_channel_name).
  Context(const Config& config, std::size_t nodes, std::string turn_channel, TokenSource tokens,
          Random random, std::shared_ptr<const std::vector<std::string>> addresses = nullptr);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  const Config& config() const noexcept { return config_; }
  std::size_t nodes() const noexcept { return nodes_; }
  // "host:port" per node, for the public Votes (may be null).
  const std::shared_ptr<const std::vector<std::string>>& addresses() const noexcept {
    return addresses_;
  }
  std::error_code new_token(std::string& out) { return tokens_(out); }
  std::uint64_t random() { return random_(); }

  RequestId next_request() noexcept { return ++last_request_; }
  TimerId next_timer() noexcept { return ++last_timer_; }
  std::uint64_t next_job() noexcept { return ++last_job_; }

  // False once a node refused the quick acquire (SET with NX and GET: Redis 7.0 or newer).
  bool quick_acquire() const noexcept { return quick_acquire_; }
  void no_quick_acquire() noexcept { quick_acquire_ = false; }
  // Set by the driver when the client shuts down (before it stops the machines).
  bool shutting_down() const noexcept { return shutting_down_; }
  void shut_down() noexcept { shutting_down_ = true; }

  // The client's channel for turns, subscribed with the first waiter.
  const std::string& turn_channel() const noexcept { return turn_channel_; }
  // How long a waiter whose turn it is has to come and take a free key (scripts/acquire.lua:
  // the nodes give it at most their MAX_TURN, 2 s).
  Milliseconds turn_length() const noexcept;
  // A waiter's name in the nodes' queues, "<turn channel>#<job>@<turn_length in ms>".
  // `reader`: a reader of a read-write lock, "<channel>#r<job>@<ms>" (acquire.lua).
  std::string new_ticket(std::uint64_t job, bool reader = false) const;
  // Keys of resources: the key prefix and the resource (lib/core/keys.hpp: lock_key).
  std::vector<std::string> keys_of(const std::vector<std::string>& resources) const;
  // The same, written into `keys`, whose strings keep their memory (a reused request's).
  void keys_into(const std::vector<std::string>& resources, std::vector<std::string>& keys) const;
  // The keys a held lock holds its token at: its resources' keys, or a permit's slot key.
  std::vector<std::string> held_keys(const Lock& lock) const;

  // Running acquire jobs, by id (the turns name them).
  void add_job(std::uint64_t id, Waiter* job) { jobs_[id] = job; }
  void remove_job(std::uint64_t id) { jobs_.erase(id); }
  Waiter* job(std::uint64_t id) const;

  Notices& notices() noexcept { return *notices_; }

  // The requests request() reuses, each kind kept apart: one refilled with the same shape finds
  // its strings and lists as large as it needs them.
  enum class Reused : std::uint8_t { quick_acquire, release, kinds };
  // A request for a Send, to be filled in whole (every field: scripts.hpp's fill_* functions).
  // With reuse on, it may be one of `kind` sent before that nobody holds any more: its strings
  // and lists keep their memory, and the common requests (the quick acquire, a release) allocate
  // nothing.
  std::shared_ptr<Request> request(Reused kind);
  // Turns that reuse on. Only for a driver that drops every request on the thread that uses this
  // context (the loop's; not a lane's, which hands releases over to the loop).
  void reuse_requests() noexcept { reuse_requests_ = true; }

 private:
  const Config& config_;
  std::size_t nodes_;
  std::string turn_channel_;
  TokenSource tokens_;
  Random random_;
  std::shared_ptr<const std::vector<std::string>> addresses_;
  RequestId last_request_ = 0;
  TimerId last_timer_ = 0;
  std::uint64_t last_job_ = 0;
  bool quick_acquire_ = true;
  bool shutting_down_ = false;
  RecyclingIdMap<Waiter*> jobs_;
  std::unique_ptr<Notices> notices_;
  // request(): per kind, the requests kept for reuse, in the order they went out (`next` is the
  // one that went out longest ago, the likeliest to be free again).
  struct Kept {
    std::vector<std::shared_ptr<Request>> requests;
    std::size_t next = 0;
  };
  bool reuse_requests_ = false;
  Kept kept_[static_cast<std::size_t>(Reused::kinds)];
};

// "<prefix>turn:<16 hex digits of random>": a client's turn channel, told apart from others'.
std::string turn_channel_name(const std::string& key_prefix, std::uint64_t random);

}  // namespace redlock::detail::proto
