// redlock_scenarios: redlock-cpp's benchmark scenarios against nodes that are already running.
// Prints one JSON line per measurement, in shared/peerbench's schema for the scenarios it shares
// (so `PB_EXTRA_CMD='redlock_scenarios --ports {ports}'` runs it inside peerbench's run.sh),
// plus our own. Every loop is bounded in count and time, and the whole process by --max-seconds.
// bench/run.sh is the driver that starts the nodes and runs everything in one go.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>

#include "common.hpp"
#include "scenarios.hpp"

namespace bench {
namespace {

constexpr int kMaxPaused = 16;
std::atomic<pid_t> g_paused[kMaxPaused];

void on_signal(int sig) {
  resume_paused();
  _exit(128 + sig);
}

const char* kUsage =
    "usage: redlock_scenarios --ports P[,P...] [--scenarios LIST] [options]\n"
    "scenarios (comma list; default uncontended_latency,throughput,contention, the ones\n"
    "shared with peerbench): uncontended_latency readme_call throughput contention semaphore\n"
    "rw_cycle rw_contention bad_minority "
    "watchdog_scale floor_latency floor_throughput handoff_floor election_failover\n"
    "options: --iters 2000 --warmup 200 --tput-workers 64 --tput-duration 4\n"
    "  --cont-workers 8 --cont-duration 5 --hold-ms 1 --cont-modes rotate,ffa --cont-wait-ms 2000\n"
    "  --permits 4 --sem-workers 16 --sem-wait-ms 10000\n"
    "  --sem-clients 0 (semaphore; 0: a Client per worker; also --cont-duration, "
    "--hold-ms)\n"
    "  --rw-readers 8 --rw-writers 1 (rw_contention; also --cont-duration, --hold-ms,\n"
    "  --cont-wait-ms; rw_cycle: --iters, --warmup)\n"
    "  --faulty 2 --delayed-ports P,P --held 10000 --hold-threads 1 --lease-ms 3000\n"
    "  --window 6 --election-ttl-ms 1000 --election-rounds 10\n"
    "  --ttl 10000 --label TEXT --impl redlock-cpp --max-seconds 120\n"
    "  --alternate-floor 0 (1: uncontended_latency and throughput also run the floor's own\n"
    "  cycles, alternating with ours, for ratios of the same moments)\n"
    "  --tls-cacert FILE (the ports are TLS ports: rediss://, this CA trusted)\n";

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

double number(const std::map<std::string, std::string>& args, const std::string& key, double dflt,
              double lo, double hi) {
  auto it = args.find(key);
  if (it == args.end()) return dflt;
  std::size_t used = 0;
  double v = std::stod(it->second, &used);
  if (used != it->second.size() || v < lo || v > hi)
    throw std::invalid_argument("--" + key + " must be a number in [" + std::to_string(lo) + ", " +
                                std::to_string(hi) + "]");
  return v;
}

}  // namespace

void pause_server(pid_t pid) {
  for (auto& slot : g_paused) {
    pid_t empty = 0;
    if (slot.compare_exchange_strong(empty, pid)) {
      if (kill(pid, SIGSTOP) != 0) {
        slot = 0;
        throw std::runtime_error("cannot SIGSTOP pid " + std::to_string(pid));
      }
      return;
    }
  }
  throw std::runtime_error("too many paused servers");
}

void resume_paused() noexcept {
  for (auto& slot : g_paused) {
    pid_t pid = slot.exchange(0);
    if (pid > 0) kill(pid, SIGCONT);
  }
}

}  // namespace bench

int main(int argc, char** argv) {
  using namespace bench;
  std::map<std::string, std::string> args;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (a.rfind("--", 0) != 0 || i + 1 >= argc) {
      std::fprintf(stderr, "redlock_scenarios: bad argument '%s'\n%s", a.c_str(), kUsage);
      return 2;
    }
    args[a.substr(2)] = argv[++i];
  }
  Options o;
  std::vector<std::string> scenarios{"uncontended_latency", "throughput", "contention"};
  double max_seconds = 120;
  try {
    static const char* known[] = {
        "ports",           "scenarios",     "iters",           "warmup",
        "tput-workers",    "tput-duration", "cont-workers",    "cont-duration",
        "hold-ms",         "cont-modes",    "cont-wait-ms",    "faulty",
        "delayed-ports",   "held",          "hold-threads",    "lease-ms",
        "window",          "ttl",           "label",           "impl",
        "max-seconds",     "tls-cacert",    "alternate-floor", "permits",
        "sem-workers",     "sem-wait-ms",   "sem-clients",     "election-ttl-ms",
        "election-rounds", "rw-readers",    "rw-writers"};
    for (const auto& [k, v] : args) {
      bool ok = false;
      for (const char* name : known) ok = ok || k == name;
      if (!ok) throw std::invalid_argument("unknown option --" + k);
    }
    if (!args.count("ports")) throw std::invalid_argument("--ports is required");
    o.ports = parse_ports(args["ports"]);
    if (args.count("delayed-ports")) o.delayed_ports = parse_ports(args["delayed-ports"]);
    if (args.count("scenarios")) scenarios = split(args["scenarios"]);
    if (args.count("cont-modes")) o.cont_modes = split(args["cont-modes"]);
    if (args.count("label")) o.label = args["label"];
    if (args.count("tls-cacert")) use_tls(args["tls-cacert"]);
    if (args.count("impl")) o.impl = args["impl"];
    o.iters = static_cast<int>(number(args, "iters", o.iters, 1, 1e6));
    o.warmup = static_cast<int>(number(args, "warmup", o.warmup, 0, 1e5));
    o.tput_workers = static_cast<int>(number(args, "tput-workers", o.tput_workers, 1, 4096));
    o.tput_duration_s = number(args, "tput-duration", o.tput_duration_s, 0.1, 60);
    o.cont_workers = static_cast<int>(number(args, "cont-workers", o.cont_workers, 2, 256));
    o.cont_duration_s = number(args, "cont-duration", o.cont_duration_s, 0.1, 60);
    o.hold_us = static_cast<int>(number(args, "hold-ms", o.hold_us / 1000.0, 0, 1000) * 1000);
    o.cont_wait_ms = static_cast<int>(number(args, "cont-wait-ms", o.cont_wait_ms, 0, 60000));
    o.permits = static_cast<int>(number(args, "permits", o.permits, 1, 1024));
    o.sem_workers = static_cast<int>(number(args, "sem-workers", o.sem_workers, 1, 256));
    o.sem_clients = static_cast<int>(number(args, "sem-clients", 0, 0, 256));
    o.sem_wait_ms = static_cast<int>(number(args, "sem-wait-ms", o.sem_wait_ms, 1, 60000));
    o.rw_readers = static_cast<int>(number(args, "rw-readers", o.rw_readers, 0, 256));
    o.rw_writers = static_cast<int>(number(args, "rw-writers", o.rw_writers, 0, 256));
    o.faulty = static_cast<int>(number(args, "faulty", o.faulty, 1, 4));
    o.held = static_cast<int>(number(args, "held", o.held, 1, 1e6));
    o.hold_threads = static_cast<int>(number(args, "hold-threads", o.hold_threads, 1, 64));
    o.lease_ms = static_cast<int>(number(args, "lease-ms", o.lease_ms, 300, 600000));
    o.window_s = number(args, "window", o.window_s, 0.1, 120);
    o.election_ttl_ms =
        static_cast<int>(number(args, "election-ttl-ms", o.election_ttl_ms, 100, 60000));
    o.election_rounds =
        static_cast<int>(number(args, "election-rounds", o.election_rounds, 1, 1000));
    o.ttl_ms = static_cast<int>(number(args, "ttl", o.ttl_ms, 100, 600000));
    o.alternate_floor = number(args, "alternate-floor", 0, 0, 1) != 0;
    max_seconds = number(args, "max-seconds", max_seconds, 1, 3600);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "redlock_scenarios: %s\n%s", e.what(), kUsage);
    return 2;
  }

  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGHUP, &sa, nullptr);

  // The hard limit: whatever happens, paused servers are resumed and the process ends.
  std::mutex wd_mutex;
  std::condition_variable wd_cv;
  bool wd_done = false;
  std::thread watchdog([&] {
    std::unique_lock<std::mutex> lock(wd_mutex);
    if (!wd_cv.wait_for(lock, std::chrono::duration<double>(max_seconds),
                        [&] { return wd_done; })) {
      resume_paused();
      std::fprintf(stderr, "redlock_scenarios: exceeded --max-seconds %.0f, exiting\n",
                   max_seconds);
      std::fflush(stdout);
      _exit(3);
    }
  });

  int rc = 0;
  auto t0 = Clock::now();
  for (const auto& s : scenarios) {
    try {
      if (s == "uncontended_latency")
        uncontended_latency(o);
      else if (s == "readme_call")
        readme_call(o);
      else if (s == "throughput")
        throughput(o);
      else if (s == "contention")
        contention(o);
      else if (s == "semaphore")
        semaphore(o);
      else if (s == "rw_cycle")
        rw_cycle(o);
      else if (s == "rw_contention")
        rw_contention(o);
      else if (s == "bad_minority")
        bad_minority(o);
      else if (s == "watchdog_scale")
        watchdog_scale(o);
      else if (s == "floor_latency")
        floor_latency(o);
      else if (s == "floor_throughput")
        floor_throughput(o);
      else if (s == "handoff_floor")
        handoff_floor(o);
      else if (s == "election_failover")
        election_failover(o);
      else
        throw std::invalid_argument("unknown scenario " + s);
    } catch (const std::exception& e) {
      resume_paused();
      std::fprintf(stderr, "redlock_scenarios: %s failed: %s\n", s.c_str(), e.what());
      rc = 1;
    }
  }
  resume_paused();
  std::fprintf(stderr, "redlock_scenarios: nodes=%zu %s done in %.1fs\n", o.ports.size(),
               o.label.c_str(), std::chrono::duration<double>(Clock::now() - t0).count());
  {
    std::lock_guard<std::mutex> lock(wd_mutex);
    wd_done = true;
  }
  wd_cv.notify_all();
  watchdog.join();
  return rc;
}
