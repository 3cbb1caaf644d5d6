// What every verb of the `redlock` tool shares: exit codes, the global options, the
// configuration made from them, and how diagnostics and output are written.
#pragma once

#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <system_error>

#include "redlock/redlock.hpp"

namespace redlock::cli {

// Exit codes: a stable contract (docs/configuration-and-cli.md). `run` exits with its command's
// status otherwise; 128 + N when signal N ended its wait for the lock.
enum Exit { kOk = 0, kNotHeld = 1, kUsage = 2, kNoQuorum = 3, kLost = 4, kRefused = 5 };

struct Globals {
  std::string nodes;
  // Durations as given (units allowed: duration.hpp), converted in make_config.
  std::optional<std::string> ttl;
  std::optional<std::string> restart_guard;
  std::optional<std::string> prefix;
  std::optional<std::string> connect_timeout;
  std::optional<std::string> request_timeout;
  std::optional<int> retry_count;
  std::optional<std::string> retry_delay;
  std::optional<std::string> retry_jitter;
  std::optional<double> drift_factor;
  bool quiet = false;
  bool no_persistence_warning = false;
  // TLS, with redis-cli's option names: --tls makes every node rediss://.
  bool tls = false;
  TlsOptions tls_options;
  // Set by `status`: its table shows the warnings, so stderr does not repeat them.
  bool warnings_in_table = false;
};

// stdout was closed when redlock started (`>&-`): it now points at /dev/null, where a token
// would be lost.
extern bool g_stdout_was_closed;

int exit_code_for(std::error_code ec);

// Throws redlock::Error (invalid_argument): a usage error, exit 2.
[[noreturn]] void usage_error(const std::string& message);

// A duration option's value; a usage error naming the option when it is not one.
std::optional<Milliseconds> duration_of(const char* option, const std::optional<std::string>& text);

// A safeguard warning is "node ADDR: WHAT: WHY...". Persistence warnings are condensed to their
// first clause and a consequence, once per node and call (a reconnect does not repeat them);
// --no-persistence-warning drops them. Others are shown as they are, once per node.
class WarningPrinter {
 public:
  explicit WarningPrinter(const Globals& g)
      : quiet_(g.quiet), no_persistence_(g.no_persistence_warning) {}

  static bool is_persistence(const std::string& text);
  // "persistence off (appendonly no): a crash or restart can forget its locks"
  static std::string condensed(const std::string& text);

  void operator()(const std::string& line);

 private:
  bool quiet_, no_persistence_;
  std::mutex mutex_;
  std::set<std::string> seen_;
  bool hinted_ = false;
};

// The configuration from the options; throws redlock::Error on a bad list or option. Warns
// (stderr, unless --quiet) about a node count that tolerates less than it seems to.
Config make_config(const Globals& g);

// `text` made safe for a terminal or a log line: control bytes (C0, DEL), a backslash and bytes
// that are not UTF-8 become escapes (\n, \r, \t, \\, \xHH), as `--json` escapes them. Every
// name or text from the command line or a node goes through it before text output.
std::string printable(std::string_view text);

// A line on stderr in one write, escaped (printable()), also with --quiet.
void say(const std::string& line);

// A diagnostic on stderr, unless --quiet.
void diag(const Globals& g, const std::string& line);

// Always shown, also with --quiet: why the command failed. Returns its exit code.
int fail(const Outcome& r, const std::string& what);

// Writes all of `text` to stdout, unbuffered; false when any of it could not be written
// (EPIPE, EBADF, a full disk), with errno set.
bool write_stdout(const std::string& text);

}  // namespace redlock::cli
