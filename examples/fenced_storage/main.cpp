// Kleppmann's case, and its cure: a holder is paused past its lease, another client takes the
// lock and writes; the first wakes up and writes too, with its stale fencing token. The lock
// alone cannot stop that late write; the fenced storage refuses it.
//
//   redlock_example_fenced --nodes redis://127.0.0.1:7001,... --storage 127.0.0.1:7000
// (--nodes defaults to $REDLOCK_NODES.) Exits 0 when the stale write was refused.
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <thread>

#include "fenced_storage.hpp"
#include "redlock/redlock.hpp"

int main(int argc, char** argv) {
  using namespace std::chrono_literals;
  std::string nodes = std::getenv("REDLOCK_NODES") ? std::getenv("REDLOCK_NODES") : "";
  std::string storage_at = "127.0.0.1:7000";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--nodes") == 0) nodes = argv[i + 1];
    if (std::strcmp(argv[i], "--storage") == 0) storage_at = argv[i + 1];
  }
  auto colon = storage_at.rfind(':');
  if (nodes.empty() || colon == std::string::npos) {
    std::cerr << "usage: redlock_example_fenced --nodes LIST --storage HOST:PORT\n";
    return 2;
  }
  redlock::Client client(redlock::Config::from_node_list(nodes));
  fenced::FencedStorage storage(storage_at.substr(0, colon),
                                std::stoi(storage_at.substr(colon + 1)));

  redlock::AcquireRequest request({"report"}, /*ttl=*/500ms, /*wait=*/2s);
  request.fencing = true;

  auto first = client.acquire(request);
  if (!first) return std::cerr << first.message() << '\n', 1;
  std::cout << "A holds 'report' with fencing token " << first.lock.fencing_token << '\n';
  std::cout << "A is paused for 800 ms (a GC pause, a swapped-out page, a stopped VM)...\n";
  std::this_thread::sleep_for(800ms);  // past A's lease: the lock moves on without A knowing

  auto second = client.acquire(request);
  if (!second) return std::cerr << second.message() << '\n', 1;
  std::cout << "B holds 'report' with fencing token " << second.lock.fencing_token << '\n';
  bool b_wrote = storage.write("report", "written by B", second.lock.fencing_token);
  std::cout << "B writes: " << (b_wrote ? "accepted" : "refused") << '\n';
  (void)client.release(second.lock);

  // A resumes and writes as if it still held the lock (it should have checked valid(), but a
  // pause can come between the check and the write).
  bool a_wrote = storage.write("report", "written by A", first.lock.fencing_token);
  std::cout << "A writes late with token " << first.lock.fencing_token << ": "
            << (a_wrote ? "ACCEPTED (stale write!)" : "refused, as it must be") << '\n';
  return b_wrote && !a_wrote ? 0 : 1;
}
