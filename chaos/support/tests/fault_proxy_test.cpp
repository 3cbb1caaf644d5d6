// FaultProxy against a real redis-server: each mode, mode changes on live connections, a target
// that goes away or moves, and the redlock-fault-proxy program.
#include "fault_proxy.hpp"

#include <gtest/gtest.h>
#include <signal.h>

#include <thread>

#include "raw_client.hpp"
#include "redis_server.hpp"

namespace redlock::chaos {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using test::RawClient;
using test::Reply;

// Silence for this long counts as "no reply": far above a loopback round trip, even on a
// loaded 2-core machine, and short enough to keep the file fast.
constexpr auto kSilence = 300ms;

std::chrono::milliseconds since(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t);
}

class FaultProxyTest : public ::testing::Test {
 protected:
  redlock::test::RedisServer server;
  FaultProxy proxy{server.port()};
};

TEST_F(FaultProxyTest, PassForwardsBothWays) {
  EXPECT_NE(proxy.port(), server.port());
  EXPECT_EQ(proxy.target_port(), server.port());
  EXPECT_EQ(proxy.mode(), ProxyMode::pass);
  RawClient c(proxy.port());
  ASSERT_TRUE(c.connected()) << c.connect_error();
  Reply r = c.command({"PING"});
  EXPECT_TRUE(r.is("+PONG")) << test::describe(r);
  r = c.command({"SET", "k", "v"});
  EXPECT_TRUE(r.is("+OK")) << test::describe(r);
  EXPECT_EQ(server.command({"GET", "k"}), "v");
  EXPECT_EQ(proxy.connections_accepted(), 1u);
}

TEST_F(FaultProxyTest, PassCarriesLargeValuesIntact) {
  // Larger than the socket buffers and the proxy's per-direction limit: partial writes and
  // paused reads must keep every byte in order.
  std::string big(6 << 20, '\0');
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>('a' + (i * 7) % 26);
  RawClient c(proxy.port());
  ASSERT_TRUE(c.connected());
  Reply r = c.command({"SET", "big", big}, 10s);
  ASSERT_TRUE(r.is("+OK")) << test::describe(r);
  r = c.command({"GET", "big"}, 10s);
  ASSERT_EQ(r.kind, Reply::reply) << test::describe(r);
  EXPECT_TRUE(r.text == big) << "the value came back altered (" << r.text.size() << " bytes)";
}

TEST_F(FaultProxyTest, DelayHoldsEveryChunkBackEachWay) {
  RawClient c(proxy.port());
  ASSERT_TRUE(c.command({"PING"}).is("+PONG"));  // connected and warm
  proxy.set_mode(ProxyMode::delay, 150ms);
  EXPECT_EQ(proxy.mode(), ProxyMode::delay);
  EXPECT_EQ(proxy.delay(), 150ms);
  auto t = Clock::now();
  Reply r = c.command({"PING"});
  auto took = since(t);
  EXPECT_TRUE(r.is("+PONG")) << test::describe(r);
  EXPECT_GE(took, 300ms) << "the request and the reply are each held back 150 ms";
  EXPECT_LT(took, 2000ms);

  // Several chunks in flight at once arrive, in order.
  ASSERT_TRUE(c.send({"SET", "n", "1"}));
  std::this_thread::sleep_for(20ms);
  ASSERT_TRUE(c.send({"INCR", "n"}));
  std::this_thread::sleep_for(20ms);
  ASSERT_TRUE(c.send({"INCR", "n"}));
  EXPECT_TRUE(c.read_reply(2s).is("+OK"));
  EXPECT_TRUE(c.read_reply(2s).is(":2"));
  EXPECT_TRUE(c.read_reply(2s).is(":3"));

  proxy.set_mode(ProxyMode::pass);
  t = Clock::now();
  r = c.command({"PING"});
  EXPECT_TRUE(r.is("+PONG")) << test::describe(r);
  EXPECT_LT(since(t), 300ms) << "back to pass: no delay";
}

TEST_F(FaultProxyTest, SwitchingToPassReleasesHeldChunksAtOnce) {
  RawClient c(proxy.port());
  ASSERT_TRUE(c.command({"PING"}).is("+PONG"));
  proxy.set_mode(ProxyMode::delay, 5000ms);
  auto t = Clock::now();
  ASSERT_TRUE(c.send({"PING"}));
  EXPECT_EQ(c.read_reply(100ms).kind, Reply::timeout);
  proxy.set_mode(ProxyMode::pass);
  Reply r = c.read_reply(2s);
  EXPECT_TRUE(r.is("+PONG")) << test::describe(r);
  EXPECT_LT(since(t), 2500ms) << "the held request was released by the mode change";
}

TEST_F(FaultProxyTest, BlackholeForwardsNothingEitherWay) {
  RawClient c(proxy.port());
  ASSERT_TRUE(c.command({"PING"}).is("+PONG"));
  proxy.set_mode(ProxyMode::blackhole);
  Reply r = c.command({"SET", "k", "v"}, kSilence);
  EXPECT_EQ(r.kind, Reply::timeout) << test::describe(r);
  EXPECT_EQ(server.command({"GET", "k"}), "(nil)") << "the server never saw the SET";

  RawClient fresh(proxy.port());  // accepted, then silence
  ASSERT_TRUE(fresh.connected()) << fresh.connect_error();
  r = fresh.command({"PING"}, kSilence);
  EXPECT_EQ(r.kind, Reply::timeout) << test::describe(r);
  EXPECT_EQ(proxy.connections_accepted(), 2u);

  // Healed: both connections work again (whole chunks were discarded, streams are intact).
  proxy.set_mode(ProxyMode::pass);
  EXPECT_TRUE(c.command({"PING"}).is("+PONG"));
  EXPECT_TRUE(fresh.command({"PING"}).is("+PONG"));
  EXPECT_EQ(server.command({"GET", "k"}), "(nil)");
}

TEST_F(FaultProxyTest, DropRepliesRunsTheCommandButLosesTheReply) {
  RawClient c(proxy.port());
  ASSERT_TRUE(c.command({"PING"}).is("+PONG"));
  proxy.set_mode(ProxyMode::drop_replies);
  Reply r = c.command({"SET", "k", "v"}, kSilence);
  EXPECT_EQ(r.kind, Reply::timeout) << test::describe(r);
  EXPECT_EQ(server.command({"GET", "k"}), "v") << "the SET ran";
  proxy.set_mode(ProxyMode::pass);
  EXPECT_TRUE(c.command({"GET", "k"}).is("v"));
}

TEST_F(FaultProxyTest, ResetResetsExistingAndNewConnections) {
  RawClient c(proxy.port());
  ASSERT_TRUE(c.command({"PING"}).is("+PONG"));
  EXPECT_EQ(proxy.connections_open(), 1u);
  proxy.set_mode(ProxyMode::reset);
  Reply r = c.read_reply(2s);
  EXPECT_EQ(r.kind, Reply::error) << test::describe(r);
  EXPECT_EQ(r.err, ECONNRESET) << test::describe(r);
  EXPECT_TRUE(redlock::test::eventually([&] { return proxy.connections_open() == 0; }));

  // The kernel completes the handshake before the proxy accepts and resets, so the reset shows
  // at the end of connect, on the request or on the reply.
  RawClient fresh(proxy.port());
  if (fresh.connected()) {
    r = fresh.command({"PING"});
    bool reset = r.kind == Reply::error && (r.err == ECONNRESET || r.err == EPIPE);
    EXPECT_TRUE(reset) << test::describe(r);
  } else {
    EXPECT_EQ(fresh.connect_error(), ECONNRESET);
  }
  EXPECT_EQ(proxy.connections_accepted(), 2u);

  proxy.set_mode(ProxyMode::pass);
  RawClient after(proxy.port());
  r = after.command({"PING"});
  EXPECT_TRUE(r.is("+PONG")) << test::describe(r) << " accepted " << proxy.connections_accepted();
}

TEST_F(FaultProxyTest, ClosesTheClientWhenTheTargetGoesAwayAndFollowsANewTarget) {
  RawClient c(proxy.port());
  ASSERT_TRUE(c.command({"PING"}).is("+PONG"));
  server.kill9();
  Reply r = c.read_reply(2s);
  EXPECT_EQ(r.kind, Reply::eof) << test::describe(r);

  RawClient refused(proxy.port());  // the target refuses: the client side is closed
  ASSERT_TRUE(refused.connected());
  r = refused.read_reply(2s);
  EXPECT_EQ(r.kind, Reply::eof) << test::describe(r);
  EXPECT_TRUE(redlock::test::eventually([&] { return proxy.connections_open() == 0; }));

  redlock::test::RedisServer elsewhere;
  proxy.set_target(elsewhere.port());
  EXPECT_EQ(proxy.target_port(), elsewhere.port());
  RawClient moved(proxy.port());
  ASSERT_TRUE(moved.command({"SET", "k", "moved"}).is("+OK"));
  EXPECT_EQ(elsewhere.command({"GET", "k"}), "moved");
}

TEST_F(FaultProxyTest, BlackholeHidesTheTargetsCloseUntilHealed) {
  RawClient c(proxy.port());
  ASSERT_TRUE(c.command({"PING"}).is("+PONG"));
  proxy.set_mode(ProxyMode::blackhole);
  server.kill9();
  EXPECT_EQ(c.read_reply(kSilence).kind, Reply::timeout);
  proxy.set_mode(ProxyMode::pass);
  Reply r = c.read_reply(2s);
  EXPECT_EQ(r.kind, Reply::eof) << test::describe(r);
}

TEST(FaultProxy, StartsInTheModeGiven) {
  redlock::test::RedisServer server;
  FaultProxy proxy(server.port(), 0, ProxyMode::drop_replies);
  EXPECT_EQ(proxy.mode(), ProxyMode::drop_replies);
  RawClient c(proxy.port());
  EXPECT_EQ(c.command({"SET", "k", "v"}, kSilence).kind, Reply::timeout);
  EXPECT_EQ(server.command({"GET", "k"}), "v");
}

TEST(FaultProxy, ThrowsWhenItCannotListen) {
  FaultProxy first(1);
  EXPECT_THROW(FaultProxy second(1, first.port()), std::runtime_error);
}

TEST(FaultProxy, ModeNamesRoundTrip) {
  for (ProxyMode m : {ProxyMode::pass, ProxyMode::delay, ProxyMode::blackhole,
                      ProxyMode::drop_replies, ProxyMode::reset}) {
    ProxyMode parsed = ProxyMode::pass;
    ASSERT_TRUE(parse_proxy_mode(to_string(m), parsed)) << to_string(m);
    EXPECT_EQ(parsed, m);
  }
  ProxyMode unused;
  EXPECT_FALSE(parse_proxy_mode("partition", unused));
}

TEST(FaultProxyProgram, ForwardsWithTheGivenModeAndStopsOnSigterm) {
  redlock::test::RedisServer server;
  std::uint16_t listen = test::free_port();
  ASSERT_NE(listen, 0);
  redlock::test::Process proxy({REDLOCK_FAULT_PROXY_PATH, "--target", std::to_string(server.port()),
                                "--listen", std::to_string(listen), "--mode", "delay", "--delay-ms",
                                "100"});
  bool up = redlock::test::eventually([&] { return RawClient(listen, 200ms).connected(); }, 5s);
  ASSERT_TRUE(up) << "redlock-fault-proxy did not listen on " << listen;
  RawClient c(listen);
  auto t = Clock::now();
  Reply r = c.command({"PING"});
  EXPECT_TRUE(r.is("+PONG")) << test::describe(r);
  EXPECT_GE(since(t), 200ms);
  proxy.signal(SIGTERM);
  auto result = proxy.wait(5s);
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out, std::to_string(listen) + "\n");
}

TEST(FaultProxyProgram, RejectsBadArguments) {
  auto result = redlock::test::run_process({REDLOCK_FAULT_PROXY_PATH, "--mode", "pass"}, {}, 5s);
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find("--target"), std::string::npos) << result.err;
  result = redlock::test::run_process(
      {REDLOCK_FAULT_PROXY_PATH, "--target", "1", "--mode", "sideways"}, {}, 5s);
  EXPECT_EQ(result.exit_code, 2);
}

}  // namespace
}  // namespace redlock::chaos
