// A service that exposes redlock-cpp's metrics on /metrics (redlock::prometheus) while it takes
// and releases locks in a loop: some contended, some waited for, and now and then one lost on
// purpose (a short lease held without renewal, left to expire). Bounded in locks and in time.
//
//   redlock_example_metrics_service --nodes redis://127.0.0.1:6379,... --port 9464
//       [--port-file PATH] [--locks 200] [--seconds 30] [--interval-ms 20] [--lose-every 25]
//       [--linger-ms 0] [--release-late-every 0]
//
// --port 0 takes a free port; --port-file receives the port once /metrics is served.
// --linger-ms keeps serving /metrics that long after the last lock (for a last scrape).
// --release-late-every N: every N locks, a plain acquire() of 100 ms released after 150 ms,
// when its keys are gone: the README's first pattern losing its lock, counted as lost too.
#include <prometheus/exposer.h>
#include <prometheus/registry.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "redlock/prometheus.hpp"
#include "redlock/redlock.hpp"

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

struct Options {
  std::string nodes;
  std::string port = "9464";
  std::string port_file;
  long locks = 200;
  long seconds = 30;
  long interval_ms = 20;
  long lose_every = 25;
  long linger_ms = 0;
  long release_late_every = 0;
};

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "error: %s\nusage: redlock_example_metrics_service --nodes LIST --port PORT "
               "[--port-file PATH] [--locks N] [--seconds S] [--interval-ms MS] "
               "[--lose-every N] [--linger-ms MS] [--release-late-every N]\n",
               why);
  std::exit(2);
}

long number(const char* text) {
  char* end = nullptr;
  long v = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || v < 0) usage("a count or duration must be a number >= 0");
  return v;
}

Options parse(int argc, char** argv) {
  Options o;
  if (const char* env = std::getenv("REDLOCK_NODES")) o.nodes = env;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (i + 1 >= argc) usage(("missing value after " + a).c_str());
    const char* v = argv[++i];
    if (a == "--nodes")
      o.nodes = v;
    else if (a == "--port")
      o.port = std::to_string(number(v));
    else if (a == "--port-file")
      o.port_file = v;
    else if (a == "--locks")
      o.locks = number(v);
    else if (a == "--seconds")
      o.seconds = number(v);
    else if (a == "--interval-ms")
      o.interval_ms = number(v);
    else if (a == "--lose-every")
      o.lose_every = number(v);
    else if (a == "--linger-ms")
      o.linger_ms = number(v);
    else if (a == "--release-late-every")
      o.release_late_every = number(v);
    else
      usage(("unknown option " + a).c_str());
  }
  if (o.nodes.empty()) usage("no nodes: give --nodes or set REDLOCK_NODES");
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt = parse(argc, argv);
  try {
    auto registry = std::make_shared<prometheus::Registry>();
    // Loopback only: metrics are for the local scraper (or a proxy), not for the network.
    prometheus::Exposer exposer("127.0.0.1:" + opt.port);
    exposer.RegisterCollectable(registry);
    auto ports = exposer.GetListeningPorts();
    if (ports.empty()) throw std::runtime_error("the exposer is not listening");
    if (!opt.port_file.empty()) {
      // Written whole, then renamed: a reader never sees half a number.
      std::string tmp = opt.port_file + ".tmp";
      std::ofstream(tmp) << ports.front() << "\n";
      std::rename(tmp.c_str(), opt.port_file.c_str());
    }
    std::printf("serving /metrics on 127.0.0.1:%d\n", ports.front());
    std::fflush(stdout);

    redlock::Config config = redlock::Config::from_node_list(opt.nodes);
    config.observer = std::make_shared<redlock::prometheus::MetricsObserver>(registry);
    redlock::Client client(config);

    const auto end = Clock::now() + std::chrono::seconds(opt.seconds);
    std::vector<redlock::HeldLock> left_to_expire;  // kept (not released) until they are lost
    long taken = 0, lost_on_purpose = 0;
    for (long i = 0; i < opt.locks && Clock::now() < end; ++i) {
      const std::string resource = "metrics:demo:" + std::to_string(i % 4);
      auto r = client.try_acquire(resource, 1000ms);
      if (r) {
        ++taken;
        // Contention: a second try on a lock that is held is refused (not_acquired).
        (void)client.try_acquire(resource, 1000ms);
        // Every tenth lock, a short wait for it: it starts waiting, then gives up.
        if (i % 10 == 0) (void)client.acquire(resource, 1000ms, 30ms);
        (void)client.release(r.lock);
      }
      if (opt.lose_every > 0 && i % opt.lose_every == 0) {
        // A lease of 100 ms with no renewal (a ttl is given), never released: the watchdog
        // declares it lost (expired) before its validity ends.
        redlock::AcquireRequest request({"metrics:lease:" + std::to_string(i)}, 100ms);
        auto h = client.hold(std::move(request));
        if (h) {
          left_to_expire.push_back(std::move(h.lock));
          ++lost_on_purpose;
        }
      }
      if (opt.release_late_every > 0 && i % opt.release_late_every == 0) {
        auto late =
            client.acquire(redlock::AcquireRequest({"metrics:late:" + std::to_string(i)}, 100ms));
        if (late) {
          std::this_thread::sleep_for(150ms);  // worked past its validity
          (void)client.release(late.lock);     // not_held: counted as lost, released_after_expiry
          ++lost_on_purpose;
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(opt.interval_ms));
    }
    auto linger_end = std::min(end, Clock::now() + std::chrono::milliseconds(opt.linger_ms));
    while (Clock::now() < linger_end) std::this_thread::sleep_for(10ms);
    std::printf("taken %ld locks, let %ld expire\n", taken, lost_on_purpose);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
