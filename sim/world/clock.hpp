// The simulator's time (docs/simulation.md): true (simulated) time in microseconds, and the
// clocks of the nodes and clients that read it with a drift rate and jumps. No wall clock.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "brain.hpp"

namespace redlock::sim::internal {

using Us = std::int64_t;  // microseconds of true (simulated) time
constexpr Us kMs = 1000;
constexpr Us kSec = 1000 * kMs;

// ---------------------------------------------------------------------------------------------
// Clocks: local = true * rate + offset, with jumps (a new offset from a true time on).

struct SimClock {
  double rate = 1.0;
  struct Seg {
    Us from;
    Us offset;
  };
  std::vector<Seg> segs{{0, 0}};

  Us local_at(Us t, Us offset) const {
    return offset + static_cast<Us>(std::floor(static_cast<double>(t) * rate));
  }
  Us local(Us t) const {
    for (auto it = segs.rbegin(); it != segs.rend(); ++it)
      if (it->from <= t) return local_at(t, it->offset);
    return local_at(t, segs.front().offset);
  }
  void jump(Us t, Us by) { segs.push_back({t, segs.back().offset + by}); }
  // The first true time >= now at which the clock (as it runs now) reads `l` or more.
  Us when(Us l, Us now) const {
    auto off = segs.back().offset;
    auto t = static_cast<Us>(std::ceil(static_cast<double>(l - off) / rate));
    while (local_at(t, off) < l) ++t;
    while (t > now && local_at(t - 1, off) >= l) --t;
    return std::max(t, now);
  }
  // The first true time at which the clock read `l` or more.
  Us first_reading(Us l) const {
    for (std::size_t i = 0; i < segs.size(); ++i) {
      Us a = segs[i].from;
      if (local_at(a, segs[i].offset) >= l) return a;
      auto t = static_cast<Us>(std::ceil(static_cast<double>(l - segs[i].offset) / rate));
      while (local_at(t, segs[i].offset) < l) ++t;
      if (i + 1 == segs.size() || t < segs[i + 1].from) return t;
    }
    return segs.back().from;
  }
  // The end (exclusive) of the true times in [start, cap] at which the clock read less than `l`:
  // the last instant a holder whose deadline is `l` could believe it held. Counts every stretch
  // (a jump back makes the belief come back).
  Us believe_until(Us l, Us start, Us cap) const {
    Us end = start;
    for (std::size_t i = 0; i < segs.size(); ++i) {
      Us a = std::max(segs[i].from, start);
      Us b = i + 1 < segs.size() ? segs[i + 1].from : cap;
      b = std::min(b, cap);
      if (a >= b) continue;
      if (local_at(a, segs[i].offset) >= l) continue;
      auto t = static_cast<Us>(std::ceil(static_cast<double>(l - segs[i].offset) / rate));
      while (local_at(t, segs[i].offset) < l) ++t;
      end = std::max(end, std::min(t, b));
    }
    return end;
  }
};

inline Clock::time_point tp(Us local) {
  return Clock::time_point(std::chrono::microseconds(local));
}
inline Us us(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
}

inline std::string fmt_t(Us t) {
  char b[32];
  std::snprintf(b, sizeof b, "%lld.%06lld", static_cast<long long>(t / kSec),
                static_cast<long long>(t % kSec));
  return b;
}

}  // namespace redlock::sim::internal
