// Durations on the command line: a plain whole number is milliseconds, as it always was;
// otherwise Go-style terms of a number (a fraction allowed) and a unit (ms, s, m or min, h):
// 500ms, 30s, 1.5s, 1m30s, 2h45m.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "redlock/config.hpp"

namespace redlock::cli {

// The duration `text` spells, or nullopt with `why` saying what is wrong. A negative number is
// returned as such: whether it is allowed is the library's to say (its message names the
// rule). A number too large for milliseconds is refused here, as above the longest duration.
std::optional<Milliseconds> parse_duration(std::string_view text, std::string& why);

// "1500 ms", "30 s", "2 min": for messages.
std::string format_duration(Milliseconds d);

}  // namespace redlock::cli
