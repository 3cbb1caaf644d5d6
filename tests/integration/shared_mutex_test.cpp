// The read-write lock on real servers (docs/proposal-kinds.md, "The read-write lock"): readers
// share the resource with each other and never with a writer; a writer is a mutex holder of the
// resource's lock key. Three nodes, quorum two.
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/keys.hpp"
#include "redis_server.hpp"
#include "redlock/redlock.hpp"
#include "redlock/shared_mutex.hpp"
#include "test_config.hpp"

namespace redlock {
namespace {

using namespace std::chrono_literals;
using test::eventually;
using test::RedisCluster;

AcquireRequest reader(std::string resource = "doc", Milliseconds ttl = 5000ms,
                      Milliseconds wait = 0ms) {
  AcquireRequest r({std::move(resource)}, ttl, wait);
  r.shared = true;
  return r;
}

AcquireRequest writer(std::string resource = "doc", Milliseconds ttl = 5000ms,
                      Milliseconds wait = 0ms) {
  return AcquireRequest({std::move(resource)}, ttl, wait);
}

std::string readers_key(const std::string& lock_key = "redlock:doc") {
  return detail::aux_key(lock_key, detail::kReaders);
}

TEST(ReadWriteLock, TwoReadersShare) {
  RedisCluster cluster(3);
  Client c(test::fast_config(cluster));
  ASSERT_TRUE(eventually([&] { return test::connected_to_all(c); }, 5s));
  auto a = c.acquire(reader());
  ASSERT_TRUE(a) << a.message();
  EXPECT_TRUE(a.lock.shared);
  auto b = c.acquire(reader());
  ASSERT_TRUE(b) << b.message();
  EXPECT_NE(a.lock.token, b.lock.token);
  // Every node holds the readers' marker and both readers (the verdict came at a quorum: the
  // third node's grant may land just after).
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_TRUE(eventually([&] {
      return cluster[i].command({"ZCARD", readers_key()}) == "2";
    })) << "node "
        << i;
    EXPECT_EQ(cluster[i].command({"GET", "redlock:doc"}), std::string(detail::kReadersMarker));
  }
  auto ra = c.release(a.lock);
  EXPECT_TRUE(ra) << ra.message();
  EXPECT_GE(ra.released, 2u);
  // The other reader is still held, and so is the marker.
  auto ext = c.extend(b.lock);
  EXPECT_TRUE(ext) << ext.message();
  for (std::size_t i = 0; i < 3; ++i)
    EXPECT_EQ(cluster[i].command({"EXISTS", "redlock:doc"}), "1") << "node " << i;
  ASSERT_TRUE(c.release(b.lock));
  // The last reader gone, so is the marker.
  for (std::size_t i = 0; i < 3; ++i)
    EXPECT_TRUE(eventually([&] {
      return cluster[i].command({"EXISTS", "redlock:doc"}) == "0";
    })) << "node "
        << i;
}

TEST(ReadWriteLock, AWriterIsRefusedWhileAReaderHoldsAndGrantedAfterItsRelease) {
  RedisCluster cluster(3);
  Client c(test::fast_config(cluster));
  auto r = c.acquire(reader());
  ASSERT_TRUE(r) << r.message();
  auto w = c.try_acquire("doc", 5000ms);
  EXPECT_EQ(w.error, Errc::not_acquired) << w.message();
  // Also the waiting form, which goes through the script and the line.
  auto w2 = c.acquire(writer("doc", 5000ms, 100ms));
  EXPECT_EQ(w2.error, Errc::not_acquired) << w2.message();
  ASSERT_TRUE(c.release(r.lock));
  auto w3 = c.try_acquire("doc", 5000ms);
  ASSERT_TRUE(w3) << w3.message();
  EXPECT_FALSE(w3.lock.shared);
  EXPECT_TRUE(c.release(w3.lock));
}

TEST(ReadWriteLock, AReaderIsRefusedWhileAWriterHolds) {
  RedisCluster cluster(3);
  Client c(test::fast_config(cluster));
  auto w = c.try_acquire("doc", 5000ms);
  ASSERT_TRUE(w) << w.message();
  auto r = c.acquire(reader());
  EXPECT_EQ(r.error, Errc::not_acquired) << r.message();
  auto r2 = c.acquire(reader("doc", 5000ms, 100ms));
  EXPECT_EQ(r2.error, Errc::not_acquired) << r2.message();
  // Nothing of the refused readers is left on the nodes.
  for (std::size_t i = 0; i < 3; ++i)
    EXPECT_TRUE(eventually([&] {
      return cluster[i].command({"ZCARD", readers_key()}) == "0";
    })) << "node "
        << i;
  ASSERT_TRUE(c.release(w.lock));
  auto r3 = c.acquire(reader());
  ASSERT_TRUE(r3) << r3.message();
  EXPECT_TRUE(c.release(r3.lock));
}

TEST(ReadWriteLock, BadRequestsAreTypedErrors) {
  RedisCluster cluster(3);
  Client c(test::fast_config(cluster));
  auto permit = reader();
  permit.permits = 2;
  EXPECT_EQ(c.acquire(permit).error, Errc::invalid_argument);
  auto two = reader();
  two.resources.push_back("other");
  EXPECT_EQ(c.acquire(two).error, Errc::invalid_argument);
}

// --- redlock::SharedMutex ---------------------------------------------------------------------

// A config whose held locks are renewed every 300 ms, and whose waiters would only give up on
// notices after a long fallback: a prompt wake-up below is a notice or a turn, never a timer.
Config held_config(const RedisCluster& cluster, Milliseconds lease = 900ms) {
  Config c = test::fast_config(cluster);
  c.watchdog_lease = lease;
  return c;
}

// Waiters whose fallback (the retry delay) is far longer than any wait below.
Config no_polling_config(const RedisCluster& cluster) {
  Config c = held_config(cluster, 20'000ms);
  c.retry_delay = 20'000ms;
  return c;
}

std::size_t in_line(RedisCluster& cluster, std::size_t node) {
  auto n = cluster[node].command({"ZCARD", detail::aux_key("redlock:doc", "queue")});
  return n.empty() || n[0] < '0' || n[0] > '9' ? 0 : std::stoul(n);
}

// Readers share, renewed while held (a hold twice as long as the lease stays valid).
TEST(SharedMutex, ReadersShareAndAreRenewedWhileHeld) {
  RedisCluster cluster(3);
  Client c(held_config(cluster, 600ms));
  ASSERT_TRUE(eventually([&] { return test::connected_to_all(c); }, 5s));
  SharedMutex m(c, "doc");
  std::atomic<int> inside{0}, most{0};
  auto read = [&] {
    std::shared_lock<SharedMutex> guard(m);
    EXPECT_TRUE(m.owns_shared());
    most = std::max(most.load(), ++inside);
    // Both readers inside at once (bounded wait), then held past two leases.
    EXPECT_TRUE(eventually([&] { return inside.load() == 2; }, 3s));
    most = std::max(most.load(), inside.load());
    std::this_thread::sleep_for(1200ms);
    EXPECT_TRUE(m.valid()) << "renewed while held";
    --inside;
  };
  std::thread a(read), b(read);
  a.join();
  b.join();
  EXPECT_EQ(most.load(), 2);
  EXPECT_FALSE(m.owns());
  EXPECT_TRUE(eventually([&] { return cluster.count_existing("redlock:doc") == 0; }));
}

TEST(SharedMutex, AWriterExcludesReadersAndWriters) {
  RedisCluster cluster(3);
  Client c(held_config(cluster));
  ASSERT_TRUE(eventually([&] { return test::connected_to_all(c); }, 5s));
  SharedMutex m(c, "doc");
  Mutex plain(c, "doc");
  std::unique_lock<SharedMutex> writer(m);
  EXPECT_TRUE(m.owns());
  EXPECT_FALSE(m.owns_shared());
  std::thread([&] {
    EXPECT_FALSE(m.try_lock_shared());
    EXPECT_FALSE(m.try_lock());
    EXPECT_FALSE(m.try_lock_shared_for(50ms));
    EXPECT_FALSE(plain.try_lock()) << "a writer is the resource's mutex holder";
  }).join();
  writer.unlock();
  std::thread([&] {
    ASSERT_TRUE(m.try_lock_shared());
    EXPECT_FALSE(plain.try_lock()) << "a reader excludes the resource's mutex";
    m.unlock_shared();
    ASSERT_TRUE(plain.try_lock());
    EXPECT_FALSE(m.try_lock_shared());
    plain.unlock();
  }).join();
  // Not reentrant: a second hold by the same thread is refused, never a wait on itself.
  std::shared_lock<SharedMutex> reader(m);
  EXPECT_FALSE(m.try_lock());
  EXPECT_THROW(m.lock_shared(), Error);
}

// A waiting writer holds back readers that come after it; when it releases, the readers that
// waited are woken together (by the line's turns, not by a timer: the fallback is far longer).
TEST(SharedMutex, AWaitingWriterHoldsNewReadersBackThenTheWaitingReadersAreServedTogether) {
  RedisCluster cluster(3);
  Client c(no_polling_config(cluster));
  ASSERT_TRUE(eventually([&] { return test::connected_to_all(c); }, 5s));
  SharedMutex m(c, "doc");
  std::promise<void> first_in;
  std::promise<void> first_out;
  std::thread first([&] {
    std::shared_lock<SharedMutex> guard(m);
    first_in.set_value();
    first_out.get_future().wait();
  });
  first_in.get_future().wait();
  std::atomic<bool> writer_in{false}, writer_holds{false};
  std::promise<void> writer_out;
  Clock::time_point writer_at{};
  std::thread writer([&] {
    std::unique_lock<SharedMutex> guard(m);
    writer_at = Clock::now();
    writer_holds = true;
    writer_in = true;
    writer_out.get_future().wait();
    writer_holds = false;  // before its release begins: no reader may be granted before this
    guard.unlock();
  });
  ASSERT_TRUE(eventually([&] { return in_line(cluster, 0) == 1 && in_line(cluster, 1) == 1; }, 3s));
  // A new reader is held back by the waiting writer.
  std::thread([&] { EXPECT_FALSE(m.try_lock_shared()); }).join();
  std::atomic<int> readers_in{0};
  std::vector<Clock::time_point> reader_at(2);
  std::promise<void> readers_out;
  auto out = readers_out.get_future().share();
  std::vector<std::thread> readers;
  for (int i = 0; i < 2; ++i)
    readers.emplace_back([&, i] {
      std::shared_lock<SharedMutex> guard(m);
      reader_at[i] = Clock::now();
      EXPECT_TRUE(writer_in.load() && !writer_holds.load()) << "a reader beside the writer";
      ++readers_in;
      out.wait();
    });
  ASSERT_TRUE(eventually([&] { return in_line(cluster, 0) == 3 && in_line(cluster, 1) == 3; }, 3s));
  EXPECT_EQ(readers_in.load(), 0);
  auto released = Clock::now();
  first_out.set_value();
  first.join();
  ASSERT_TRUE(eventually([&] { return writer_in.load(); }, 3s));
  EXPECT_LT(writer_at - released, 1500ms) << "the writer waited for a timer";
  EXPECT_EQ(readers_in.load(), 0);
  released = Clock::now();
  writer_out.set_value();
  ASSERT_TRUE(eventually([&] { return readers_in.load() == 2; }, 3s)) << "both readers at once";
  for (auto at : reader_at) EXPECT_LT(at - released, 1500ms) << "a reader waited for a timer";
  readers_out.set_value();
  for (auto& t : readers) t.join();
  writer.join();
}

// Writers cannot starve readers: a reader in line before the next writer is served before it.
TEST(SharedMutex, AReaderInLineBeforeTheNextWriterIsServedFirst) {
  RedisCluster cluster(3);
  Client c(no_polling_config(cluster));
  ASSERT_TRUE(eventually([&] { return test::connected_to_all(c); }, 5s));
  SharedMutex m(c, "doc");
  m.lock();
  std::mutex order_mutex;
  std::vector<std::string> order;
  auto note = [&](const std::string& who) {
    std::lock_guard<std::mutex> g(order_mutex);
    order.push_back(who);
  };
  std::thread reader([&] {
    std::shared_lock<SharedMutex> guard(m);
    note("reader");
    std::this_thread::sleep_for(50ms);
    note("reader out");
  });
  ASSERT_TRUE(eventually([&] { return in_line(cluster, 0) == 1 && in_line(cluster, 1) == 1; }, 3s));
  std::thread writer([&] {
    std::unique_lock<SharedMutex> guard(m);
    note("writer");
  });
  ASSERT_TRUE(eventually([&] { return in_line(cluster, 0) == 2 && in_line(cluster, 1) == 2; }, 3s));
  m.unlock();
  reader.join();
  writer.join();
  EXPECT_EQ(order, (std::vector<std::string>{"reader", "reader out", "writer"}));
}

TEST(SharedMutex, ANodeDownTwoOfThreeStillGrant) {
  RedisCluster cluster(3);
  Client c(held_config(cluster));
  ASSERT_TRUE(eventually([&] { return test::connected_to_all(c); }, 5s));
  cluster[2].stop();
  SharedMutex m(c, "doc");
  std::thread([&] {
    ASSERT_TRUE(m.try_lock_shared_for(2s));
    m.unlock_shared();
    ASSERT_TRUE(m.try_lock_for(2s));
    m.unlock();
  }).join();
  EXPECT_EQ(m.last_error(), std::error_code());
}

TEST(SharedMutex, AMinorityPausedReadersAndWritersStillWork) {
  RedisCluster cluster(3);
  Client c(held_config(cluster));
  ASSERT_TRUE(eventually([&] { return test::connected_to_all(c); }, 5s));
  SharedMutex m(c, "doc");
  cluster[0].pause();
  std::thread([&] {
    ASSERT_TRUE(m.try_lock_shared_for(2s));
    std::thread([&] {
      EXPECT_TRUE(m.try_lock_shared_for(2s));
      m.unlock_shared();
    }).join();
    m.unlock_shared();
    ASSERT_TRUE(m.try_lock_for(2s));
    m.unlock();
  }).join();
  cluster[0].resume();
}

// A reader whose client is gone without releasing: the writer gets the lock at the reader's ttl,
// not before its validity ends.
TEST(SharedMutex, AWriterGetsTheLockOfACrashedReaderAtItsTtl) {
  RedisCluster cluster(3);
  Clock::time_point reader_valid_until;
  {
    Client gone(test::fast_config(cluster));
    ASSERT_TRUE(eventually([&] { return test::connected_to_all(gone); }, 5s));
    auto r = gone.acquire(reader("doc", 600ms));
    ASSERT_TRUE(r) << r.message();
    reader_valid_until = r.lock.valid_until;
  }  // destroyed without a release
  Client c(held_config(cluster));
  auto w = c.acquire(writer("doc", 5000ms, 3000ms));
  auto at = Clock::now();
  ASSERT_TRUE(w) << w.message();
  EXPECT_GE(at, reader_valid_until);
  EXPECT_LT(at - reader_valid_until, 1500ms);
}

// The lost-lock signal of a held reader: its entry gone on a majority, on_lost runs before the
// validity deadline.
TEST(SharedMutex, AReaderGoneOnAMajorityIsLostBeforeItsDeadline) {
  RedisCluster cluster(3);
  Client c(held_config(cluster, 1500ms));
  ASSERT_TRUE(eventually([&] { return test::connected_to_all(c); }, 5s));
  std::atomic<bool> lost{false};
  std::atomic<Clock::rep> lost_at{0};
  MutexOptions options;
  options.on_lost = [&](std::error_code) {
    lost_at = Clock::now().time_since_epoch().count();
    lost = true;
  };
  options.on_error = [](std::error_code, const std::string&) {};  // the release finds it gone
  SharedMutex m(c, "doc", options);
  m.lock_shared();
  auto deadline = m.valid_until();
  for (std::size_t i : {0u, 1u}) cluster[i].command({"DEL", readers_key()});
  ASSERT_TRUE(eventually([&] { return lost.load(); }, 3s));
  EXPECT_LE(Clock::time_point(Clock::duration(lost_at.load())), deadline);
  EXPECT_FALSE(m.valid());
  m.unlock_shared();
}

// Fencing tokens grow strictly across readers and writers of one resource.
TEST(SharedMutex, FencingTokensGrowAcrossReadersAndWriters) {
  RedisCluster cluster(3);
  Client c(test::fast_config(cluster));
  ASSERT_TRUE(eventually([&] { return test::connected_to_all(c); }, 5s));
  auto fenced = [](AcquireRequest r) {
    r.fencing = true;
    return r;
  };
  std::uint64_t last = 0;
  for (int round = 0; round < 3; ++round) {
    auto r1 = c.acquire(fenced(reader()));
    auto r2 = c.acquire(fenced(reader()));
    ASSERT_TRUE(r1) << r1.message();
    ASSERT_TRUE(r2) << r2.message();
    EXPECT_GT(r1.lock.fencing_token, last);
    EXPECT_GT(r2.lock.fencing_token, r1.lock.fencing_token);
    ASSERT_TRUE(c.release(r1.lock));
    ASSERT_TRUE(c.release(r2.lock));
    auto w = c.acquire(fenced(writer()));
    ASSERT_TRUE(w) << w.message();
    EXPECT_GT(w.lock.fencing_token, r2.lock.fencing_token);
    last = w.lock.fencing_token;
    ASSERT_TRUE(c.release(w.lock));
  }
  // Through SharedMutex too.
  MutexOptions options;
  options.fencing = true;
  SharedMutex m(c, "doc", options);
  m.lock_shared();
  EXPECT_GT(m.fencing_token(), last);
  last = m.fencing_token();
  m.unlock_shared();
  m.lock();
  EXPECT_GT(m.fencing_token(), last);
  m.unlock();
}

// A key of another type where the readers are: a typed error or a refusal, never a grant.
TEST(SharedMutex, AHostileReadersKeyIsAnErrorNeverAGrant) {
  RedisCluster cluster(3);
  Client c(test::fast_config(cluster));
  ASSERT_TRUE(eventually([&] { return test::connected_to_all(c); }, 5s));
  for (std::size_t i = 0; i < 3; ++i) cluster[i].command({"SET", readers_key(), "x"});
  auto r = c.acquire(reader());
  EXPECT_FALSE(r) << "granted over a readers key of another type";
  EXPECT_TRUE(r.error == Errc::redis_wrongtype || r.error == Errc::not_acquired ||
              r.error == Errc::no_quorum)
      << r.message();
  SharedMutex m(c, "doc");
  std::thread([&] { EXPECT_FALSE(m.try_lock_shared()); }).join();
  // A writer does not read the readers' key: it is granted, and released.
  auto w = c.acquire(writer());
  ASSERT_TRUE(w) << w.message();
  EXPECT_TRUE(c.release(w.lock));
  for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(cluster[i].command({"GET", readers_key()}), "x");
}

// A writer left in the line by a client that is gone (nobody listens on its channel) holds no
// reader back: the reader passes it, and takes it out of the line.
TEST(ReadWriteLock, AGoneWritersPlaceInLineHoldsNoReaderBack) {
  RedisCluster cluster(3);
  Client c(test::fast_config(cluster));
  ASSERT_TRUE(eventually([&] { return test::connected_to_all(c); }, 5s));
  const auto queue = detail::aux_key("redlock:doc", "queue");
  for (std::size_t i = 0; i < 3; ++i)
    cluster[i].command({"ZADD", queue, "1", "redlock:turn:gone#5@100"});
  auto r = c.acquire(reader());
  ASSERT_TRUE(r) << r.message();
  for (std::size_t i = 0; i < 3; ++i)
    EXPECT_TRUE(eventually([&] {
      return cluster[i].command({"ZCARD", queue}) == "0";
    })) << "node "
        << i;
  EXPECT_TRUE(c.release(r.lock));
}

// A node out of memory refuses a reader: the grant's first write is its ZADD, so nothing of it
// is written there (no marker, no entry), and a majority out of memory is no quorum.
TEST(ReadWriteLock, OutOfMemoryOnAMajorityRefusesAReaderAndWritesNothing) {
  RedisCluster cluster(3);
  for (std::size_t i : {0u, 1u}) {
    cluster[i].command({"CONFIG", "SET", "maxmemory-policy", "noeviction"});
    cluster[i].command({"CONFIG", "SET", "maxmemory", "1"});
  }
  auto config = test::fast_config(cluster);
  config.retry_count = 0;
  Client c(config);
  ASSERT_TRUE(eventually([&] { return test::connected_to_all(c); }, 5s));
  auto fenced = reader();
  fenced.fencing = true;
  auto r = c.acquire(fenced);
  EXPECT_EQ(r.error, Errc::no_quorum) << r.message();
  for (std::size_t i : {0u, 1u}) {
    EXPECT_EQ(r.votes.nodes[i].error, Errc::redis_oom) << r.message();
    EXPECT_EQ(cluster[i].command({"EXISTS", "redlock:doc", readers_key()}), "0") << "node " << i;
  }
  EXPECT_TRUE(eventually([&] { return cluster.count_existing("redlock:doc") == 0u; }));
}

// Readers and writers of four clients at once, many rounds: no writer's hold overlaps any other
// hold (each hold timed on this machine from its grant to its unlock), and readers did overlap.
TEST(SharedMutex, ConcurrentReadersAndWritersNeverOverlapAWriter) {
  RedisCluster cluster(3);
  std::vector<std::unique_ptr<Client>> clients;
  for (int i = 0; i < 4; ++i) {
    clients.push_back(std::make_unique<Client>(held_config(cluster, 2000ms)));
    ASSERT_TRUE(eventually([&] { return test::connected_to_all(*clients.back()); }, 5s));
  }
  struct Span {
    bool shared;
    Clock::time_point from, to;
  };
  std::mutex spans_mutex;
  std::vector<Span> spans;
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i)
    threads.emplace_back([&, i] {
      SharedMutex m(*clients[i], "doc");
      for (int round = 0; round < 12; ++round) {
        bool shared = (round + i) % 3 != 0;
        if (shared ? !m.try_lock_shared_for(5s) : !m.try_lock_for(5s)) {
          ADD_FAILURE() << "client " << i << " round " << round << " not granted";
          continue;
        }
        Span span{shared, Clock::now(), {}};
        std::this_thread::sleep_for(2ms);
        span.to = Clock::now();
        shared ? m.unlock_shared() : m.unlock();
        std::lock_guard<std::mutex> g(spans_mutex);
        spans.push_back(span);
      }
    });
  for (auto& t : threads) t.join();
  int overlapping_readers = 0;
  for (std::size_t a = 0; a < spans.size(); ++a)
    for (std::size_t b = a + 1; b < spans.size(); ++b) {
      bool overlap = spans[a].from < spans[b].to && spans[b].from < spans[a].to;
      if (!overlap) continue;
      EXPECT_TRUE(spans[a].shared && spans[b].shared) << "a writer overlapped another holder";
      ++overlapping_readers;
    }
  EXPECT_EQ(spans.size(), 48u);
  RecordProperty("overlapping_readers", overlapping_readers);
}

}  // namespace
}  // namespace redlock
