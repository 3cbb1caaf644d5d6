// The read-write lock on real servers (docs/proposal-kinds.md, "The read-write lock"): readers
// share the resource with each other and never with a writer; a writer is a mutex holder of the
// resource's lock key. Three nodes, quorum two.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/keys.hpp"
#include "redis_server.hpp"
#include "redlock/redlock.hpp"
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
  return detail::aux_key(lock_key, "readers");
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
    EXPECT_EQ(cluster[i].command({"GET", "redlock:doc"}), std::string("readers\0", 8));
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

}  // namespace
}  // namespace redlock
