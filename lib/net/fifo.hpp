// A first-in, first-out queue that keeps its storage: once warm, pushing and popping allocate
// nothing (std::deque allocates and frees a block every few elements). For the requests that
// wait for their replies on a connection. Not thread-safe.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace redlock::detail {

template <typename T>
class Fifo {
 public:
  using iterator = typename std::vector<T>::iterator;

  bool empty() const noexcept { return head_ == items_.size(); }
  std::size_t size() const noexcept { return items_.size() - head_; }
  T& front() noexcept { return items_[head_]; }
  iterator begin() noexcept { return items_.begin() + static_cast<std::ptrdiff_t>(head_); }
  iterator end() noexcept { return items_.end(); }

  void push_back(const T& item) {
    // Reuse the room before the head once it is at least half of the storage: amortised O(1).
    if (head_ > 0 && head_ * 2 >= items_.size()) {
      items_.erase(items_.begin(), begin());
      head_ = 0;
    }
    items_.push_back(item);
  }
  void pop_front() noexcept {
    if (++head_ == items_.size()) clear();
  }
  void clear() noexcept {
    items_.clear();  // keeps the capacity
    head_ = 0;
  }
  template <typename Pred>
  void remove_if(Pred pred) {
    items_.erase(std::remove_if(begin(), end(), pred), items_.end());
    if (head_ == items_.size()) clear();
  }

 private:
  std::vector<T> items_;
  std::size_t head_ = 0;
};

}  // namespace redlock::detail
