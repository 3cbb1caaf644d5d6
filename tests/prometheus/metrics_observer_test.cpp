// MetricsObserver alone: events in, the registry's exposition out. No server needed, except for
// the last test, which has a Client on real servers deliver its events.
#include <gtest/gtest.h>
#include <prometheus/text_serializer.h>

#include <memory>
#include <string>

#include "redis_server.hpp"
#include "redlock/client.hpp"
#include "redlock/prometheus.hpp"
#include "test_config.hpp"

namespace redlock::prometheus {
namespace {

using namespace std::chrono_literals;

std::string exposition(const ::prometheus::Registry& registry) {
  return ::prometheus::TextSerializer().Serialize(registry.Collect());
}

bool has_line(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos || text.rfind(line + "\n", 0) == 0;
}

Votes three_votes(Vote a, Vote b, Vote c, std::error_code failure = {}) {
  Votes v;
  v.quorum = 2;
  v.addresses = std::make_shared<std::vector<std::string>>(
      std::vector<std::string>{"127.0.0.1:7001", "127.0.0.1:7002", "127.0.0.1:7003"});
  for (Vote x : {a, b, c}) {
    NodeVote n;
    n.vote = x;
    if (x == Vote::failed) n.error = failure;
    v.nodes.push_back(n);
  }
  return v;
}

TEST(MetricsObserver, CountsEachEventUnderItsName) {
  auto registry = std::make_shared<::prometheus::Registry>();
  MetricsObserver observer(registry);
  std::vector<std::string> resources{"r"};
  auto ok_votes =
      three_votes(Vote::yes, Vote::yes, Vote::failed, make_error_code(Errc::connect_failed));
  OperationEvent e;
  e.resources = &resources;
  e.votes = &ok_votes;
  e.latency = 300us;
  e.attempts = 1;
  observer.on_operation(e);
  observer.on_operation(e);
  auto refused = three_votes(Vote::no, Vote::no, Vote::yes);
  e.votes = &refused;
  e.error = make_error_code(Errc::not_acquired);
  e.attempts = 3;
  observer.on_operation(e);
  e.operation = Operation::release;
  e.error = {};
  observer.on_operation(e);
  e.operation = Operation::renew;
  e.error = make_error_code(Errc::no_quorum);
  observer.on_operation(e);
  e.operation = Operation::extend;
  e.error = {};
  observer.on_operation(e);

  LostEvent lost;
  lost.reason = LostReason::expired;
  lost.resources = &resources;
  observer.on_lost(lost);

  WaitEvent w;
  w.resources = &resources;
  observer.on_wait(w);
  observer.on_wait(w);
  w.phase = WaitPhase::ended;
  w.waited = 2ms;
  observer.on_wait(w);

  std::string up = "127.0.0.1:7001", down = "127.0.0.1:7002", detail = "refused";
  NodeEvent n;
  n.address = &up;
  observer.on_node(n);
  n.address = &down;
  n.node = 1;
  n.state = NodeState::refused;
  n.error = make_error_code(Errc::node_not_master);
  n.detail = &detail;
  observer.on_node(n);
  n.subscriber = true;  // the notice connection's state is not the node's
  n.address = &up;
  n.state = NodeState::backoff;
  n.error = make_error_code(Errc::connect_failed);
  observer.on_node(n);
  observer.on_held(4);

  auto text = exposition(*registry);
  EXPECT_TRUE(has_line(text, "redlock_acquire_duration_seconds_count{result=\"ok\"} 2")) << text;
  EXPECT_TRUE(has_line(text, "redlock_acquire_duration_seconds_count{result=\"not_acquired\"} 1"));
  EXPECT_TRUE(
      has_line(text, "redlock_acquire_duration_seconds_bucket{result=\"ok\",le=\"0.0005\"} 2"))
      << text;
  EXPECT_TRUE(has_line(text, "redlock_acquire_attempts_total 5"));
  EXPECT_TRUE(has_line(text, "redlock_releases_total{result=\"ok\"} 1"));
  EXPECT_TRUE(has_line(text, "redlock_extends_total{result=\"ok\"} 1"));
  EXPECT_TRUE(has_line(text, "redlock_renewals_total{result=\"no_quorum\"} 1"));
  EXPECT_TRUE(has_line(text, "redlock_lock_lost_total{reason=\"expired\"} 1"));
  EXPECT_TRUE(has_line(text, "redlock_lock_lost_total{reason=\"not_held\"} 0"));
  EXPECT_TRUE(has_line(text, "redlock_waiters 1"));
  EXPECT_TRUE(has_line(text, "redlock_held_locks 4"));
  EXPECT_TRUE(has_line(text, "redlock_node_up{node=\"127.0.0.1:7001\"} 1")) << text;
  EXPECT_TRUE(has_line(text, "redlock_node_up{node=\"127.0.0.1:7002\"} 0"));
  // Failed votes (two acquires) and the connection errors, by node and cause.
  EXPECT_TRUE(has_line(
      text, "redlock_node_errors_total{error=\"connect_failed\",node=\"127.0.0.1:7003\"} 2"))
      << text;
  EXPECT_TRUE(has_line(
      text, "redlock_node_errors_total{error=\"node_not_master\",node=\"127.0.0.1:7002\"} 1"));
  EXPECT_TRUE(has_line(
      text, "redlock_node_errors_total{error=\"connect_failed\",node=\"127.0.0.1:7001\"} 1"));
}

// Acquires of a permit are counted by result beside every acquire; the counter's usual results
// are series from the start.
TEST(MetricsObserver, CountsAcquiresOfPermitsByResult) {
  auto registry = std::make_shared<::prometheus::Registry>();
  MetricsObserver observer(registry);
  std::vector<std::string> resources{"pool"};
  auto votes = three_votes(Vote::yes, Vote::yes, Vote::no);
  OperationEvent e;
  e.resources = &resources;
  e.votes = &votes;
  observer.on_operation(e);  // a mutex's acquire: not a permit's
  e.permits = 4;
  e.permit = 2;
  observer.on_operation(e);
  e.error = make_error_code(Errc::permits_mismatch);
  e.permit = -1;
  observer.on_operation(e);
  auto text = exposition(*registry);
  EXPECT_TRUE(has_line(text, "redlock_permit_acquires_total{result=\"ok\"} 1")) << text;
  EXPECT_TRUE(has_line(text, "redlock_permit_acquires_total{result=\"permits_mismatch\"} 1"));
  EXPECT_TRUE(has_line(text, "redlock_permit_acquires_total{result=\"not_acquired\"} 0"));
  EXPECT_TRUE(has_line(text, "redlock_acquire_duration_seconds_count{result=\"ok\"} 2"));
}

// Acquires of a reader's share of a read-write lock are counted by result beside every acquire;
// a writer's acquire (a mutex's) is not among them; the usual results are series from the start.
TEST(MetricsObserver, CountsSharedAcquiresByResult) {
  auto registry = std::make_shared<::prometheus::Registry>();
  MetricsObserver observer(registry);
  std::vector<std::string> resources{"books"};
  auto votes = three_votes(Vote::yes, Vote::yes, Vote::no);
  OperationEvent e;
  e.resources = &resources;
  e.votes = &votes;
  observer.on_operation(e);  // a writer's acquire: a mutex's, not a reader's
  e.shared = true;
  observer.on_operation(e);
  observer.on_operation(e);
  e.error = make_error_code(Errc::not_acquired);
  observer.on_operation(e);
  e.operation = Operation::release;  // counted by the releases' counter alone
  e.error = {};
  observer.on_operation(e);
  auto text = exposition(*registry);
  EXPECT_TRUE(has_line(text, "redlock_shared_acquires_total{result=\"ok\"} 2")) << text;
  EXPECT_TRUE(has_line(text, "redlock_shared_acquires_total{result=\"not_acquired\"} 1"));
  EXPECT_TRUE(has_line(text, "redlock_shared_acquires_total{result=\"no_quorum\"} 0"));
  EXPECT_TRUE(has_line(text, "redlock_acquire_duration_seconds_count{result=\"ok\"} 3"));
  EXPECT_TRUE(has_line(text, "redlock_releases_total{result=\"ok\"} 1"));
}

// The client marks an acquire of a reader's share (AcquireRequest::shared) in its event, granted
// or refused, and the observer counts it; a writer's acquire is not counted there.
TEST(MetricsObserver, AClientsSharedAcquiresReachTheCounter) {
  test::RedisCluster cluster(3);
  auto registry = std::make_shared<::prometheus::Registry>();
  auto config = test::fast_config(cluster);
  config.observer = std::make_shared<MetricsObserver>(registry);
  config.retry_count = 0;
  Client client(config);
  AcquireRequest reader({"books"}, 10s, 0ms);
  reader.shared = true;
  auto a = client.acquire(reader);
  ASSERT_TRUE(a) << a.message();
  auto b = client.acquire(reader);
  ASSERT_TRUE(b) << b.message();
  AcquireRequest writer({"books"}, 10s, 0ms);
  EXPECT_FALSE(client.acquire(writer)) << "a writer beside readers";
  ASSERT_TRUE(client.release(a.lock));
  ASSERT_TRUE(client.release(b.lock));
  auto w = client.acquire(writer);
  ASSERT_TRUE(w) << w.message();
  EXPECT_FALSE(client.acquire(reader)) << "a reader beside a writer";
  ASSERT_TRUE(client.release(w.lock));
  auto text = exposition(*registry);
  EXPECT_TRUE(has_line(text, "redlock_shared_acquires_total{result=\"ok\"} 2")) << text;
  EXPECT_TRUE(has_line(text, "redlock_shared_acquires_total{result=\"not_acquired\"} 1")) << text;
  EXPECT_TRUE(has_line(text, "redlock_acquire_duration_seconds_count{result=\"ok\"} 3")) << text;
  EXPECT_TRUE(has_line(text, "redlock_acquire_duration_seconds_count{result=\"not_acquired\"} 2"))
      << text;
}

// Campaigns for an office are counted by result, and the latest term won is a gauge; reads of
// a leader count nowhere.
TEST(MetricsObserver, CountsCampaignsByResultAndShowsTheLatestTerm) {
  auto registry = std::make_shared<::prometheus::Registry>();
  MetricsObserver observer(registry);
  std::vector<std::string> resources{"office"};
  auto votes = three_votes(Vote::yes, Vote::yes, Vote::no);
  OperationEvent e;
  e.operation = Operation::campaign;
  e.resources = &resources;
  e.votes = &votes;
  e.term = 42;
  observer.on_operation(e);
  e.error = make_error_code(Errc::cancelled);
  e.term = 0;
  observer.on_operation(e);
  e.operation = Operation::leader;
  e.error = {};
  e.term = 50;
  observer.on_operation(e);
  auto text = exposition(*registry);
  EXPECT_TRUE(has_line(text, "redlock_elections_total{result=\"ok\"} 1")) << text;
  EXPECT_TRUE(has_line(text, "redlock_elections_total{result=\"cancelled\"} 1"));
  EXPECT_TRUE(has_line(text, "redlock_elections_total{result=\"not_acquired\"} 0"));
  EXPECT_TRUE(has_line(text, "redlock_election_term 42"));
}

TEST(MetricsObserver, ConstantLabelsGoOnEveryMetric) {
  auto registry = std::make_shared<::prometheus::Registry>();
  MetricsOptions options;
  options.const_labels = {{"client", "orders"}};
  MetricsObserver observer(registry, options);
  observer.on_held(1);
  auto text = exposition(*registry);
  EXPECT_TRUE(has_line(text, "redlock_held_locks{client=\"orders\"} 1")) << text;
  EXPECT_TRUE(has_line(text, "redlock_lock_lost_total{client=\"orders\",reason=\"expired\"} 0"))
      << text;
}

// Issue 34: every series an alert reads exists at zero before its first event, or increase()
// misses that event; a node's refusals and persistence follow its state.
TEST(MetricsObserver, AlertedSeriesStartAtZeroAndNodeStatesSetAndClearThem) {
  auto registry = std::make_shared<::prometheus::Registry>();
  MetricsObserver observer(registry);
  auto text = exposition(*registry);
  for (const char* line : {"redlock_lock_lost_total{reason=\"released_after_expiry\"} 0",
                           "redlock_lock_lost_total{reason=\"keys_gone\"} 0",
                           "redlock_lock_lost_total{reason=\"expired\"} 0",
                           "redlock_releases_total{result=\"not_held\"} 0",
                           "redlock_extends_total{result=\"not_held\"} 0",
                           "redlock_renewals_total{result=\"not_held\"} 0"})
    EXPECT_TRUE(has_line(text, line)) << line << "\n" << text;

  const std::string node = "127.0.0.1:7001";
  const std::string detail;
  NodeEvent n;
  n.address = &node;
  n.detail = &detail;
  n.state = NodeState::connected;
  observer.on_node(n);
  text = exposition(*registry);
  for (const char* line :
       {"redlock_node_refused{node=\"127.0.0.1:7001\",reason=\"node_not_master\"} 0",
        "redlock_node_refused{node=\"127.0.0.1:7001\",reason=\"redis_auth_failed\"} 0",
        "redlock_node_refused{node=\"127.0.0.1:7001\",reason=\"tls_handshake_failed\"} 0",
        "redlock_node_persistence_forgets{node=\"127.0.0.1:7001\"} 0",
        "redlock_node_errors_total{error=\"redis_oom\",node=\"127.0.0.1:7001\"} 0",
        "redlock_node_up{node=\"127.0.0.1:7001\"} 1"})
    EXPECT_TRUE(has_line(text, line)) << line << "\n" << text;

  const std::string warning = "persistence off (appendonly no): ...";
  NodeWarningEvent w;
  w.kind = NodeWarning::persistence;
  w.address = &node;
  w.text = &warning;
  observer.on_node_warning(w);
  EXPECT_TRUE(has_line(exposition(*registry),
                       "redlock_node_persistence_forgets{node=\"127.0.0.1:7001\"} 1"));

  n.state = NodeState::refused;
  n.error = make_error_code(Errc::node_not_master);
  observer.on_node(n);
  n.state = NodeState::backoff;  // the refused connection closes and backs off: still refused
  observer.on_node(n);
  text = exposition(*registry);
  EXPECT_TRUE(
      has_line(text, "redlock_node_refused{node=\"127.0.0.1:7001\",reason=\"node_not_master\"} 1"));
  EXPECT_TRUE(has_line(text, "redlock_node_up{node=\"127.0.0.1:7001\"} 0"));
  EXPECT_TRUE(has_line(text, "redlock_node_persistence_forgets{node=\"127.0.0.1:7001\"} 0"));

  n.state = NodeState::backoff;  // down for the network: no longer a refusal
  n.error = make_error_code(Errc::connect_failed);
  observer.on_node(n);
  EXPECT_TRUE(
      has_line(exposition(*registry),
               "redlock_node_refused{node=\"127.0.0.1:7001\",reason=\"node_not_master\"} 0"));
}

}  // namespace
}  // namespace redlock::prometheus
