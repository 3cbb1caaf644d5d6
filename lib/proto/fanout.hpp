// The tally of one fan-out (what lib/net's FanOut decides, without its I/O): one request to every
// node, carrying `items` independent questions (one lock, or a batch of renewals). Each item is
// decided at its quorum (Tally::verdict), or with wait_all once every node answered; the fan-out
// is settled once every node answered (or failed). Pure.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "../core/quorum.hpp"
#include "actions.hpp"

namespace redlock::detail::proto {

class FanOutTally {
 public:
  // `known` (one item only): nodes whose vote is already yes (a split winner's kept keys, or the
  // nodes a clean-up spares) count as such and are not asked: asked() lists the others.
  FanOutTally(std::size_t nodes, std::size_t items, Clock::time_point started,
              bool wait_all = false, const std::vector<NodeVote>* known = nullptr);

  // The nodes the request goes to.
  const std::vector<std::size_t>& asked() const noexcept {
    return every_node_ != nullptr ? *every_node_ : asked_;
  }
  // The same as a Send's list: the every-node list shared, any other copied.
  NodeList targets() const {
    return every_node_ != nullptr ? NodeList::shared(*every_node_) : NodeList::copy(asked_);
  }
  // Records node `node`'s votes (one per item; a pending vote counts as a protocol error; a node
  // already heard from is ignored). Returns the items newly decided by it, in order.
  std::vector<std::size_t> record(std::size_t node, std::vector<NodeVote> votes);
  // The same, for a caller that only asks whether some item was newly decided (no list built:
  // this is every reply of an acquire or a release).
  bool record_decides(std::size_t node, std::vector<NodeVote> votes);
  // The decisions of a fan-out whose every node was known: call once after construction.
  std::vector<std::size_t> decide_now();
  bool decides_now() { return decide(nullptr) > 0; }

  bool settled() const noexcept { return outstanding_ == 0; }
  bool answered(std::size_t node) const noexcept {
    // A node heard from has a vote on item 0 that is no longer pending (count()).
    return taken_ || (items_ > 0 ? first_votes_[node].vote != Vote::pending : heard_[node]);
  }
  bool decided(std::size_t item = 0) const noexcept { return at(item).verdict != Verdict::pending; }
  const Tally& tally(std::size_t item = 0) const noexcept { return at(item).tally; }
  const std::vector<NodeVote>& votes(std::size_t item = 0) const noexcept {
    return item == 0 ? first_votes_ : more_votes_[item - 1];
  }
  Verdict verdict(std::size_t item = 0) const noexcept { return at(item).verdict; }
  Clock::time_point started() const noexcept { return started_; }
  std::size_t nodes() const noexcept { return nodes_; }
  std::size_t items() const noexcept { return items_; }
  // Votes of item `item` as the public API reports them (addresses filled in by the driver).
  Votes public_votes(std::size_t item = 0,
                     std::shared_ptr<const std::vector<std::string>> addresses = nullptr) const;
  // Item 0's votes the same, moved out rather than copied: for a tally its owner is done with.
  // Every node counts as answered after it (nothing more is recorded); the tally, verdict and
  // settled() stay as they were.
  Votes take_public_votes(std::shared_ptr<const std::vector<std::string>> addresses = nullptr);

 private:
  struct Item {
    Tally tally;
    Verdict verdict = Verdict::pending;
  };
  const Item& at(std::size_t item) const noexcept { return item == 0 ? first_ : more_[item - 1]; }
  Item& at(std::size_t item) noexcept { return item == 0 ? first_ : more_[item - 1]; }
  bool hear(std::size_t node, std::vector<NodeVote>& votes);
  void count(std::size_t item, std::size_t node, NodeVote&& vote);
  // Decides what can be decided; appends the items newly decided to `decided` (if given) and
  // returns how many there were.
  std::size_t decide(std::vector<std::size_t>* decided);

  Clock::time_point started_;
  bool wait_all_;
  std::size_t items_;
  // Item 0 in place, the others (a renewal batch's) in lists: a fan-out of one item, every
  // acquire and release, allocates no list of items.
  Item first_;
  std::vector<Item> more_;
  std::vector<NodeVote> first_votes_;
  std::vector<std::vector<NodeVote>> more_votes_;
  std::size_t nodes_;
  std::vector<bool> heard_;  // only for a fan-out of no item (answered())
  // Asked: every node (nearly every fan-out, so a list shared by all of them, built once: no
  // list of its own to allocate), or the nodes in asked_.
  const std::vector<std::size_t>* every_node_ = nullptr;
  std::vector<std::size_t> asked_;
  std::size_t outstanding_ = 0;
  bool taken_ = false;  // take_public_votes moved item 0's votes out
};

// The Votes of a public result from per-node votes.
Votes make_votes(std::vector<NodeVote> nodes,
                 std::shared_ptr<const std::vector<std::string>> addresses = nullptr);

}  // namespace redlock::detail::proto
