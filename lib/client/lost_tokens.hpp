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
#include <vector>

#include "../core/observe.hpp"
#include "redlock/config.hpp"
#include "redlock/lock.hpp"

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

// An extend or a release (begun at `started`) found that a quorum no longer holds the lock with
// `token`: it was lost, and nothing may have said so (a lock of acquire() has no watchdog).
// Reported to the observer once per token (`tokens`), as released after its expiry when the
// call began past its validity, else as its keys gone.
inline void report_found_lost(const Config& config, LostTokens& tokens, const std::string& token,
                              Clock::time_point valid_until, Clock::time_point started,
                              const std::vector<std::string>& resources, int permit) {
  if (!config.observer || token.empty() || !tokens.first(token)) return;
  const bool late = valid_until != Clock::time_point{} && started >= valid_until;
  observe(config, [&](Observer& o) {
    LostEvent e;
    e.reason = late ? LostReason::released_after_expiry : LostReason::keys_gone;
    e.error = make_error_code(Errc::lock_lost);
    e.resources = &resources;
    e.permit = permit;
    o.on_lost(e);
  });
}

}  // namespace redlock::detail
