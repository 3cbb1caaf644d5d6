// The smallest useful program: take a lock, work while it is valid, extend it, release it.
//   export REDLOCK_NODES=redis://127.0.0.1:7001,redis://127.0.0.1:7002,redis://127.0.0.1:7003
//   ./redlock_example_basic invoice-42
#include <chrono>
#include <iostream>
#include <thread>

#include "redlock/redlock.hpp"

int main(int argc, char** argv) {
  using namespace std::chrono_literals;
  const std::string resource = argc > 1 ? argv[1] : "example";
  try {
    redlock::Client client(redlock::Config::from_env());

    // Wait up to 2 s for the lock; hold it for at most 5 s unless extended.
    auto acquired = client.acquire(resource, 5000ms, 2000ms);
    if (!acquired) {
      // not_acquired: someone else holds it; no_quorum: too few nodes reachable.
      std::cerr << "could not lock " << resource << ": " << acquired.message() << '\n';
      return 1;
    }
    redlock::Lock& lock = acquired.lock;
    std::cout << "locked " << resource << " with " << acquired.votes.yes() << "/"
              << acquired.votes.nodes.size() << " nodes, valid for " << lock.validity_left().count()
              << " ms\n";

    for (int step = 0; step < 3; ++step) {
      if (!lock.valid()) {  // never act on a lock whose validity window has closed
        std::cerr << "lock expired: stopping\n";
        return 1;
      }
      std::this_thread::sleep_for(100ms);  // ... one step of the critical section ...
      if (auto extended = client.extend(lock); !extended)
        std::cerr << "extend failed (" << extended.message() << "); still valid for "
                  << lock.validity_left().count() << " ms\n";
    }

    auto released = client.release(lock);
    std::cout << "released on " << released.released << " nodes\n";
    return released ? 0 : 1;
  } catch (const redlock::Error& e) {  // bad configuration: names the bad part
    std::cerr << e.what() << '\n';
    return 2;
  }
}
