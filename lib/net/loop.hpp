// The libuv loop thread owned by a Client, and the one way into it from other threads.
#pragma once

#include <uv.h>

#include <atomic>
#include <cstddef>
#include <mutex>
#include <thread>
#include <vector>

#include "task.hpp"

namespace redlock {
struct Config;
}

namespace redlock::detail {

// How many loops of this process have closed with a handle still open (uv_loop_close() != 0),
// each reported on stderr with the handles left. A lifetime bug: tests assert it stays 0.
std::size_t loops_closed_with_open_handles() noexcept;

class EventLoop {
 public:
  // A move-only callable; one of up to Task::kInline bytes is kept without an allocation.
  using Task = ::redlock::detail::Task;

  EventLoop();   // initialises the loop; no thread yet, so handles may be set up from here
  ~EventLoop();  // stop() must have been called

  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  uv_loop_t* get() noexcept { return &loop_; }
  // Where close_loop() reports a leaked handle (Config::log); null: standard error.
  void set_log_config(const Config* config) noexcept { log_config_ = config; }
  void start();
  // Queues a task for the loop thread; false (task dropped) once stop() has begun.
  bool post(Task task);
  // On the loop thread (elsewhere a no-op): promises that this loop turn ends by reading the
  // mailbox before the loop sleeps again, so a post() from now on need not wake it. For a result
  // handed to a blocked caller, which often posts its next call at once: it then costs no eventfd
  // write, and the loop no extra turn to read it.
  void check_inbox_before_sleep();
  bool in_loop_thread() const noexcept { return std::this_thread::get_id() == thread_id_; }
  // Runs `last` on the loop (it must close every handle it owns), closes the mailbox, joins
  // the thread and closes the loop. Returns uv_loop_close()'s result: 0 unless a handle leaked
  // (then each open handle is reported on stderr and counted).
  int stop(Task last);

 private:
  int close_loop();
  static void on_async(uv_async_t* handle);
  static void on_prepare(uv_prepare_t* handle);
  static void on_check(uv_check_t* handle);
  void close_handles();
  void stay_awake_locked();  // loop thread, mutex_ held
  void drain();

  const Config* log_config_ = nullptr;
  uv_loop_t loop_{};
  uv_async_t async_{};
  // Started while awake_: read the mailbox after this turn's I/O and before the next poll.
  uv_prepare_t prepare_{};
  uv_check_t check_{};
  std::thread thread_;
  std::atomic<std::thread::id> thread_id_{};
  std::mutex mutex_;
  std::vector<Task> inbox_;  // guarded by mutex_
  std::vector<Task> running_;
  bool closed_ = false;  // guarded by mutex_
  bool awake_ = false;   // guarded by mutex_: the loop reads the inbox before it next sleeps
  Task last_;
  bool stopping_ = false;  // loop thread only
};

}  // namespace redlock::detail
