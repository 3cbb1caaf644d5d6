// The held locks of a client as its handles see them (Lease: read from any thread), watched by
// the protocol core's WatchdogMachine (proto/watchdog.hpp), which decides every renewal and the
// lost-lock deadline. This keeps the leases by the machine's ids, carries the machine's verdicts
// into them (a later deadline; the lost signal and its callback) and tells Config::observer.
// Passive: the coordinator brings it the machine's events and carries out the actions it
// writes. Loop thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <unordered_map>

#include "../proto/watchdog.hpp"
#include "lease.hpp"
#include "lost_tokens.hpp"

namespace redlock::detail {

class Watchdog {
 public:
  // `lost`: the tokens whose loss was reported, shared with found_lost and the lane.
  Watchdog(proto::Context& context, const Config& config, LostTokens& lost);

  // Starts watching: renewals (when lease->renew) and the validity deadline.
  void add(const std::shared_ptr<Lease>& lease, Clock::time_point now, proto::Actions& out);
  // Stops watching without a lost signal (the lock is being released).
  void remove(const std::shared_ptr<Lease>& lease, Clock::time_point now, proto::Actions& out);
  // Every watched lock is lost with Errc::shutting_down: nobody renews it any more.
  void shutdown(Clock::time_point now, proto::Actions& out);
  // The machine, for its timer and its replies.
  proto::WatchdogMachine& machine() noexcept { return machine_; }
  std::size_t size() const noexcept { return leases_.size(); }

  // The machine's verdicts.
  void renewed(const proto::Renewed& renewed);
  void renew_decided(const proto::RenewDecided& news);
  void lost(const proto::Lost& lost);

 private:
  proto::Context& context_;
  const Config& config_;
  LostTokens& lost_tokens_;
  proto::WatchdogMachine machine_;
  std::unordered_map<std::uint64_t, std::shared_ptr<Lease>> leases_;  // by Lease::id
};

}  // namespace redlock::detail
