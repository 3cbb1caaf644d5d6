// Fuzzes the node-list parser (redlock::parse_node_list) and the configuration check. For any
// bytes, the parser either fails with Errc::invalid_config and a message, or returns one node per
// entry such that:
//   - every host a name or an address, every port in 1..65535, every database >= 0, no node
//     twice;
//   - the nodes written back as a node list parse to the same nodes (round trip);
//   - a Config of those nodes and default options passes validate(), and from_node_list agrees.
// And a message never depends on a password: the same list with every password replaced by
// other characters of the same length gives the same message, so none can be shown in it.
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_check.hpp"
#include "redlock/config.hpp"
#include "redlock/errors.hpp"

namespace redlock {
namespace {

std::string percent_encoded(const std::string& s) {
  static const char hex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 15]);
    }
  }
  return out;
}

// A node as a node-list entry.
std::string entry_of(const NodeAddress& n) {
  std::string e = n.tls ? "rediss://" : "redis://";
  if (!n.password.empty()) e += percent_encoded(n.user) + ":" + percent_encoded(n.password) + "@";
  e += n.host.find(':') != std::string::npos ? "[" + n.host + "]" : n.host;
  e += ":" + std::to_string(n.port);
  if (n.db != 0) e += "/" + std::to_string(n.db);
  return e;
}

bool same(const NodeAddress& a, const NodeAddress& b) {
  return a.host == b.host && a.port == b.port && a.db == b.db && a.user == b.user &&
         a.password == b.password && a.tls == b.tls;
}

bool name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_';
}

// A host name or an IPv4 address; or an IPv6 address, with an optional zone after '%'.
bool host_ok(const std::string& h) {
  if (h.find(':') == std::string::npos) {
    for (char c : h)
      if (!name_char(c)) return false;
    return true;
  }
  auto zone = h.find('%');
  for (char c : h.substr(0, zone))
    if (!std::isxdigit(static_cast<unsigned char>(c)) && c != ':' && c != '.') return false;
  if (zone == std::string::npos) return true;
  if (zone + 1 == h.size()) return false;
  for (char c : h.substr(zone + 1))
    if (!name_char(c)) return false;
  return true;
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The list with the password of each entry (between the first ':' after "://" and the last '@')
// replaced by as many '~' or 'Q' (whichever differs from the first character of the password).
// Empty when no entry has a password that can be replaced without changing anything but itself.
std::string passwords_replaced(std::string_view list) {
  std::string out;
  bool replaced = false;
  std::size_t start = 0;
  for (;;) {
    auto comma = list.find(',', start);
    std::string entry(list.substr(start, comma == std::string_view::npos ? comma : comma - start));
    auto scheme = entry.find("://");
    auto at = entry.rfind('@');
    if (scheme != std::string::npos && at != std::string::npos && at > scheme + 3) {
      auto colon = entry.find(':', scheme + 3);
      if (colon != std::string::npos && colon < at) {
        std::string_view pw(entry.data() + colon + 1, at - colon - 1);
        // '%' escapes may be malformed: the message would then rightly differ.
        if (!pw.empty() && pw.find('%') == std::string_view::npos) {
          char fill = pw[0] == '~' ? 'Q' : '~';
          for (std::size_t i = colon + 1; i < at; ++i) entry[i] = fill;
          replaced = true;
        }
      }
    }
    out += entry;
    if (comma == std::string_view::npos) break;
    out += ',';
    start = comma + 1;
  }
  return replaced ? out : std::string();
}

}  // namespace
}  // namespace redlock

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace redlock;
  std::string_view list(reinterpret_cast<const char*>(data), size);
  std::vector<NodeAddress> nodes;
  std::string message;
  auto ec = parse_node_list(list, nodes, message);
  if (ec) {
    FUZZ_CHECK(ec == make_error_code(Errc::invalid_config), "a bad list is invalid_config");
    FUZZ_CHECK(!message.empty(), "a bad list comes with a message");
    auto other = passwords_replaced(list);
    if (!other.empty()) {
      std::vector<NodeAddress> ignored;
      std::string other_message;
      auto other_ec = parse_node_list(other, ignored, other_message);
      FUZZ_CHECK(other_ec == ec && other_message == message,
                 "the message is the same whatever the passwords: none is shown");
    }
    return 0;
  }

  std::size_t entries = 1;
  for (char c : list) entries += c == ',';
  FUZZ_CHECK(nodes.size() == entries, "one node per entry");
  std::set<std::string> seen;
  for (const auto& n : nodes) {
    FUZZ_CHECK(!n.host.empty(), "a node has a host");
    FUZZ_CHECK(host_ok(n.host), "a host is a name or an address");
    FUZZ_CHECK(n.port >= 1, "a port is in 1..65535");
    FUZZ_CHECK(n.db >= 0, "a database is not negative");
    FUZZ_CHECK(n.user.empty() || !n.password.empty(), "a user comes with a password");
    FUZZ_CHECK(seen.insert(lower(n.host) + ":" + std::to_string(n.port)).second,
               "no node is listed twice");
  }

  std::string again;
  for (const auto& n : nodes) again += (again.empty() ? "" : ",") + entry_of(n);
  std::vector<NodeAddress> reparsed;
  std::string reparse_message;
  auto reparse_ec = parse_node_list(again, reparsed, reparse_message);
  FUZZ_CHECK(!reparse_ec, "the nodes written back parse again");
  FUZZ_CHECK(reparsed.size() == nodes.size(), "the nodes written back are as many");
  for (std::size_t i = 0; i < nodes.size(); ++i)
    FUZZ_CHECK(same(nodes[i], reparsed[i]), "the nodes written back are the same nodes");

  Config config;
  config.nodes = nodes;
  std::string validate_message;
  FUZZ_CHECK(!validate(config, validate_message), "parsed nodes with default options are valid");
  try {
    auto c = Config::from_node_list(list);
    FUZZ_CHECK(c.nodes.size() == nodes.size(), "from_node_list agrees with parse_node_list");
  } catch (...) {
    FUZZ_CHECK(false, "from_node_list throws for a list parse_node_list accepts");
  }
  return 0;
}
