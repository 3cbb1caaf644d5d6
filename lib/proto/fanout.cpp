#include "fanout.hpp"

namespace redlock::detail::proto {
namespace {

// 0, 1, ..., n - 1 for every n up to kShared, built once (thread-safe), never changed again.
constexpr std::size_t kShared = 64;
const std::vector<std::size_t>* all_nodes(std::size_t n) {
  static const std::vector<std::vector<std::size_t>> lists = [] {
    std::vector<std::vector<std::size_t>> l(kShared + 1);
    for (std::size_t k = 0; k <= kShared; ++k)
      for (std::size_t i = 0; i < k; ++i) l[k].push_back(i);
    return l;
  }();
  return n <= kShared ? &lists[n] : nullptr;
}

}  // namespace

FanOutTally::FanOutTally(std::size_t nodes, std::size_t items, Clock::time_point started,
                         bool wait_all, const std::vector<NodeVote>* known)
    : started_(started), wait_all_(wait_all), items_(items), nodes_(nodes) {
  first_.tally.nodes = nodes;
  if (items > 1) more_.assign(items - 1, first_);
  if (items > 0) first_votes_.resize(nodes);
  if (items > 1) {
    more_votes_.resize(items - 1);
    for (auto& v : more_votes_) v.resize(nodes);  // no temporary to copy from
  }
  if (items == 0) heard_.assign(nodes, false);
  if (known == nullptr || items != 1) every_node_ = all_nodes(nodes);
  if (every_node_ != nullptr) {
    outstanding_ = nodes;
    return;
  }
  asked_.reserve(nodes);
  for (std::size_t node = 0; node < nodes; ++node) {
    if (known != nullptr && items == 1 && node < known->size() &&
        (*known)[node].vote == Vote::yes) {
      count(0, node, NodeVote((*known)[node]));
    } else {
      asked_.push_back(node);
    }
  }
  outstanding_ = asked_.size();
}

void FanOutTally::count(std::size_t item, std::size_t node, NodeVote&& vote) {
  auto& slot = (item == 0 ? first_votes_ : more_votes_[item - 1])[node];
  if (slot.vote != Vote::pending) return;
  if (vote.vote == Vote::pending) {
    vote.vote = Vote::failed;
    vote.error = make_error_code(Errc::protocol_error);
    vote.detail = "unexpected reply";
  }
  auto& t = at(item).tally;
  switch (vote.vote) {
    case Vote::yes:
      ++t.yes;
      break;
    case Vote::no:
      ++t.no;
      break;
    default:
      ++t.failed;
      break;
  }
  slot = std::move(vote);
}

// False when the node was heard from already (or is no node of this fan-out).
bool FanOutTally::hear(std::size_t node, std::vector<NodeVote>& votes) {
  if (node >= nodes_ || answered(node)) return false;
  if (items_ == 0) heard_[node] = true;
  --outstanding_;
  for (std::size_t i = 0; i < items_; ++i) {
    if (i < votes.size()) {
      count(i, node, std::move(votes[i]));
    } else {
      count(i, node, NodeVote());  // a missing vote counts as a protocol error
    }
  }
  return true;
}

std::vector<std::size_t> FanOutTally::record(std::size_t node, std::vector<NodeVote> votes) {
  std::vector<std::size_t> decided;
  if (hear(node, votes)) decide(&decided);
  return decided;
}

bool FanOutTally::record_decides(std::size_t node, std::vector<NodeVote> votes) {
  return hear(node, votes) && decide(nullptr) > 0;
}

std::vector<std::size_t> FanOutTally::decide_now() {
  std::vector<std::size_t> decided;
  decide(&decided);
  return decided;
}

std::size_t FanOutTally::decide(std::vector<std::size_t>* decided) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < items_; ++i) {
    auto& item = at(i);
    if (item.verdict != Verdict::pending) continue;
    Verdict v =
        wait_all_ ? (outstanding_ == 0 ? Verdict::won : Verdict::pending) : item.tally.verdict();
    if (v == Verdict::pending) continue;
    item.verdict = v;
    ++n;
    if (decided != nullptr) decided->push_back(i);
  }
  return n;
}

Votes FanOutTally::public_votes(std::size_t item,
                                std::shared_ptr<const std::vector<std::string>> addresses) const {
  return make_votes(votes(item), std::move(addresses));
}

Votes FanOutTally::take_public_votes(std::shared_ptr<const std::vector<std::string>> addresses) {
  taken_ = true;
  return make_votes(std::move(first_votes_), std::move(addresses));
}

Votes make_votes(std::vector<NodeVote> nodes,
                 std::shared_ptr<const std::vector<std::string>> addresses) {
  Votes v;
  v.quorum = quorum_size(nodes.size());
  v.nodes = std::move(nodes);
  v.addresses = std::move(addresses);
  return v;
}

}  // namespace redlock::detail::proto
