// Test support: critical sections recorded by several holders, and exact overlap detection.
//
// Each holder records when it entered, when it left, and until when the library said the lock
// was valid. Two checks (as the chaos suite's checker, for in-process tests):
//   claimed: [entered, min(left, valid_until)) — must never overlap;
//   actual:  [entered, left)                   — overlaps only when a holder ran past validity.
#pragma once

#include <algorithm>
#include <chrono>
#include <mutex>
#include <string>
#include <vector>

namespace redlock::test {

struct Section {
  std::chrono::steady_clock::time_point entered, left, valid_until;
  int holder = 0;
};

// Thread-safe log of critical sections.
class SectionLog {
 public:
  void add(const Section& s) {
    std::lock_guard<std::mutex> lock(mutex_);
    sections_.push_back(s);
  }
  std::vector<Section> sections() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return sections_;
  }
  std::size_t size() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return sections_.size();
  }

 private:
  mutable std::mutex mutex_;
  std::vector<Section> sections_;
};

// Number of sections that begin before an earlier-starting section has ended (sorted by start,
// keeping the latest end seen so far): zero exactly when no two intervals overlap.
inline std::size_t count_overlaps(std::vector<Section> sections, bool claimed) {
  auto end_of = [claimed](const Section& s) {
    return claimed ? std::min(s.left, s.valid_until) : s.left;
  };
  std::sort(sections.begin(), sections.end(),
            [](const Section& a, const Section& b) { return a.entered < b.entered; });
  std::size_t overlaps = 0;
  auto latest_end = std::chrono::steady_clock::time_point::min();
  for (const auto& s : sections) {
    if (s.entered < latest_end) ++overlaps;
    latest_end = std::max(latest_end, end_of(s));
  }
  return overlaps;
}

}  // namespace redlock::test
