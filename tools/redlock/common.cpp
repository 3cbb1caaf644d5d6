#include "common.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <memory>
#include <string>

#include "core/safeguards.hpp"
#include "duration.hpp"

namespace redlock::cli {

bool g_stdout_was_closed = false;

namespace {

// The length of the well-formed UTF-8 sequence at the start of `s` (2 to 4), or 0.
std::size_t utf8_length(std::string_view s) {
  const auto b = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
  const auto cont = [&](std::size_t i) { return i < s.size() && (b(i) & 0xc0) == 0x80; };
  const unsigned char c = b(0);
  if (c >= 0xc2 && c <= 0xdf) return cont(1) ? 2 : 0;
  if (c >= 0xe0 && c <= 0xef) {
    if (!cont(1) || !cont(2)) return 0;
    if (c == 0xe0 && b(1) < 0xa0) return 0;   // overlong
    if (c == 0xed && b(1) >= 0xa0) return 0;  // a surrogate
    return 3;
  }
  if (c >= 0xf0 && c <= 0xf4) {
    if (!cont(1) || !cont(2) || !cont(3)) return 0;
    if (c == 0xf0 && b(1) < 0x90) return 0;   // overlong
    if (c == 0xf4 && b(1) >= 0x90) return 0;  // above U+10FFFF
    return 4;
  }
  return 0;
}

// One line to stderr in one write: warnings come from the library's loop thread while the main
// thread reports, and a line written in pieces (text, then the newline) can be cut in two by the
// other's (std::cerr is unbuffered; one insertion is one fwrite, which stdio keeps whole).
// Escaped (printable()): a key name or a node's text cannot move the cursor or forge a line.
void put_line(const std::string& line) {
  std::string out = printable(line);
  out += '\n';
  std::cerr << out;
}

}  // namespace

int exit_code_for(std::error_code ec) {
  if (!ec) return kOk;
  if (ec == Errc::not_acquired || ec == Errc::not_held || ec == Errc::validity_expired)
    return kNotHeld;
  // Another number of permits than a live permit of the semaphore has: the command line is at odds
  // with the others' (docs/guide-semaphore.md).
  if (ec == Errc::invalid_argument || ec == Errc::invalid_config || ec == Errc::permits_mismatch)
    return kUsage;
  return kNoQuorum;
}

[[noreturn]] void usage_error(const std::string& message) {
  throw redlock::Error(make_error_code(Errc::invalid_argument), message);
}

// A duration option's value; a usage error naming the option when it is not one.
std::optional<Milliseconds> duration_of(const char* option,
                                        const std::optional<std::string>& text) {
  if (!text) return std::nullopt;
  std::string why;
  auto d = parse_duration(*text, why);
  if (!d) usage_error(std::string(option) + ": " + why);
  return d;
}

bool WarningPrinter::is_persistence(const std::string& text) {
  return redlock::detail::is_persistence_warning(text);
}

std::string WarningPrinter::condensed(const std::string& text) {
  auto clause = text.substr(0, text.find(':'));
  return clause + ": a crash or restart can forget its locks";
}

void WarningPrinter::operator()(const std::string& line) {
  if (quiet_) return;
  // "node ADDR: TEXT"
  auto colon = line.find(": ");
  std::string node = colon == std::string::npos ? std::string() : line.substr(0, colon);
  std::string text = colon == std::string::npos ? line : line.substr(colon + 2);
  bool persistence = is_persistence(text);
  if (persistence && no_persistence_) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (!seen_.insert(node + '\n' + (persistence ? "persistence" : text)).second) return;
  std::string out = "redlock: warning: " + node + ": " + (persistence ? condensed(text) : text);
  if (persistence && !hinted_) {
    hinted_ = true;
    out += " (docs/operations.md; --no-persistence-warning hides this)";
  }
  put_line(std::move(out));
}

namespace {

// N = 1 tolerates no failure; an even N tolerates no more than N - 1: a quorum is N/2 + 1.
void warn_fault_tolerance(const Globals& g, std::size_t n) {
  if (g.quiet || n == 0 || n % 2 == 1) {
    if (n == 1 && !g.quiet)
      put_line(
          "redlock: warning: 1 node tolerates no failure: when it is down no lock can "
          "be taken, when it restarts without persistence every lock is forgotten; "
          "use 3 or 5 independent masters");
    return;
  }
  std::size_t tolerated = (n - 1) / 2;
  put_line("redlock: warning: " + std::to_string(n) + " nodes tolerate " +
           std::to_string(tolerated) + " failure" + (tolerated == 1 ? "" : "s") + ", as " +
           std::to_string(n - 1) + " node" + (n - 1 == 1 ? " does" : "s do") + " (a quorum is " +
           std::to_string(n / 2 + 1) + " of " + std::to_string(n) +
           "); use an odd number of nodes");
}

// TLS options with no TLS node would be ignored, and the lock taken in plain text by a user who
// believes it is encrypted (most often a redis:// left where rediss:// was meant): an error.
// A named file that cannot be read is one too, before any node is asked.
void check_tls_options(const Globals& g, const redlock::Config& c) {
  const auto& t = g.tls_options;
  const std::pair<const char*, const std::string*> files[] = {
      {"--cacert", &t.ca_file}, {"--cert", &t.cert_file}, {"--key", &t.key_file}};
  std::string given;
  for (const auto& [name, value] : files)
    if (!value->empty()) given += std::string(given.empty() ? "" : ", ") + name;
  if (!t.ca_dir.empty()) given += std::string(given.empty() ? "" : ", ") + "--cacertdir";
  if (!t.server_name.empty()) given += std::string(given.empty() ? "" : ", ") + "--sni";
  if (t.insecure_skip_verify) given += std::string(given.empty() ? "" : ", ") + "--insecure";
  if (given.empty()) return;
  std::string invalid;
  if (redlock::validate(c, invalid)) return;  // its own message first (e.g. --cert without --key)
  const bool any_tls =
      std::any_of(c.nodes.begin(), c.nodes.end(), [](const NodeAddress& n) { return n.tls; });
  if (!any_tls)
    throw redlock::Error(make_error_code(Errc::invalid_config),
                         given +
                             " given, but no node is TLS: list the nodes as rediss://, or "
                             "add --tls (or drop " +
                             given + ")");
  for (const auto& [name, value] : files)
    if (!value->empty() && ::access(value->c_str(), R_OK) != 0)
      throw redlock::Error(make_error_code(Errc::invalid_config),
                           std::string(name) + " " + *value + ": " + std::strerror(errno));
  if (!t.ca_dir.empty() && ::access(t.ca_dir.c_str(), R_OK | X_OK) != 0)
    throw redlock::Error(make_error_code(Errc::invalid_config),
                         "--cacertdir " + t.ca_dir + ": " + std::strerror(errno));
}

}  // namespace

redlock::Config make_config(const Globals& g) {
  if (g.nodes.empty())
    throw redlock::Error(make_error_code(Errc::invalid_config),
                         "no nodes: pass --nodes or set REDLOCK_NODES");
  auto c = redlock::Config::from_node_list(g.nodes);
  auto printer = std::make_shared<WarningPrinter>(g);
  c.on_warning = [printer, in_table = g.warnings_in_table](const std::string& warning) {
    if (!in_table) (*printer)(warning);
  };
  if (auto d = duration_of("--ttl", g.ttl)) c.ttl = c.watchdog_lease = *d;
  if (auto d = duration_of("--restart-guard", g.restart_guard)) c.restart_guard = *d;
  if (g.prefix) c.key_prefix = *g.prefix;
  if (auto d = duration_of("--connect-timeout", g.connect_timeout)) c.connect_timeout = *d;
  if (auto d = duration_of("--request-timeout", g.request_timeout)) c.request_timeout = *d;
  if (g.retry_count) c.retry_count = *g.retry_count;
  if (auto d = duration_of("--retry-delay", g.retry_delay)) c.retry_delay = *d;
  if (auto d = duration_of("--retry-jitter", g.retry_jitter)) c.retry_jitter = *d;
  if (g.drift_factor) c.drift_factor = *g.drift_factor;
  // The library's own log lines (without a handler: raw to stderr) escaped like ours.
  c.log = [](LogLevel level, const std::string& message) {
    put_line(std::string("redlock: ") + (level == LogLevel::warning ? "warning: " : "") + message);
  };
  c.tls = g.tls_options;
  if (g.tls)
    for (auto& node : c.nodes) node.tls = true;
  check_tls_options(g, c);
  warn_fault_tolerance(g, c.nodes.size());
  return c;
}

std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
      ++i;
      continue;
    }
    if (c >= 0x80) {
      if (std::size_t n = utf8_length(text.substr(i)); n > 0) {
        out.append(text.substr(i, n));
        i += n;
        continue;
      }
    }
    switch (c) {
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\\':
        out += "\\\\";
        break;
      default: {
        char buf[5];
        std::snprintf(buf, sizeof buf, "\\x%02x", c);
        out += buf;
      }
    }
    ++i;
  }
  return out;
}

void say(const std::string& line) { put_line(line); }

void diag(const Globals& g, const std::string& line) {
  if (!g.quiet) put_line("redlock: " + line);
}

int fail(const redlock::Outcome& r, const std::string& what) {
  put_line("redlock: " + what + ": " + r.message());
  return exit_code_for(r.error);
}

bool write_stdout(const std::string& text) {
  std::fflush(stdout);
  const char* data = text.data();
  std::size_t size = text.size();
  while (size > 0) {
    ssize_t n = ::write(STDOUT_FILENO, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

}  // namespace redlock::cli
