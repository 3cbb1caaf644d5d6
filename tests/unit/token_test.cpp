#include "core/token.hpp"

#include <gtest/gtest.h>

#include <set>

namespace redlock::detail {
namespace {

TEST(Token, Is32LowercaseHexDigits) {
  std::string t;
  ASSERT_FALSE(new_token(t));
  ASSERT_EQ(t.size(), 32u);
  for (char c : t) EXPECT_TRUE((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')) << t;
}

TEST(Token, DoesNotRepeat) {
  std::set<std::string> seen;
  for (int i = 0; i < 10'000; ++i) {
    std::string t;
    ASSERT_FALSE(new_token(t));
    ASSERT_TRUE(seen.insert(t).second) << "repeated token " << t;
  }
}

}  // namespace
}  // namespace redlock::detail
