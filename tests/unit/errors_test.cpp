#include "redlock/errors.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace redlock {
namespace {

TEST(Errors, EveryCodeHasItsOwnNameAndMessage) {
  std::set<std::string> names, messages;
  int count = 0;
#define REDLOCK_ERRC_CHECK(code, msg)                                 \
  {                                                                   \
    std::error_code ec = Errc::code;                                  \
    EXPECT_EQ(ec.category().name(), std::string("redlock"));          \
    EXPECT_EQ(ec.message(), msg);                                     \
    EXPECT_EQ(std::string(errc_name(Errc::code)), #code);             \
    EXPECT_TRUE(ec) << #code << " must not compare equal to success"; \
    names.insert(#code);                                              \
    messages.insert(ec.message());                                    \
    ++count;                                                          \
  }
  REDLOCK_ERRC_MAP(REDLOCK_ERRC_CHECK)
#undef REDLOCK_ERRC_CHECK
  EXPECT_EQ(names.size(), static_cast<std::size_t>(count));
  EXPECT_EQ(messages.size(), static_cast<std::size_t>(count));
}

TEST(Errors, RedisReplyErrorsAreRecognised) {
  EXPECT_TRUE(is_redis_reply_error(Errc::redis_wrongtype));
  EXPECT_TRUE(is_redis_reply_error(Errc::redis_error));
  EXPECT_FALSE(is_redis_reply_error(Errc::not_acquired));
  EXPECT_FALSE(is_redis_reply_error(std::make_error_code(std::errc::timed_out)));
}

}  // namespace
}  // namespace redlock
