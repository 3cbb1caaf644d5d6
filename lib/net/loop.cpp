#include "loop.hpp"

#include <pthread.h>
#include <signal.h>

#include <string>

#include "../core/observe.hpp"

namespace redlock::detail {
namespace {

std::atomic<std::size_t> open_at_close{0};

void report_handle(uv_handle_t* handle, void* config) {
  std::string text = std::string("  open handle: ") + uv_handle_type_name(handle->type) +
                     (uv_is_active(handle) ? ", active" : "") +
                     (uv_is_closing(handle) ? ", closing" : "");
  log_message(static_cast<const Config*>(config), LogLevel::error, text);
}

}  // namespace

std::size_t loops_closed_with_open_handles() noexcept { return open_at_close.load(); }

EventLoop::EventLoop() {
  uv_loop_init(&loop_);  // loop_.data stays free: the transport layer keeps its write queue there
  uv_async_init(&loop_, &async_, &EventLoop::on_async);
  async_.data = this;
  uv_prepare_init(&loop_, &prepare_);
  prepare_.data = this;
  uv_check_init(&loop_, &check_);
  check_.data = this;
}

EventLoop::~EventLoop() {
  if (thread_.joinable()) stop(nullptr);
}

void EventLoop::start() {
  // The loop thread runs with every signal blocked, from its first instruction: it is created
  // with the mask set here, and the caller's mask is restored at once. Signals meant for the host
  // then go to the host's own threads, and a write to a socket whose peer closed (a crashed
  // node, `maxclients`) fails with EPIPE instead of raising SIGPIPE, which would kill a host that
  // keeps the default disposition. A SIGPIPE caused by our own write is thread-directed: it stays
  // pending on this thread, blocked, and is discarded when the thread ends.
  sigset_t all, caller;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &caller);
  thread_ = std::thread([this] {
    thread_id_ = std::this_thread::get_id();
    uv_run(&loop_, UV_RUN_DEFAULT);
  });
  pthread_sigmask(SIG_SETMASK, &caller, nullptr);
}

bool EventLoop::post(Task task) {
  // From the loop thread itself (a callback's next call), the loop is awake: it reads the inbox
  // before it sleeps, and needs no eventfd write and no extra poll to learn of the task.
  const bool here = in_loop_thread();
  bool wake;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (closed_) return false;
    inbox_.push_back(std::move(task));
    if (here) stay_awake_locked();
    wake = !awake_;
  }
  if (wake) uv_async_send(&async_);  // sends coalesce: drain() takes the whole inbox each time
  return true;
}

void EventLoop::check_inbox_before_sleep() {
  if (!in_loop_thread()) return;  // a result given on the caller's thread (the loop is gone)
  std::lock_guard<std::mutex> lock(mutex_);
  stay_awake_locked();
}

void EventLoop::stay_awake_locked() {
  if (awake_ || stopping_) return;
  awake_ = true;
  uv_check_start(&check_, &EventLoop::on_check);
  uv_prepare_start(&prepare_, &EventLoop::on_prepare);
}

void EventLoop::on_async(uv_async_t* handle) { static_cast<EventLoop*>(handle->data)->drain(); }

// While the loop is awake by promise, posts do not wake it. The inbox is read once after this
// turn's I/O (check): what those tasks write then leaves at the next turn's start, with no extra
// poll. Just before the loop polls (prepare), the promise ends under the lock that posts take,
// and what came in since the check (or during it: a promise made in the check phase is kept
// here alone) is left to the ordinary wake-up. One batch a turn, as before: tasks that post
// tasks cannot keep the loop from its I/O and timers.
void EventLoop::on_check(uv_check_t* handle) {
  auto* self = static_cast<EventLoop*>(handle->data);
  bool any;
  {
    std::lock_guard<std::mutex> lock(self->mutex_);
    any = !self->inbox_.empty();
  }
  if (any) self->drain();
}

void EventLoop::on_prepare(uv_prepare_t* handle) {
  auto* self = static_cast<EventLoop*>(handle->data);
  bool left;
  {
    std::lock_guard<std::mutex> lock(self->mutex_);
    self->awake_ = false;
    left = !self->inbox_.empty();
  }
  if (self->stopping_) return;  // drain() closed the handles
  uv_check_stop(&self->check_);
  uv_prepare_stop(&self->prepare_);
  if (left) uv_async_send(&self->async_);  // the poll returns at once and drains it
}

void EventLoop::drain() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    running_.swap(inbox_);
  }
  for (auto& task : running_) task();
  running_.clear();
  if (stopping_) return;
  bool stop_now;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_now = closed_ && inbox_.empty();
  }
  if (stop_now) {
    stopping_ = true;
    if (last_) last_();
    close_handles();
  }
}

void EventLoop::close_handles() {
  uv_close(reinterpret_cast<uv_handle_t*>(&async_), nullptr);
  uv_close(reinterpret_cast<uv_handle_t*>(&prepare_), nullptr);
  uv_close(reinterpret_cast<uv_handle_t*>(&check_), nullptr);
}

int EventLoop::stop(Task last) {
  if (!thread_.joinable()) {
    // Never started: close what the constructor opened and let the close callbacks run.
    if (last) last();
    close_handles();
    uv_run(&loop_, UV_RUN_DEFAULT);
    return close_loop();
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    last_ = std::move(last);  // read by the loop thread only after it sees closed_
    closed_ = true;
  }
  uv_async_send(&async_);
  thread_.join();
  return close_loop();
}

int EventLoop::close_loop() {
  int rc = uv_loop_close(&loop_);
  if (rc != 0) {
    // A handle outlived the loop's owner: name each one, so the leak can be found.
    log_message(log_config_, LogLevel::error,
                std::string("event loop closed with open handles (") + uv_strerror(rc) + ")");
    uv_walk(&loop_, report_handle, const_cast<Config*>(log_config_));
    open_at_close.fetch_add(1);
  }
  return rc;
}

}  // namespace redlock::detail
