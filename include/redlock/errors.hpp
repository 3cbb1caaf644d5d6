/// \file
/// \brief Error codes of redlock-cpp: one enum, one std::error_category.
///
/// Contention is not an error in the exceptional sense: a refused acquire is an
/// ordinary outcome whose code is Errc::not_acquired. Codes are generated from
/// one X-macro list so that the enum, the names and the messages never drift.
#pragma once

#include <stdexcept>
#include <string>
#include <system_error>
#include <type_traits>

#include "redlock/export.hpp"

namespace redlock {

/// \brief The X-macro list of every error code, `X(name, message)`, in the order of their values.
///
/// It generates Errc, errc_name() and the category's messages. Each code is explained (cause,
/// what to do, whether to retry) in docs/errors.md, under a heading of its name.
#define REDLOCK_ERRC_MAP(X)                                                              \
  /* outcomes of lock operations */                                                      \
  X(not_acquired, "lock is held by another owner")                                       \
  X(not_held, "lock is not held by this token (expired or taken by another owner)")      \
  X(no_quorum, "too few nodes answered for a quorum")                                    \
  X(validity_expired, "quorum reached after the validity window closed")                 \
  X(lock_lost, "lock lost: its validity ended or a quorum no longer holds it")           \
  X(cancelled, "operation cancelled")                                                    \
  X(shutting_down, "client is shutting down")                                            \
  X(would_deadlock, "blocking call made from the client's own loop thread")              \
  X(not_owner, "lock is not owned by the calling thread")                                \
  /* caller and configuration errors */                                                  \
  X(invalid_argument, "invalid argument")                                                \
  X(invalid_config, "invalid configuration")                                             \
  /* node-level failures */                                                              \
  X(not_connected, "node is not connected")                                              \
  X(connect_failed, "connection to node failed")                                         \
  X(connect_timeout, "connection to node timed out")                                     \
  X(request_timeout, "request to node timed out")                                        \
  X(connection_lost, "connection to node lost")                                          \
  X(protocol_error, "unexpected reply from node")                                        \
  /* restart safeguards, checked when a node connects */                                 \
  X(node_not_master, "node is a replica or a Cluster node, not an independent master")   \
  X(duplicate_node, "node is the same Redis server as another listed node")              \
  X(node_restarting, "node restarted less than the largest lease ago: not eligible yet") \
  /* TLS (rediss://): the connection is refused, never continued in plain text */        \
  X(tls_handshake_failed, "TLS handshake with node failed")                              \
  X(tls_unknown_ca, "TLS: node's certificate is not signed by a trusted CA")             \
  X(tls_name_mismatch, "TLS: node's certificate does not match its host name or SNI")    \
  X(tls_cert_expired, "TLS: node's certificate is expired or not yet valid")             \
  X(tls_client_cert_required, "TLS: node requires a client certificate")                 \
  /* Redis error replies */                                                              \
  X(redis_wrongtype, "WRONGTYPE: key holds a value of another type")                     \
  X(redis_oom, "OOM: node is out of memory")                                             \
  X(redis_readonly, "READONLY: node is a read-only replica")                             \
  X(redis_noperm, "NOPERM: user lacks permission")                                       \
  X(redis_noauth, "NOAUTH: node requires authentication")                                \
  X(redis_auth_failed, "authentication failed (wrong user or password)")                 \
  X(redis_loading, "LOADING: node is loading its dataset")                               \
  X(redis_busy, "BUSY: node is running a long script")                                   \
  X(redis_noscript, "NOSCRIPT: script not cached on node")                               \
  X(redis_masterdown, "MASTERDOWN: replica lost its master")                             \
  X(redis_error, "Redis error reply")                                                    \
  /* the kinds of lock (added after the groups above, so that no value changes) */       \
  X(permits_mismatch, "semaphore: a node keeps another number of permits for it")

/// \brief Every error of redlock-cpp, as a std::error_code of error_category().
///
/// The enumerators are the names in REDLOCK_ERRC_MAP, numbered from 1 in its order; see
/// docs/errors.md for each one. Compare a code with an enumerator:
/// `result.error == redlock::Errc::not_acquired`.
enum class Errc : int {
// 0 is success in std::error_code; codes start at 1.
#define REDLOCK_ERRC_ENUM(name, msg) name,
  ok_ = 0,  ///< Not an error: the value of an empty std::error_code.
  REDLOCK_ERRC_MAP(REDLOCK_ERRC_ENUM)
#undef REDLOCK_ERRC_ENUM
};

/// \brief The category of every Errc, named "redlock".
/// \return The one instance, valid for the whole program.
REDLOCK_API const std::error_category& error_category() noexcept;

/// \brief Makes Errc usable as a std::error_code (found by argument-dependent lookup).
/// \param e The code.
/// \return `e` in error_category().
inline std::error_code make_error_code(Errc e) noexcept {
  return {static_cast<int>(e), error_category()};
}

/// \brief The enumerator's name, as used for the headings of docs/errors.md.
/// \param e The code.
/// \return "not_acquired" for Errc::not_acquired, "ok" for Errc::ok_, or "unknown".
REDLOCK_API const char* errc_name(Errc e) noexcept;

/// \brief Whether a code comes from a Redis error reply (`Errc::redis_*`).
/// \param ec Any error code.
/// \return True for the codes of this category that stand for a Redis error reply.
REDLOCK_API bool is_redis_reply_error(std::error_code ec) noexcept;

/// \brief Whether a node's error rules the node out until something is fixed (it answered, but
/// may not or cannot vote: a replica or a Cluster node, listed twice, within the restart guard,
/// credentials or permissions refused, a TLS failure, a reply that is not Redis'), as opposed
/// to a node that is unreachable or busy for now (a refused, timed out or lost connection,
/// LOADING, BUSY). The one classification behind `redlock status`'s `refused` and `down`, the
/// metric `redlock_node_refused` and the CLI's textfile metrics.
/// \param ec A node's error (NodeStatus::error, NodeEvent::error, NodeVote::error).
/// \return True for a refusal; false for no error, an unreachable node, or another category.
REDLOCK_API bool is_node_refusal(std::error_code ec) noexcept;

/// \brief Thrown only by the calls that say so (Config::from_node_list, Config::from_env,
/// Client::Client, Mutex::lock). Carries the code and a message naming the bad part.
class REDLOCK_API Error : public std::system_error {
 public:
  /// \param ec The code, usually an Errc.
  /// \param what A sentence naming the bad part; never a password.
  Error(std::error_code ec, const std::string& what) : std::system_error(ec, what) {}
};

}  // namespace redlock

namespace std {
template <>
struct is_error_code_enum<redlock::Errc> : true_type {};
}  // namespace std
