// What the fuzz targets share: a property check that stops the run with a message (libFuzzer
// saves the input that broke it), and the limits on what an input may ask hiredis for.
#pragma once

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#define FUZZ_CHECK(cond, what)                                                                 \
  do {                                                                                         \
    if (!(cond)) {                                                                             \
      std::fprintf(stderr, "property broken at %s:%d: %s\n  (%s)\n", __FILE__, __LINE__, what, \
                   #cond);                                                                     \
      std::abort();                                                                            \
    }                                                                                          \
  } while (0)

namespace redlock::fuzz {

// hiredis 0.14's reader allocates an array's element table (8 bytes an element, calloc) as soon
// as it reads "*<count>", for any count up to 2^31 - 1 (it refuses more, and negative counts
// other than -1, as out of range). The memory is only reserved, not touched, until elements
// arrive, but libFuzzer's malloc limit counts it: an input announcing more than kMaxArray
// elements anywhere is skipped, as it would only stop the run for memory. See docs/fuzzing.md.
inline constexpr unsigned long long kMaxArray = 4096;

inline bool announces_huge_array(std::string_view bytes) {
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    if (bytes[i] != '*') continue;
    std::size_t j = i + 1;
    if (j < bytes.size() && bytes[j] == '+') ++j;
    unsigned long long n = 0;
    for (; j < bytes.size() && bytes[j] >= '0' && bytes[j] <= '9'; ++j) {
      n = n * 10 + static_cast<unsigned long long>(bytes[j] - '0');
      if (n > kMaxArray) return true;
    }
  }
  return false;
}

}  // namespace redlock::fuzz
