/// \file
/// \brief redlock::prometheus: an Observer that keeps Prometheus metrics (prometheus-cpp).
///
/// An optional component, built when prometheus-cpp is found (CMake target
/// `redlock::prometheus`); the core library never depends on it. The metrics and their meaning
/// are listed in docs/observability.md.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include "redlock/observer.hpp"

namespace redlock::prometheus {

/// \brief Options of a MetricsObserver.
struct MetricsOptions {
  /// Labels added to every metric, e.g. `{{"client", "orders"}}` to tell apart the clients of
  /// one process that share a registry (each client needs its own observer: the gauges
  /// redlock_held_locks and redlock_waiters count one client).
  ::prometheus::Labels const_labels;
  /// Bucket bounds of the duration histograms, in seconds. Empty: 100 µs to 10 s.
  std::vector<double> duration_buckets;
};

/// \brief Keeps the Prometheus metrics of one Client, in a registry the caller exposes.
///
/// Thread-safe; the hot path (a successful acquire, extend, release or renewal) takes no lock
/// and allocates nothing: each metric is created once, on its first use.
class MetricsObserver final : public Observer {
 public:
  /// \param registry Where the metrics are registered; kept alive by the observer.
  /// \param options Constant labels and histogram buckets.
  explicit MetricsObserver(std::shared_ptr<::prometheus::Registry> registry,
                           MetricsOptions options = {});
  ~MetricsObserver() override;

  /// \brief Counts the operation by result, and its nodes' failed votes.
  /// \param event The operation.
  void on_operation(const OperationEvent& event) override;
  /// \brief Counts a lost lock by reason.
  /// \param event The loss.
  void on_lost(const LostEvent& event) override;
  /// \brief Follows the number of waiters, and times waits.
  /// \param event A wait's start or end.
  void on_wait(const WaitEvent& event) override;
  /// \brief Sets redlock_node_up and redlock_node_refused, and counts the node's connection
  /// errors. A node's series are made at zero the first time it is seen.
  /// \param event A node's new state.
  void on_node(const NodeEvent& event) override;
  /// \brief Sets redlock_node_persistence_forgets.
  /// \param event A warning of a node's safeguards.
  void on_node_warning(const NodeWarningEvent& event) override;
  /// \brief Sets redlock_held_locks.
  /// \param held The locks under the client's watchdog.
  void on_held(std::size_t held) override;

  /// \return The registry the metrics are in.
  const std::shared_ptr<::prometheus::Registry>& registry() const noexcept { return registry_; }

 private:
  // One metric per value of a `result` label ("ok" or an Errc name), made on first use.
  template <typename T>
  class ByResult {
   public:
    static constexpr std::size_t kSlots = 64;  // above the number of Errc values
    explicit ByResult(::prometheus::Family<T>& family) : family_(family) {}
    template <typename... Args>
    T& get(const std::error_code& error, Args&&... args);

   private:
    ::prometheus::Family<T>& family_;
    std::array<std::atomic<T*>, kSlots + 1> slots_{};  // the last: other categories
  };

  ::prometheus::Counter& node_errors(const std::string& node, const std::string& error);
  // A node's series, made at zero when it is first seen (mutex_ held).
  struct NodeSeries {
    ::prometheus::Gauge* up = nullptr;
    ::prometheus::Gauge* persistence_forgets = nullptr;
    std::map<std::string, ::prometheus::Gauge*> refused;  // by reason
  };
  NodeSeries& node_series(const std::string& node);

  std::shared_ptr<::prometheus::Registry> registry_;
  std::vector<double> buckets_;
  ::prometheus::Family<::prometheus::Histogram>& acquire_family_;
  ::prometheus::Family<::prometheus::Counter>& attempts_family_;
  ::prometheus::Family<::prometheus::Counter>& extend_family_;
  ::prometheus::Family<::prometheus::Counter>& release_family_;
  ::prometheus::Family<::prometheus::Counter>& renew_family_;
  ::prometheus::Family<::prometheus::Counter>& lost_family_;
  ::prometheus::Family<::prometheus::Counter>& node_errors_family_;
  ::prometheus::Family<::prometheus::Gauge>& node_up_family_;
  ::prometheus::Family<::prometheus::Gauge>& node_refused_family_;
  ::prometheus::Family<::prometheus::Gauge>& node_persistence_family_;
  ::prometheus::Family<::prometheus::Gauge>& held_family_;
  ::prometheus::Family<::prometheus::Gauge>& waiters_family_;
  ::prometheus::Family<::prometheus::Histogram>& wait_family_;
  ::prometheus::Family<::prometheus::Counter>& permit_family_;
  ::prometheus::Family<::prometheus::Counter>& shared_family_;
  ::prometheus::Family<::prometheus::Counter>& election_family_;
  ::prometheus::Family<::prometheus::Gauge>& term_family_;
  ByResult<::prometheus::Histogram> acquire_;
  ByResult<::prometheus::Counter> extend_;
  ByResult<::prometheus::Counter> release_;
  ByResult<::prometheus::Counter> renew_;
  ByResult<::prometheus::Histogram> wait_;
  ByResult<::prometheus::Counter> permit_;
  ByResult<::prometheus::Counter> shared_;
  ByResult<::prometheus::Counter> election_;
  ::prometheus::Counter& attempts_;
  ::prometheus::Gauge& held_;
  ::prometheus::Gauge& waiters_;
  ::prometheus::Gauge& term_;
  std::array<::prometheus::Counter*, 5> lost_{};  // by LostReason

  std::mutex mutex_;  // guards the maps below (node events and failed votes: the rare paths)
  std::map<std::pair<std::string, std::string>, ::prometheus::Counter*> node_errors_;
  std::map<std::string, NodeSeries> nodes_;
};

}  // namespace redlock::prometheus
