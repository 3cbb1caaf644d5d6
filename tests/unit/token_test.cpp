#include "core/token.hpp"

#include <gtest/gtest.h>

#include <set>

namespace redlock::detail {
namespace {

TEST(Token, Is32LowercaseHexDigitsThenNobodyWaits) {
  std::string t;
  ASSERT_FALSE(new_token(t));
  ASSERT_EQ(t.size(), 33u);
  for (std::size_t i = 0; i < 32; ++i)
    EXPECT_TRUE((t[i] >= '0' && t[i] <= '9') || (t[i] >= 'a' && t[i] <= 'f')) << t;
  EXPECT_EQ(t.back(), kNobodyWaits);
}

TEST(Token, AValueMarkedWhereSomebodyWaitsStandsForTheToken) {
  std::string t;
  ASSERT_FALSE(new_token(t));
  std::string marked = t;
  marked.back() = kWaitedFor;
  EXPECT_EQ(token_of_value(marked), t);
  EXPECT_EQ(token_of_value(t), t);
  // An older client's token (no last character of ours) is its own value.
  EXPECT_EQ(token_of_value("0123456789abcdef0123456789abcdef"), "0123456789abcdef0123456789abcdef");
  EXPECT_EQ(token_of_value(""), "");
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
