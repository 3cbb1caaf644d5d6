// Helpers for the protocol core's unit tests: a Context with scripted tokens and a fixed random
// draw, votes, and finders over the actions a machine returned.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "proto/actions.hpp"
#include "proto/context.hpp"

namespace redlock::detail::proto::test {

using namespace std::chrono_literals;

// A point on the injected clock (the steady clock's epoch plus an hour: far from zero).
inline Clock::time_point at(Milliseconds ms) { return Clock::time_point(1h) + ms; }

struct Harness {
  explicit Harness(std::size_t nodes = 3) : nodes_(nodes) {
    config.ttl = 10'000ms;
    config.retry_count = 3;
    config.retry_delay = 200ms;
    config.retry_jitter = 100ms;
    config.drift_factor = 0.01;
    config.request_timeout = 200ms;
    config.key_prefix = "redlock:";
  }

  Context& context() {
    if (!ctx_)
      ctx_ = std::make_unique<Context>(
          config, nodes_, "redlock:turn:00000000000000aa",
          [this](std::string& out) {
            out = "t" + std::to_string(++tokens_drawn) + std::string(30, '0') + ".";
            return std::error_code();
          },
          [this] {
            ++draws;
            return random;
          });
    return *ctx_;
  }

  Config config;
  std::uint64_t random = 42;
  int draws = 0;
  int tokens_drawn = 0;

 private:
  std::size_t nodes_;
  std::unique_ptr<Context> ctx_;
};

// The token the harness draws for the n-th attempt.
inline std::string token(int n) { return "t" + std::to_string(n) + std::string(30, '0') + "."; }

inline std::vector<NodeVote> yes(std::uint64_t fence = 0) {
  NodeVote v;
  v.vote = Vote::yes;
  v.fence = fence;
  return {v};
}

inline std::vector<NodeVote> no(std::string holder = "", Milliseconds ttl = Milliseconds(-1)) {
  NodeVote v;
  v.vote = Vote::no;
  v.holder = std::move(holder);
  v.holder_ttl = ttl;
  return {v};
}

inline std::vector<NodeVote> failed(Errc why = Errc::request_timeout, std::string detail = "") {
  NodeVote v;
  v.vote = Vote::failed;
  v.error = make_error_code(why);
  v.detail = std::move(detail);
  return {v};
}

template <typename T>
std::vector<T> all_of(const Actions& actions) {
  std::vector<T> found;
  for (const auto& a : actions)
    if (const auto* t = std::get_if<T>(&a)) found.push_back(*t);
  return found;
}

template <typename T>
T only(const Actions& actions) {
  auto found = all_of<T>(actions);
  EXPECT_EQ(found.size(), 1u);
  return found.empty() ? T{} : found.front();
}

template <typename T>
bool has(const Actions& actions) {
  return !all_of<T>(actions).empty();
}

inline std::vector<std::size_t> nodes(std::initializer_list<std::size_t> list) { return list; }

}  // namespace redlock::detail::proto::test
