// redlock::prometheus::MetricsObserver: the events of redlock/observer.hpp as Prometheus
// metrics. Called on the loop thread of each client it observes; metrics are prometheus-cpp's
// (atomic), and the lazily made ones are published through atomics, so no lock is taken on the
// paths every lock goes through.
#include "redlock/prometheus.hpp"

#include <chrono>

#include "redlock/errors.hpp"

namespace redlock::prometheus {
namespace {

using ::prometheus::BuildCounter;
using ::prometheus::BuildGauge;
using ::prometheus::BuildHistogram;
using ::prometheus::Counter;
using ::prometheus::Gauge;
using ::prometheus::Histogram;

// 100 µs (a local round trip) to 10 s (a long wait).
std::vector<double> default_buckets() {
  return {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
          0.05,   0.1,     0.25,   0.5,   1,      2.5,   5,    10};
}

double seconds(std::chrono::microseconds d) { return static_cast<double>(d.count()) / 1e6; }

// The value of a `result` or `error` label: "ok", an Errc's name, or the code's own message
// for another category (the library gives Errc only).
std::string label_of(const std::error_code& error) {
  if (!error) return "ok";
  if (error.category() == error_category()) return errc_name(static_cast<Errc>(error.value()));
  return error.category().name() + std::string(":") + std::to_string(error.value());
}

}  // namespace

template <typename T>
template <typename... Args>
T& MetricsObserver::ByResult<T>::get(const std::error_code& error, Args&&... args) {
  std::size_t slot = kSlots;
  if (!error)
    slot = 0;
  else if (error.category() == error_category() && error.value() > 0 &&
           static_cast<std::size_t>(error.value()) < kSlots)
    slot = static_cast<std::size_t>(error.value());
  if (slot == kSlots) return family_.Add({{"result", label_of(error)}}, args...);
  T* metric = slots_[slot].load(std::memory_order_acquire);
  if (metric == nullptr) {
    // Family::Add returns the metric already there for the same labels: two threads racing
    // here store the same pointer.
    metric = &family_.Add({{"result", label_of(error)}}, args...);
    slots_[slot].store(metric, std::memory_order_release);
  }
  return *metric;
}

MetricsObserver::MetricsObserver(std::shared_ptr<::prometheus::Registry> registry,
                                 MetricsOptions options)
    : registry_(std::move(registry)),
      buckets_(options.duration_buckets.empty() ? default_buckets()
                                                : std::move(options.duration_buckets)),
      acquire_family_(BuildHistogram()
                          .Name("redlock_acquire_duration_seconds")
                          .Help("Acquires by result: from the call to its result, every attempt "
                                "and wait included")
                          .Labels(options.const_labels)
                          .Register(*registry_)),
      attempts_family_(BuildCounter()
                           .Name("redlock_acquire_attempts_total")
                           .Help("Attempts made by acquires (retries and split-vote rounds "
                                 "included)")
                           .Labels(options.const_labels)
                           .Register(*registry_)),
      extend_family_(BuildCounter()
                         .Name("redlock_extends_total")
                         .Help("Extends by result")
                         .Labels(options.const_labels)
                         .Register(*registry_)),
      release_family_(BuildCounter()
                          .Name("redlock_releases_total")
                          .Help("Releases by result")
                          .Labels(options.const_labels)
                          .Register(*registry_)),
      renew_family_(BuildCounter()
                        .Name("redlock_renewals_total")
                        .Help("Watchdog renewals of held locks by result")
                        .Labels(options.const_labels)
                        .Register(*registry_)),
      lost_family_(BuildCounter()
                       .Name("redlock_lock_lost_total")
                       .Help("Held locks lost, by reason (expired, not_held, shutting_down)")
                       .Labels(options.const_labels)
                       .Register(*registry_)),
      node_errors_family_(BuildCounter()
                              .Name("redlock_node_errors_total")
                              .Help("Errors with a node: failed connections and refusals, and "
                                    "requests that failed")
                              .Labels(options.const_labels)
                              .Register(*registry_)),
      node_up_family_(BuildGauge()
                          .Name("redlock_node_up")
                          .Help("1 while the node's voting connection is in session, else 0")
                          .Labels(options.const_labels)
                          .Register(*registry_)),
      held_family_(BuildGauge()
                       .Name("redlock_held_locks")
                       .Help("Locks held under the watchdog (hold(), Mutex)")
                       .Labels(options.const_labels)
                       .Register(*registry_)),
      waiters_family_(BuildGauge()
                          .Name("redlock_waiters")
                          .Help("Acquires waiting for a release")
                          .Labels(options.const_labels)
                          .Register(*registry_)),
      wait_family_(BuildHistogram()
                       .Name("redlock_wait_duration_seconds")
                       .Help("Waits for a release, by the acquire's result")
                       .Labels(options.const_labels)
                       .Register(*registry_)),
      acquire_(acquire_family_),
      extend_(extend_family_),
      release_(release_family_),
      renew_(renew_family_),
      wait_(wait_family_),
      attempts_(attempts_family_.Add({})),
      held_(held_family_.Add({})),
      waiters_(waiters_family_.Add({})) {
  lost_[static_cast<std::size_t>(LostReason::expired)] = &lost_family_.Add({{"reason", "expired"}});
  lost_[static_cast<std::size_t>(LostReason::not_held)] =
      &lost_family_.Add({{"reason", "not_held"}});
  lost_[static_cast<std::size_t>(LostReason::shutting_down)] =
      &lost_family_.Add({{"reason", "shutting_down"}});
  // The series an alert or a dashboard reads exist from the start, at zero.
  acquire_.get({}, buckets_);
  acquire_.get(make_error_code(Errc::not_acquired), buckets_);
}

MetricsObserver::~MetricsObserver() = default;

void MetricsObserver::on_operation(const OperationEvent& event) {
  switch (event.operation) {
    case Operation::acquire:
      acquire_.get(event.error, buckets_).Observe(seconds(event.latency));
      attempts_.Increment(event.attempts > 0 ? event.attempts : 0);
      break;
    case Operation::extend:
      extend_.get(event.error).Increment();
      break;
    case Operation::release:
      release_.get(event.error).Increment();
      break;
    case Operation::renew:
      renew_.get(event.error).Increment();
      break;
  }
  if (event.votes == nullptr) return;
  const auto& votes = *event.votes;
  for (std::size_t i = 0; i < votes.nodes.size(); ++i) {
    const auto& v = votes.nodes[i];
    if (v.vote == Vote::failed && v.error)
      node_errors(votes.address(i), label_of(v.error)).Increment();
  }
}

void MetricsObserver::on_lost(const LostEvent& event) {
  auto i = static_cast<std::size_t>(event.reason);
  if (i < lost_.size()) lost_[i]->Increment();
}

void MetricsObserver::on_wait(const WaitEvent& event) {
  if (event.phase == WaitPhase::started) {
    waiters_.Increment();
  } else {
    waiters_.Decrement();
    wait_.get(event.error, buckets_).Observe(seconds(event.waited));
  }
}

void MetricsObserver::on_node(const NodeEvent& event) {
  if (event.address == nullptr) return;
  // The connection that listens for release notices does not vote: its state is not the node's.
  if (!event.subscriber)
    node_up(*event.address).Set(event.state == NodeState::connected ? 1.0 : 0.0);
  if (event.error) node_errors(*event.address, label_of(event.error)).Increment();
}

void MetricsObserver::on_held(std::size_t held) { held_.Set(static_cast<double>(held)); }

Counter& MetricsObserver::node_errors(const std::string& node, const std::string& error) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto key = std::make_pair(node, error);
  auto it = node_errors_.find(key);
  if (it == node_errors_.end())
    it = node_errors_.emplace(key, &node_errors_family_.Add({{"node", node}, {"error", error}}))
             .first;
  return *it->second;
}

Gauge& MetricsObserver::node_up(const std::string& node) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = node_up_.find(node);
  if (it == node_up_.end())
    it = node_up_.emplace(node, &node_up_family_.Add({{"node", node}})).first;
  return *it->second;
}

}  // namespace redlock::prometheus
