// A result handed from the loop thread to the one caller blocked on it.
#pragma once

#include <semaphore.h>

#include <cerrno>
#include <optional>
#include <utility>

namespace redlock::detail {

// What a blocking call waits on: put() once (loop thread), take() once (caller). A semaphore
// costs one futex wake and one futex wait per call. std::promise costs a second wake (its
// set_value runs a std::call_once), and a condition variable a wake on the waiter's way out
// (strace of the uncontended benchmark, docs/performance.md).
template <typename T>
class Handoff {
 public:
  Handoff() { sem_init(&posted_, 0, 0); }
  ~Handoff() { sem_destroy(&posted_); }
  Handoff(const Handoff&) = delete;
  Handoff& operator=(const Handoff&) = delete;

  void put(T value) {
    value_.emplace(std::move(value));
    sem_post(&posted_);  // publishes value_ to the taker
  }

  T take() {
    while (sem_wait(&posted_) != 0 && errno == EINTR) {
    }
    return std::move(*value_);
  }

 private:
  sem_t posted_;
  std::optional<T> value_;
};

}  // namespace redlock::detail
