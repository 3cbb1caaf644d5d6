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

// The reasons a node is refused that redlock_node_refused follows, each a series from the
// node's first event: the "alert at once" cases of docs/operations.md. A refusal for another
// reason gets its series when it happens.
constexpr Errc kRefusals[] = {Errc::node_not_master,   Errc::duplicate_node,
                              Errc::redis_auth_failed, Errc::redis_noauth,
                              Errc::redis_noperm,      Errc::tls_handshake_failed,
                              Errc::tls_unknown_ca,    Errc::tls_name_mismatch,
                              Errc::tls_cert_expired,  Errc::tls_client_cert_required};

// The errors a node's request can fail with that docs/operations.md says to alert on at once:
// a redlock_node_errors_total series each, at zero from the node's first event.
constexpr Errc kAlertedErrors[] = {Errc::redis_oom, Errc::redis_readonly, Errc::redis_noperm,
                                   Errc::redis_masterdown, Errc::redis_noauth};

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
      lost_family_(
          BuildCounter()
              .Name("redlock_lock_lost_total")
              .Help("Locks lost, by reason (expired, not_held, released_after_expiry, keys_gone, "
                    "shutting_down)")
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
      node_refused_family_(BuildGauge()
                               .Name("redlock_node_refused")
                               .Help("1 while the node may not vote, by reason (a replica, "
                                     "listed twice, authentication, permissions, TLS), else 0")
                               .Labels(options.const_labels)
                               .Register(*registry_)),
      node_persistence_family_(BuildGauge()
                                   .Name("redlock_node_persistence_forgets")
                                   .Help("1 when the node's last handshake found persistence "
                                         "that can forget a lock (AOF off, appendfsync not "
                                         "always), else 0")
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
      permit_family_(BuildCounter()
                         .Name("redlock_permit_acquires_total")
                         .Help("Acquires of a permit of a semaphore, by result (also counted in "
                               "redlock_acquire_duration_seconds)")
                         .Labels(options.const_labels)
                         .Register(*registry_)),
      shared_family_(BuildCounter()
                         .Name("redlock_shared_acquires_total")
                         .Help("Acquires of a reader's share of a read-write lock, by result "
                               "(also counted in redlock_acquire_duration_seconds)")
                         .Labels(options.const_labels)
                         .Register(*registry_)),
      election_family_(BuildCounter()
                           .Name("redlock_elections_total")
                           .Help("Campaigns for an office (Election::campaign), by result")
                           .Labels(options.const_labels)
                           .Register(*registry_)),
      term_family_(BuildGauge()
                       .Name("redlock_election_term")
                       .Help("The term of the latest office this client was elected to")
                       .Labels(options.const_labels)
                       .Register(*registry_)),
      acquire_(acquire_family_),
      extend_(extend_family_),
      release_(release_family_),
      renew_(renew_family_),
      wait_(wait_family_),
      permit_(permit_family_),
      shared_(shared_family_),
      election_(election_family_),
      attempts_(attempts_family_.Add({})),
      held_(held_family_.Add({})),
      waiters_(waiters_family_.Add({})),
      term_(term_family_.Add({})) {
  // The series an alert or a dashboard reads exist from the start, at zero: increase() sees the
  // first event only if the series was scraped before it.
  for (auto reason : {LostReason::expired, LostReason::not_held, LostReason::shutting_down,
                      LostReason::released_after_expiry, LostReason::keys_gone})
    lost_[static_cast<std::size_t>(reason)] = &lost_family_.Add({{"reason", to_string(reason)}});
  acquire_.get({}, buckets_);
  acquire_.get(make_error_code(Errc::not_acquired), buckets_);
  acquire_.get(make_error_code(Errc::no_quorum), buckets_);
  for (auto result : {Errc::ok_, Errc::not_acquired, Errc::no_quorum, Errc::permits_mismatch})
    permit_.get(make_error_code(result));
  for (auto result : {Errc::ok_, Errc::not_acquired, Errc::no_quorum})
    shared_.get(make_error_code(result));
  for (auto result : {Errc::ok_, Errc::not_acquired, Errc::no_quorum, Errc::cancelled})
    election_.get(make_error_code(result));
  for (auto* by : {&extend_, &release_, &renew_}) {
    by->get({});
    by->get(make_error_code(Errc::not_held));
    by->get(make_error_code(Errc::no_quorum));
  }
}

MetricsObserver::~MetricsObserver() = default;

void MetricsObserver::on_operation(const OperationEvent& event) {
  switch (event.operation) {
    case Operation::acquire:
      acquire_.get(event.error, buckets_).Observe(seconds(event.latency));
      attempts_.Increment(event.attempts > 0 ? event.attempts : 0);
      if (event.permits > 0) permit_.get(event.error).Increment();
      if (event.shared) shared_.get(event.error).Increment();
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
    case Operation::campaign:
      election_.get(event.error).Increment();
      if (!event.error) term_.Set(static_cast<double>(event.term));
      break;
    case Operation::leader:
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
  if (!event.subscriber) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto& series = node_series(*event.address);
    series.up->Set(event.state == NodeState::connected ? 1.0 : 0.0);
    // Refused: by the handshake (NodeState::refused), or a connection that failed for a reason
    // of the node's (TLS, authentication) and backs off. Any other state clears it: connected,
    // or down for the network, which redlock_node_up shows.
    const bool refused = (event.state == NodeState::refused || event.state == NodeState::backoff ||
                          event.state == NodeState::reconnecting) &&
                         is_node_refusal(event.error);
    if (refused && series.refused.count(label_of(event.error)) == 0)
      series.refused[label_of(event.error)] =
          &node_refused_family_.Add({{"node", *event.address}, {"reason", label_of(event.error)}});
    for (auto& [reason, gauge] : series.refused)
      gauge->Set(refused && reason == label_of(event.error) ? 1.0 : 0.0);
    // A node that lost its connection is judged again at its next handshake.
    if (event.state != NodeState::connected && event.state != NodeState::restarting)
      series.persistence_forgets->Set(0.0);
  }
  if (event.error) node_errors(*event.address, label_of(event.error)).Increment();
}

void MetricsObserver::on_node_warning(const NodeWarningEvent& event) {
  if (event.address == nullptr || event.kind != NodeWarning::persistence) return;
  std::lock_guard<std::mutex> lock(mutex_);
  node_series(*event.address).persistence_forgets->Set(1.0);
}

MetricsObserver::NodeSeries& MetricsObserver::node_series(const std::string& node) {
  auto it = nodes_.find(node);
  if (it != nodes_.end()) return it->second;
  NodeSeries s;
  s.up = &node_up_family_.Add({{"node", node}});
  s.persistence_forgets = &node_persistence_family_.Add({{"node", node}});
  for (auto reason : kRefusals) {
    const std::string name = errc_name(reason);
    s.refused[name] = &node_refused_family_.Add({{"node", node}, {"reason", name}});
  }
  for (auto error : kAlertedErrors) {
    const std::string name = errc_name(error);
    auto key = std::make_pair(node, name);
    if (node_errors_.count(key) == 0)
      node_errors_.emplace(key, &node_errors_family_.Add({{"node", node}, {"error", name}}));
  }
  return nodes_.emplace(node, std::move(s)).first->second;
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

}  // namespace redlock::prometheus
