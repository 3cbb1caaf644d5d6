// The client's event loop and its mailbox (lib/net/loop.*): no Redis, only the loop thread.
// A post made while the loop is "awake by promise" sends no wake-up; these tests fail (a task
// left in the inbox while the loop sleeps) if that promise is not kept.
#include <gtest/gtest.h>
#include <uv.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <thread>

#include "net/loop.hpp"

namespace redlock::detail {
namespace {

using namespace std::chrono_literals;

class LoopTest : public ::testing::Test {
 protected:
  void SetUp() override { loop_.start(); }
  void TearDown() override { EXPECT_EQ(loop_.stop(nullptr), 0); }

  // Runs `f` on the loop thread and waits for it (what `f` captures must outlive the loop).
  template <typename F>
  void on_loop(F f) {
    auto done = std::make_shared<std::promise<void>>();
    auto future = done->get_future();
    ASSERT_TRUE(loop_.post([f, done] {
      f();
      done->set_value();
    }));
    ASSERT_EQ(future.wait_for(5s), std::future_status::ready);
  }

  std::shared_ptr<void> keep_;  // destroyed after loop_
  EventLoop loop_;
};

void chain(EventLoop* loop, std::shared_ptr<std::promise<void>> done, int left) {
  if (left == 0) {
    done->set_value();
    return;
  }
  loop->post([loop, done, left] { chain(loop, done, left - 1); });
}

// A callback's next call is posted from the loop thread itself, which sends no wake-up.
TEST_F(LoopTest, TasksPostedFromTheLoopRunBeforeItSleeps) {
  auto done = std::make_shared<std::promise<void>>();
  auto future = done->get_future();
  ASSERT_TRUE(loop_.post([this, done] { chain(&loop_, done, 2000); }));
  ASSERT_EQ(future.wait_for(10s), std::future_status::ready);
}

// The blocking calls' pattern: the loop hands a result to a waiting thread and promises to read
// the inbox before it sleeps; that thread posts its next call at once or a little later.
TEST_F(LoopTest, ACallPostedAfterTheResultIsNeverLeftWaiting) {
  constexpr int kRounds = 20000;
  int lost_at = -1;
  for (int i = 0; i < kRounds && lost_at < 0; ++i) {
    auto got = std::make_shared<std::promise<void>>();
    auto future = got->get_future();
    if (!loop_.post([this, got] {
          loop_.check_inbox_before_sleep();
          got->set_value();
        }))
      FAIL() << "the loop refused a task";
    if (future.wait_for(5s) != std::future_status::ready) lost_at = i;
    if (i % 7 == 0) std::this_thread::sleep_for(50us);  // sometimes after the loop slept again
  }
  EXPECT_EQ(lost_at, -1) << "round " << lost_at << ": a posted task waited while the loop slept";
}

// A promise made in the check phase (after the loop's own check for the inbox has run this turn)
// must still be kept before the next poll.
TEST_F(LoopTest, APromiseMadeAfterThisTurnsInboxCheckIsKeptBeforeThePoll) {
  struct Ctx {
    EventLoop* loop = nullptr;
    std::atomic<bool> armed{true};
    std::promise<void> ran;
    uv_check_t check{};
  };
  auto ctx = std::make_shared<Ctx>();
  ctx->loop = &loop_;
  keep_ = ctx;  // outlives the loop: a task left behind by a failure still finds it
  auto ran = ctx->ran.get_future();
  on_loop([ctx] {
    uv_check_init(ctx->loop->get(), &ctx->check);
    ctx->check.data = ctx.get();
    uv_check_start(&ctx->check, [](uv_check_t* h) {
      auto* c = static_cast<Ctx*>(h->data);
      if (!c->armed.exchange(false)) return;
      c->loop->check_inbox_before_sleep();
      // Another thread posts now, while the loop is awake by promise: no wake-up is sent.
      std::thread([c] { c->loop->post([c] { c->ran.set_value(); }); }).join();
    });
  });
  // Nothing else happens on this loop: the task runs only if the promise is kept.
  auto status = ran.wait_for(3s);
  on_loop([ctx] { uv_close(reinterpret_cast<uv_handle_t*>(&ctx->check), nullptr); });
  EXPECT_EQ(status, std::future_status::ready) << "the task posted under the promise never ran";
}

// A task keeps a small callable in place and a large one on the heap; both run once, are
// destroyed once, and an empty callable makes an empty task (lib/net/task.hpp).
TEST(TaskTest, SmallAndLargeCallablesRunOnceAndAreDestroyedOnce) {
  auto alive = std::make_shared<int>(0);
  int ran = 0;
  {
    Task small([alive, &ran] { ++ran; });
    struct Large {
      std::shared_ptr<int> alive;
      int* ran;
      char pad[Task::kInline];
      void operator()() { ++*ran; }
    };
    Task large(Large{alive, &ran, {}});
    EXPECT_EQ(alive.use_count(), 3);
    Task moved(std::move(large));
    Task assigned;
    assigned = std::move(small);
    EXPECT_FALSE(small);  // NOLINT(bugprone-use-after-move): what a move leaves
    EXPECT_FALSE(large);  // NOLINT(bugprone-use-after-move)
    ASSERT_TRUE(moved);
    ASSERT_TRUE(assigned);
    moved();
    assigned();
    EXPECT_EQ(ran, 2);
    EXPECT_EQ(alive.use_count(), 3);
  }
  EXPECT_EQ(alive.use_count(), 1);
  EXPECT_FALSE(Task(std::function<void()>()));
  EXPECT_FALSE(Task(nullptr));
  EXPECT_THROW(Task()(), std::bad_function_call);
  auto only_moves = std::make_unique<int>(7);
  int seen = 0;
  Task move_only([p = std::move(only_moves), &seen] { seen = *p; });
  move_only();
  EXPECT_EQ(seen, 7);
}

}  // namespace
}  // namespace redlock::detail
