// How fast the simulated node runs the project's scripts: acquire + release pairs per second
// through EVALSHA (each script compiled once per node), printed, never asserted. The simulator
// wants thousands of seeds per second; this says what one node costs.
#include <chrono>
#include <cstdio>
#include <string>

#include "node.hpp"
#include "scripts.hpp"

int main() {
  using redlock::sim::kAcquire;
  using redlock::sim::kRelease;
  redlock::sim::RedisNode node;
  std::int64_t now = 1000;
  node.execute({"SCRIPT", "LOAD", std::string(kAcquire.body)}, now, 1);
  node.execute({"SCRIPT", "LOAD", std::string(kRelease.body)}, now, 1);
  const int pairs = 200000;
  auto start = std::chrono::steady_clock::now();
  long granted = 0;
  for (int i = 0; i < pairs; ++i) {
    std::string key = "lock" + std::to_string(i % 16);
    std::string token = "token" + std::to_string(i) + ".";
    auto a = node.execute({"EVALSHA", std::string(kAcquire.sha), "1", key, token, "30000", "0", "",
                           "0", "60000", "200"},
                          now, 1);
    if (!a.items.empty() && a.items[0].number == 1) ++granted;
    node.execute({"EVALSHA", std::string(kRelease.sha), "1", key, token}, now, 1);
    now += 1;
  }
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%d acquire+release pairs (%ld granted) in %.3f s: %.0f pairs/s\n", pairs, granted, s,
              pairs / s);
  // A seed of the simulator makes its nodes afresh: a node with the four scripts loaded.
  const int nodes = 2000;
  start = std::chrono::steady_clock::now();
  for (int i = 0; i < nodes; ++i) {
    redlock::sim::RedisNode fresh;
    for (const auto& script : redlock::sim::kScripts)
      fresh.execute({"SCRIPT", "LOAD", std::string(script.body)}, 0, 1);
  }
  s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%d nodes made with the four scripts loaded in %.3f s: %.0f nodes/s\n", nodes, s,
              nodes / s);
  return granted == pairs ? 0 : 1;
}
