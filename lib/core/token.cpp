#include "token.hpp"

#include <sys/random.h>

#include <cerrno>
#include <chrono>

namespace redlock::detail {
namespace {

std::error_code fill_random(void* buf, std::size_t len) {
  auto* p = static_cast<unsigned char*>(buf);
  while (len > 0) {
    ssize_t n = getrandom(p, len, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return {errno, std::system_category()};
    }
    p += n;
    len -= static_cast<std::size_t>(n);
  }
  return {};
}

}  // namespace

std::error_code new_token(std::string& out) {
  unsigned char bytes[16];
  if (auto ec = fill_random(bytes, sizeof bytes)) return ec;
  static const char digits[] = "0123456789abcdef";
  out.resize(33);
  for (std::size_t i = 0; i < sizeof bytes; ++i) {
    out[2 * i] = digits[bytes[i] >> 4];
    out[2 * i + 1] = digits[bytes[i] & 0xf];
  }
  out[32] = kNobodyWaits;
  return {};
}

std::uint64_t random_seed() noexcept {
  std::uint64_t seed = 0;
  if (fill_random(&seed, sizeof seed))
    seed = static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  return seed;
}

}  // namespace redlock::detail
