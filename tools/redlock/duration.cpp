#include "duration.hpp"

#include <cstdint>
#include <limits>

namespace redlock::cli {

std::optional<Milliseconds> parse_duration(std::string_view text, std::string& why) {
  std::string_view s = text;
  bool negative = !s.empty() && s.front() == '-';
  if (negative) s.remove_prefix(1);
  std::size_t digits = 0;
  while (digits < s.size() && s[digits] >= '0' && s[digits] <= '9') ++digits;
  if (digits == 0) {
    why = "'" + std::string(text) +
          "' is not a duration (a whole number, optionally with ms, s, m or h)";
    return std::nullopt;
  }
  std::string_view unit = s.substr(digits);
  std::int64_t scale = 0;
  if (unit.empty() || unit == "ms")
    scale = 1;
  else if (unit == "s")
    scale = 1000;
  else if (unit == "m" || unit == "min")
    scale = 60'000;
  else if (unit == "h")
    scale = 3'600'000;
  if (scale == 0) {
    why = "'" + std::string(text) + "': unknown unit '" + std::string(unit) +
          "' (ms, s, m or h; a plain number is milliseconds)";
    return std::nullopt;
  }
  // Anything beyond 2^62 ms is far above the longest duration the library accepts (2^40 ms):
  // refuse it here rather than overflow.
  constexpr std::int64_t kCap = std::int64_t{1} << 62;
  std::int64_t value = 0;
  for (std::size_t i = 0; i < digits; ++i) {
    // Checked before the step: value * 10 + digit must stay within kCap / scale.
    if (value > (kCap / scale - (s[i] - '0')) / 10) {
      why = "'" + std::string(text) + "' is above the longest duration (2^40 ms, about 34.8 years)";
      return std::nullopt;
    }
    value = value * 10 + (s[i] - '0');
  }
  value *= scale;
  return Milliseconds(negative ? -value : value);
}

std::string format_duration(Milliseconds d) {
  auto ms = d.count();
  if (ms != 0 && ms % 3'600'000 == 0) return std::to_string(ms / 3'600'000) + " h";
  if (ms != 0 && ms % 60'000 == 0) return std::to_string(ms / 60'000) + " min";
  if (ms != 0 && ms % 1000 == 0) return std::to_string(ms / 1000) + " s";
  return std::to_string(ms) + " ms";
}

}  // namespace redlock::cli
