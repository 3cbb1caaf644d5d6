// Helpers shared by the benchmark scenarios: clocks, percentiles, CPU and memory readings, and
// one-line JSON output in the schema of shared/peerbench (node/bench.mjs).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace bench {

using Clock = std::chrono::steady_clock;

// Microseconds between two time points, as a double.
inline double us_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::micro>(b - a).count();
}

// Percentiles of samples in µs (nearest rank on the sorted samples, as node/bench.mjs does).
struct Summary {
  std::size_t n = 0;
  double p50 = 0, p90 = 0, p99 = 0, p999 = 0, mean = 0, min = 0, max = 0;
};
Summary summarize(std::vector<double> samples);

// One JSON object on one line. Numbers are rounded to 0.1 (to 0.001 below 10).
class JsonLine {
 public:
  JsonLine& str(const std::string& key, const std::string& value);
  JsonLine& num(const std::string& key, double value);  // NaN/inf become null
  JsonLine& integer(const std::string& key, long long value);
  JsonLine& boolean(const std::string& key, bool value);
  JsonLine& null(const std::string& key);
  JsonLine& raw(const std::string& key, const std::string& json);
  JsonLine& stats(const std::string& key, const Summary& s);
  JsonLine& numbers(const std::string& key, const std::vector<double>& values);
  std::string text() const { return "{" + body_ + "}"; }
  // Writes the line to stdout and flushes it.
  void emit() const;

 private:
  void key(const std::string& k);
  std::string body_;
};

std::string json_escape(const std::string& s);

// CPU seconds (user + system) of this process.
double self_cpu_seconds();
// CPU seconds (user + system) of another process, from /proc; negative when unreadable.
double process_cpu_seconds(pid_t pid);
// Resident set size of this process in bytes.
long long self_rss_bytes();
// Bytes of heap in use (glibc mallinfo2), or -1 where unavailable.
long long heap_in_use_bytes();

// "7101,7102" -> {7101, 7102}; throws std::invalid_argument on a bad entry.
std::vector<std::uint16_t> parse_ports(const std::string& list);
// "redis://127.0.0.1:7101,redis://127.0.0.1:7102"
std::string node_list(const std::vector<std::uint16_t>& ports);

// A random hex string (not cryptographic; for the floor's tokens and key tags).
std::string random_hex(std::size_t digits);

}  // namespace bench
