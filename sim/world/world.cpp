// A run (docs/simulation.md): the event queue ordered by (true time, sequence), drained until the
// end of the scenario or the event budget, then the final checks; and the public entry points.

#include "world_impl.hpp"

namespace redlock::sim::internal {

RunResult World::run() {
  draw_scenario();
  if (opt_.control == Control::none)
    schedule_faults();
  else
    at(rng_.range(100 * kMs, active_end_ / 2), [this] { trigger_control(); });
  for (std::size_t c = 0; c < clients_.size(); ++c) {
    int ci = static_cast<int>(c);
    client_at(ci, rng_.range(0, 50 * kMs), [this, ci] { start_op(ci); });
  }
  at(25 * kMs, [this] { liveness_probe(); });
  // Bounded: by simulated time and by events.
  const std::uint64_t max_events = 300000;
  while (!queue_.empty() && events_ < max_events) {
    Event e = std::move(const_cast<Event&>(queue_.top()));
    queue_.pop();
    if (e.t > end_) break;
    now_ = e.t;
    ++events_;
    e.fn();
  }
  if (events_ >= max_events) violation("event budget exhausted (a livelock?)");
  now_ = end_;
  final_checks();
  RunResult r;
  r.seed = opt_.seed;
  r.events = events_;
  r.scripts = scripts_;
  r.violations = violations_;
  r.summary = summary_;
  r.enabled.assign(enabled_.begin(), enabled_.end());
  if (opt_.trace) {
    r.trace_hash = trace_hash(trace_);
    r.trace = std::move(trace_);
  }
  return r;
}

}  // namespace redlock::sim::internal

namespace redlock::sim {

const std::vector<std::string>& fault_kinds() { return internal::kFaultKinds; }

RunResult run_seed(const RunOptions& options) {
  internal::World w(options);
  return w.run();
}

}  // namespace redlock::sim
