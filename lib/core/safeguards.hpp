// Restart safeguards: what a node's INFO says about whether it may vote. Pure, no I/O.
//
// Checked on every new connection (lib/net/node.cpp sends INFO in its handshake):
//   - a replica or a Redis Cluster node is refused: Redlock needs independent masters;
//   - the same server listed twice (same run_id) is refused the second time;
//   - persistence that cannot keep a lock across a crash gives a warning;
//   - with the restart guard on, a node younger than the largest lease is not eligible yet.
#pragma once

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "redlock/config.hpp"
#include "redlock/errors.hpp"

namespace redlock::detail {

// True for a warning that the node's persistence can forget a lock (judge()'s "persistence off
// ..." and fsync_warning()'s "appendfsync ..."): what operators alert on and --no-persistence-
// warning hides.
inline bool is_persistence_warning(std::string_view text) {
  return text.rfind("persistence off", 0) == 0 || text.rfind("appendfsync ", 0) == 0;
}

// The fields of INFO that the safeguards read.
struct ServerFacts {
  std::string role;  // "master", "slave" (a replica); empty when INFO did not say
  std::string master_host, master_port;  // of a replica
  bool cluster_enabled = false;
  std::string run_id;
  std::optional<std::int64_t> uptime_s;
  std::optional<bool> aof_enabled;
  // loading:1 (the node reads its RDB or AOF): aof_enabled then says 0 whatever the config is
  // (Redis turns AOF off while it replays the file, so that the replay is not appended to it).
  bool loading = false;
};

// Value of `field` in INFO text ("field:value" lines), or empty.
inline std::string_view info_value(std::string_view info, std::string_view field) {
  std::size_t pos = 0;
  while (pos < info.size()) {
    auto end = info.find('\n', pos);
    if (end == std::string_view::npos) end = info.size();
    auto line = info.substr(pos, end - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.size() > field.size() && line.compare(0, field.size(), field) == 0 &&
        line[field.size()] == ':')
      return line.substr(field.size() + 1);
    pos = end + 1;
  }
  return {};
}

inline std::optional<std::int64_t> info_integer(std::string_view info, std::string_view field) {
  auto text = info_value(info, field);
  std::int64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

inline ServerFacts parse_info(std::string_view info) {
  ServerFacts f;
  f.role = std::string(info_value(info, "role"));
  f.master_host = std::string(info_value(info, "master_host"));
  f.master_port = std::string(info_value(info, "master_port"));
  f.cluster_enabled = info_value(info, "cluster_enabled") == "1";
  f.run_id = std::string(info_value(info, "run_id"));
  f.uptime_s = info_integer(info, "uptime_in_seconds");
  if (auto aof = info_integer(info, "aof_enabled")) f.aof_enabled = *aof != 0;
  f.loading = info_value(info, "loading") == "1";
  return f;
}

// The largest lease in use, for the restart guard: 0 when the guard is off.
inline Milliseconds restart_threshold(const Config& config) {
  if (config.restart_guard <= Milliseconds::zero()) return Milliseconds::zero();
  return std::max({config.restart_guard, config.ttl, config.watchdog_lease});
}

// What a new connection's INFO means for the node.
struct NodeCheck {
  std::error_code refuse;  // set: close the connection with this code and `why`
  std::string why;
  // How long the node stays ineligible from now (restart guard); zero: eligible.
  Milliseconds ineligible_for{0};
  std::vector<std::string> warnings;  // sentences, without the node's name
  // AOF is on, or the node is loading: CONFIG GET append* tells the rest (append_warning).
  bool ask_fsync = false;
  // Asked because the node is loading: a refused CONFIG GET leaves aof_enabled:0's warning.
  bool warn_if_unknown = false;
};

// The warning for persistence off (appendonly no).
inline std::string persistence_off_warning() {
  return "persistence off (appendonly no): a crash or restart forgets every lock it held, and "
         "a restarted node can grant a lock that is still held; run it with appendonly yes and "
         "appendfsync always, or delay its restarts by the largest ttl (Config::restart_guard)";
}

// `other_with_run_id`: the address of another listed node that is this same server, or empty.
inline NodeCheck judge(const ServerFacts& f, const Config& config,
                       const std::string& other_with_run_id) {
  NodeCheck v;
  if (config.check_role && f.cluster_enabled) {
    v.refuse = make_error_code(Errc::node_not_master);
    v.why =
        "a Redis Cluster node (cluster_enabled:1): Redlock needs independent masters, each "
        "holding every lock key; list standalone masters instead";
    return v;
  }
  if (config.check_role && !f.role.empty() && f.role != "master") {
    v.refuse = make_error_code(Errc::node_not_master);
    v.why = "a replica (role:" + f.role + ")";
    if (!f.master_host.empty()) v.why += " of " + f.master_host + ":" + f.master_port;
    v.why +=
        ": its writes fail and its data lags its master; Redlock needs independent masters, "
        "not a master and its replicas";
    return v;
  }
  if (config.check_duplicates && !other_with_run_id.empty()) {
    v.refuse = make_error_code(Errc::duplicate_node);
    v.why = "the same Redis server (run_id " + f.run_id.substr(0, 12) + "...) as node " +
            other_with_run_id + ": one server must vote once; list each master once";
    return v;
  }
  auto threshold = restart_threshold(config);
  if (threshold > Milliseconds::zero() && !f.uptime_s) {
    // Its age unknown, the node may have restarted a moment ago: it waits as if it had.
    v.ineligible_for = threshold;
    v.warnings.push_back(
        "INFO gave no uptime_in_seconds: with the restart guard on, the node votes only once "
        "the largest lease has passed since each connection to it");
  } else if (threshold > Milliseconds::zero()) {
    // Whole seconds, rounded down: the node may be older than it says, never younger, so the
    // wait is never too short.
    auto uptime = Milliseconds(std::max<std::int64_t>(*f.uptime_s, 0) * 1000);
    if (uptime < threshold) v.ineligible_for = threshold - uptime;
  }
  if (config.check_persistence && f.aof_enabled) {
    if (*f.aof_enabled) {
      v.ask_fsync = true;
    } else if (f.loading) {
      // aof_enabled:0 may be the replay of an AOF: the config says whether AOF is off.
      v.ask_fsync = true;
      v.warn_if_unknown = true;
    } else {
      v.warnings.push_back(persistence_off_warning());
    }
  }
  return v;
}

// The warning for an appendfsync setting, or empty when it keeps every lock.
inline std::string fsync_warning(std::string_view appendfsync) {
  if (appendfsync == "always") return {};
  return "appendfsync " + std::string(appendfsync) +
         ": a crash can lose the last writes, locks among them, and a restarted node can grant "
         "a lock that is still held; set appendfsync always, or delay its restarts by the "
         "largest ttl (Config::restart_guard)";
}

// The warning that CONFIG GET append*'s `appendonly` and `appendfsync` call for (either may be
// empty: not in the reply), or empty when they keep every lock or say nothing.
inline std::string append_warning(std::string_view appendonly, std::string_view appendfsync) {
  if (appendonly == "no") return persistence_off_warning();
  if (appendfsync.empty()) return {};
  return fsync_warning(appendfsync);
}

// Which node holds which server's run_id: one server listed under two addresses (a name and
// its IP, two names) is refused the second time. One per client; loop thread only.
class ServerIds {
 public:
  // The address of another node that holds `run_id`, or empty.
  std::string holder(const std::string& run_id, std::size_t index) const {
    for (const auto& c : claims_)
      if (c.run_id == run_id && c.index != index) return c.address;
    return {};
  }
  void claim(const std::string& run_id, std::size_t index, const std::string& address) {
    release(index);
    claims_.push_back({run_id, index, address});
  }
  // Node `index` lost its connection: the server may be another one next time.
  void release(std::size_t index) {
    claims_.erase(std::remove_if(claims_.begin(), claims_.end(),
                                 [&](const Claim& c) { return c.index == index; }),
                  claims_.end());
  }

 private:
  struct Claim {
    std::string run_id;
    std::size_t index;
    std::string address;
  };
  std::vector<Claim> claims_;
};

}  // namespace redlock::detail
