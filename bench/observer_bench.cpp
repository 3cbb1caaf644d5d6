// What an observer costs per lock (docs/observability.md#cost). Two kinds of figures:
//  - micro: the emission path alone, as lib/net runs it for one acquire and one release (the
//    events of a lock), with no observer, an empty one, and redlock::prometheus's; and one
//    prometheus-cpp histogram Observe for scale. No server.
//  - locks: acquire + release against three real local Redis masters (started here, stopped at
//    exit), without an observer and with redlock::prometheus's. On a shared machine the
//    difference is within the noise; the micro figures say what it is.
//   cmake -DREDLOCK_BUILD_BENCH=ON ...; ninja redlock_observer_bench; ./redlock_observer_bench
#include <benchmark/benchmark.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <memory>
#include <string>
#include <vector>

#include "redis_server.hpp"
#include "redlock/prometheus.hpp"
#include "redlock/redlock.hpp"

namespace {

using namespace std::chrono_literals;

// The gate of lib/core/observe.hpp (internal, not exported), as it is inlined at every emission
// point: a null check, then the event built and delivered under a catch-all.
template <typename Emit>
inline void observe(const redlock::Config& config, Emit&& emit) noexcept {
  redlock::Observer* observer = config.observer.get();
  if (observer == nullptr) return;
  try {
    emit(*observer);
  } catch (...) {
  }
}

// The two events of a lock (its acquire, its release), built and delivered as
// Coordinator::notify_operation does.
struct LockEvents {
  std::vector<std::string> resources{"bench"};
  redlock::Votes votes;
  redlock::Clock::time_point started = redlock::Clock::now();
  LockEvents() {
    votes.quorum = 2;
    votes.addresses = std::make_shared<std::vector<std::string>>(
        std::vector<std::string>{"127.0.0.1:7001", "127.0.0.1:7002", "127.0.0.1:7003"});
    votes.nodes.resize(3);
    for (auto& n : votes.nodes) n.vote = redlock::Vote::yes;
  }
  void emit(const redlock::Config& config) {
    for (auto op : {redlock::Operation::acquire, redlock::Operation::release}) {
      observe(config, [&](redlock::Observer& o) {
        redlock::OperationEvent e;
        e.operation = op;
        e.resources = &resources;
        e.votes = &votes;
        e.latency =
            std::chrono::duration_cast<std::chrono::microseconds>(redlock::Clock::now() - started);
        o.on_operation(e);
      });
    }
  }
};

void run_events(benchmark::State& state, const redlock::Config& config) {
  LockEvents events;
  for (auto _ : state) {
    events.emit(config);
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations());  // items: locks (two events each)
}

void BM_Events_NoObserver(benchmark::State& state) {
  redlock::Config config;
  run_events(state, config);
}
BENCHMARK(BM_Events_NoObserver);

void BM_Events_EmptyObserver(benchmark::State& state) {
  redlock::Config config;
  config.observer = std::make_shared<redlock::Observer>();
  run_events(state, config);
}
BENCHMARK(BM_Events_EmptyObserver);

void BM_Events_PrometheusObserver(benchmark::State& state) {
  redlock::Config config;
  config.observer = std::make_shared<redlock::prometheus::MetricsObserver>(
      std::make_shared<prometheus::Registry>());
  run_events(state, config);
}
BENCHMARK(BM_Events_PrometheusObserver);

// For scale: one observation of a prometheus-cpp histogram with the observer's 16 buckets.
void BM_PrometheusHistogramObserve(benchmark::State& state) {
  prometheus::Histogram h({0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                           0.25, 0.5, 1, 2.5, 5, 10});
  double v = 0.0003;
  for (auto _ : state) {
    h.Observe(v);
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_PrometheusHistogramObserve);

struct Nodes {
  redlock::test::RedisCluster cluster{3};
};

Nodes& nodes() {
  static Nodes n;
  return n;
}

void run_locks(benchmark::State& state, bool observed) {
  auto config = redlock::Config::from_node_list(nodes().cluster.node_list());
  config.on_warning = [](const std::string&) {};  // the bench's servers have no persistence
  if (observed)
    config.observer = std::make_shared<redlock::prometheus::MetricsObserver>(
        std::make_shared<prometheus::Registry>());
  redlock::Client client(config);
  (void)client.try_acquire("warmup", 1000ms);
  for (auto _ : state) {
    auto r = client.try_acquire("bench-observer", 10s);
    if (!r) state.SkipWithError(r.message().c_str());
    (void)client.release(r.lock);
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_Locks_NoObserver(benchmark::State& state) { run_locks(state, false); }
void BM_Locks_PrometheusObserver(benchmark::State& state) { run_locks(state, true); }
BENCHMARK(BM_Locks_NoObserver)->UseRealTime()->MinTime(2.0);
BENCHMARK(BM_Locks_PrometheusObserver)->UseRealTime()->MinTime(2.0);

}  // namespace

BENCHMARK_MAIN();
