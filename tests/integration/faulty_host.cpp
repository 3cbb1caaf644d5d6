// A host program for the SIGPIPE test: links the library, keeps SIGPIPE's default disposition
// (as most programs do), and runs acquires from eight clients, each on a thread of its own,
// against the given node list for the given time. Exits 0; dying of a signal is the failure the
// test looks for.
//   faulty_host NODE_LIST MILLISECONDS
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "redlock/redlock.hpp"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: faulty_host NODE_LIST MILLISECONDS\n");
    return 2;
  }
  ::signal(SIGPIPE, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);

  using namespace std::chrono_literals;
  redlock::Config config = redlock::Config::from_node_list(argv[1]);
  // The shortest back-off: connections to the closing nodes churn as fast as allowed. Every new
  // connection is another chance to write twice to a peer that has already closed.
  config.reconnect_min = 1ms;
  config.reconnect_max = 1ms;
  config.request_timeout = 100ms;
  auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(std::stol(argv[2]));
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&config, end, t] {
      redlock::Client client(config);
      while (std::chrono::steady_clock::now() < end)
        (void)client.try_acquire("res" + std::to_string(t));
    });
  for (auto& t : threads) t.join();
  return 0;
}
