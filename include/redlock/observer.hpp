/// \file
/// \brief Events for metrics and tracing: what a Client did, how it ended, and its nodes' state.
///
/// Set an Observer in Config::observer to receive them. With none set, the library pays one null
/// check per event: nothing is allocated, formatted or timed for it. docs/observability.md lists
/// every event, the Prometheus metrics that redlock::prometheus derives from them, and how to map
/// them to OpenTelemetry.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <system_error>
#include <vector>

#include "redlock/export.hpp"
#include "redlock/lock.hpp"

namespace redlock {

/// \brief The lock operations an OperationEvent reports.
enum class Operation : std::uint8_t {
  acquire,  ///< acquire(), try_acquire(), hold(), a Mutex's lock: from the call to its result.
  extend,   ///< extend() (also HeldLock::extend()).
  release,  ///< release() (also HeldLock::release() and a Mutex's last unlock).
  renew,    ///< One lock's renewal by the watchdog (held locks without a ttl).
  /// Election::campaign(): from the call to its result, the wait and the leader's write
  /// included (docs/guide-election.md). OperationEvent::term is the term won.
  campaign,
  /// One read of an office's leader: Election::leader(), and each read of a LeaderWatch.
  /// OperationEvent::term is the term read (0: vacant or no answer).
  leader,
};

/// \param op An operation.
/// \return Its name: "acquire", "extend", "release", "renew", "campaign" or "leader".
REDLOCK_API const char* to_string(Operation op) noexcept;

/// \brief One lock operation has ended.
///
/// Its pointers are valid during the call only: copy what you keep.
struct OperationEvent {
  Operation operation = Operation::acquire;  ///< Which operation.
  /// Empty on success; otherwise the Errc of the result (Errc::not_acquired for contention,
  /// Errc::not_held, Errc::no_quorum, ...), as the caller receives it.
  std::error_code error;
  /// The resources (without the key prefix); never null when delivered.
  const std::vector<std::string>* resources = nullptr;
  /// Each node's vote in the last attempt, with its error and latency; never null when delivered.
  /// Its addresses carry no credentials.
  const Votes* votes = nullptr;
  /// From the start of the operation (on the loop thread, or on the caller's lane) to its
  /// result: for an acquire, every attempt and every wait between them.
  std::chrono::microseconds latency{0};
  /// Attempts made (acquire: including retries and split-vote rounds; otherwise 1).
  int attempts = 1;
  /// An acquire of a permit of a semaphore: the number of permits asked for
  /// (AcquireRequest::permits); 0 for a mutex and for the other operations.
  unsigned permits = 0;
  /// The slot of the permit the operation was on (Lock::permit): the one granted, extended,
  /// renewed or released; -1 for a mutex and for an acquire that was not granted.
  int permit = -1;
  /// An acquire of a reader's share of a read-write lock (AcquireRequest::shared, a
  /// SharedMutex's lock_shared; docs/guide-rwlock.md), granted or not; false for a writer (a
  /// mutex acquire), a permit and the other operations.
  bool shared = false;
  /// Operation::campaign: the term won; Operation::leader: the term read; else 0.
  std::uint64_t term = 0;
};

/// \brief Why a held lock was declared lost (LostEvent::reason).
enum class LostReason : std::uint8_t {
  expired,        ///< Its validity window closed before a renewal reached a quorum.
  not_held,       ///< A renewal was refused: more than N - Q nodes said our token is gone.
  shutting_down,  ///< Its client was destroyed while the lock was held.
  /// A lock without renewal (acquire(), or a held lock whose loss nothing had reported yet)
  /// was released or extended after its validity had ended, and a quorum no longer held it.
  released_after_expiry,
  /// A lock without renewal was released or extended within its validity, or with a validity
  /// the client did not know (a Lock made from a token), and a quorum no longer held it: its
  /// keys were gone (deleted, taken over, or a node that forgot them).
  keys_gone,
};

/// \param reason A reason.
/// \return Its name: "expired", "not_held", "shutting_down", "released_after_expiry" or
/// "keys_gone".
REDLOCK_API const char* to_string(LostReason reason) noexcept;

/// \brief A lock was lost: once per lock, whichever way the client found out.
///
/// A held lock (hold(), a Mutex) is reported when the watchdog declares it lost, and its holder
/// is told. A lock without renewal (acquire()) is reported when its release or extend finds
/// that a quorum no longer holds it (LostReason::released_after_expiry, LostReason::keys_gone);
/// the same token is reported once, however often it is released again.
struct LostEvent {
  LostReason reason = LostReason::expired;  ///< Why.
  /// Errc::lock_lost, or Errc::shutting_down: what the lost-lock callback receives.
  std::error_code error;
  /// The resources; never null when delivered. Valid during the call only.
  const std::vector<std::string>* resources = nullptr;
  /// A permit of a semaphore: its slot (Lock::permit); -1 for a mutex.
  int permit = -1;
};

/// \brief An acquire began or stopped waiting for a release (WaitEvent::phase).
enum class WaitPhase : std::uint8_t {
  started,  ///< Refused while another owner holds the lock: it now waits for a release notice.
  ended,    ///< It stopped waiting: granted, out of time, cancelled, or shut down.
};

/// \brief An acquire with a wait (AcquireRequest::wait) starts or stops waiting.
///
/// A waiter is counted from its first refusal by a holder, not from its call: an acquire that
/// is granted at once never waits.
struct WaitEvent {
  WaitPhase phase = WaitPhase::started;  ///< Started or ended.
  /// The resources; never null when delivered. Valid during the call only.
  const std::vector<std::string>* resources = nullptr;
  /// WaitPhase::ended: the acquire's outcome (empty when granted).
  std::error_code error;
  /// WaitPhase::ended: time since the wait started.
  std::chrono::microseconds waited{0};
};

/// \brief A node's connection changed state (NodeEvent::state).
enum class NodeState : std::uint8_t {
  connected,     ///< Connected, and its handshake (AUTH, SELECT, safeguards) passed: it votes.
  refused,       ///< The connection worked, but the node may not vote: NodeEvent::error says why
                 ///< (Errc::node_not_master, Errc::duplicate_node, Errc::redis_auth_failed, ...).
  reconnecting,  ///< A connection that worked was lost; a new one is being opened at once.
  backoff,       ///< Connecting failed; the next try is after NodeEvent::backoff. Meanwhile its
                 ///< requests fail at once.
  restarting,    ///< Connected, but restarted too recently to vote (Config::restart_guard).
                 ///< NodeState::connected follows with the first acquire sent to it once
                 ///< the guard's time has passed.
};

/// \param state A state.
/// \return Its name: "connected", "refused", "reconnecting", "backoff" or "restarting".
REDLOCK_API const char* to_string(NodeState state) noexcept;

/// \brief A node's connection changed state.
struct NodeEvent {
  NodeState state = NodeState::connected;  ///< The new state.
  std::size_t node = 0;                    ///< Index of the node in Config::nodes.
  /// "host:port" or "host:port/db" (NodeAddress::to_string()): never a user or a password.
  /// Valid during the call only.
  const std::string* address = nullptr;
  /// True for the connection that listens for release notices (one per node, opened with the
  /// first waiter); false for the connection that votes.
  bool subscriber = false;
  /// Empty for NodeState::connected; otherwise why (an Errc: docs/errors.md).
  std::error_code error;
  /// The server's error text or the connection error, without credentials; may be empty.
  /// Valid during the call only.
  const std::string* detail = nullptr;
  /// NodeState::backoff: how long until the next connection attempt.
  std::chrono::milliseconds backoff{0};
};

/// \brief What a node's safeguards warned about (NodeWarningEvent::kind).
enum class NodeWarning : std::uint8_t {
  persistence,  ///< Its persistence can forget a lock: AOF off, or appendfsync not always.
  other,        ///< Anything else the safeguards could not check or did not like.
};

/// \param kind A kind of warning.
/// \return Its name: "persistence" or "other".
REDLOCK_API const char* to_string(NodeWarning kind) noexcept;

/// \brief The safeguards warned about a node (also given to Config::on_warning, once per node).
///
/// Sent on every handshake of the node's voting connection that gives the warning, so that a
/// metric can follow the node's state: a reconnection to a node whose persistence was fixed
/// sends none.
struct NodeWarningEvent {
  NodeWarning kind = NodeWarning::other;  ///< What about.
  std::size_t node = 0;                   ///< Index of the node in Config::nodes.
  /// "host:port" or "host:port/db": never a user or a password. Valid during the call only.
  const std::string* address = nullptr;
  /// The warning's sentence (without the node's address). Valid during the call only.
  const std::string* text = nullptr;
};

/// \brief Receives a Client's events. Set it in Config::observer; override what you need.
///
/// Every function is called on the client's loop thread, except the events of a blocking
/// acquire, try_acquire, extend or release served on the caller's own lane, which are called on
/// the calling thread: an observer may be called from two threads at once and must be
/// thread-safe. It must not block: the loop runs every lock of the client. An exception that
/// escapes a function is caught and reported through Config::log (like other callbacks); the
/// operation goes on. The events of an operation come before its result reaches the caller.
class REDLOCK_API Observer {
 public:
  virtual ~Observer();

  /// \brief A lock operation ended (acquire, extend, release, or a watchdog renewal).
  /// \param event The operation, its outcome, votes, latency and attempts.
  virtual void on_operation(const OperationEvent& event);
  /// \brief A lock was lost (see LostEvent: held locks, and plain ones found lost).
  /// \param event Why, and which resources.
  virtual void on_lost(const LostEvent& event);
  /// \brief An acquire started or stopped waiting for a release.
  /// \param event The phase, and for the end the outcome and the time waited.
  virtual void on_wait(const WaitEvent& event);
  /// \brief A node's connection changed state.
  /// \param event The node (address without credentials), its state and why.
  virtual void on_node(const NodeEvent& event);
  /// \brief The number of locks the client's watchdog keeps (held with hold() or a Mutex, until
  /// released or lost) changed. Locks from acquire()/try_acquire() are plain values the client
  /// does not follow, and are not counted.
  /// \param held The number now.
  virtual void on_held(std::size_t held);
  /// \brief A node's safeguards warned about it, on a handshake of its voting connection.
  /// \param event The node, the kind of warning and its text.
  virtual void on_node_warning(const NodeWarningEvent& event);
};

}  // namespace redlock
