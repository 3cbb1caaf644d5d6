// Where I/O meets the algorithm: fans a script out to every node, gathers the votes, applies
// the quorum rules of core/quorum.hpp, cleans up after failed attempts and retries.
// Loop thread only.
#pragma once

#include <uv.h>

#include <functional>
#include <memory>
#include <random>
#include <string>
#include <unordered_set>
#include <vector>

#include "../core/quorum.hpp"
#include "node.hpp"
#include "redlock/client.hpp"

namespace redlock::detail {

class Coordinator;

// One command sent to every node at once. Decides at the quorum (or, with wait_all, once every
// node answered) and lives until every node has answered, so that no reply outlives its sink.
class FanOut final : public ReplySink {
 public:
  // How a node's reply counts. `reply` is never an error reply.
  using Classify = Vote (*)(const redisReply* reply, const Command& command);
  using Decided = std::function<void(FanOut&)>;

  // Sends at once; `decided` runs exactly once, possibly before start() returns.
  static void start(Coordinator& coordinator, Command command, Classify classify, Decided decided,
                    bool wait_all = false);

  const Tally& tally() const noexcept { return tally_; }
  const Votes& votes() const noexcept { return votes_; }
  Verdict verdict() const noexcept { return verdict_; }
  Clock::time_point started() const noexcept { return started_; }
  // Last successful reply per node (only for wait_all fan-outs, e.g. status).
  const std::vector<std::string>& texts() const noexcept { return texts_; }

 private:
  FanOut(Coordinator& coordinator, Command command, Classify classify, Decided decided,
         bool wait_all);
  ~FanOut();
  void on_node_reply(std::size_t node, const NodeReply& reply) override;
  void record(std::size_t node, Vote vote, std::error_code error, std::string_view detail,
              std::chrono::microseconds latency);
  void maybe_decide();
  void maybe_finish();

  Coordinator& coordinator_;
  Command command_;
  Classify classify_;
  Decided decided_;
  bool wait_all_;
  Clock::time_point started_;
  Tally tally_;
  Votes votes_;
  std::vector<std::string> texts_;
  Verdict verdict_ = Verdict::pending;
  bool decided_called_ = false;
  bool sending_ = true;
  std::size_t outstanding_ = 0;
};

class Coordinator {
 public:
  Coordinator(uv_loop_t* loop, const Config& config);
  ~Coordinator();

  void start();
  // Stops accepting work, lets what is in flight finish (clean-up releases included) for up to
  // one request timeout, then fails the rest with Errc::shutting_down and closes every handle.
  void shutdown();
  bool shutting_down() const noexcept { return shutting_down_; }

  void acquire(AcquireRequest request, Milliseconds ttl, Client::AcquireCallback done);
  void extend(Lock lock, Milliseconds ttl, Client::ExtendCallback done);
  void release(Lock lock, Client::ReleaseCallback done);
  void status(Client::StatusCallback done);

  std::vector<std::unique_ptr<Node>>& nodes() noexcept { return nodes_; }
  const Config& config() const noexcept { return config_; }
  uv_loop_t* loop() const noexcept { return loop_; }
  std::mt19937_64& rng() noexcept { return rng_; }
  const std::shared_ptr<const std::vector<std::string>>& addresses() const noexcept {
    return addresses_;
  }
  std::vector<std::string> keys_of(const std::vector<std::string>& resources) const;
  // Sends compare-and-delete for `token` to every node; nobody waits for the answer.
  void release_everywhere(const std::vector<std::string>& keys, const std::string& token);

  class AcquireJob;

 private:
  friend class AcquireJob;

  uv_loop_t* loop_;
  const Config& config_;
  std::mt19937_64 rng_;
  std::vector<std::unique_ptr<Node>> nodes_;
  std::shared_ptr<const std::vector<std::string>> addresses_;
  std::unordered_set<AcquireJob*> jobs_;
  bool shutting_down_ = false;
  friend class FanOut;
  void fanout_ended();
  void close_nodes();
  std::size_t live_fanouts_ = 0;
  bool nodes_closed_ = false;
  uv_timer_t drain_timer_{};
};

// Runs a user callback on the loop thread; an escaping exception is reported, not propagated.
void deliver_guarded(const char* what, const std::function<void()>& call) noexcept;

}  // namespace redlock::detail
