// Formatting of locks, votes and outcomes. Pure.
#include <cstdio>

#include "redlock/lock.hpp"

namespace redlock {

Milliseconds Lock::validity_left() const noexcept {
  auto left = std::chrono::duration_cast<Milliseconds>(valid_until - Clock::now());
  return left.count() > 0 ? left : Milliseconds(0);
}

const char* to_string(Vote v) noexcept {
  switch (v) {
    case Vote::pending:
      return "pending";
    case Vote::yes:
      return "yes";
    case Vote::no:
      return "no";
    case Vote::failed:
      return "failed";
  }
  return "unknown";
}

std::size_t Votes::count(Vote v) const noexcept {
  std::size_t n = 0;
  for (const auto& node : nodes) n += node.vote == v ? 1 : 0;
  return n;
}

const std::string& Votes::address(std::size_t i) const {
  static const std::string unknown = "?";
  return addresses && i < addresses->size() ? (*addresses)[i] : unknown;
}

std::string Votes::to_string() const {
  std::string s = std::to_string(yes()) + "/" + std::to_string(nodes.size()) + " yes (quorum " +
                  std::to_string(quorum) + ")";
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const auto& n = nodes[i];
    s += i == 0 ? ": " : ", ";
    s += address(i);
    s += ' ';
    s += redlock::to_string(n.vote);
    if (n.vote == Vote::yes || n.vote == Vote::no) {
      char buf[32];
      std::snprintf(buf, sizeof buf, " %.2fms", static_cast<double>(n.latency.count()) / 1000.0);
      s += buf;
    }
    if (n.vote == Vote::failed) {
      s += " (";
      s += n.error.category() == error_category() ? errc_name(static_cast<Errc>(n.error.value()))
                                                  : n.error.message();
      if (!n.detail.empty()) s += ": " + n.detail;
      s += ")";
    }
  }
  return s;
}

namespace {

// True when every "no" names a waiter's turn ("turn:<digest>", scripts/acquire.lua): the key is
// free on those nodes, and it is another waiter's turn to take it, not another owner's lock.
bool refused_for_turns(const Votes& votes) {
  bool any = false;
  for (const auto& n : votes.nodes) {
    if (n.vote != Vote::no) continue;
    if (n.holder.rfind("turn:", 0) != 0) return false;
    any = true;
  }
  return any;
}

}  // namespace

std::string Outcome::message() const {
  std::string s = error ? error.message() : "ok";
  if (error == Errc::not_acquired && refused_for_turns(votes))
    s = "lock is free but it is another waiter's turn";
  if (!detail.empty()) s += ": " + detail;
  if (!votes.nodes.empty()) s += "; votes " + votes.to_string();
  return s;
}

}  // namespace redlock
