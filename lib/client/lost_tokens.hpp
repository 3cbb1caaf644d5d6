// The tokens whose loss was reported to Config::observer, shared by the client's two paths: the
// loop thread (Coordinator::found_lost, the watchdog) and the caller's lane (Lane::found_lost).
// A lock's loss is reported once, whichever path finds it first: an extend on the lane that
// finds the keys gone and a later release on the loop (or the other way round) tell one
// LostEvent between them. The latest `kept` tokens are remembered. Any thread.
#pragma once

#include <cstddef>
#include <deque>
#include <mutex>
#include <string>
#include <unordered_set>

namespace redlock::detail {

class LostTokens {
 public:
  static constexpr std::size_t kept = 4096;

  // True the first time `token` is given (it is remembered from then on); false after.
  bool first(const std::string& token) {
    std::lock_guard<std::mutex> guard(mutex_);
    if (!tokens_.insert(token).second) return false;
    order_.push_back(token);
    if (order_.size() > kept) {
      tokens_.erase(order_.front());
      order_.pop_front();
    }
    return true;
  }

 private:
  std::mutex mutex_;
  std::unordered_set<std::string> tokens_;
  std::deque<std::string> order_;
};

}  // namespace redlock::detail
