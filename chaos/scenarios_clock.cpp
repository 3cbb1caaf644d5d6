// Clock faults on the nodes through the clock shim (Redis 7.0 expires keys by its wall clock):
// rate x2 and forward jumps on a majority (negative controls), drift within the drift factor
// (safe).
#include <chrono>
#include <memory>

#include "clock_skew.hpp"
#include "scenarios.hpp"

namespace redlock::chaos {
namespace {

using namespace std::chrono_literals;

using Skews = std::vector<std::unique_ptr<ClockSkew>>;

// Five nodes, each under the shim with its own control file, clocks true for now.
Skews start_skewed_nodes(Run& run) {
  Skews skews;
  std::vector<std::vector<std::string>> env;
  for (std::size_t i = 0; i < 5; ++i) {
    skews.push_back(
        std::make_unique<ClockSkew>(run.dir() + "/node" + std::to_string(i) + ".clock"));
    env.push_back(skews.back()->env());
  }
  run.start_nodes(5, false, env);
  return skews;
}

// A holds a 4 s lock on all five nodes; then the clocks of nodes 0-2 run twice as fast (their
// keys expire after ~2 s) or jump a minute ahead (they expire at once). B gets those three while
// A's window is open: outside the assumptions, and the checker must catch it.
void clock_majority(Run& run, bool jump) {
  auto skews = start_skewed_nodes(run);
  WorkerSpec spec;
  spec.ttl = 4000;
  auto& a = run.control("A", spec);
  auto& b = run.control("B", spec);
  run.sleep(300ms);
  auto ra = a.call("acquire 4000 0");
  run.check(granted(ra), "A acquires: " + ra);
  if (!granted(ra)) return;
  a.call("read");
  for (std::size_t i : {0, 1, 2}) {
    if (jump)
      skews[i]->jump(60s);
    else
      skews[i]->set_rate(2.0);
  }
  run.event(jump ? "clocks of nodes 0-2 jump 60 s ahead" : "clocks of nodes 0-2 run at x2");
  auto rb = b.call("acquire 4000 3500", 6s);
  run.check(granted(rb), "B acquires while A's window is open: " + rb);
  if (granted(rb))
    for (const char* c : {"read", "write", "end", "release"}) b.call(c);
  for (const char* c : {"write", "end", "release"}) a.call(c);  // A's write is stale
}

// Clocks of nodes 0-2 run 0.8 % fast, those of 3 and 4 0.8 % slow: within the 1 % drift factor.
// Two workers hold every lock to the very end of its validity window (acting 50 ms before it),
// so the next holder gets in as early as the fast clocks allow; two others take short turns.
void drift_within_factor(Run& run) {
  auto skews = start_skewed_nodes(run);
  for (std::size_t i = 0; i < 5; ++i) skews[i]->set_rate(i < 3 ? 1.008 : 0.992);
  run.event("clocks of nodes 0-2 at x1.008, of 3-4 at x0.992");
  long d = run.phase(10000, 20000);
  WorkerSpec s;
  s.ttl = 500;
  s.duration = d;
  s.until_deadline = true;
  run.spawn("edge1", s);
  run.spawn("edge2", s);
  s.until_deadline = false;
  run.spawn("explicit", s);
  s.mode = "mutex";
  run.spawn("mutex", s);
  run.allow_actual("holders run to their deadline by design: actual ends lag it by scheduling");
  run.sleep(Ms(d));
}

}  // namespace

void add_clock_scenarios(std::vector<Scenario>& out) {
  out.push_back({"clock_x2_majority",
                 Expect::caught,
                 true,
                 {Tool::clock_shim},
                 "clocks of 3 of 5 nodes run at x2 under a held lock (negative control)",
                 [](Run& r) { clock_majority(r, false); }});
  out.push_back({"clock_jump_majority",
                 Expect::caught,
                 false,
                 {Tool::clock_shim},
                 "clocks of 3 of 5 nodes jump 60 s ahead under a held lock (negative control)",
                 [](Run& r) { clock_majority(r, true); }});
  out.push_back({"clock_drift_within",
                 Expect::safe,
                 false,
                 {Tool::clock_shim},
                 "node clocks 0.8% fast or slow (drift factor 1%), holders to the deadline",
                 drift_within_factor});
}

}  // namespace redlock::chaos
