// The suite's list of scenarios, and what the scenario files share.
#include "scenarios.hpp"

#include <unistd.h>

#include <algorithm>

#include "clock_skew.hpp"
#include "netfault.hpp"

namespace redlock::chaos {

void spawn_mix(Run& run, long duration_ms, long ttl_ms, bool run_lane) {
  WorkerSpec s;
  s.ttl = ttl_ms;
  s.duration = duration_ms;
  spawn_mix(run, s, run_lane);
}

void spawn_mix(Run& run, WorkerSpec s, bool run_lane) {
  auto plain = s.extra_args;
  auto fenced = s.extra_args;
  fenced.push_back("--fencing");
  s.mode = "explicit";
  run.spawn("explicit1", s);
  s.extra_args = fenced;
  run.spawn("explicit2", s);
  s.mode = "held";
  run.spawn("held", s);
  s.mode = "mutex";
  s.extra_args = plain;
  run.spawn("mutex", s);
  if (run_lane) {
    s.mode = "run";
    run.spawn("cli", s);
  }
}

void partition_rounds(Run& run, NetFault& net, long d,
                      const std::function<std::size_t(std::size_t round)>& cut) {
  using namespace std::chrono_literals;
  std::mt19937_64 rng(std::random_device{}());
  auto end = std::chrono::steady_clock::now() + Ms(d - 2500);
  run.sleep(500ms);
  for (std::size_t round = 0; std::chrono::steady_clock::now() < end; ++round) {
    auto order = shuffled(5, rng);
    order.resize(cut(round));
    std::string which;
    for (auto i : order) {
      net.drop_to_port(run.client_port(i));
      net.drop_from_port(run.client_port(i));
      which += " " + std::to_string(i);
    }
    run.event("partitioned nodes" + which);
    run.sleep(1000ms);
    net.heal_all();
    run.network_healed();
    run.sleep(Ms(400 + static_cast<long>(rng() % 300)));
  }
}

int pause_rounds(Run& run, long d, std::size_t k) {
  using namespace std::chrono_literals;
  std::mt19937_64 rng(std::random_device{}());
  auto end = std::chrono::steady_clock::now() + Ms(d - 1000);
  run.sleep(500ms);
  int rounds = 0;
  while (std::chrono::steady_clock::now() < end) {
    auto order = shuffled(5, rng);
    order.resize(k);
    for (auto i : order) run.pause(i);
    run.sleep(700ms);
    for (auto i : order) run.resume(i);
    ++rounds;
    run.sleep(Ms(400 + static_cast<long>(rng() % 300)));
  }
  return rounds;
}

int crash_restart_rounds(Run& run, long d, const std::function<void(std::size_t node)>& restarted) {
  using namespace std::chrono_literals;
  std::mt19937_64 rng(std::random_device{}());
  auto end = std::chrono::steady_clock::now() + Ms(d - 1500);
  run.sleep(500ms);
  int crashes = 0;
  while (std::chrono::steady_clock::now() < end) {
    auto order = shuffled(5, rng);
    order.resize(1 + rng() % 2);
    for (auto i : order) run.crash(i);
    crashes += static_cast<int>(order.size());
    run.sleep(Ms(200 + static_cast<long>(rng() % 400)));
    for (auto i : order) {
      run.restart(i);
      if (restarted) restarted(i);
    }
    run.sleep(Ms(300 + static_cast<long>(rng() % 400)));
  }
  return crashes;
}

void kill_control(Run& run, Control& c, const std::string& why) {
  c.child().kill_now();
  run.event(c.id() + " killed (SIGKILL) " + why);
}

Kills kill_holders(Run& run, const WorkerSpec& spec, long d, const std::string& ask,
                   const std::function<std::string(const std::string& reply)>& what) {
  using namespace std::chrono_literals;
  run.sleep(500ms);
  auto end = std::chrono::steady_clock::now() + Ms(d - 1500);
  Kills k;
  for (int n = 0; std::chrono::steady_clock::now() < end; ++n) {
    auto& c = run.control("victim" + std::to_string(n), spec);
    auto r = c.call(ask, 6s);
    if (granted(r)) {
      c.call("read");
      c.call("claim");
      kill_control(run, c, what(r));
      ++k.killed;
    } else {
      ++k.refused;
      c.send("quit");
    }
    run.sleep(1200ms);
  }
  return k;
}

std::vector<std::size_t> shuffled(std::size_t n, std::mt19937_64& rng) {
  std::vector<std::size_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = i;
  std::shuffle(v.begin(), v.end(), rng);
  return v;
}

bool tool_available(Tool tool, const Settings& settings, std::string& why) {
  switch (tool) {
    case Tool::fsync_nodes:
      // The runner starts its own nodes so. A deployment's must say so: an immediate restart of
      // a node that lost its last second of writes is the negative control, not a pass.
      for (std::size_t i = 0; i < settings.deployment.size(); ++i) {
        const auto& node = settings.deployment[i];
        if (node.tls) {
          why = "node " + std::to_string(i) + " speaks TLS only: its persistence is unknown here";
          return false;
        }
        auto aof = node_command(node, {"CONFIG", "GET", "appendonly"});
        auto fsync = node_command(node, {"CONFIG", "GET", "appendfsync"});
        if (aof != "appendonly\nyes" || fsync != "appendfsync\nalways") {
          why = "node " + std::to_string(i) + " does not say appendonly yes, appendfsync always (" +
                aof.substr(0, 60) + "; " + fsync.substr(0, 60) + ")";
          for (auto& c : why)
            if (c == '\n') c = ' ';
          return false;
        }
      }
      return true;
    case Tool::proxy:
      return true;
    case Tool::netns_nft:
      if (settings.on_deployment()) {
        why = "not on a deployment";
        return false;
      }
      if (!in_private_netns()) {
        why = "not in a private network namespace (run under unshare -n: chaos/run.sh does)";
        return false;
      }
      if (!nft_available()) {
        why = "nft is missing or unusable (Debian package nftables)";
        return false;
      }
      return true;
    case Tool::clock_shim:
      if (::access(ClockSkew::shim_library().c_str(), R_OK) != 0) {
        why = "the clock shim is not built (" + ClockSkew::shim_library() + ")";
        return false;
      }
      return true;
  }
  return false;
}

const std::vector<Scenario>& all_scenarios() {
  static const std::vector<Scenario> list = [] {
    std::vector<Scenario> v;
    add_process_scenarios(v);
    add_network_scenarios(v);
    add_clock_scenarios(v);
    add_permit_scenarios(v);
    add_election_scenarios(v);
    add_rwlock_scenarios(v);
    return v;
  }();
  return list;
}

}  // namespace redlock::chaos
