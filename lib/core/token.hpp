// Lock tokens: 128 bits from the OS CSPRNG, hex-encoded.
#pragma once

#include <cstdint>
#include <string>
#include <system_error>

namespace redlock::detail {

// Fills `out` with 32 lowercase hex digits from getrandom(2).
std::error_code new_token(std::string& out);

// A 64-bit seed from getrandom(2), for the non-cryptographic jitter generator.
std::uint64_t random_seed() noexcept;

}  // namespace redlock::detail
