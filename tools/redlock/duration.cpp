#include "duration.hpp"

#include <cstdint>
#include <limits>

namespace redlock::cli {

namespace {

// Anything beyond 2^62 ms is far above the longest duration the library accepts (2^40 ms):
// refused here rather than overflowed.
constexpr std::int64_t kCap = std::int64_t{1} << 62;

// Milliseconds per unit; 0 for an unknown unit.
std::int64_t scale_of(std::string_view unit) {
  if (unit == "ms") return 1;
  if (unit == "s") return 1000;
  if (unit == "m" || unit == "min") return 60'000;
  if (unit == "h") return 3'600'000;
  return 0;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

}  // namespace

// A plain whole number is milliseconds; otherwise one or more NUMBER UNIT terms, as Go's
// time.ParseDuration reads them: "1m30s", "1.5s", "2h45m", "250ms". A term's fraction must come
// to whole milliseconds in the sum ("1.5ms" is refused: the library counts milliseconds).
std::optional<Milliseconds> parse_duration(std::string_view text, std::string& why) {
  const auto not_a_duration = [&] {
    why = "'" + std::string(text) +
          "' is not a duration (a whole number of milliseconds, or terms such as 500ms, 30s, "
          "1.5s, 2m, 1m30s, 1h)";
    return std::nullopt;
  };
  const auto too_long = [&] {
    why = "'" + std::string(text) + "' is above the longest duration (2^40 ms, about 34.8 years)";
    return std::nullopt;
  };
  std::string_view s = text;
  bool negative = !s.empty() && s.front() == '-';
  if (negative) s.remove_prefix(1);
  if (s.empty()) return not_a_duration();

  // The sum, in millionths of a millisecond, so that fractions add up exactly enough.
  constexpr std::int64_t kMicroPerMs = 1'000'000;  // (units of 1e-6 ms, i.e. nanoseconds)
  std::int64_t total = 0;                          // in ns
  bool plain = true;
  while (!s.empty()) {
    std::size_t digits = 0;
    while (digits < s.size() && is_digit(s[digits])) ++digits;
    std::string_view whole = s.substr(0, digits);
    std::string_view frac;
    std::size_t used = digits;
    if (used < s.size() && s[used] == '.') {
      std::size_t f = used + 1;
      while (f < s.size() && is_digit(s[f])) ++f;
      frac = s.substr(used + 1, f - used - 1);
      used = f;
      plain = false;
    }
    if (whole.empty() && frac.empty()) return not_a_duration();
    std::size_t u = used;
    while (u < s.size() && !is_digit(s[u]) && s[u] != '.') ++u;
    std::string_view unit = s.substr(used, u - used);
    if (unit.empty()) {
      // Only a number alone is milliseconds: "1m30" is an error, not 1m + 30 ms.
      if (!plain || total != 0 || used != s.size()) {
        why = "'" + std::string(text) + "': a number without a unit (ms, s, m or h)";
        return std::nullopt;
      }
      unit = "ms";
    } else {
      plain = false;
    }
    std::int64_t scale = scale_of(unit);
    if (scale == 0) {
      why = "'" + std::string(text) + "': unknown unit '" + std::string(unit) +
            "' (ms, s, m or h; a plain number is milliseconds)";
      return std::nullopt;
    }
    const std::int64_t cap_ms = kCap / kMicroPerMs;  // about 4.6e12 ms, above 2^40
    std::int64_t value = 0;
    for (char c : whole) {
      if (value > (cap_ms / scale - (c - '0')) / 10) return too_long();
      value = value * 10 + (c - '0');
    }
    std::int64_t term = value * scale * kMicroPerMs;
    // The fraction, digit by digit: at most 18 digits matter (below a nanosecond of an hour).
    std::int64_t place = scale * kMicroPerMs;
    for (std::size_t i = 0; i < frac.size() && place > 0; ++i) {
      place /= 10;
      term += (frac[i] - '0') * place;
    }
    if (term > kCap - total) return too_long();
    total += term;
    s.remove_prefix(u);
  }
  if (total % kMicroPerMs != 0) {
    why = "'" + std::string(text) + "' is not a whole number of milliseconds";
    return std::nullopt;
  }
  std::int64_t ms = total / kMicroPerMs;
  return Milliseconds(negative ? -ms : ms);
}

std::string format_duration(Milliseconds d) {
  auto ms = d.count();
  if (ms != 0 && ms % 3'600'000 == 0) return std::to_string(ms / 3'600'000) + " h";
  if (ms != 0 && ms % 60'000 == 0) return std::to_string(ms / 60'000) + " min";
  if (ms != 0 && ms % 1000 == 0) return std::to_string(ms / 1000) + " s";
  return std::to_string(ms) + " ms";
}

}  // namespace redlock::cli
