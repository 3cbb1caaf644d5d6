#include "status.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "show.hpp"

namespace redlock::cli {

VoteState vote_state(bool up, std::error_code error) {
  if (up) return VoteState::up;
  // An answer that rules the node out (redlock::is_node_refusal), or nothing in time: the node
  // may be fine and the network not, or it is gone.
  return redlock::is_node_refusal(error) ? VoteState::refused : VoteState::down;
}

const char* to_string(VoteState s) {
  switch (s) {
    case VoteState::up:
      return "up";
    case VoteState::refused:
      return "refused";
    case VoteState::down:
      return "down";
  }
  return "down";
}

// One row per node; a summary whose margin counts the nodes that vote against the quorum.
int do_status(const Globals& g, redlock::Client& client, const StatusOptions& o) {
  const auto started = Clock::now();
  auto rows = client.status();
  // A row that timed out before its node's connection attempt ended says only that: ask once
  // more when the attempt must have ended (connect timeout), so that its cause (a TLS handshake
  // that never finishes, a refused AUTH) is the row's, not a timeout.
  const auto settled = started + client.config().connect_timeout + Milliseconds(50);
  for (const auto& row : rows)
    if (!row.up && row.error == Errc::request_timeout) {
      std::this_thread::sleep_until(settled);
      rows = client.status();
      break;
    }
  std::size_t voting = 0, refused = 0, down = 0, forgetful = 0;
  const std::size_t quorum = rows.size() / 2 + 1;
  std::string out;
  char line[512];
  if (!o.json) {
    std::snprintf(line, sizeof line, "%-28s %-7s %10s  %-10s %s\n", "NODE", "STATE", "RTT",
                  "VERSION", "DETAIL");
    out += line;
  } else {
    out += "{\"nodes\":[";
  }
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& row = rows[i];
    const VoteState state = vote_state(row.up, row.error);
    voting += state == VoteState::up ? 1 : 0;
    refused += state == VoteState::refused ? 1 : 0;
    down += state == VoteState::down ? 1 : 0;
    std::vector<std::string> warnings;
    bool forgets = false;
    for (const auto& w : row.warnings) {
      bool persistence = WarningPrinter::is_persistence(w);
      forgets = forgets || persistence;
      if (persistence && g.no_persistence_warning) continue;
      warnings.push_back(o.json || !persistence ? w : WarningPrinter::condensed(w));
    }
    if (forgets && !g.no_persistence_warning) ++forgetful;
    std::string code;
    if (row.error)
      code = row.error.category() == redlock::error_category()
                 ? redlock::errc_name(static_cast<Errc>(row.error.value()))
                 : row.error.message();
    if (o.json) {
      if (i > 0) out += ',';
      out += "{\"node\":" + json_string(row.address) + ",\"state\":\"" + to_string(state) +
             "\",\"votes\":" + (state == VoteState::up ? "true" : "false") +
             ",\"up\":" + (row.up ? "true" : "false");
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
      out += ",\"refused\":" + std::string(state == VoteState::refused ? "true" : "false");
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
    std::snprintf(line, sizeof line, "%-28s %-7s %10s  %-10s ", printable(row.address).c_str(),
                  to_string(state), rtt,
                  row.server_version.empty() ? "-" : printable(row.server_version).c_str());
    out += line + printable(detail) + "\n";
    for (const auto& warning : warnings) out += "  warning: " + printable(warning) + "\n";
  }
  // The margin: how many more voting nodes may fail before no lock can be granted.
  const std::size_t tolerates = voting >= quorum ? voting - quorum : 0;
  const bool fails = refused > 0 || (down > 0 && !o.allow_down) || (o.strict && forgetful > 0);
  int code = voting < quorum ? kNoQuorum : fails ? kRefused : kOk;
  if (o.json) {
    out += "],\"voting\":" + std::to_string(voting) + ",\"up\":" + std::to_string(voting) +
           ",\"total\":" + std::to_string(rows.size()) + ",\"quorum\":" + std::to_string(quorum) +
           ",\"tolerates\":" + std::to_string(tolerates) +
           ",\"quorum_reachable\":" + (voting >= quorum ? "true" : "false") +
           ",\"refused\":" + std::to_string(refused) + ",\"down\":" + std::to_string(down) +
           ",\"persistence_forgets\":" + std::to_string(forgetful) +
           ",\"exit_code\":" + std::to_string(code) + "}\n";
  } else {
    std::snprintf(line, sizeof line, "%zu of %zu nodes vote; quorum %zu %s", voting, rows.size(),
                  quorum, voting >= quorum ? "reachable" : "NOT reachable");
    out += line;
    if (voting >= quorum)
      out += "; tolerates " + std::to_string(tolerates) + " more failure" +
             (tolerates == 1 ? "" : "s");
    if (refused > 0) out += "; " + std::to_string(refused) + " refused";
    if (down > 0) out += "; " + std::to_string(down) + " down";
    if (forgetful > 0)
      out += "; " + std::to_string(forgetful) + " whose persistence can forget a lock";
    if (!g.no_persistence_warning && forgetful > 0 && !o.strict)
      out += " (--no-persistence-warning hides this)";
    out += "\n";
  }
  if (!write_stdout(out)) {
    say(std::string("redlock: cannot write to stdout: ") + std::strerror(errno));
    return kUsage;
  }
  return code;
}

}  // namespace redlock::cli
