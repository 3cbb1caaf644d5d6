/// \file
/// \brief Configuration: the node list and the options of the algorithm.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "redlock/export.hpp"

namespace redlock {

/// Every duration of the API: ttls, leases, waits, timeouts.
using Milliseconds = std::chrono::milliseconds;

/// The longest duration the library times: 2^40 ms, about 34.8 years. A ttl, lease or timeout
/// above it is refused (Errc::invalid_argument / invalid_config); a wait above it waits without
/// end. Clock arithmetic in nanoseconds can then never overflow.
inline constexpr Milliseconds longest_duration{1LL << 40};

class Observer;  // redlock/observer.hpp

/// \brief Severity of a message to Config::log.
enum class LogLevel : std::uint8_t {
  warning,  ///< Something the operator should look at (a node without persistence, ...).
  error,    ///< Something went wrong that the library cannot report otherwise (an exception
            ///< escaping a callback, an unlock that failed without an error callback, a leak).
};

/// \param level A level.
/// \return Its name: "warning" or "error".
REDLOCK_API const char* to_string(LogLevel level) noexcept;

/// \brief Receives the library's messages (Config::log).
/// \param level How serious.
/// \param message One sentence, without a trailing newline; never a password.
using LogHandler = std::function<void(LogLevel level, const std::string& message)>;

/// \brief One independent Redis master, from `redis://[user:password@]host:port[/db]`.
struct REDLOCK_API NodeAddress {
  std::string host;        ///< A name, an IPv4 address, or an IPv6 address without brackets.
  std::uint16_t port = 0;  ///< TCP port, 1 to 65535.
  int db = 0;              ///< Database number (SELECT), 0 by default.
  std::string user;        ///< ACL user; empty: AUTH with the password only (or no AUTH).
  std::string password;    ///< Empty: no AUTH.
  /// True for `rediss://`: the connection is TLS, verified with Config::tls (never plain text).
  bool tls = false;

  /// \return "host:port" or "host:port/db"; never the credentials.
  std::string to_string() const;
};

/// TLS options, shared by every `rediss://` node of a client (one OpenSSL context for them).
/// The names follow redis-cli's `--tls` options.
struct TlsOptions {
  /// PEM file of trusted CA certificates (`--cacert`). Empty, with ca_dir empty too: the
  /// system's default trust store.
  std::string ca_file;
  /// Directory of trusted CA certificates, hashed as by `openssl rehash` (`--cacertdir`).
  std::string ca_dir;
  /// PEM client certificate (chain) for servers with `tls-auth-clients yes` (`--cert`).
  /// Needs key_file.
  std::string cert_file;
  /// PEM private key of cert_file, unencrypted (`--key`). Needs cert_file.
  std::string key_file;
  /// Name sent as SNI and checked against the server certificate (`--sni`). Empty: the node's
  /// host (an IP address is then checked against the certificate's IP addresses, without SNI).
  std::string server_name;
  /// DANGER: accepts any server certificate, from anyone, for any name (`--insecure`).
  /// Encrypts without authenticating the server. For tests only.
  bool insecure_skip_verify = false;
};

/// \brief The node list and every option of a Client, with their defaults.
///
/// Checked as a whole by validate() (and by the Client constructor); see
/// docs/configuration-and-cli.md and docs/operations.md for how to choose the values.
struct REDLOCK_API Config {
  /// The N independent masters; the quorum is N/2 + 1.
  std::vector<NodeAddress> nodes;
  /// TLS options for the `rediss://` nodes; ignored when there is none.
  TlsOptions tls;

  /// Lease of a lock when an operation is given none.
  Milliseconds ttl{10'000};
  /// acquire() without a wait deadline makes 1 + retry_count attempts,
  /// retry_delay + uniform[0, retry_jitter] apart. With a wait, more than retry_count
  /// consecutive attempts without a quorum of reachable nodes end it (Errc::no_quorum).
  int retry_count = 3;
  /// Pause between attempts (see retry_count).
  Milliseconds retry_delay{200};
  /// Random extra pause, uniform in [0, retry_jitter].
  Milliseconds retry_jitter{100};
  /// Clock drift allowance: validity = ttl - (ttl * drift_factor + 2 ms). In [0, 1).
  double drift_factor = 0.01;
  /// A grant is kept only when at least max(ttl * min_validity_ratio, 1 ms) of its validity is
  /// left when the quorum is complete (after the fencing write-back, with fencing); a grant
  /// with less is a failed attempt (Errc::validity_expired), cleaned up and retried. In [0, 1),
  /// and min_validity_ratio + drift_factor < 1 (docs/configuration-and-cli.md).
  double min_validity_ratio = 0.1;
  /// Per node: how long resolving, connecting and the handshake (AUTH, SELECT) may take.
  Milliseconds connect_timeout{1'000};
  /// Per node: how long a single request may take; must be below the ttl.
  Milliseconds request_timeout{200};
  /// Reconnect back-off after a failed or lost connection: doubles from min to max, with jitter.
  Milliseconds reconnect_min{50};
  /// Upper bound of the reconnect back-off.
  Milliseconds reconnect_max{2'000};
  /// Lease of a lock taken by Client::hold() or a Mutex without a ttl: it is renewed every
  /// watchdog_lease / 3 for as long as it is held.
  Milliseconds watchdog_lease{30'000};
  /// Every Redis key and channel of this client starts with this prefix.
  std::string key_prefix = "redlock:";

  /// Restart safeguards, checked on every new connection to a node (docs/operations.md).
  /// Refuse a node that is a replica or a Redis Cluster node (Errc::node_not_master): Redlock
  /// needs independent masters.
  bool check_role = true;
  /// Refuse a node that is the same server (same run_id) as another listed node, under another
  /// address (Errc::duplicate_node): it would vote twice.
  bool check_duplicates = true;
  /// Warn when a node cannot keep a lock across a crash: no AOF, or appendfsync not `always`.
  bool check_persistence = true;
  /// Delayed restarts, enforced by the client: while a node's uptime is below the largest lease
  /// in use (the larger of this, ttl and watchdog_lease), the node is not eligible: its commands
  /// fail at once with Errc::node_restarting and count as "no". Set it to the largest ttl that
  /// any client of these nodes uses. 0 (the default): off.
  Milliseconds restart_guard{0};
  /// Receives each warning about a node (a sentence naming the node), once per node and cause.
  /// Empty: the warning goes to #log, at LogLevel::warning. Called on the client's loop thread.
  std::function<void(const std::string& warning)> on_warning;
  /// Receives every message the library has for a human, in place of standard error: warnings
  /// about nodes (unless #on_warning takes them), exceptions that escaped a callback, a Mutex
  /// unlock that failed without MutexOptions::on_error, a leaked loop handle. Empty (the
  /// default): each message is written to standard error as `redlock: <message>` (warnings as
  /// `redlock: warning: <message>`). Called on the client's loop thread, except for a failed
  /// unlock and a leak, reported on the thread that unlocked or destroyed the client. An
  /// exception escaping it is swallowed.
  LogHandler log;
  /// Receives structured events: operations and their outcomes, lost locks, waits, node states
  /// (redlock/observer.hpp, docs/observability.md). Null (the default): no event is built, and
  /// the library pays one null check per event. Called on the client's loop thread.
  std::shared_ptr<Observer> observer;

  /// \brief Parses a comma-separated node list; other options keep their defaults.
  /// \param list Entries as parse_node_list() takes them.
  /// \return A configuration with those nodes.
  /// \throws redlock::Error (Errc::invalid_config) naming the bad part.
  static Config from_node_list(std::string_view list);
  /// \brief The same from the REDLOCK_NODES environment variable.
  /// \return A configuration with those nodes.
  /// \throws redlock::Error (Errc::invalid_config) when it is unset or bad.
  static Config from_env();
};

/// \brief Parses `redis://[user:password@]host:port[/db]` entries (`rediss://` for TLS)
/// separated by commas.
/// \param list The node list.
/// \param[out] out The nodes, in list order; unspecified on failure.
/// \param[out] message On failure, a sentence naming the bad part (never a password).
/// \return Empty, or Errc::invalid_config.
[[nodiscard]] REDLOCK_API std::error_code parse_node_list(std::string_view list,
                                                          std::vector<NodeAddress>& out,
                                                          std::string& message);

/// \brief Checks the whole configuration: what Client's constructor refuses.
/// \param config The configuration.
/// \param[out] message On failure, a sentence naming the bad part (never a password).
/// \return Empty, or Errc::invalid_config.
[[nodiscard]] REDLOCK_API std::error_code validate(const Config& config, std::string& message);

/// \brief The clock drift allowance for a lease.
/// \param ttl The lease.
/// \param drift_factor Config::drift_factor.
/// \return ttl * drift_factor + 2 ms, rounded up to microseconds.
REDLOCK_API std::chrono::microseconds drift_allowance(Milliseconds ttl, double drift_factor);

}  // namespace redlock
