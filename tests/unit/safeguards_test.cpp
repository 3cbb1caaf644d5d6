// The restart safeguards' rules (lib/core/safeguards.hpp): what a node's INFO means.
#include "core/safeguards.hpp"

#include <gtest/gtest.h>

namespace redlock::detail {
namespace {

using namespace std::chrono_literals;

const char* kMaster =
    "# Server\r\nredis_version:7.0.15\r\nrun_id:0123456789abcdef0123456789abcdef01234567\r\n"
    "uptime_in_seconds:3600\r\n# Persistence\r\naof_enabled:1\r\n# Replication\r\n"
    "role:master\r\nconnected_slaves:0\r\n# Cluster\r\ncluster_enabled:0\r\n";

std::string with(std::string info, const std::string& field, const std::string& value) {
  auto pos = info.find(field + ":");
  auto end = info.find("\r\n", pos);
  return info.replace(pos, end - pos, field + ":" + value);
}

TEST(Safeguards, ReadsTheFieldsOfInfo) {
  auto f = parse_info(kMaster);
  EXPECT_EQ(f.role, "master");
  EXPECT_FALSE(f.cluster_enabled);
  EXPECT_EQ(f.run_id, "0123456789abcdef0123456789abcdef01234567");
  EXPECT_EQ(f.uptime_s, 3600);
  EXPECT_EQ(f.aof_enabled, true);
  // A field is a whole name: "role" is not "master_role".
  EXPECT_EQ(info_value("master_role:x\r\nrole:slave\r\n", "role"), "slave");
  EXPECT_EQ(info_value("role:master", "role"), "master");  // last line without CRLF
  EXPECT_EQ(info_value("", "role"), "");
  EXPECT_FALSE(parse_info("uptime_in_seconds:12x\r\n").uptime_s);
  EXPECT_FALSE(parse_info("").aof_enabled);
}

TEST(Safeguards, AHealthyMasterPasses) {
  Config c;
  auto v = judge(parse_info(kMaster), c, "");
  EXPECT_FALSE(v.refuse);
  EXPECT_EQ(v.ineligible_for, 0ms);
  EXPECT_TRUE(v.warnings.empty());
  EXPECT_TRUE(v.ask_fsync) << "AOF on: appendfsync decides";
}

TEST(Safeguards, RefusesReplicasAndClusterNodes) {
  Config c;
  std::string replica =
      with(kMaster, "role", "slave") + "master_host:10.0.0.5\r\nmaster_port:6380\r\n";
  auto v = judge(parse_info(replica), c, "");
  EXPECT_EQ(v.refuse, Errc::node_not_master);
  EXPECT_NE(v.why.find("10.0.0.5:6380"), std::string::npos) << v.why;

  auto cl = judge(parse_info(with(kMaster, "cluster_enabled", "1")), c, "");
  EXPECT_EQ(cl.refuse, Errc::node_not_master);
  EXPECT_NE(cl.why.find("Cluster"), std::string::npos);

  c.check_role = false;
  EXPECT_FALSE(judge(parse_info(replica), c, "").refuse);
}

TEST(Safeguards, RefusesASecondAddressOfOneServer) {
  Config c;
  auto v = judge(parse_info(kMaster), c, "127.0.0.1:7001");
  EXPECT_EQ(v.refuse, Errc::duplicate_node);
  EXPECT_NE(v.why.find("127.0.0.1:7001"), std::string::npos);
  c.check_duplicates = false;
  EXPECT_FALSE(judge(parse_info(kMaster), c, "127.0.0.1:7001").refuse);

  ServerIds ids;
  ids.claim("abc", 0, "a:1");
  EXPECT_EQ(ids.holder("abc", 1), "a:1");
  EXPECT_EQ(ids.holder("abc", 0), "") << "a node is not its own duplicate";
  EXPECT_EQ(ids.holder("other", 1), "");
  ids.release(0);
  EXPECT_EQ(ids.holder("abc", 1), "") << "a lost connection gives the run_id up";
}

TEST(Safeguards, WarnsWhenPersistenceForgetsLocks) {
  Config c;
  auto v = judge(parse_info(with(kMaster, "aof_enabled", "0")), c, "");
  ASSERT_EQ(v.warnings.size(), 1u);
  EXPECT_NE(v.warnings[0].find("appendfsync always"), std::string::npos) << "says what to do";
  EXPECT_FALSE(v.ask_fsync);
  EXPECT_EQ(fsync_warning("always"), "");
  EXPECT_NE(fsync_warning("everysec").find("appendfsync everysec"), std::string::npos);
  EXPECT_NE(fsync_warning("no"), "");
  c.check_persistence = false;
  EXPECT_TRUE(judge(parse_info(with(kMaster, "aof_enabled", "0")), c, "").warnings.empty());
}

// While a node replays its AOF, Redis turns AOF off (INFO says aof_enabled:0 beside loading:1):
// that is no reason to warn. The config says whether AOF is off; a refused CONFIG GET leaves
// INFO's word.
TEST(Safeguards, ANodeLoadingItsFileAsksTheConfigBeforeWarning) {
  Config c;
  auto loading = with(with(kMaster, "aof_enabled", "0"), "role", "master\r\nloading:1");
  auto f = parse_info(loading);
  EXPECT_TRUE(f.loading);
  auto v = judge(f, c, "");
  EXPECT_TRUE(v.warnings.empty());
  EXPECT_TRUE(v.ask_fsync);
  EXPECT_TRUE(v.warn_if_unknown);
  EXPECT_FALSE(parse_info(kMaster).loading);
  EXPECT_FALSE(judge(parse_info(kMaster), c, "").warn_if_unknown);
  // What the config then says.
  EXPECT_EQ(append_warning("yes", "always"), "");
  EXPECT_NE(append_warning("yes", "everysec").find("appendfsync everysec"), std::string::npos);
  EXPECT_EQ(append_warning("no", "always"), persistence_off_warning());
  EXPECT_EQ(append_warning("", ""), "");
  EXPECT_EQ(append_warning("yes", ""), "");
  // Not loading, aof_enabled:0 warns at once, as before.
  EXPECT_EQ(judge(parse_info(with(kMaster, "aof_enabled", "0")), c, "").warnings,
            std::vector<std::string>{persistence_off_warning()});
}

TEST(Safeguards, TheRestartGuardWaitsOutTheLargestLease) {
  Config c;
  c.ttl = 10'000ms;
  c.watchdog_lease = 30'000ms;
  auto young = parse_info(with(kMaster, "uptime_in_seconds", "4"));
  EXPECT_EQ(judge(young, c, "").ineligible_for, 0ms) << "off by default";
  EXPECT_EQ(restart_threshold(c), 0ms);

  c.restart_guard = 5'000ms;
  EXPECT_EQ(restart_threshold(c), 30'000ms) << "the largest of the guard, ttl and watchdog lease";
  EXPECT_EQ(judge(young, c, "").ineligible_for, 26'000ms);
  c.restart_guard = 60'000ms;
  EXPECT_EQ(judge(young, c, "").ineligible_for, 56'000ms);
  EXPECT_EQ(judge(parse_info(kMaster), c, "").ineligible_for, 0ms) << "an hour old";
  auto unknown = parse_info("role:master\r\n");
  EXPECT_EQ(judge(unknown, c, "").ineligible_for, 60'000ms) << "age unknown: as if just restarted";
  EXPECT_FALSE(judge(unknown, c, "").warnings.empty());
  c.restart_guard = 0ms;
  EXPECT_EQ(judge(unknown, c, "").ineligible_for, 0ms) << "the guard off: nothing to wait for";
}

}  // namespace
}  // namespace redlock::detail
