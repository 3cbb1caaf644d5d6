// The driver: fills the stock, starts the shop processes one way after the other, checks what
// each way left in the storage Redis, and prints one table row per way.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <set>
#include <thread>

#include "inventory.hpp"
#include "redlock/redlock.hpp"
#include "storage.hpp"

namespace inventory {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// Whatever happens, a way ends after this long: its shops are then killed.
constexpr auto kWayLimit = 120s;

struct Shop {
  pid_t pid = -1;
  int out = -1;  // read end of its stdout
  int status = 0;
  bool done = false;
};

struct Row {
  std::string label;
  Way way = Way::none;
  bool kill = false;  // kill two lock nodes mid-run
  // What the shops said.
  long long sold = 0, sold_out = 0, failed = 0, locks = 0;
  bool shops_ok = true;
  // What the storage holds afterwards.
  long long stock = 0, logged = 0, distinct_items = 0;
  double seconds = 0;
  long long killed_after = -1;  // sales logged when the nodes were killed
  bool timed_out = false;
};

// Starts `inventory shop ...` (this same program) with its stdout on a pipe.
Shop start_shop(const SceneOptions& o, Way way, int number) {
  std::vector<std::string> args = {"inventory",    "shop",
                                   "--way",        name_of(way),
                                   "--shop",       std::to_string(number),
                                   "--threads",    std::to_string(o.threads),
                                   "--payment-ms", std::to_string(o.payment.count()),
                                   "--storage",    o.storage};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
  Shop shop;
  shop.pid = ::fork();
  if (shop.pid < 0) throw std::runtime_error("fork failed");
  if (shop.pid == 0) {
    ::dup2(fds[1], 1);
    ::close(fds[0]);
    ::close(fds[1]);
    ::execv("/proc/self/exe", argv.data());
    ::_exit(127);
  }
  ::close(fds[1]);
  shop.out = fds[0];
  return shop;
}

std::string read_all(int fd) {
  std::string text;
  char buf[512];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) {
      text.append(buf, static_cast<std::size_t>(n));
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      break;
    }
  }
  ::close(fd);
  return text;
}

// Adds "sold=N sold_out=N failed=N locks=N" to the row; false if the line is not there.
bool add_tally(const std::string& line, Row& row) {
  long long sold, sold_out, failed, locks;
  if (std::sscanf(line.c_str(), "sold=%lld sold_out=%lld failed=%lld locks=%lld", &sold, &sold_out,
                  &failed, &locks) != 4)
    return false;
  row.sold += sold;
  row.sold_out += sold_out;
  row.failed += failed;
  row.locks += locks;
  return true;
}

void run_way(const SceneOptions& o, Storage& db, Row& row) {
  db.command({"DEL", kSales});
  db.command({"SET", kStock, std::to_string(o.stock)});
  db.command({"SET", kRequests, std::to_string(o.requests)});

  const auto start = Clock::now();
  std::vector<Shop> shops;
  for (int i = 0; i < o.processes; ++i) shops.push_back(start_shop(o, row.way, i + 1));

  // Wait for the shops; in the fourth way, kill the two lock nodes once half is sold.
  const auto deadline = start + kWayLimit;
  std::size_t running = shops.size();
  while (running > 0) {
    for (auto& s : shops) {
      if (!s.done && ::waitpid(s.pid, &s.status, WNOHANG) == s.pid) {
        s.done = true;
        --running;
      }
    }
    if (row.kill && row.killed_after < 0) {
      const long long logged = db.number({"LLEN", kSales});
      if (logged >= o.stock / 2) {
        for (int pid : o.kill_pids) ::kill(pid, SIGKILL);
        if (!o.kill_command.empty() && std::system(o.kill_command.c_str()) != 0)
          std::fprintf(stderr, "the kill command failed: %s\n", o.kill_command.c_str());
        row.killed_after = logged;
      }
    }
    if (running > 0 && Clock::now() > deadline) {
      row.timed_out = true;
      for (auto& s : shops)
        if (!s.done) ::kill(s.pid, SIGKILL);
      for (auto& s : shops)
        if (!s.done) ::waitpid(s.pid, &s.status, 0), s.done = true;
      break;
    }
    std::this_thread::sleep_for(5ms);
  }
  row.seconds = std::chrono::duration<double>(Clock::now() - start).count();

  for (std::size_t i = 0; i < shops.size(); ++i) {
    const Shop& s = shops[i];
    const std::string out = read_all(s.out);
    const bool exited_ok = WIFEXITED(s.status) && WEXITSTATUS(s.status) == 0;
    if (!add_tally(out, row) || !exited_ok) {
      row.shops_ok = false;
      if (WIFSIGNALED(s.status))
        std::fprintf(stderr, "%s: shop %zu (pid %d) was killed by signal %d (%s)\n",
                     row.label.c_str(), i + 1, static_cast<int>(s.pid), WTERMSIG(s.status),
                     ::strsignal(WTERMSIG(s.status)));
      else
        std::fprintf(stderr, "%s: shop %zu (pid %d) exited with status %d\n", row.label.c_str(),
                     i + 1, static_cast<int>(s.pid), WEXITSTATUS(s.status));
    }
  }

  row.stock = db.number({"GET", kStock});
  row.logged = db.number({"LLEN", kSales});
  // Each entry is "item N to shop S thread T", N being the stock the buyer read: under a lock
  // that holds, every item from the stock down to 1 is sold exactly once.
  Storage::Reply log = db.command({"LRANGE", kSales, "0", "-1"});
  std::set<long long> items;
  for (std::size_t i = 0; i < log->elements; ++i) {
    long long item = 0;
    if (std::sscanf(log->element[i]->str, "item %lld", &item) == 1) items.insert(item);
  }
  row.distinct_items = static_cast<long long>(items.size());
}

bool exact(const SceneOptions& o, const Row& r) {
  return !r.timed_out && r.shops_ok && r.sold == o.stock && r.logged == o.stock && r.stock == 0 &&
         r.distinct_items == o.stock;
}

std::string verdict(const SceneOptions& o, const Row& r) {
  if (r.timed_out) return "TIMED OUT";
  const long long over = r.logged - o.stock;
  if (over > 0) return "OVERSOLD by " + std::to_string(over);
  if (exact(o, r)) return "ok: exactly " + std::to_string(o.stock);
  std::string why = r.logged < o.stock
                        ? "UNDERSOLD: " + std::to_string(o.stock - r.logged) + " not sold"
                        : "WRONG";
  if (r.distinct_items < r.logged) why += ", an item sold twice";
  if (r.sold != r.logged || r.stock != o.stock - r.logged) why += ", counts disagree";
  if (!r.shops_ok) why += ", a shop failed";
  return why;
}

void print_row(const Row& r, const std::string& result) {
  char locks[32] = "-";
  if (r.way == Way::redlock) std::snprintf(locks, sizeof locks, "%.0f", r.locks / r.seconds);
  std::printf("%-32s %6lld %6lld %6lld %6.1f s %8s  %s\n", r.label.c_str(), r.sold, r.stock,
              r.logged, r.seconds, locks, result.c_str());
  std::fflush(stdout);
}

void write_report(const SceneOptions& o, const std::vector<Row>& rows) {
  std::ofstream f(o.report);
  f << "stock_initial=" << o.stock << "\nrequests=" << o.requests << '\n';
  for (const auto& r : rows) {
    const std::string k =
        r.way == Way::redlock ? (r.kill ? "redlock_killed" : "redlock") : name_of(r.way);
    f << k << ".sold=" << r.sold << '\n'
      << k << ".stock=" << r.stock << '\n'
      << k << ".logged=" << r.logged << '\n'
      << k << ".distinct_items=" << r.distinct_items << '\n'
      << k << ".failed=" << r.failed << '\n'
      << k << ".locks=" << r.locks << '\n'
      << k << ".shops_ok=" << r.shops_ok << '\n'
      << k << ".timed_out=" << r.timed_out << '\n'
      << k << ".killed_after=" << r.killed_after << '\n'
      << k << ".seconds=" << r.seconds << '\n';
  }
}

}  // namespace

int run_scene(const SceneOptions& o) {
  const auto lock_nodes = redlock::Config::from_node_list(o.nodes).nodes;
  const auto storage_at = redlock::Config::from_node_list(o.storage).nodes.at(0);
  for (const auto& n : lock_nodes)
    if (n.host == storage_at.host && n.port == storage_at.port) {
      std::fprintf(stderr,
                   "the storage Redis %s is also a lock node: give it a server of its own\n",
                   storage_at.to_string().c_str());
      return 2;
    }
  ::setenv("REDLOCK_NODES", o.nodes.c_str(), 1);  // for the shops
  Storage db(storage_at);

  const double pay_ms = static_cast<double>(o.payment.count());
  std::printf(
      "The inventory scene: %lld items, %lld purchase requests from %d shop processes x %d "
      "threads.\nA purchase reads the stock, checks it, pays (simulated: %g to %g ms), writes "
      "back the stock\nminus one and logs the sale. The stock is kept in its own Redis at %s.\n\n",
      o.stock, o.requests, o.processes, o.threads, pay_ms / 2, pay_ms * 3 / 2,
      storage_at.to_string().c_str());

  const std::string n = std::to_string(lock_nodes.size());
  std::vector<Row> rows = {
      {"no lock", Way::none},
      {"std::mutex in each process", Way::local},
      {"redlock-cpp, " + n + " lock nodes", Way::redlock},
      {"redlock-cpp, 2 of " + n + " nodes killed", Way::redlock, true},
  };
  const bool can_kill = o.kill_pids.size() == 2 || !o.kill_command.empty();
  if (!can_kill) rows.pop_back();  // nothing to kill: no fourth way

  std::printf("%-32s %6s %6s %6s %8s %8s  %s\n", "way", "sold", "stock", "logged", "time",
              "locks/s", "result");
  for (auto& row : rows) {
    run_way(o, db, row);
    print_row(row, verdict(o, row));
  }

  std::printf(
      "\nsold: counted by the shops; stock: what the storage says is left; logged: sales in the "
      "log.\n");
  if (rows[0].logged > o.stock)
    std::printf(
        "Without a lock that every process sees, buyers read the same stock during a payment and "
        "each\nsells the item: more sold than stocked, and the stock left is wrong as well.\n");
  const bool killed = rows.size() == 4 && rows[3].killed_after >= 0;
  if (killed) {
    if (o.kill_command.empty())
      std::printf("Fourth way: lock nodes (pids %d, %d) killed with SIGKILL after %lld sales.",
                  o.kill_pids[0], o.kill_pids[1], rows[3].killed_after);
    else
      std::printf("Fourth way: `%s` ran after %lld sales.", o.kill_command.c_str(),
                  rows[3].killed_after);
    const std::size_t left = lock_nodes.size() - 2, quorum = lock_nodes.size() / 2 + 1;
    std::printf(
        "\nWith %zu lock nodes left, every grant needs %zu of them: contenders collide more "
        "often,\nhence fewer locks/s.\n",
        left, quorum);
  } else if (!can_kill) {
    std::printf("Fourth way skipped: give --kill-pids PID,PID or --kill-command CMD.\n");
  }

  bool ok = true;
  for (const auto& r : rows) {
    if (r.way == Way::redlock && !exact(o, r)) ok = false;
    if (r.failed > 0)
      std::printf("%s: %lld requests not served (no lock; see stderr).\n", r.label.c_str(),
                  r.failed);
  }
  if (!ok)
    std::printf(
        "\nredlock-cpp did NOT sell exactly the stock. That is a bug in the library: please "
        "report it with this output.\n");
  if (!o.report.empty()) write_report(o, rows);
  return ok ? 0 : 1;
}

}  // namespace inventory
