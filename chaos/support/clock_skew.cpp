// The clock shim's controller: computes offset, rate and base point and replaces the control
// file atomically. Runs on the caller's thread.
#include "clock_skew.hpp"

#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#ifndef REDLOCK_CLOCK_SHIM_PATH
#error \
    "REDLOCK_CLOCK_SHIM_PATH must name the built clock shim (set by chaos/support/CMakeLists.txt)"
#endif

namespace redlock::chaos {
namespace {

// Real CLOCK_REALTIME in ns: what the shim reads with its raw syscall.
std::int64_t real_now_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

void check_rate(double rate) {
  if (!(rate >= 0.0) || rate > 1000.0)
    throw std::invalid_argument("ClockSkew: rate must be within [0, 1000]");
}

}  // namespace

ClockSkew::ClockSkew(std::string path) : path_(std::move(path)) {
  if (path_.empty()) throw std::invalid_argument("ClockSkew: empty path");
  write(0, 1.0, real_now_ns());
}

ClockSkew::~ClockSkew() { ::unlink(path_.c_str()); }

void ClockSkew::set(std::chrono::milliseconds offset, double rate) {
  check_rate(rate);
  write(std::chrono::duration_cast<std::chrono::nanoseconds>(offset).count(), rate, real_now_ns());
}

void ClockSkew::jump(std::chrono::milliseconds by) {
  std::int64_t now = real_now_ns();
  std::int64_t offset = offset_now().count();
  write(offset + std::chrono::duration_cast<std::chrono::nanoseconds>(by).count(), rate_, now);
}

void ClockSkew::set_rate(double rate) {
  check_rate(rate);
  std::int64_t now = real_now_ns();
  std::int64_t offset =
      offset_ns_ + static_cast<std::int64_t>(static_cast<double>(now - base_ns_) * (rate_ - 1.0));
  write(offset, rate, now);
}

std::chrono::nanoseconds ClockSkew::offset_now() const {
  double drift = static_cast<double>(real_now_ns() - base_ns_) * (rate_ - 1.0);
  return std::chrono::nanoseconds(offset_ns_ + static_cast<std::int64_t>(drift));
}

std::string ClockSkew::shim_library() { return REDLOCK_CLOCK_SHIM_PATH; }

std::vector<std::string> ClockSkew::env() const {
  return {"LD_PRELOAD=" + shim_library(), "REDLOCK_CLOCK_SHIM=" + path_};
}

void ClockSkew::write(std::int64_t offset_ns, double rate, std::int64_t base_ns) {
  // "<offset_ms> <rate> <base_ns>", the offset with its nanoseconds as a fraction. Integers
  // only, so that no locale can change the decimal point.
  std::int64_t whole_ms = offset_ns / 1'000'000;
  std::int64_t frac_ns = std::llabs(offset_ns % 1'000'000);
  std::int64_t rate_nano = std::llround(rate * 1e9);
  char text[128];
  int len = std::snprintf(
      text, sizeof text, "%s%lld.%06lld %lld.%09lld %lld\n",
      offset_ns < 0 && whole_ms == 0 ? "-" : "", static_cast<long long>(whole_ms),
      static_cast<long long>(frac_ns), static_cast<long long>(rate_nano / 1'000'000'000),
      static_cast<long long>(rate_nano % 1'000'000'000), static_cast<long long>(base_ns));
  if (len <= 0 || len >= static_cast<int>(sizeof text))
    throw std::runtime_error("ClockSkew: cannot format the settings");
  std::string tmp = path_ + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "w");
  if (f == nullptr)
    throw std::runtime_error("ClockSkew: cannot write " + tmp + ": " + std::strerror(errno));
  bool ok = std::fwrite(text, 1, static_cast<std::size_t>(len), f) == static_cast<std::size_t>(len);
  ok = std::fclose(f) == 0 && ok;
  if (!ok || std::rename(tmp.c_str(), path_.c_str()) != 0) {
    ::unlink(tmp.c_str());
    throw std::runtime_error("ClockSkew: cannot replace " + path_ + ": " + std::strerror(errno));
  }
  offset_ns_ = offset_ns;
  rate_ = rate;
  base_ns_ = base_ns;
}

}  // namespace redlock::chaos
