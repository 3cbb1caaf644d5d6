// The benchmark scenarios of redlock_scenarios. Each prints one JSON line per measurement on
// stdout, in the schema of shared/peerbench's node/bench.mjs where the scenario is shared.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace bench {

struct Options {
  std::vector<std::uint16_t> ports;          // the nodes
  std::vector<std::uint16_t> delayed_ports;  // bad_minority: stand-ins for the last ones (proxies)
  std::string impl = "redlock-cpp";
  std::string label;
  int ttl_ms = 10'000;
  // uncontended latency and throughput: also run the floor's own cycles, alternating with ours
  bool alternate_floor = false;
  // uncontended latency
  int iters = 2000;
  int warmup = 200;
  // throughput
  int tput_workers = 64;
  double tput_duration_s = 4;
  // contention
  int cont_workers = 8;
  double cont_duration_s = 5;
  int hold_us = 1000;
  int cont_wait_ms = 2000;
  std::vector<std::string> cont_modes{"rotate", "ffa"};
  // semaphore: sem_workers workers share `permits` permits of one key for cont_duration_s, each
  // holding hold_us; a waiting acquire waits at most sem_wait_ms (the peer's acquireTimeout)
  int permits = 4;
  int sem_workers = 16;
  int sem_wait_ms = 10'000;
  int sem_clients = 0;  // Clients shared round-robin by the workers; 0: one per worker
  // read-write lock (rw_contention): readers and writers on one key, each its own Client
  int rw_readers = 8;
  int rw_writers = 1;
  // bad minority
  int faulty = 2;
  // watchdog at scale
  int held = 10'000;
  int hold_threads = 1;  // callers of hold() side by side while the locks are taken
  int lease_ms = 3000;
  double window_s = 6;
  // election failover: the office's lease and the number of crashes
  int election_ttl_ms = 1000;
  int election_rounds = 10;
};

// --tls-cacert FILE: every client of ours connects to the nodes as rediss:// (the ports are TLS
// ports) and trusts that CA. The floor has no TLS (hiredis 0.14).
void use_tls(const std::string& ca_file);

// Ours, through the public API only (lock_scenarios.cpp).
void uncontended_latency(const Options& o);
// The README's blocking call alone in its process (lock_scenarios.cpp).
void readme_call(const Options& o);
void throughput(const Options& o);
void contention(const Options& o);
// A counting semaphore under load, peerbench's `semaphore` shape (semaphore.cpp).
void semaphore(const Options& o);
// The read-write lock (rwlock.cpp): the uncontended shared and exclusive cycles, and readers
// with writers on one key.
void rw_cycle(const Options& o);
void rw_contention(const Options& o);
void bad_minority(const Options& o);
void watchdog_scale(const Options& o);
// An election's failover after its leader crashes, a resignation's handover, the observer's lag
// (election.cpp).
void election_failover(const Options& o);

// The floor: the same round trips by hand with hiredis, no lock library (floor.cpp).
void floor_latency(const Options& o);
// The floor's sequential cycles, for a scenario of ours that alternates blocks of them with its
// own, so that a ratio to the floor compares the same moments of the machine (floor.cpp).
class FloorCycles {
 public:
  explicit FloorCycles(const Options& o);
  ~FloorCycles();
  FloorCycles(const FloorCycles&) = delete;
  FloorCycles& operator=(const FloorCycles&) = delete;
  // Up to `iters` acquire+release cycles, one after the other, none begun after `limit`; each
  // one's total (µs) is appended to `total` (and its parts to `acquire` and `release` when
  // given), and a refused acquire counts in `failed`.
  void run(int iters, std::vector<double>& total, long long& failed,
           std::chrono::steady_clock::time_point limit, std::vector<double>* acquire = nullptr,
           std::vector<double>* release = nullptr);
  std::size_t quorum() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};
// The floor's throughput, o.tput_workers cycles in flight, for a scenario of ours that alternates
// windows of it with its own (floor.cpp).
class FloorLoad {
 public:
  struct Window {
    long long locks = 0, failed = 0;
    double elapsed_s = 0, client_cpu_s = 0;
    double servers_cpu_s = -1;  // -1: the servers' CPU could not be read
    std::vector<double> total;  // each lock's acquire+release, µs
  };
  explicit FloorLoad(const Options& o);
  ~FloorLoad();
  FloorLoad(const FloorLoad&) = delete;
  FloorLoad& operator=(const FloorLoad&) = delete;
  // Keeps every slot busy for `warmup_s`, measures `seconds`, then lets what is in flight end.
  Window run(double warmup_s, double seconds);
  std::size_t quorum() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};
void floor_throughput(const Options& o);
// The hand-off floor: one hand-off from a holder to the first in line by hand, the library's
// scripts on the wire, against a direct hand-off (handoff_floor.cpp).
void handoff_floor(const Options& o);

// Servers this process has SIGSTOPped; resumed by resume_paused() on every exit path.
void pause_server(pid_t pid);
void resume_paused() noexcept;

}  // namespace bench
