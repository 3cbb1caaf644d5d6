// Node-list parsing and configuration checks. Pure: no I/O beyond getenv.
#include "redlock/config.hpp"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <set>

#include "keys.hpp"
#include "redlock/errors.hpp"

namespace redlock {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::error_code fail(std::string& message, std::string text) {
  message = std::move(text);
  return make_error_code(Errc::invalid_config);
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// RFC 3986 percent-decoding of the user-info part; false on a malformed escape.
bool percent_decode(std::string_view in, std::string& out) {
  out.clear();
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out.push_back(in[i]);
      continue;
    }
    if (i + 2 >= in.size()) return false;  // needs two hex digits after '%'
    int hi = hex_value(in[i + 1]), lo = hex_value(in[i + 2]);
    if (hi < 0 || lo < 0) return false;
    out.push_back(static_cast<char>(hi * 16 + lo));
    i += 2;
  }
  return true;
}

template <typename Int>
bool parse_int(std::string_view s, Int& v) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && p == s.data() + s.size();
}

// An entry as it may be shown in a message: credentials never are. `redis://u:pw@h:1` becomes
// `redis://u:***@h:1`, `redis://:pw@h:1` becomes `redis://:***@h:1`.
std::string redacted(std::string_view entry) {
  auto scheme = entry.find("://");
  auto from = scheme == std::string_view::npos ? 0 : scheme + 3;
  auto at = entry.rfind('@');
  if (at == std::string_view::npos || at < from) return std::string(entry);
  auto colon = entry.find(':', from);
  auto keep = colon != std::string_view::npos && colon < at ? colon + 1 : from;
  return std::string(entry.substr(0, keep)) + "***" + std::string(entry.substr(at));
}

// A host as a node list may name it: letters, digits, '.', '-' and '_' (a name or an IPv4
// address), or in brackets an IPv6 address (hex digits, ':' and '.', a zone after '%'). Anything
// else (spaces, '[', control bytes...) cannot be resolved, and may not survive being written
// back as a node list ("redis://[[]:1" gave the host "[": tests/fuzz/fuzz_node_list.cpp's
// round-trip property).
bool plausible_host(std::string_view host, bool bracketed) {
  auto name_char = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_';
  };
  if (!bracketed) {
    for (char c : host)
      if (!name_char(c)) return false;
    return true;
  }
  auto zone = host.find('%');
  auto address = host.substr(0, zone);
  if (address.find(':') == std::string_view::npos) return false;
  for (char c : address)
    if (!std::isxdigit(static_cast<unsigned char>(c)) && c != ':' && c != '.') return false;
  if (zone == std::string_view::npos) return true;
  auto name = host.substr(zone + 1);
  if (name.empty()) return false;
  for (char c : name)
    if (!name_char(c)) return false;
  return true;
}

std::error_code parse_one(std::string_view entry, NodeAddress& node, std::string& message) {
  const std::string quoted = "'" + redacted(entry) + "'";
  auto colon_slashes = entry.find("://");
  if (colon_slashes == std::string_view::npos)
    return fail(message, "node " + quoted + ": expected redis://host:port");
  auto scheme = entry.substr(0, colon_slashes);
  if (scheme != "redis" && scheme != "rediss")
    return fail(message, "node " + quoted + ": unknown scheme '" + std::string(scheme) +
                             "' (expected redis:// or rediss://)");
  node.tls = scheme == "rediss";
  auto rest = entry.substr(colon_slashes + 3);
  // Two nodes in one entry: a separator other than ',' ("redis://a:1 redis://b:2", ';', '|').
  // Looked for after the credentials only: a message never depends on a password.
  auto after = rest.substr(rest.rfind('@') == std::string_view::npos ? 0 : rest.rfind('@') + 1);
  for (auto i = after.find("redis"); i != std::string_view::npos; i = after.find("redis", i + 1))
    if (i > 0 && std::string_view(" \t;|").find(after[i - 1]) != std::string_view::npos &&
        (after.substr(i).rfind("redis://", 0) == 0 || after.substr(i).rfind("rediss://", 0) == 0))
      return fail(message, "node " + quoted +
                               ": two nodes in one entry? separate the nodes with ',' (not '" +
                               std::string(1, after[i - 1]) + "')");

  auto at = rest.rfind('@');
  if (at != std::string_view::npos) {
    auto userinfo = rest.substr(0, at);
    rest = rest.substr(at + 1);
    auto colon = userinfo.find(':');
    if (colon == std::string_view::npos)
      return fail(message, "node " + quoted + ": credentials must be user:password or :password");
    if (!percent_decode(userinfo.substr(0, colon), node.user) ||
        !percent_decode(userinfo.substr(colon + 1), node.password))
      return fail(message, "node " + quoted + ": malformed %-escape in credentials");
    if (node.password.empty())
      return fail(message, "node " + quoted + ": empty password after ':'");
  }

  auto slash = rest.find('/');
  std::string_view hostport = rest.substr(0, slash);
  if (slash != std::string_view::npos) {
    auto db = rest.substr(slash + 1);
    if (!db.empty() && (!parse_int(db, node.db) || node.db < 0))
      return fail(message, "node " + quoted + ": database '" + std::string(db) +
                               "' is not a non-negative integer");
  }

  std::string_view host, port;
  if (!hostport.empty() && hostport.front() == '[') {
    auto close = hostport.find(']');
    if (close == std::string_view::npos)
      return fail(message, "node " + quoted + ": unterminated '[' in IPv6 address");
    host = hostport.substr(1, close - 1);
    auto after = hostport.substr(close + 1);
    if (after.empty() || after.front() != ':')
      return fail(message, "node " + quoted + ": missing port (expected [addr]:port)");
    port = after.substr(1);
  } else {
    auto colon = hostport.rfind(':');
    if (colon == std::string_view::npos)
      return fail(message, "node " + quoted + ": missing port (expected host:port)");
    host = hostport.substr(0, colon);
    port = hostport.substr(colon + 1);
    if (host.find(':') != std::string_view::npos)
      return fail(message, "node " + quoted + ": IPv6 addresses must be written in brackets");
  }
  if (host.empty()) return fail(message, "node " + quoted + ": missing host");
  if (!plausible_host(host, /*bracketed=*/hostport.front() == '['))
    return fail(message, "node " + quoted + ": '" + std::string(host) +
                             "' is not a host name or an IP address");
  if (port.empty()) return fail(message, "node " + quoted + ": missing port");
  long port_value = 0;
  if (!parse_int(port, port_value))
    return fail(message, "node " + quoted + ": port '" + std::string(port) + "' is not a number");
  if (port_value < 1 || port_value > 65535)
    return fail(message,
                "node " + quoted + ": port " + std::string(port) + " is out of range (1-65535)");
  node.host = std::string(host);
  node.port = static_cast<std::uint16_t>(port_value);
  return {};
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string ms(Milliseconds d) { return std::to_string(d.count()) + "ms"; }

}  // namespace

std::string NodeAddress::to_string() const {
  std::string s = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  s += ":" + std::to_string(port);
  if (db != 0) s += "/" + std::to_string(db);
  return s;
}

std::error_code parse_node_list(std::string_view list, std::vector<NodeAddress>& out,
                                std::string& message) {
  out.clear();
  if (trim(list).empty()) return fail(message, "node list is empty");
  std::set<std::string> seen;
  std::size_t start = 0;
  for (;;) {
    auto comma = list.find(',', start);
    auto entry = trim(list.substr(start, comma == std::string_view::npos ? comma : comma - start));
    if (entry.empty())
      return fail(message,
                  "node list has an empty entry at position " + std::to_string(out.size() + 1));
    NodeAddress node;
    if (auto ec = parse_one(entry, node, message)) return ec;
    auto id = lower(node.host) + ":" + std::to_string(node.port);
    if (!seen.insert(id).second)
      return fail(message, "node '" + redacted(entry) + "' is listed twice (" + id + ")");
    out.push_back(std::move(node));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return {};
}

std::chrono::microseconds drift_allowance(Milliseconds ttl, double drift_factor) {
  using std::chrono::microseconds;
  double us = static_cast<double>(microseconds(ttl).count()) * drift_factor;
  return microseconds(static_cast<std::int64_t>(std::ceil(us))) + Milliseconds(2);
}

std::error_code validate(const Config& c, std::string& message) {
  if (c.nodes.empty()) return fail(message, "node list is empty");
  if (!(c.drift_factor >= 0.0 && c.drift_factor < 1.0))
    return fail(message,
                "drift factor " + std::to_string(c.drift_factor) + " is out of range [0, 1)");
  if (c.ttl.count() <= 0) return fail(message, "ttl " + ms(c.ttl) + " must be positive");
  for (auto d : {c.ttl, c.watchdog_lease, c.request_timeout, c.connect_timeout, c.retry_delay,
                 c.retry_jitter, c.reconnect_min, c.reconnect_max, c.restart_guard})
    if (d > longest_duration)
      return fail(message, "a duration of " + ms(d) +
                               " is above the longest one the client times (" +
                               ms(longest_duration) + ")");
  auto drift = drift_allowance(c.ttl, c.drift_factor);
  if (c.ttl <= drift)
    return fail(message, "ttl " + ms(c.ttl) + " is not above its clock drift allowance of " +
                             std::to_string(drift.count()) + "us");
  if (c.request_timeout.count() <= 0)
    return fail(message, "request timeout " + ms(c.request_timeout) + " must be positive");
  if (c.request_timeout >= c.ttl)
    return fail(message,
                "request timeout " + ms(c.request_timeout) + " must be below the ttl " + ms(c.ttl));
  if (c.watchdog_lease <= drift_allowance(c.watchdog_lease, c.drift_factor) ||
      c.request_timeout >= c.watchdog_lease)
    return fail(message, "watchdog lease " + ms(c.watchdog_lease) +
                             " must be above its drift allowance and the request timeout");
  if (c.connect_timeout.count() <= 0)
    return fail(message, "connect timeout " + ms(c.connect_timeout) + " must be positive");
  if (c.retry_count < 0)
    return fail(message, "retry count " + std::to_string(c.retry_count) + " must not be negative");
  if (c.retry_delay.count() < 0 || c.retry_jitter.count() < 0)
    return fail(message, "retry delay and jitter must not be negative");
  if (c.reconnect_min.count() <= 0 || c.reconnect_max < c.reconnect_min)
    return fail(message, "reconnect back-off needs 0 < min <= max");
  if (!(c.min_validity_ratio >= 0.0 && c.min_validity_ratio < 1.0) ||
      !(c.min_validity_ratio + c.drift_factor < 1.0))
    return fail(message, "min validity ratio " + std::to_string(c.min_validity_ratio) +
                             " is out of range [0, 1 - drift factor)");
  // The reserved byte separates a lock's key from its auxiliary keys (core/keys.hpp).
  if (!detail::usable_name(c.key_prefix)) return fail(message, "key prefix contains a NUL byte");
  if (c.restart_guard.count() < 0)
    return fail(message, "restart guard " + ms(c.restart_guard) + " must not be negative");
  for (const auto& n : c.nodes) {
    if (n.host.empty() || n.port == 0)
      return fail(message, "node '" + n.to_string() + "' needs a host and a port");
  }
  const TlsOptions& t = c.tls;
  if (t.cert_file.empty() != t.key_file.empty())
    return fail(message,
                t.cert_file.empty()
                    ? "TLS key file '" + t.key_file + "' given without a certificate file"
                    : "TLS certificate file '" + t.cert_file + "' given without a key file");
  for (const std::string* s : {&t.ca_file, &t.ca_dir, &t.cert_file, &t.key_file, &t.server_name})
    if (s->find('\0') != std::string::npos)
      return fail(message, "a TLS option contains a NUL character");
  return {};
}

Config Config::from_node_list(std::string_view list) {
  Config c;
  std::string message;
  if (auto ec = parse_node_list(list, c.nodes, message)) throw Error(ec, message);
  return c;
}

Config Config::from_env() {
  const char* v = std::getenv("REDLOCK_NODES");
  if (v == nullptr) throw Error(make_error_code(Errc::invalid_config), "REDLOCK_NODES is not set");
  return from_node_list(v);
}

}  // namespace redlock
