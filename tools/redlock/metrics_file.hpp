// `redlock run --metrics-file PATH`: the run's metrics as a node_exporter textfile (the
// textfile collector's format: Prometheus' text exposition), rewritten whole and renamed into
// place on every event, so that a scrape never reads half a file. The same metric names as the
// redlock::prometheus component, each with a `resource` label (several runs, one file each, in
// one collector directory), without needing prometheus-cpp.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "redlock/observer.hpp"

namespace redlock::cli {

class TextfileObserver final : public Observer {
 public:
  // Writes the file at once (every series at zero); throws redlock::Error (invalid_config) when
  // it cannot be written.
  TextfileObserver(std::string path, std::string resource);
  ~TextfileObserver() override;

  void on_operation(const OperationEvent& event) override;
  void on_lost(const LostEvent& event) override;
  void on_node(const NodeEvent& event) override;
  void on_node_warning(const NodeWarningEvent& event) override;
  void on_held(std::size_t held) override;

 private:
  bool write_locked() const;  // mutex_ held; false when the file could not be replaced

  const std::string path_, resource_;
  mutable std::mutex mutex_;
  double acquire_seconds_ = 0;
  std::map<std::string, double> acquires_, releases_, renewals_, extends_, lost_, permits_, shared_;
  std::map<std::string, double> node_up_, node_persistence_;
  std::map<std::pair<std::string, std::string>, double> node_refused_, node_errors_;
  double held_ = 0;
};

}  // namespace redlock::cli
