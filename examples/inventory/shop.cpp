// One shop process: several buyer threads take purchase requests from a shared counter and
// serve each one with read, check, pay, decrement, record. This is the part to copy from: the
// purchase is the same function in every way; only what is held around it changes.
#include <atomic>
#include <functional>
#include <iostream>
#include <mutex>
#include <optional>
#include <random>
#include <thread>
#include <vector>

#include "inventory.hpp"
#include "redlock/redlock.hpp"
#include "storage.hpp"

namespace inventory {
namespace {

using namespace std::chrono_literals;

enum class Sale { sold, sold_out, aborted };

// One purchase, written the way services often are: read the stock, check it, take the payment,
// write back what was read minus one, record the sale. Without a lock around it, two buyers can
// read the same stock, both see an item left, and both sell it while the stock goes down by
// one: the payment between the read and the write makes that window wide.
// `still_locked` is asked just before the first write: a lock whose validity has ended (a long
// pause, a slow payment) protects nothing any more, so the sale is abandoned instead.
Sale purchase(Storage& db, const std::string& buyer, std::chrono::microseconds payment,
              const std::function<bool()>& still_locked) {
  const long long stock = db.number({"GET", kStock});  // read
  if (stock <= 0) return Sale::sold_out;               // check
  std::this_thread::sleep_for(payment);                // pay (simulated)
  if (!still_locked()) return Sale::aborted;
  db.command({"SET", kStock, std::to_string(stock - 1)});                           // decrement
  db.command({"RPUSH", kSales, "item " + std::to_string(stock) + " to " + buyer});  // record
  return Sale::sold;
}

struct Tally {
  std::atomic<int> sold{0}, sold_out{0}, failed{0}, locks{0};
  void count(Sale s) {
    if (s == Sale::sold) ++sold;
    if (s == Sale::sold_out) ++sold_out;
    if (s == Sale::aborted) ++failed;
  }
};

// One buyer thread: serves requests until none are left.
void buyer(const ShopOptions& o, const redlock::NodeAddress& storage, const std::string& name,
           redlock::Client* client, std::mutex& local_mutex, Tally& tally) {
  Storage db(storage);
  const auto always = [] { return true; };
  // Payments take longer or shorter: from half to one and a half times o.payment.
  std::mt19937 random(std::random_device{}());
  const auto typical = std::chrono::duration_cast<std::chrono::microseconds>(o.payment).count();
  std::uniform_int_distribution<long long> spread(typical / 2, typical * 3 / 2);
  const auto payment = [&] { return std::chrono::microseconds(spread(random)); };
  // Bounded: every turn takes one of a finite number of requests.
  while (db.number({"DECR", kRequests}) >= 0) {
    // Sold out is final (the stock never grows again): refusing needs no lock.
    if (db.number({"GET", kStock}) <= 0) {
      tally.count(Sale::sold_out);
      continue;
    }
    switch (o.way) {
      case Way::none:
        tally.count(purchase(db, name, payment(), always));
        break;

      case Way::local: {
        std::lock_guard<std::mutex> guard(local_mutex);  // other processes do not see it
        tally.count(purchase(db, name, payment(), always));
        break;
      }

      case Way::redlock: {
        // Wait up to 30 s for the lock; it expires after 2 s if this process dies holding it.
        redlock::AcquireResult r = client->acquire("shop:stock", 2s, 30s);
        if (!r) {  // not a crash: the customer gets an error, the request is not served
          std::cerr << name << ": no lock: " << r.message() << '\n';
          ++tally.failed;
          break;
        }
        ++tally.locks;
        tally.count(purchase(db, name, payment(), [&] { return r.lock.valid(); }));
        // Compare-and-delete: never removes another buyer's lock. Should it fail (a node down),
        // the lock still expires with its 2 s ttl; nothing else to do here.
        client->release(r.lock);
        break;
      }
    }
  }
}

}  // namespace

const char* name_of(Way way) {
  switch (way) {
    case Way::none:
      return "none";
    case Way::local:
      return "local";
    case Way::redlock:
      return "redlock";
  }
  return "?";
}

bool parse_way(const std::string& text, Way& way) {
  for (Way w : {Way::none, Way::local, Way::redlock})
    if (text == name_of(w)) {
      way = w;
      return true;
    }
  return false;
}

int run_shop(const ShopOptions& o) {
  const redlock::NodeAddress storage = redlock::Config::from_node_list(o.storage).nodes.at(0);
  // One Client per process, shared by all its threads.
  std::optional<redlock::Client> client;
  if (o.way == Way::redlock) client.emplace(redlock::Config::from_env());

  std::mutex local_mutex;
  Tally tally;
  std::vector<std::thread> threads;
  std::atomic<bool> broken{false};
  for (int t = 0; t < o.threads; ++t) {
    const std::string name = "shop " + std::to_string(o.shop) + " thread " + std::to_string(t);
    threads.emplace_back([&, name] {
      try {
        buyer(o, storage, name, client ? &*client : nullptr, local_mutex, tally);
      } catch (const std::exception& e) {  // storage unreachable: stop this buyer, say so
        std::cerr << name << ": " << e.what() << '\n';
        broken = true;
      }
    });
  }
  for (auto& t : threads) t.join();

  std::cout << "sold=" << tally.sold << " sold_out=" << tally.sold_out << " failed=" << tally.failed
            << " locks=" << tally.locks << std::endl;
  return broken ? 1 : 0;
}

}  // namespace inventory
