// The trace (docs/simulation.md, "Replaying and reading a failing seed"): with RunOptions::trace,
// every event a run goes through as one readable line stamped with the true time, and its FNV-1a
// hash, which `redlock_sim --trace-hash` prints: the same seed, the same hash, bit for bit.

#include "world_impl.hpp"

namespace redlock::sim::internal {

void World::trace(const std::string& line) {
  if (!opt_.trace) return;
  trace_ += fmt_t(now_);
  trace_ += ' ';
  trace_ += line;
  trace_ += '\n';
}

void World::violation(const std::string& what) {
  if (violations_.size() < 20) violations_.push_back("t=" + fmt_t(now_) + " " + what);
  trace("VIOLATION " + what);
}

std::uint64_t trace_hash(const std::string& trace) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : trace) h = (h ^ ch) * 1099511628211ull;
  return h;
}

}  // namespace redlock::sim::internal
