// Acquire + release against five real local Redis masters (started here, stopped at exit).
//   tools/bench.sh            (or build with -DREDLOCK_BUILD_BENCH=ON and run redlock_bench)
// Compare with shared/peerbench: the wire-level floor and node-redlock on the same machine.
#include <benchmark/benchmark.h>

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>

#include "redis_server.hpp"
#include "redlock/redlock.hpp"

namespace {

using namespace std::chrono_literals;

struct Nodes {
  redlock::test::RedisCluster cluster{5};
  std::unique_ptr<redlock::Client> client;
  Nodes() {
    auto c = redlock::Config::from_node_list(cluster.node_list());
    client = std::make_unique<redlock::Client>(c);
    (void)client->try_acquire("warmup", 1000ms);
  }
};

Nodes& nodes() {
  static Nodes n;
  return n;
}

// One caller thread, blocking API: what a service thread sees per lock.
void BM_AcquireRelease_Blocking(benchmark::State& state) {
  auto& client = *nodes().client;
  for (auto _ : state) {
    auto r = client.try_acquire("bench-blocking", 10s);
    if (!r) state.SkipWithError(r.message().c_str());
    (void)client.release(r.lock);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_AcquireRelease_Blocking)->UseRealTime()->MinTime(2.0);

// K independent resources, each cycled acquire -> release -> acquire in callbacks on the loop:
// the library's throughput without any caller-thread hand-off.
void BM_AcquireRelease_Async(benchmark::State& state) {
  auto& client = *nodes().client;
  const int in_flight = static_cast<int>(state.range(0));
  for (auto _ : state) {
    const int total = 20000;
    std::atomic<int> started{0}, finished{0};
    std::mutex m;
    std::condition_variable cv;
    std::function<void(int)> cycle = [&](int slot) {
      if (started.fetch_add(1) >= total) {
        if (finished.fetch_add(1) + 1 == in_flight) cv.notify_one();
        return;
      }
      redlock::AcquireRequest req({"bench-async-" + std::to_string(slot)}, 10s, 0ms);
      client.acquire_async(req, [&, slot](redlock::AcquireResult r) {
        client.release_async(r.lock, [&, slot](redlock::ReleaseResult) { cycle(slot); });
      });
    };
    for (int s = 0; s < in_flight; ++s) cycle(s);
    std::unique_lock<std::mutex> lock(m);
    cv.wait(lock, [&] { return finished.load() == in_flight; });
    state.SetItemsProcessed(state.items_processed() + total);
  }
}
BENCHMARK(BM_AcquireRelease_Async)->Arg(1)->Arg(64)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
