// The driver of the protocol core: the client's machines (proto/: acquire jobs, extends,
// releases, the watchdog, the notices) take every decision; this carries out their actions
// over the nodes' connections (net/) and the loop's timers, and brings each machine its
// replies, timers, notices and cancels. It owns the nodes and the drain at shutdown.
// Loop thread only.
#pragma once

#include <uv.h>

#include <atomic>
#include <deque>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "../core/recycled.hpp"
#include "../core/safeguards.hpp"
#include "../net/node.hpp"
#include "../proto/single.hpp"
#include "acquire_job.hpp"
#include "in_flight.hpp"
#include "lease.hpp"
#include "lost_tokens.hpp"
#include "redlock/client.hpp"
#include "waiters.hpp"
#include "watchdog.hpp"

namespace redlock::detail {

class Coordinator final : JobHost, VoteSink, MessageSink {
 public:
  Coordinator(uv_loop_t* loop, const Config& config);
  ~Coordinator();

  void start();
  // Stops accepting work, lets what is in flight finish (clean-up releases included) for up to
  // one request timeout, then fails the rest with Errc::shutting_down and closes every handle.
  void shutdown();

  void acquire(AcquireRequest request, Milliseconds ttl, Client::AcquireCallback done);
  // Acquires, then keeps the lock under the watchdog (renewed when `renew`).
  void hold(AcquireRequest request, Milliseconds ttl, bool renew, LostCallback on_lost,
            std::weak_ptr<ClientLink> link,
            std::function<void(AcquireResult, std::shared_ptr<Lease>)> done);
  // How tasks reach the loop from other threads (cancel tokens); set by the client.
  void set_poster(Poster post) { post_to_loop_ = std::move(post); }
  void extend(Lock lock, Milliseconds ttl, Client::ExtendCallback done);
  // `lease`: the held lock this releases, if any (so that its loss is reported once).
  void release(Lock lock, Client::ReleaseCallback done, std::shared_ptr<Lease> lease = nullptr);
  // Stops watching a held lock, then releases it.
  void release_lease(const std::shared_ptr<Lease>& lease, Client::ReleaseCallback done);
  void status(Client::StatusCallback done);
  // A release the caller's lane sent to `node` without learning its outcome: sent again here,
  // nobody waiting for it (a node that cannot take it keeps it for its next session).
  void send_release(std::size_t node, std::shared_ptr<const proto::Request> request);
  // Whether a node refused the quick acquire (then the loop's machines send the script only):
  // any thread, for the lane, whose machines then do the same.
  // Any thread: whether a request of the loop is still on its way to a node (sent, and not yet
  // answered by every node it went to, or timed out there).
  bool requests_in_flight() const noexcept {
    return live_requests_.load(std::memory_order_acquire) > 0;
  }
  // The tokens whose loss was reported, shared with the lane (any thread).
  LostTokens& lost_tokens() noexcept { return lost_tokens_; }
  bool quick_acquire_off() const noexcept { return quick_off_.load(std::memory_order_acquire); }
  // The lane found a node that refuses the quick acquire: the loop's machines stop sending it.
  void no_quick_acquire() {
    proto_->no_quick_acquire();
    quick_off_.store(true, std::memory_order_release);
  }
  // The caller's lane asks node `node` to vote (Node::lane_votes).
  void lane_votes(std::size_t node) {
    if (!nodes_closed_ && node < nodes_.size()) nodes_[node]->lane_votes();
  }
  // The data nodes, for the lane (which reads only their session views). Never changes.
  const std::vector<std::unique_ptr<Node>>& nodes() const noexcept { return nodes_; }

  // Sends `request` to every node; `on_vote` runs once per node with its vote (decoded by the
  // request's decoder), as the node answers or fails. Leader election's reads and writes.
  using NodeVoteCallback = std::function<void(std::size_t node, NodeVote vote)>;
  void broadcast(proto::Request request, NodeVoteCallback on_vote);
  // Votes with nothing in them yet: one pending vote per node, the addresses and the quorum.
  Votes empty_votes() const;
  // Listens to `channel` on every node's subscriber connection beside the waiters: `heard`
  // runs with true for each message, with false for each confirmed (re)subscription. Returns
  // the listener's id for unlisten. Leader election's observers.
  using ChannelCallback = std::function<void(bool message)>;
  std::uint64_t listen(const std::string& channel, ChannelCallback heard);
  void unlisten(std::uint64_t id);
  uv_loop_t* loop() const noexcept { return loop_; }
  bool shutting_down() const noexcept { return shutting_down_; }
  // Runs at shutdown, before the nodes close (the observers' timers close there).
  void on_shutdown(std::function<void()> hook) { shutdown_hooks_.push_back(std::move(hook)); }

 private:
  struct LockNote;
  struct ExtendOp;
  struct ReleaseOp;
  // An action list for one event, taken from spare_actions_ and given back (emptied, its
  // capacity kept) when it goes: an event's first action allocates no list. A nested event (a
  // callback's next call, inside run()) takes another.
  class Scratch {
   public:
    explicit Scratch(Coordinator& c) : c_(c), out(c.take_actions()) {}
    ~Scratch() { c_.recycle(out); }
    Scratch(const Scratch&) = delete;
    Scratch& operator=(const Scratch&) = delete;

   private:
    Coordinator& c_;

   public:
    proto::Actions out;
  };
  proto::Actions take_actions();
  void recycle(proto::Actions& actions);
  void found_lost(const LockNote& note);

  // Carries out what a machine asked for, in order. `caller`: whom a Send or a timer without a
  // job belongs to (the machine that was called).
  void run(proto::Actions& actions, Route caller);
  void arm_watchdog(Clock::time_point at);
  void on_watchdog_timer();
  // Frees the jobs in reap_ whose machines need nothing more.
  void reap();
  void close_nodes();

  // JobHost
  proto::Actions job_actions() override { return take_actions(); }
  void run_job(proto::Actions& actions) override {
    run(actions, Route{});
    recycle(actions);
  }
  void cancel_job(std::uint64_t id) override;
  const Poster& poster() const override { return post_to_loop_; }
  // VoteSink
  void on_votes(Route route, proto::RequestId id, std::size_t node,
                std::vector<NodeVote> votes) override;
  void on_request_ended() override;
  // MessageSink: the notice connections' messages and confirmed subscriptions (Waiters)
  void on_message(std::size_t node, std::string_view channel, std::string_view payload) override;
  void on_subscribed(std::size_t node, std::string_view channel) override;

  uv_loop_t* loop_;
  const Config& config_;
  std::mt19937_64 rng_;
  ServerIds server_ids_;  // before nodes_: the nodes refer to it
  std::vector<std::unique_ptr<Node>> nodes_;
  std::shared_ptr<const std::vector<std::string>> addresses_;
  std::unique_ptr<proto::Context> proto_;
  Waiters waiters_;
  std::unique_ptr<Watchdog> watchdog_;  // made with proto_
  uv_timer_t watchdog_timer_{};
  proto::TimerId watchdog_timer_id_ = 0;
  bool watchdog_timer_closed_ = false;
  RecyclingIdMap<AcquireJob*> jobs_;
  RecyclingIdMap<std::unique_ptr<ExtendOp>> extends_;
  RecyclingIdMap<std::unique_ptr<ReleaseOp>> releases_;
  // Tokens whose loss was reported (found_lost, the watchdog, the lane): one report per lock.
  LostTokens lost_tokens_;
  struct Broadcast {
    NodeVoteCallback on_vote;
    std::size_t outstanding = 0;
  };
  std::unordered_map<std::uint64_t, Broadcast> broadcasts_;
  struct Listener {
    std::string channel;
    ChannelCallback heard;
  };
  std::unordered_map<std::uint64_t, Listener> listeners_;
  std::uint64_t last_listener_ = 0;
  // Channels the notices subscribed: a listener's channel stays subscribed while either wants it.
  std::unordered_set<std::string> notice_channels_;
  void tell_listeners(std::string_view channel, bool message);
  bool listened(const std::string& channel) const;
  std::vector<std::function<void()>> shutdown_hooks_;
  bool shutting_down_ = false;
  std::atomic<std::size_t> live_requests_{0};  // Sends not answered by every node (any thread)
  bool nodes_closed_ = false;
  uv_timer_t drain_timer_{};
  Poster post_to_loop_;
  std::vector<std::uint64_t> reap_;            // jobs that may be done
  std::vector<proto::Actions> spare_actions_;  // emptied action lists to reuse (Scratch)
  int running_ = 0;                            // depth of run()
  std::atomic<bool> quick_off_{false};  // proto_->quick_acquire() turned false (for the lane)
};

}  // namespace redlock::detail
