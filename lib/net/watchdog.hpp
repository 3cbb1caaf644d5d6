// Renewal of held locks and the lost-lock signal. One timer for the whole client; renewals that
// fall due together go out as one script call per node. Loop thread only.
//
// Every watched lock sits in one min-heap keyed by its next event: the earlier of its next renewal
// (when it is renewed and no renewal is on its way) and the moment it must be declared lost (its
// validity deadline minus a margin). The timer is armed for the heap's top. Adding, removing and
// rescheduling a lock (after each renewal result) cost O(log n); a tick costs O(due · log n),
// whatever the number of locks held.
#pragma once

#include <uv.h>

#include <cstddef>
#include <deque>
#include <memory>
#include <utility>
#include <vector>

#include "lease.hpp"

namespace redlock::detail {

class Coordinator;
class FanOut;

// The watched leases ordered by their next event: a binary min-heap whose entries know their
// slot (Lease::slot), so that any lease is rescheduled or removed in O(log n). Loop thread only.
class LeaseHeap {
 public:
  bool empty() const noexcept { return entries_.empty(); }
  std::size_t size() const noexcept { return entries_.size(); }
  // The lease with the earliest event, and that event (not empty).
  const std::shared_ptr<Lease>& top() const noexcept { return entries_.front().lease; }
  Clock::time_point top_at() const noexcept { return entries_.front().at; }

  // A lease not in the heap (Lease::slot unwatched), with its next event.
  void push(std::shared_ptr<Lease> lease, Clock::time_point at) {
    lease->slot = entries_.size();
    entries_.push_back(Entry{at, std::move(lease)});
    sift_up(entries_.size() - 1);
  }
  // A lease in the heap leaves it (its slot becomes unwatched).
  void erase(Lease& lease) {
    auto i = lease.slot;
    lease.slot = Lease::unwatched;
    auto last = std::move(entries_.back());
    entries_.pop_back();
    if (i == entries_.size()) return;  // it was the last entry
    Lease* moved = last.lease.get();
    place(i, std::move(last));
    sift_up(i);
    sift_down(moved->slot);
  }
  // The next event of a lease in the heap is now `at`.
  void update(Lease& lease, Clock::time_point at) {
    entries_[lease.slot].at = at;
    sift_up(lease.slot);
    sift_down(lease.slot);
  }
  // Every lease in the heap, in no particular order.
  std::vector<std::shared_ptr<Lease>> leases() const {
    std::vector<std::shared_ptr<Lease>> all;
    all.reserve(entries_.size());
    for (const auto& e : entries_) all.push_back(e.lease);
    return all;
  }
  // The heap order holds and every lease knows its slot (for tests).
  bool consistent() const noexcept {
    for (std::size_t i = 0; i < entries_.size(); ++i) {
      if (entries_[i].lease->slot != i) return false;
      if (i > 0 && entries_[i].at < entries_[(i - 1) / 2].at) return false;
    }
    return true;
  }

 private:
  struct Entry {
    Clock::time_point at;
    std::shared_ptr<Lease> lease;
  };

  void place(std::size_t i, Entry entry) {
    entry.lease->slot = i;
    entries_[i] = std::move(entry);
  }
  void sift_up(std::size_t i) {
    Entry e = std::move(entries_[i]);
    while (i > 0) {
      auto parent = (i - 1) / 2;
      if (!(e.at < entries_[parent].at)) break;
      place(i, std::move(entries_[parent]));
      i = parent;
    }
    place(i, std::move(e));
  }
  void sift_down(std::size_t i) {
    auto n = entries_.size();
    Entry e = std::move(entries_[i]);
    for (;;) {
      auto child = 2 * i + 1;
      if (child >= n) break;
      if (child + 1 < n && entries_[child + 1].at < entries_[child].at) ++child;
      if (!(entries_[child].at < e.at)) break;
      place(i, std::move(entries_[child]));
      i = child;
    }
    place(i, std::move(e));
  }

  std::vector<Entry> entries_;  // entries_[0]: the earliest event
};

class Watchdog {
 public:
  // Most keys one renewal script call carries. renew.lua costs a server ~1-2.5 µs per key (a GET
  // and a PTTL, sometimes a PEXPIRE), during which it serves nobody else: 1,000 keys keep a call
  // to a few milliseconds. More renewals falling due together go out as several calls, each
  // still one call per node.
  static constexpr std::size_t max_batch_keys = 1000;
  // Renewal calls on their way at once (each one script call per node); further batches wait
  // until one of them is decided. Sending them all at once would put every batch of a round in
  // each node's queue together: the last would wait for all the others (a request timeout, at
  // some scale), and the per-lock vote records of every batch would be held at the same time.
  static constexpr std::size_t max_calls_in_flight = 2;

  explicit Watchdog(Coordinator& coordinator);
  void start();
  // Starts watching: renewals (when lease->renew) and the validity deadline.
  void add(std::shared_ptr<Lease> lease);
  // Stops watching without a lost signal (the lock is being released).
  void remove(const std::shared_ptr<Lease>& lease);
  // Every watched lock is lost with Errc::shutting_down: nobody renews it any more.
  void shutdown();
  std::size_t size() const noexcept { return heap_.size(); }

 private:
  using Batch = std::vector<std::shared_ptr<Lease>>;

  void tick();
  // Queues the renewals in `due` as batches of at most max_batch_keys keys, then sends.
  void renew_in_batches(Batch due);
  // Sends waiting batches while fewer than max_calls_in_flight calls are on their way.
  void pump();
  void renew(Batch batch);
  void renewed(FanOut& f, std::size_t item, const std::shared_ptr<Lease>& lease);
  void declare_lost(const std::shared_ptr<Lease>& lease, Errc code);
  // Arms the timer for the heap's top, unless it is already set to fire earlier.
  void arm();
  // How long before its deadline a lock is declared lost: timers fire late, never early, so the
  // holder must hear it a little before the window closes.
  static Milliseconds margin(const Lease& lease);
  static Clock::time_point lost_at(const Lease& lease);
  // The earlier of its lost deadline and, when renewed and none is on its way, its next renewal.
  static Clock::time_point next_event(const Lease& lease);

  Coordinator& coordinator_;
  LeaseHeap heap_;
  std::deque<Batch> waiting_;  // picked for renewal, not sent yet
  std::size_t calls_in_flight_ = 0;
  bool pumping_ = false;
  uv_timer_t timer_{};
  Clock::time_point armed_for_ = Clock::time_point::max();  // max: the timer is not running
  bool closed_ = false;
};

}  // namespace redlock::detail
