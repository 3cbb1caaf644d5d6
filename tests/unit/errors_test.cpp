#include "redlock/errors.hpp"

#include <gtest/gtest.h>

#include <fstream>
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

// docs/errors.md has one `## name` section per code, and no section for a code that is gone.
TEST(Errors, EveryCodeHasASectionInTheErrorReference) {
  std::ifstream doc(REDLOCK_ERRORS_DOC);
  ASSERT_TRUE(doc) << "cannot read " << REDLOCK_ERRORS_DOC;
  std::set<std::string> sections;
  for (std::string line; std::getline(doc, line);) {
    if (line.rfind("## ", 0) != 0) continue;
    auto end = line.find_last_not_of(" \t\r");
    sections.insert(line.substr(3, end + 1 - 3));
  }
  std::set<std::string> codes;
#define REDLOCK_ERRC_DOC(code, msg) codes.insert(#code);
  REDLOCK_ERRC_MAP(REDLOCK_ERRC_DOC)
#undef REDLOCK_ERRC_DOC
  for (const auto& code : codes)
    EXPECT_EQ(sections.count(code), 1u) << "docs/errors.md has no section `## " << code << "`";
  for (const auto& section : sections)
    EXPECT_EQ(codes.count(section), 1u)
        << "docs/errors.md has a section `## " << section << "` for no code of Errc";
}

}  // namespace
}  // namespace redlock
