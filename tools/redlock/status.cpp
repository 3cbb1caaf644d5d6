#include "status.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "show.hpp"

namespace redlock::cli {

namespace {

bool is_refusal(std::error_code ec) {
  return ec == Errc::node_not_master || ec == Errc::duplicate_node || ec == Errc::node_restarting;
}

}  // namespace

// One row per node. Exit 3 without a quorum; 5 when a node is refused (a replica, a Cluster
// node, one server listed twice, a node restarting under the restart guard), and with
// --strict also when a node's persistence can forget a lock; else 0.
int do_status(const Globals& g, redlock::Client& client, bool json, bool strict) {
  auto rows = client.status();
  std::size_t up = 0, refused = 0, forgetful = 0;
  const std::size_t quorum = rows.size() / 2 + 1;
  std::string out;
  char line[512];
  if (!json) {
    std::snprintf(line, sizeof line, "%-28s %-5s %10s  %-10s %s\n", "NODE", "STATE", "RTT",
                  "VERSION", "DETAIL");
    out += line;
  } else {
    out += "{\"nodes\":[";
  }
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& row = rows[i];
    if (row.up) ++up;
    if (!row.up && is_refusal(row.error)) ++refused;
    std::vector<std::string> warnings;
    bool forgets = false;
    for (const auto& w : row.warnings) {
      bool persistence = WarningPrinter::is_persistence(w);
      forgets = forgets || persistence;
      if (persistence && g.no_persistence_warning) continue;
      warnings.push_back(json || !persistence ? w : WarningPrinter::condensed(w));
    }
    if (forgets && !g.no_persistence_warning) ++forgetful;
    std::string code;
    if (row.error)
      code = row.error.category() == redlock::error_category()
                 ? redlock::errc_name(static_cast<Errc>(row.error.value()))
                 : row.error.message();
    if (json) {
      if (i > 0) out += ',';
      out += "{\"node\":" + json_string(row.address) + ",\"up\":" + (row.up ? "true" : "false");
      out += ",\"rtt_ms\":";
      if (row.up) {
        std::snprintf(line, sizeof line, "%.3f", static_cast<double>(row.round_trip.count()) / 1e3);
        out += line;
      } else {
        out += "null";
      }
      out += ",\"version\":" +
             (row.server_version.empty() ? std::string("null") : json_string(row.server_version));
      out += ",\"error\":" + (row.up || code.empty() ? std::string("null") : json_string(code));
      out += ",\"detail\":" +
             (row.up || row.detail.empty() ? std::string("null") : json_string(row.detail));
      out += ",\"refused\":" + std::string(!row.up && is_refusal(row.error) ? "true" : "false");
      out += ",\"persistence_forgets\":" + std::string(forgets ? "true" : "false");
      out += ",\"warnings\":[";
      for (std::size_t j = 0; j < warnings.size(); ++j)
        out += (j ? "," : "") + json_string(warnings[j]);
      out += "]}";
      continue;
    }
    char rtt[32] = "-";
    if (row.up)
      std::snprintf(rtt, sizeof rtt, "%.2fms", static_cast<double>(row.round_trip.count()) / 1e3);
    std::string detail;
    if (!row.up && row.error) {
      detail = code;
      if (!row.detail.empty()) detail += ": " + row.detail;
    }
    std::snprintf(line, sizeof line, "%-28s %-5s %10s  %-10s ", row.address.c_str(),
                  row.up ? "up" : "down", rtt,
                  row.server_version.empty() ? "-" : row.server_version.c_str());
    out += line + detail + "\n";
    for (const auto& warning : warnings) out += "  warning: " + warning + "\n";
  }
  int code = up < quorum ? kNoQuorum : (refused > 0 || (strict && forgetful > 0)) ? kRefused : kOk;
  if (json) {
    out += "],\"up\":" + std::to_string(up) + ",\"total\":" + std::to_string(rows.size()) +
           ",\"quorum\":" + std::to_string(quorum) +
           ",\"tolerates\":" + std::to_string((rows.size() - 1) / 2) +
           ",\"quorum_reachable\":" + (up >= quorum ? "true" : "false") +
           ",\"refused\":" + std::to_string(refused) +
           ",\"persistence_forgets\":" + std::to_string(forgetful) +
           ",\"exit_code\":" + std::to_string(code) + "}\n";
  } else {
    std::snprintf(line, sizeof line, "%zu of %zu nodes up; quorum %zu %s", up, rows.size(), quorum,
                  up >= quorum ? "reachable" : "NOT reachable");
    out += line;
    const std::size_t tolerated = (rows.size() - 1) / 2;
    out += "; tolerates " + std::to_string(tolerated) + " failure" + (tolerated == 1 ? "" : "s");
    if (refused > 0) out += "; " + std::to_string(refused) + " refused";
    if (forgetful > 0)
      out += "; " + std::to_string(forgetful) + " whose persistence can forget a lock";
    if (!g.no_persistence_warning && forgetful > 0 && !strict)
      out += " (--no-persistence-warning hides this)";
    out += "\n";
  }
  if (!write_stdout(out)) {
    std::cerr << "redlock: cannot write to stdout: " << std::strerror(errno) << '\n';
    return kUsage;
  }
  return code;
}

}  // namespace redlock::cli
