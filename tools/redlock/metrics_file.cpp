#include "metrics_file.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "redlock/errors.hpp"

namespace redlock::cli {
namespace {

std::string label_of(const std::error_code& error) {
  if (!error) return "ok";
  if (error.category() == error_category()) return errc_name(static_cast<Errc>(error.value()));
  return "other";
}

// A label value in the text format: backslash, double quote and line feed escaped.
std::string quoted(const std::string& value) {
  std::string out = "\"";
  for (char c : value) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

// The errors of a node's requests that contrib/prometheus/alerts.yml alerts on at once
// (RedlockNodeRefusesCommands), each a series at zero from the node's first event, as the
// redlock::prometheus component has them.
constexpr Errc kAlertedErrors[] = {Errc::redis_oom, Errc::redis_readonly, Errc::redis_noperm,
                                   Errc::redis_masterdown, Errc::redis_noauth};

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

}  // namespace

TextfileObserver::TextfileObserver(std::string path, std::string resource)
    : path_(std::move(path)), resource_(std::move(resource)) {
  for (const char* r :
       {"expired", "not_held", "shutting_down", "released_after_expiry", "keys_gone"})
    lost_[r] = 0;
  for (auto* by : {&acquires_, &releases_, &renewals_, &extends_})
    for (const char* r : {"ok", "not_held", "no_quorum"}) (*by)[r] = 0;
  acquires_["not_acquired"] = 0;
  // A semaphore's permits (run --permits) and a reader's shares (run --shared), as the
  // redlock::prometheus component counts them.
  for (const char* r : {"ok", "not_acquired", "no_quorum", "permits_mismatch"}) permits_[r] = 0;
  for (const char* r : {"ok", "not_acquired", "no_quorum"}) shared_[r] = 0;
  std::lock_guard<std::mutex> lock(mutex_);
  if (!write_locked())
    throw Error(make_error_code(Errc::invalid_config),
                "--metrics-file " + path_ + ": cannot be written (" + std::strerror(errno) + ")");
}

TextfileObserver::~TextfileObserver() {
  std::lock_guard<std::mutex> lock(mutex_);
  held_ = 0;
  (void)write_locked();
}

void TextfileObserver::on_operation(const OperationEvent& e) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto result = label_of(e.error);
  switch (e.operation) {
    case Operation::acquire:
      acquires_[result] += 1;
      acquire_seconds_ += static_cast<double>(e.latency.count()) / 1e6;
      if (e.permits > 0) permits_[result] += 1;
      if (e.shared) shared_[result] += 1;
      break;
    case Operation::extend:
      extends_[result] += 1;
      break;
    case Operation::release:
      releases_[result] += 1;
      break;
    case Operation::renew:
      renewals_[result] += 1;
      break;
    case Operation::campaign:
    case Operation::leader:
      break;  // `run` holds a lock, not an office
  }
  // Each node's failed vote, by its error: a node that answers OOM or READONLY is up, and
  // cannot vote.
  if (e.votes != nullptr)
    for (std::size_t i = 0; i < e.votes->nodes.size(); ++i) {
      const auto& v = e.votes->nodes[i];
      if (v.vote == Vote::failed && v.error)
        node_errors_[{e.votes->address(i), label_of(v.error)}] += 1;
    }
  (void)write_locked();
}

void TextfileObserver::on_lost(const LostEvent& e) {
  std::lock_guard<std::mutex> lock(mutex_);
  lost_[to_string(e.reason)] += 1;
  (void)write_locked();
}

void TextfileObserver::on_node(const NodeEvent& e) {
  if (e.address == nullptr || e.subscriber) return;
  std::lock_guard<std::mutex> lock(mutex_);
  const std::string& node = *e.address;
  if (node_up_.count(node) == 0) {  // the series alerts read, at zero from the node's first event
    for (auto reason : {Errc::node_not_master, Errc::duplicate_node, Errc::redis_auth_failed,
                        Errc::tls_handshake_failed})
      node_refused_[{node, errc_name(reason)}] = 0;
    for (auto error : kAlertedErrors)
      node_errors_.emplace(std::make_pair(node, errc_name(error)), 0);
  }
  if (e.error) node_errors_[{node, label_of(e.error)}] += 1;
  node_up_[node] = e.state == NodeState::connected ? 1 : 0;
  if (node_persistence_.count(node) == 0 ||
      (e.state != NodeState::connected && e.state != NodeState::restarting))
    node_persistence_[node] = 0;
  const bool refused = (e.state == NodeState::refused || e.state == NodeState::backoff ||
                        e.state == NodeState::reconnecting) &&
                       is_node_refusal(e.error);
  for (auto& [key, value] : node_refused_)
    if (key.first == node) value = 0;
  if (refused) node_refused_[{node, label_of(e.error)}] = 1;
  (void)write_locked();
}

void TextfileObserver::on_node_warning(const NodeWarningEvent& e) {
  if (e.address == nullptr || e.kind != NodeWarning::persistence) return;
  std::lock_guard<std::mutex> lock(mutex_);
  node_persistence_[*e.address] = 1;
  (void)write_locked();
}

void TextfileObserver::on_held(std::size_t held) {
  std::lock_guard<std::mutex> lock(mutex_);
  held_ = static_cast<double>(held);
  (void)write_locked();
}

bool TextfileObserver::write_locked() const {
  const std::string res = "resource=" + quoted(resource_);
  std::string out;
  auto family = [&](const char* name, const char* type, const char* help) {
    out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
  };
  auto by = [&](const char* name, const char* label, const std::map<std::string, double>& m) {
    for (const auto& [key, value] : m)
      out += std::string(name) + "{" + res + "," + label + "=" + quoted(key) + "} " +
             number(value) + "\n";
  };
  double acquires = 0;
  for (const auto& [k, v] : acquires_) acquires += v;
  family("redlock_acquire_duration_seconds", "summary",
         "Acquires: from the call to its result, every attempt and wait included");
  out += "redlock_acquire_duration_seconds_sum{" + res + "} " + number(acquire_seconds_) + "\n";
  out += "redlock_acquire_duration_seconds_count{" + res + "} " + number(acquires) + "\n";
  family("redlock_acquires_total", "counter", "Acquires by result");
  by("redlock_acquires_total", "result", acquires_);
  family("redlock_permit_acquires_total", "counter",
         "Acquires of a permit of a semaphore, by result (also counted in "
         "redlock_acquire_duration_seconds)");
  by("redlock_permit_acquires_total", "result", permits_);
  family("redlock_shared_acquires_total", "counter",
         "Acquires of a reader's share of a read-write lock, by result (also counted in "
         "redlock_acquire_duration_seconds)");
  by("redlock_shared_acquires_total", "result", shared_);
  family("redlock_extends_total", "counter", "Extends by result");
  by("redlock_extends_total", "result", extends_);
  family("redlock_releases_total", "counter", "Releases by result");
  by("redlock_releases_total", "result", releases_);
  family("redlock_renewals_total", "counter", "Watchdog renewals of held locks by result");
  by("redlock_renewals_total", "result", renewals_);
  family("redlock_lock_lost_total", "counter", "Locks lost, by reason");
  by("redlock_lock_lost_total", "reason", lost_);
  family("redlock_held_locks", "gauge", "Locks held under the watchdog");
  out += "redlock_held_locks{" + res + "} " + number(held_) + "\n";
  family("redlock_node_up", "gauge", "1 while the node's voting connection is in session");
  by("redlock_node_up", "node", node_up_);
  family("redlock_node_refused", "gauge", "1 while the node may not vote, by reason");
  for (const auto& [key, value] : node_refused_)
    out += "redlock_node_refused{" + res + ",node=" + quoted(key.first) +
           ",reason=" + quoted(key.second) + "} " + number(value) + "\n";
  family("redlock_node_errors_total", "counter",
         "Errors with a node: failed connections and refusals, and requests that failed");
  for (const auto& [key, value] : node_errors_)
    out += "redlock_node_errors_total{" + res + ",node=" + quoted(key.first) +
           ",error=" + quoted(key.second) + "} " + number(value) + "\n";
  family("redlock_node_persistence_forgets", "gauge",
         "1 when the node's persistence can forget a lock");
  by("redlock_node_persistence_forgets", "node", node_persistence_);

  // Whole, then renamed: the collector never reads half a file.
  const std::string tmp = path_ + ".tmp." + std::to_string(::getpid());
  std::FILE* f = std::fopen(tmp.c_str(), "w");
  if (f == nullptr) return false;
  const bool written = std::fwrite(out.data(), 1, out.size(), f) == out.size();
  const bool closed = std::fclose(f) == 0;
  if (!written || !closed || std::rename(tmp.c_str(), path_.c_str()) != 0) {
    const int error = errno;
    std::remove(tmp.c_str());
    errno = error;
    return false;
  }
  return true;
}

}  // namespace redlock::cli
