#include "core/token.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <set>
#include <thread>
#include <vector>

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

// Tokens are drawn from a per-thread store of random bytes (token.cpp). A forked child must not
// hand out the bytes its parent will: two holders with one token would release each other's locks.
TEST(Token, AForkedChildDrawsOtherTokensThanItsParent) {
  std::string before;
  ASSERT_FALSE(new_token(before));  // the parent's store now holds bytes for later tokens
  int fd[2];
  ASSERT_EQ(pipe(fd), 0);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    close(fd[0]);
    std::string all;
    for (int i = 0; i < 300; ++i) {  // more than one store's worth (255)
      std::string t;
      if (new_token(t)) _exit(2);
      all += t;
    }
    bool sent = write(fd[1], all.data(), all.size()) == static_cast<ssize_t>(all.size());
    _exit(sent ? 0 : 3);
  }
  close(fd[1]);
  std::string child;
  char buf[4096];
  for (ssize_t n; (n = read(fd[0], buf, sizeof buf)) > 0;)
    child.append(buf, static_cast<std::size_t>(n));
  close(fd[0]);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  ASSERT_EQ(child.size(), 300u * 33);
  std::set<std::string> theirs;
  for (std::size_t i = 0; i < child.size(); i += 33) theirs.insert(child.substr(i, 33));
  for (int i = 0; i < 300; ++i) {
    std::string t;
    ASSERT_FALSE(new_token(t));
    EXPECT_EQ(theirs.count(t), 0u) << "the child drew the parent's token " << t;
  }
}

TEST(Token, ThreadsDrawOtherTokens) {
  std::vector<std::set<std::string>> drawn(4);
  std::vector<std::thread> threads;
  for (auto& d : drawn)
    threads.emplace_back([&d] {
      for (int i = 0; i < 1000; ++i) {
        std::string t;
        if (!new_token(t)) d.insert(t);
      }
    });
  for (auto& t : threads) t.join();
  std::set<std::string> all;
  for (const auto& d : drawn) {
    EXPECT_EQ(d.size(), 1000u);
    all.insert(d.begin(), d.end());
  }
  EXPECT_EQ(all.size(), 4000u);
}

}  // namespace
}  // namespace redlock::detail
