// The inventory scene: a stock sold by several shop processes at once, four ways: without a
// lock, with a lock local to each process, with redlock-cpp, and with redlock-cpp while two of
// its five lock nodes are killed. `bash tools/demo.sh` starts the Redis servers and runs it:
//
//   export REDLOCK_NODES=redis://127.0.0.1:7001,...,redis://127.0.0.1:7005
//   ./redlock_example_inventory --storage redis://127.0.0.1:7000 [--kill-pids PID,PID]
//
// `redlock_example_inventory shop ...` is one shop process; the scene starts those itself.
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>

#include "inventory.hpp"
#include "redlock/errors.hpp"

namespace {

constexpr const char* kUsage = R"(usage:
  redlock_example_inventory [options]       run the scene (lock nodes: REDLOCK_NODES)
    --storage URL        the shop's own Redis, redis://host:port (required; not a lock node)
    --nodes LIST         lock nodes (default: REDLOCK_NODES)
    --kill-pids P1,P2    pids of two lock-node redis-servers to kill in the fourth way
    --kill-command CMD   or a shell command that kills two of them (the way is skipped
                         without either)
    --stock N            items in stock (1000)
    --requests N         purchase requests (1500)
    --processes N        shop processes per way (4)
    --threads N          buyer threads per shop (4)
    --payment-ms N       typical payment, between reading and writing the stock (2);
                         each takes from half to one and a half times that
    --quick              stock 100, requests 150, 3 processes x 3 threads
    --report FILE        also write the results as key=value lines
  redlock_example_inventory shop --way none|local|redlock --storage URL [--shop N]
    [--threads N] [--payment-ms N]      one shop process (the scene starts these)
)";

// A positive number, or exit 2.
long long positive(const std::string& option, const std::string& text) {
  try {
    std::size_t used = 0;
    long long n = std::stoll(text, &used);
    if (used == text.size() && n > 0) return n;
  } catch (const std::exception&) {
  }
  std::cerr << option << ": expected a positive number, got '" << text << "'\n";
  std::exit(2);
}

int main_shop(int argc, char** argv) {
  inventory::ShopOptions o;
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) {
      std::cerr << kUsage;
      return 2;
    }
    const std::string value = argv[++i];
    if (arg == "--way" && inventory::parse_way(value, o.way)) {
    } else if (arg == "--shop") {
      o.shop = static_cast<int>(positive(arg, value));
    } else if (arg == "--threads") {
      o.threads = static_cast<int>(positive(arg, value));
    } else if (arg == "--payment-ms") {
      o.payment = std::chrono::milliseconds(positive(arg, value));
    } else if (arg == "--storage") {
      o.storage = value;
    } else {
      std::cerr << kUsage;
      return 2;
    }
  }
  if (o.storage.empty()) {
    std::cerr << kUsage;
    return 2;
  }
  return inventory::run_shop(o);
}

int main_scene(int argc, char** argv) {
  inventory::SceneOptions o;
  if (const char* nodes = std::getenv("REDLOCK_NODES")) o.nodes = nodes;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--quick") {
      o.stock = 100;
      o.requests = 150;
      o.processes = 3;
      o.threads = 3;
      continue;
    }
    if (arg == "-h" || arg == "--help") {
      std::cout << kUsage;
      return 0;
    }
    if (i + 1 >= argc) {
      std::cerr << kUsage;
      return 2;
    }
    const std::string value = argv[++i];
    if (arg == "--storage") {
      o.storage = value;
    } else if (arg == "--nodes") {
      o.nodes = value;
    } else if (arg == "--kill-pids") {
      std::istringstream list(value);
      for (std::string pid; std::getline(list, pid, ',');) {
        const auto n = positive(arg, pid);
        if (n == 1 || n == ::getpid()) {
          std::cerr << arg << ": will not kill pid " << n << '\n';
          return 2;
        }
        o.kill_pids.push_back(static_cast<int>(n));
      }
      if (o.kill_pids.size() != 2) {
        std::cerr << arg << ": expected two pids\n";
        return 2;
      }
    } else if (arg == "--kill-command") {
      o.kill_command = value;
    } else if (arg == "--stock") {
      o.stock = positive(arg, value);
    } else if (arg == "--requests") {
      o.requests = positive(arg, value);
    } else if (arg == "--processes") {
      o.processes = static_cast<int>(positive(arg, value));
    } else if (arg == "--threads") {
      o.threads = static_cast<int>(positive(arg, value));
    } else if (arg == "--payment-ms") {
      o.payment = std::chrono::milliseconds(positive(arg, value));
    } else if (arg == "--report") {
      o.report = value;
    } else {
      std::cerr << kUsage;
      return 2;
    }
  }
  if (o.storage.empty() || o.nodes.empty()) {
    std::cerr << "need --storage URL and lock nodes (REDLOCK_NODES or --nodes)\n" << kUsage;
    return 2;
  }
  return inventory::run_scene(o);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    if (argc > 1 && std::string(argv[1]) == "shop") return main_shop(argc, argv);
    return main_scene(argc, argv);
  } catch (const redlock::Error& e) {  // a bad node list or storage address
    std::cerr << e.what() << '\n';
    return 2;
  } catch (const std::exception& e) {  // a Redis server that cannot be reached
    std::cerr << e.what() << '\n';
    return 1;
  }
}
