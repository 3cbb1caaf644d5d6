// Where I/O meets the algorithm: fans a script out to every node, gathers the votes, applies
// the quorum rules of core/quorum.hpp, cleans up after failed attempts, retries and waits.
// Loop thread only.
#pragma once

#include <uv.h>

#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "../core/quorum.hpp"
#include "../core/safeguards.hpp"
#include "../proto/acquire.hpp"
#include "lease.hpp"
#include "node.hpp"
#include "redlock/client.hpp"
#include "redlock/observer.hpp"
#include "waiters.hpp"
#include "watchdog.hpp"

namespace redlock::detail {

class Coordinator;

// One command sent to every node at once, carrying `items` independent questions (one lock,
// or a batch of renewals). Each item is decided at its quorum (or, with wait_all, once every
// node answered). The object lives until every node has answered, so no reply outlives it.
class FanOut final : public ReplySink {
 public:
  // Fills one vote per item from a node's reply (never an error reply); leaves them pending
  // when the reply has the wrong shape (they are then counted as protocol errors).
  using Classify = void (*)(const redisReply* reply, const Command& command, NodeVote* votes,
                            std::size_t items);
  using Decided = std::function<void(FanOut&, std::size_t item)>;

  // Sends at once; `decided` runs exactly once per item, possibly before start() returns.
  // (The acquire job's rounds are proto::FanOutTally's, sent by Coordinator::ProtoSend.)
  static void start(Coordinator& coordinator, Command command, std::size_t items, Classify classify,
                    Decided decided, bool wait_all = false);

  // From a `decided` callback: runs `settled` once every node has answered (or failed), with
  // every vote in, just before the fan-out ends. The caller must outlive the fan-out.
  void when_settled(std::function<void(FanOut&)> settled) { settled_ = std::move(settled); }
  // True once every node has answered (or failed).
  bool settled() const noexcept { return !sending_ && outstanding_ == 0; }

  const Tally& tally(std::size_t item = 0) const noexcept { return tallies_[item]; }
  const Votes& votes(std::size_t item = 0) const noexcept { return votes_[item]; }
  Verdict verdict(std::size_t item = 0) const noexcept { return verdicts_[item]; }
  Clock::time_point started() const noexcept { return started_; }
  // Text of each node's reply (wait_all fan-outs only, e.g. status).
  const std::vector<std::string>& texts() const noexcept { return texts_; }

 private:
  FanOut(Coordinator& coordinator, Command command, std::size_t items, Classify classify,
         Decided decided, bool wait_all);
  ~FanOut();
  void on_node_reply(std::size_t node, const NodeReply& reply) override;
  void record(std::size_t item, std::size_t node, NodeVote vote);
  void maybe_decide();
  void maybe_finish();

  Coordinator& coordinator_;
  Command command_;
  Classify classify_;
  Decided decided_;
  std::function<void(FanOut&)> settled_;
  bool wait_all_;
  Clock::time_point started_;
  std::vector<Tally> tallies_;
  std::vector<Votes> votes_;
  std::vector<Verdict> verdicts_;
  std::vector<bool> announced_;
  std::vector<std::string> texts_;
  std::vector<NodeVote> scratch_;
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
  // Acquires, then keeps the lock under the watchdog (renewed when `renew`).
  void hold(AcquireRequest request, Milliseconds ttl, bool renew, LostCallback on_lost,
            std::weak_ptr<ClientLink> link,
            std::function<void(AcquireResult, std::shared_ptr<Lease>)> done);
  // How tasks reach the loop from other threads (cancel tokens); set by the client.
  void set_poster(std::function<void(std::function<void()>)> post) {
    post_to_loop_ = std::move(post);
  }
  void extend(Lock lock, Milliseconds ttl, Client::ExtendCallback done);
  void release(Lock lock, Client::ReleaseCallback done);
  // Stops watching a held lock, then releases it.
  void release_lease(const std::shared_ptr<Lease>& lease, Client::ReleaseCallback done);
  void status(Client::StatusCallback done);
  // Ends the wait of the acquire registered under `job_id`, if it still waits.
  void cancel(std::uint64_t job_id);

  std::vector<std::unique_ptr<Node>>& nodes() noexcept { return nodes_; }
  const Config& config() const noexcept { return config_; }
  uv_loop_t* loop() const noexcept { return loop_; }
  std::mt19937_64& rng() noexcept { return rng_; }
  Waiters& waiters() noexcept { return waiters_; }
  const std::shared_ptr<const std::vector<std::string>>& addresses() const noexcept {
    return addresses_;
  }
  std::vector<std::string> keys_of(const std::vector<std::string>& resources) const;
  // This client's channel for turns ({prefix}turn:<random>), subscribed with the first waiter.
  const std::string& turn_channel() const noexcept { return turn_channel_; }
  // The renew script for locks (keys lock after lock), as one command.
  static Command renew_command(const std::vector<const Lease*>& leases);
  // Tells Config::observer, if any, that an operation begun at `started` ended (observe.hpp).
  void notify_operation(Operation op, std::error_code error, const Votes& votes,
                        const std::vector<std::string>& resources, Clock::time_point started) const;

  class AcquireJob;
  class ProtoSend;
  // The protocol core's shared state (turns, notices, ids, the quick acquire's fate).
  proto::Context& proto() noexcept { return *proto_; }
  // Carries out what the machines asked for, in order.
  void run(proto::Actions& actions);

 private:
  friend class AcquireJob;
  friend class ProtoSend;
  // A node's votes for request `id` of acquire job `job` (gone: dropped).
  void deliver_reply(std::uint64_t job, proto::RequestId id, std::size_t node,
                     std::vector<NodeVote> votes);
  // Frees the jobs in reap_ whose machines need nothing more.
  void reap();
  friend class FanOut;
  void fanout_ended();
  void close_nodes();

  uv_loop_t* loop_;
  const Config& config_;
  std::mt19937_64 rng_;
  ServerIds server_ids_;  // before nodes_: the nodes refer to it
  std::vector<std::unique_ptr<Node>> nodes_;
  std::shared_ptr<const std::vector<std::string>> addresses_;
  Waiters waiters_;
  Watchdog watchdog_;
  std::unordered_map<std::uint64_t, AcquireJob*> jobs_;
  std::uint64_t next_job_id_ = 1;
  std::string turn_channel_;  // random: this client's waiters are told apart from others'
  bool shutting_down_ = false;
  std::size_t live_fanouts_ = 0;
  bool nodes_closed_ = false;
  uv_timer_t drain_timer_{};
  std::function<void(std::function<void()>)> post_to_loop_;
  std::unique_ptr<proto::Context> proto_;
  std::vector<std::uint64_t> reap_;  // jobs that may be done
  int running_ = 0;                  // depth of run()
};

// Runs a user callback on the loop thread; an escaping exception is reported, not propagated.
void deliver_guarded(const char* what, const std::function<void()>& call) noexcept;

// Votes of a renew fan-out: one integer per lock.
void classify_renew(const redisReply* reply, const Command& command, NodeVote* votes,
                    std::size_t items);

}  // namespace redlock::detail
