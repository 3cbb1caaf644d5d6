#include "common.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include "duration.hpp"

namespace redlock::cli {

bool g_stdout_was_closed = false;

namespace {

// One line to stderr in one write: warnings come from the library's loop thread while the main
// thread reports, and a line written in pieces (text, then the newline) can be cut in two by the
// other's (std::cerr is unbuffered; one insertion is one fwrite, which stdio keeps whole).
void put_line(std::string line) {
  line += '\n';
  std::cerr << line;
}

}  // namespace

int exit_code_for(std::error_code ec) {
  if (!ec) return kOk;
  if (ec == Errc::not_acquired || ec == Errc::not_held || ec == Errc::validity_expired)
    return kNotHeld;
  if (ec == Errc::invalid_argument || ec == Errc::invalid_config) return kUsage;
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
  return text.rfind("persistence off", 0) == 0 || text.rfind("appendfsync ", 0) == 0;
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
      std::cerr << "redlock: warning: 1 node tolerates no failure: when it is down no lock can "
                   "be taken, when it restarts without persistence every lock is forgotten; "
                   "use 3 or 5 independent masters\n";
    return;
  }
  std::size_t tolerated = (n - 1) / 2;
  std::cerr << "redlock: warning: " << n << " nodes tolerate " << tolerated << " failure"
            << (tolerated == 1 ? "" : "s") << ", as " << n - 1 << " node"
            << (n - 1 == 1 ? " does" : "s do") << " (a quorum is " << n / 2 + 1 << " of " << n
            << "); use an odd number of nodes\n";
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
  c.tls = g.tls_options;
  if (g.tls)
    for (auto& node : c.nodes) node.tls = true;
  warn_fault_tolerance(g, c.nodes.size());
  return c;
}

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
