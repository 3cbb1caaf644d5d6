// What lib/net tells its host about itself: Config::observer's events and Config::log's
// messages. Emission points call observe(), which builds and delivers an event only when an
// observer is set: without one, the cost is one null check.
#pragma once

#include <chrono>
#include <exception>
#include <string>
#include <system_error>
#include <vector>

#include "redlock/config.hpp"
#include "redlock/observer.hpp"

namespace redlock::detail {

// Hands `text` to `handler`, or writes it to standard error as the library always has
// (`redlock: text`, warnings as `redlock: warning: text`) when there is none. Never throws.
void write_log(const LogHandler* handler, LogLevel level, const std::string& text) noexcept;
inline void log_message(const Config* config, LogLevel level, const std::string& text) noexcept {
  write_log(config != nullptr ? &config->log : nullptr, level, text);
}

// The configuration of the client whose loop runs on this thread (null on other threads): lets
// code without a Config at hand (deliver_guarded) report through that client's log. Set by the
// coordinator when its loop starts; one loop thread serves one client.
void set_thread_config(const Config* config) noexcept;
const Config* thread_config() noexcept;

// An observer that threw: reported through the log, never propagated.
void observer_threw(const Config& config, const char* what) noexcept;

// Calls `emit(observer)` when the client has an observer. Build the event inside `emit`, so
// that nothing is built, timed or formatted without one.
template <typename Emit>
inline void observe(const Config& config, Emit&& emit) noexcept {
  Observer* observer = config.observer.get();
  if (observer == nullptr) return;
  try {
    emit(*observer);
  } catch (const std::exception& e) {
    observer_threw(config, e.what());
  } catch (...) {
    observer_threw(config, nullptr);
  }
}

// Tells the observer, if any, that an operation begun at `started` ended.
inline void notify_operation(const Config& config, Operation op, std::error_code error,
                             const Votes& votes, const std::vector<std::string>& resources,
                             Clock::time_point started, int permit = -1) noexcept {
  observe(config, [&](Observer& o) {
    OperationEvent e;
    e.permit = permit;
    e.operation = op;
    e.error = error;
    e.resources = &resources;
    e.votes = &votes;
    e.latency = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - started);
    o.on_operation(e);
  });
}

// A user callback threw (`message`: its what(), or null): reported through the log.
void callback_threw(const char* what, const char* message) noexcept;

// Runs a user callback on the loop thread; an escaping exception is reported, not propagated.
// A template, not a std::function: no allocation on the path of every result.
template <typename Call>
inline void deliver_guarded(const char* what, Call&& call) noexcept {
  try {
    call();
  } catch (const std::exception& e) {
    callback_threw(what, e.what());
  } catch (...) {
    callback_threw(what, nullptr);
  }
}

}  // namespace redlock::detail
