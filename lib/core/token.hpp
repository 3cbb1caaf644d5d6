// Lock tokens: 128 bits from the OS CSPRNG, hex-encoded, and a last character that the nodes
// change while somebody waits for the lock.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <system_error>

namespace redlock::detail {

// The last character of a token. A node keeps a holder's token as it was given ("nobody here
// asked to hear of its release") until a waiter stands in the key's line or signs up for it
// there: acquire.lua then turns the last character into kWaitedFor (keeping the ttl), and so
// does a waiter that leaves a line behind a held key (release.lua). A release finds out from the
// value it reads anyway whether it has anybody to tell (release.lua): a token ending otherwise (an
// older client's 32 digits) is left as it is, and its release asks the line instead. Every script
// that compares a key with a token takes both forms.
inline constexpr char kNobodyWaits = '.';
inline constexpr char kWaitedFor = '!';

// Fills `out` with 32 lowercase hex digits from getrandom(2) (drawn a page at a time per thread,
// wiped in a forked child: token.cpp), then kNobodyWaits.
std::error_code new_token(std::string& out);

// The token a key's value stands for: `value` with a last kWaitedFor read as kNobodyWaits.
// Inline: the reply parsers (and their fuzz targets) use it without the token generator.
inline std::string token_of_value(std::string_view value) {
  std::string token(value);
  if (!token.empty() && token.back() == kWaitedFor) token.back() = kNobodyWaits;
  return token;
}

// The value of a free key while a waiter's turn holds it: this, then the waiter's ticket
// (acquire.lua, TURN). No token holds a NUL byte.
inline constexpr std::string_view kTurnPrefix{"turn\0", 5};
inline bool is_turn_value(std::string_view value) {
  return value.substr(0, kTurnPrefix.size()) == kTurnPrefix;
}

// A 64-bit seed from getrandom(2), for the non-cryptographic jitter generator.
std::uint64_t random_seed() noexcept;

}  // namespace redlock::detail
