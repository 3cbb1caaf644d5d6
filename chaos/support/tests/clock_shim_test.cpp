// The clock shim and its controller: every interposed function on a probe program, then a real
// redis-server whose keys expire by the skewed clock.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "clock_skew.hpp"
#include "redis_server.hpp"

namespace redlock::chaos {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using redlock::test::RedisServer;

constexpr std::int64_t kMs = 1'000'000;  // ns

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/redlock-chaos-XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

std::int64_t clock_ns(clockid_t clock) {
  timespec ts{};
  ::clock_gettime(clock, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

struct Probe {
  std::int64_t real_ns = 0, coarse_ns = 0, tod_us = 0, time_s = 0, mono_ns = 0;
};

Probe run_probe(const std::vector<std::string>& env) {
  auto r = redlock::test::run_process({REDLOCK_CLOCK_PROBE_PATH}, env, 5s);
  if (r.exit_code != 0) throw std::runtime_error("clock probe failed: " + r.err);
  Probe p;
  std::istringstream in(r.out);
  in >> p.real_ns >> p.coarse_ns >> p.tod_us >> p.time_s >> p.mono_ns;
  if (!in) throw std::runtime_error("clock probe printed: " + r.out);
  return p;
}

// Checks every wall clock of `p` against [lo, hi] (real time around the probe, ns, plus the
// offset expected at each end).
void expect_wall_clocks_within(const Probe& p, std::int64_t lo, std::int64_t hi) {
  EXPECT_GE(p.real_ns, lo);
  EXPECT_LE(p.real_ns, hi);
  EXPECT_GE(p.coarse_ns, lo - 20 * kMs) << "coarse: a tick behind at most";
  EXPECT_LE(p.coarse_ns, hi);
  EXPECT_GE(p.tod_us * 1000, lo - 1000);
  EXPECT_LE(p.tod_us * 1000, hi);
  EXPECT_GE(p.time_s, lo / 1'000'000'000 - 1);
  EXPECT_LE(p.time_s, hi / 1'000'000'000);
}

TEST(ClockShim, ShiftsEveryWallClockAndPassesOtherClocksThrough) {
  TempDir dir;
  ClockSkew skew(dir.file("clock"));
  const std::int64_t hour = 3600'000 * kMs;
  skew.set(std::chrono::hours(1));
  std::int64_t before = clock_ns(CLOCK_REALTIME), mono_before = clock_ns(CLOCK_MONOTONIC);
  Probe p = run_probe(skew.env());
  std::int64_t after = clock_ns(CLOCK_REALTIME), mono_after = clock_ns(CLOCK_MONOTONIC);
  expect_wall_clocks_within(p, before + hour, after + hour);
  EXPECT_GE(p.mono_ns, mono_before) << "CLOCK_MONOTONIC must pass through";
  EXPECT_LE(p.mono_ns, mono_after) << "CLOCK_MONOTONIC must pass through";

  skew.set(-1500ms);  // negative, with a fraction of a second
  before = clock_ns(CLOCK_REALTIME);
  p = run_probe(skew.env());
  after = clock_ns(CLOCK_REALTIME);
  expect_wall_clocks_within(p, before - 1500 * kMs, after - 1500 * kMs);
}

TEST(ClockShim, WithoutAUsableFileTheClockIsUntouched) {
  TempDir dir;
  std::string lib = "LD_PRELOAD=" + ClockSkew::shim_library();
  for (const std::string& content :
       {std::string("(none)"), std::string("garbage\n"), std::string("60000 -2\n")}) {
    std::string path = dir.file("clock");
    std::filesystem::remove(path);
    if (content != "(none)") std::ofstream(path) << content;
    std::int64_t before = clock_ns(CLOCK_REALTIME);
    Probe p = run_probe({lib, "REDLOCK_CLOCK_SHIM=" + path});
    std::int64_t after = clock_ns(CLOCK_REALTIME);
    SCOPED_TRACE("file: " + content);
    expect_wall_clocks_within(p, before, after);
  }
  std::int64_t before = clock_ns(CLOCK_REALTIME);
  Probe p = run_probe({lib});  // no REDLOCK_CLOCK_SHIM at all
  expect_wall_clocks_within(p, before, clock_ns(CLOCK_REALTIME));
}

TEST(ClockShim, HandWrittenFileWithoutABasePoint) {
  TempDir dir;
  std::string path = dir.file("clock");
  std::ofstream(path) << "60000 1\n";
  std::int64_t before = clock_ns(CLOCK_REALTIME);
  Probe p = run_probe({"LD_PRELOAD=" + ClockSkew::shim_library(), "REDLOCK_CLOCK_SHIM=" + path});
  std::int64_t after = clock_ns(CLOCK_REALTIME);
  expect_wall_clocks_within(p, before + 60'000 * kMs, after + 60'000 * kMs);
}

TEST(ClockShim, RateChangesKeepTheClockContinuous) {
  TempDir dir;
  ClockSkew skew(dir.file("clock"));
  skew.set_rate(2.0);
  std::this_thread::sleep_for(100ms);
  EXPECT_GE(skew.offset_now(), 100ms);
  EXPECT_LT(skew.offset_now(), 1000ms);
  // A process started now sees the clock re-based 100 ms ago and running at 2x since.
  std::int64_t before = clock_ns(CLOCK_REALTIME), ahead_before = skew.offset_now().count();
  Probe p = run_probe(skew.env());
  std::int64_t after = clock_ns(CLOCK_REALTIME), ahead_after = skew.offset_now().count();
  expect_wall_clocks_within(p, before + ahead_before, after + ahead_after);

  auto gained = skew.offset_now();
  skew.set_rate(1.0);  // stops gaining, keeps what it gained
  auto kept = skew.offset_now();
  EXPECT_GE(kept, gained);
  EXPECT_LT(kept - gained, 20ms);
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(skew.offset_now(), kept) << "rate 1: the offset stays";
  before = clock_ns(CLOCK_REALTIME);
  p = run_probe(skew.env());
  after = clock_ns(CLOCK_REALTIME);
  expect_wall_clocks_within(p, before + kept.count(), after + kept.count());
  EXPECT_THROW(skew.set(0ms, -1.0), std::invalid_argument);
}

TEST(ClockShim, EnvNamesTheLibraryAndTheFile) {
  TempDir dir;
  ClockSkew skew(dir.file("clock"));
  EXPECT_EQ(skew.path(), dir.file("clock"));
  ASSERT_EQ(skew.env().size(), 2u);
  EXPECT_EQ(skew.env()[0], "LD_PRELOAD=" + ClockSkew::shim_library());
  EXPECT_EQ(skew.env()[1], "REDLOCK_CLOCK_SHIM=" + dir.file("clock"));
  EXPECT_TRUE(std::filesystem::path(ClockSkew::shim_library()).is_absolute());
  EXPECT_TRUE(std::filesystem::exists(ClockSkew::shim_library()));
  EXPECT_TRUE(std::filesystem::exists(skew.path()));
}

// redis-server's TIME minus real time, in ms.
std::int64_t redis_skew_ms(const RedisServer& server) {
  std::int64_t before = clock_ns(CLOCK_REALTIME);
  std::istringstream in(server.command({"TIME"}));
  std::int64_t sec = 0, usec = 0;
  in >> sec >> usec;
  std::int64_t after = clock_ns(CLOCK_REALTIME);
  return (sec * 1'000'000 + usec) / 1000 - (before + after) / 2 / kMs;
}

TEST(ClockShimRedis, RateTwoExpiresKeysTwiceAsFast) {
  TempDir dir;
  ClockSkew skew(dir.file("clock"));
  RedisServer server(std::vector<std::string>{}, std::string{}, skew.env());
  EXPECT_LT(std::abs(redis_skew_ms(server)), 50) << "unskewed at rate 1";

  skew.set_rate(2.0);
  auto set_sent = Clock::now();
  ASSERT_EQ(server.command({"SET", "k", "v", "PX", "1000"}), "OK");
  auto set_done = Clock::now();
  auto ms_since = [](Clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t).count();
  };
  // PTTL after ~200 ms of real time: 1000 - 2 x elapsed (bounded by when we asked).
  std::this_thread::sleep_for(200ms);
  std::int64_t lo_elapsed = ms_since(set_done);
  std::int64_t pttl = std::stoll(server.command({"PTTL", "k"}));
  std::int64_t hi_elapsed = ms_since(set_sent);
  EXPECT_LE(pttl, 1000 - 2 * lo_elapsed + 10);
  EXPECT_GE(pttl, 1000 - 2 * hi_elapsed - 10);

  // The key disappears after ~500 ms of real time, long before its 1000 ms.
  std::int64_t last_seen = 0, gone_at = -1;
  for (int i = 0; i < 200 && gone_at < 0; ++i) {
    std::int64_t t = ms_since(set_sent);
    if (server.command({"EXISTS", "k"}) == "0") {
      gone_at = ms_since(set_done);
    } else {
      last_seen = t;
      std::this_thread::sleep_for(10ms);
    }
  }
  ASSERT_GE(gone_at, 0) << "the key never expired";
  EXPECT_LE(last_seen, 500 + 20) << "still there when its doubled clock had passed 1000 ms";
  EXPECT_GE(gone_at, 500 - 20);
  EXPECT_LT(gone_at, 850) << "expired by the real clock, not the doubled one";

  // Its clock gained about the real time elapsed since the rate changed.
  std::int64_t gained = redis_skew_ms(server);
  std::int64_t elapsed = ms_since(set_sent);
  EXPECT_GE(gained, elapsed - 60);
  EXPECT_LE(gained, elapsed + 60);
}

TEST(ClockShimRedis, JumpForwardExpiresAtOnceAndBackwardExtends) {
  TempDir dir;
  ClockSkew skew(dir.file("clock"));
  RedisServer server(std::vector<std::string>{}, std::string{}, skew.env());
  ASSERT_EQ(server.command({"SET", "short", "v", "PX", "5000"}), "OK");
  ASSERT_EQ(server.command({"SET", "long", "v", "PX", "100000"}), "OK");
  skew.jump(60s);
  // The shim looks at the file at most every 2 ms: the next commands see the jump.
  bool gone = redlock::test::eventually(
      [&] {
        return server.command({"EXISTS", "short"}) == "0";
      },
      200ms);
  EXPECT_TRUE(gone) << "a +60 s jump expires a 5 s key at once";
  std::int64_t pttl = std::stoll(server.command({"PTTL", "long"}));
  EXPECT_GT(pttl, 39'000 - 500);
  EXPECT_LE(pttl, 40'000) << "the jump was 60 s, not more";
  EXPECT_NEAR(static_cast<double>(redis_skew_ms(server)), 60'000.0, 100.0);

  skew.jump(-120s);  // now a minute behind
  ASSERT_EQ(server.command({"SET", "k", "v", "PX", "400"}), "OK");
  skew.jump(-60s);  // two minutes behind: the key has 60.4 s left
  std::this_thread::sleep_for(600ms);
  EXPECT_EQ(server.command({"EXISTS", "k"}), "1") << "a backward jump extends the key";
  EXPECT_NEAR(static_cast<double>(redis_skew_ms(server)), -120'000.0, 100.0);
}

}  // namespace
}  // namespace redlock::chaos
