// The Observer's defaults, the names of its enums, and the log hook's default writer (standard
// error). Any thread.
#include "redlock/observer.hpp"

#include <cstdio>

#include "observe.hpp"

namespace redlock {

Observer::~Observer() = default;
void Observer::on_operation(const OperationEvent&) {}
void Observer::on_lost(const LostEvent&) {}
void Observer::on_wait(const WaitEvent&) {}
void Observer::on_node(const NodeEvent&) {}
void Observer::on_held(std::size_t) {}
void Observer::on_node_warning(const NodeWarningEvent&) {}

const char* to_string(NodeWarning kind) noexcept {
  return kind == NodeWarning::persistence ? "persistence" : "other";
}

const char* to_string(Operation op) noexcept {
  switch (op) {
    case Operation::acquire:
      return "acquire";
    case Operation::extend:
      return "extend";
    case Operation::release:
      return "release";
    case Operation::renew:
      return "renew";
    case Operation::campaign:
      return "campaign";
    case Operation::leader:
      return "leader";
  }
  return "unknown";
}

const char* to_string(LostReason reason) noexcept {
  switch (reason) {
    case LostReason::expired:
      return "expired";
    case LostReason::not_held:
      return "not_held";
    case LostReason::shutting_down:
      return "shutting_down";
    case LostReason::released_after_expiry:
      return "released_after_expiry";
    case LostReason::keys_gone:
      return "keys_gone";
  }
  return "unknown";
}

const char* to_string(NodeState state) noexcept {
  switch (state) {
    case NodeState::connected:
      return "connected";
    case NodeState::refused:
      return "refused";
    case NodeState::reconnecting:
      return "reconnecting";
    case NodeState::backoff:
      return "backoff";
    case NodeState::restarting:
      return "restarting";
  }
  return "unknown";
}

const char* to_string(LogLevel level) noexcept {
  switch (level) {
    case LogLevel::warning:
      return "warning";
    case LogLevel::error:
      return "error";
  }
  return "unknown";
}

namespace detail {
namespace {
thread_local const Config* this_thread_config = nullptr;
}  // namespace

void write_log(const LogHandler* handler, LogLevel level, const std::string& text) noexcept {
  if (handler != nullptr && *handler) {
    try {
      (*handler)(level, text);
      return;
    } catch (...) {
      // A log handler that throws must not take the loop down; the message is dropped.
      return;
    }
  }
  std::fprintf(stderr, "redlock: %s%s\n", level == LogLevel::warning ? "warning: " : "",
               text.c_str());
}

void set_thread_config(const Config* config) noexcept { this_thread_config = config; }
const Config* thread_config() noexcept { return this_thread_config; }

void observer_threw(const Config& config, const char* what) noexcept {
  try {
    log_message(&config, LogLevel::error,
                what != nullptr ? std::string("exception escaped an observer: ") + what
                                : std::string("exception escaped an observer"));
  } catch (...) {
  }
}

void callback_threw(const char* what, const char* message) noexcept {
  try {
    std::string text = std::string("exception escaped a ") + what + " callback";
    if (message != nullptr) text += std::string(": ") + message;
    log_message(thread_config(), LogLevel::error, text);
  } catch (...) {
  }
}

}  // namespace detail
}  // namespace redlock
