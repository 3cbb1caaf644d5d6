// Skews the wall clock of redis-server processes started under the clock shim
// (clock_shim.c, an LD_PRELOAD library) by writing the control file the shim reads.
//
//   ClockSkew skew(dir + "/node0.clock");
//   RedisServer node({}, {}, skew.env());   // starts under the shim, clock unskewed
//   skew.set_rate(2.0);                     // from now on its clock runs twice as fast
//   skew.jump(std::chrono::seconds(60));    // and now a minute ahead: PX keys expire at once
//
// The shim re-reads the file at most every 2 ms; changes are seen by the server's next clock
// read after that. The file is replaced atomically (rename), so a reader never sees half of it.
// Not thread-safe: one thread changes one ClockSkew.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace redlock::chaos {

class ClockSkew {  // writes the control file the shim reads
 public:
  explicit ClockSkew(std::string path);  // creates the file: offset 0, rate 1
  ~ClockSkew();                          // removes it (a running shim keeps the last settings)
  ClockSkew(const ClockSkew&) = delete;
  ClockSkew& operator=(const ClockSkew&) = delete;

  const std::string& path() const { return path_; }
  // From now on the clock reads real + offset and advances `rate` times as fast as real time
  // (rate >= 0). The base point moves to now, so a rate change alone never makes the clock
  // jump: set(offset_now(), r) is the same as set_rate(r).
  void set(std::chrono::milliseconds offset, double rate = 1.0);
  void jump(std::chrono::milliseconds by);  // adds to the offset, keeps the rate
  void set_rate(double rate);               // keeps the clock continuous, changes the rate
  // How far the skewed clock is ahead of real time now (negative: behind).
  std::chrono::nanoseconds offset_now() const;
  double rate() const { return rate_; }

  static std::string shim_library();     // absolute path of the built .so
  std::vector<std::string> env() const;  // {"LD_PRELOAD=...", "REDLOCK_CLOCK_SHIM=..."}

 private:
  // Rewrites the file with the offset at `base_ns` (real CLOCK_REALTIME, ns).
  void write(std::int64_t offset_ns, double rate, std::int64_t base_ns);

  std::string path_;
  std::int64_t offset_ns_ = 0;  // at base_ns_
  double rate_ = 1.0;
  std::int64_t base_ns_ = 0;
};

}  // namespace redlock::chaos
