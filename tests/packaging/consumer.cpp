// What a consumer of the installed (or embedded) library does: build a configuration, try a lock
// on a node that is not there (a closed loopback port), and get a refusal rather than a crash.
// Enough to prove that headers, library, hiredis and libuv were all found and linked. And the
// versions agree: the headers', the library's (redlock::version()) and, where the build system
// says it (REDLOCK_EXPECTED_VERSION), the package's.
#include <chrono>
#include <cstring>
#include <iostream>

#include <redlock/redlock.hpp>

int main() {
  if (std::strcmp(redlock::version(), REDLOCK_VERSION_STRING) != 0) {
    std::cerr << "library " << redlock::version() << ", headers " << REDLOCK_VERSION_STRING << '\n';
    return 1;
  }
#ifdef REDLOCK_EXPECTED_VERSION
  if (std::strcmp(REDLOCK_EXPECTED_VERSION, REDLOCK_VERSION_STRING) != 0) {
    std::cerr << "package " << REDLOCK_EXPECTED_VERSION << ", headers " << REDLOCK_VERSION_STRING
              << '\n';
    return 1;
  }
#endif
  redlock::Config config = redlock::Config::from_node_list("redis://127.0.0.1:1");
  config.connect_timeout = std::chrono::milliseconds(500);
  redlock::Client client(config);
  redlock::AcquireResult result = client.try_acquire("packaging", std::chrono::milliseconds(1000));
  if (result) {
    std::cerr << "acquired a lock on a closed port\n";
    return 1;
  }
  std::cout << "redlock consumer " << redlock::version() << " ok: " << result.message() << '\n';
  return 0;
}
