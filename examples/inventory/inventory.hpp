// The inventory scene: one stock, sold by several shop processes at once.
//   shop.cpp   one shop process: threads that each buy until the purchase requests run out
//   scene.cpp  the driver: runs the shops four ways and prints what each way did to the stock
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace inventory {

// How a purchase is protected.
enum class Way {
  none,     // not at all
  local,    // a std::mutex: one buyer at a time inside each process, not across processes
  redlock,  // a redlock-cpp lock over the lock nodes: one buyer at a time, everywhere
};

const char* name_of(Way way);
bool parse_way(const std::string& text, Way& way);

struct ShopOptions {
  Way way = Way::none;
  int shop = 0;         // this shop's number, for the sales log
  int threads = 4;      // buyers in this process
  std::string storage;  // redis://host:port of the storage Redis
  // The payment, between reading the stock and writing it back.
  std::chrono::milliseconds payment{2};
};

// Runs one shop until the requests are used up; prints its tally on stdout as one line:
// "sold=N sold_out=N failed=N locks=N". Lock nodes: REDLOCK_NODES. Returns the exit code.
int run_shop(const ShopOptions& options);

struct SceneOptions {
  std::string nodes;    // the lock nodes (REDLOCK_NODES form)
  std::string storage;  // the storage Redis, never one of the lock nodes
  long long stock = 1000;
  long long requests = 1500;
  int processes = 4;
  int threads = 4;
  std::chrono::milliseconds payment{2};
  // The fourth way kills two lock nodes once half of the stock is sold: these pids of
  // redis-servers (SIGKILL), or this shell command (e.g. `docker compose kill redis2 redis4`).
  std::vector<int> kill_pids;
  std::string kill_command;
  std::string report;  // a file for the results as key=value lines (tests)
};

// Runs the four ways and prints the table. Returns 0 when the redlock ways sold exactly the
// stock, 1 when not (a bug), 2 when the storage is one of the lock nodes.
int run_scene(const SceneOptions& options);

}  // namespace inventory
