/// \file
/// \brief Leader election on the mutex's core (docs/guide-election.md): campaign for a named
/// office, hold it with renewal and the lost signal, resign; observe who leads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "redlock/client.hpp"
#include "redlock/held_lock.hpp"

namespace redlock {

namespace detail {
struct WatchHandle;
struct ClientLink;
}  // namespace detail

/// \brief Who leads an office, as a quorum of nodes reports it: advice, never a grant.
struct LeaderInfo {
  std::string value;       ///< The leader's value, as it campaigned with it (e.g. its address).
  std::uint64_t term = 0;  ///< Its term: grows strictly from term to term of the office.
};

/// \brief Result of Election::leader(): ok() and no #leader when the office is vacant.
struct LeaderResult : Outcome {
  std::optional<LeaderInfo> leader;  ///< The leader, when a quorum of nodes reports one.
  /// \return True when the nodes answered and nobody leads.
  bool vacant() const noexcept { return ok() && !leader; }
};

/// \brief What to campaign for.
struct CampaignRequest {
  std::string office;  ///< The office's name: a resource name (without the key prefix).
  std::string value;   ///< What observers learn of the leader (at most #max_value bytes).
  /// The lease, renewed every ttl/3 while the office is held; unset: Config::watchdog_lease.
  /// A crashed leader's office is free at most this long after its last renewal.
  std::optional<Milliseconds> ttl;
  /// How long to wait for the office (#forever: until it leads, or #cancel).
  Milliseconds wait = forever;
  /// Ends the wait early with Errc::cancelled (optional).
  std::optional<CancelToken> cancel;
  /// The largest value.
  static constexpr std::size_t max_value = 64 * 1024;
};

/// \brief A held office: a fenced, renewed mutex on the office's lock key. Move-only;
/// destroying it resigns (without blocking).
class REDLOCK_API Office {
 public:
  /// An empty Office: leads nothing.
  Office() = default;
  /// Takes over the office of another Office, which is left empty.
  Office(Office&&) noexcept = default;
  /// \brief Resigns this office, if held, then takes over `other`'s.
  /// \param other Left empty.
  /// \return `*this`.
  Office& operator=(Office&& other) noexcept;
  /// Resigns, if still held, without blocking.
  ~Office();
  Office(const Office&) = delete;
  Office& operator=(const Office&) = delete;

  /// \return The office's name (empty for an empty Office).
  const std::string& name() const noexcept { return name_; }
  /// \return The value this leader campaigned with.
  const std::string& value() const noexcept { return value_; }
  /// \return The term: the grant's fencing token. Pass it to the storage you protect.
  std::uint64_t term() const noexcept { return lock_.fencing_token(); }
  /// \return True from the campaign's success until resign().
  bool held() const noexcept { return lock_.held(); }
  /// \return Safe to act as the leader: held, not lost, inside the validity window. Local.
  bool valid() const noexcept { return lock_.valid(); }
  /// \return End of the current validity window (moved on by each renewal).
  Clock::time_point valid_until() const noexcept { return lock_.valid_until(); }
  /// \return A flag, pollable from any thread, set once the office is lost.
  LostFlag lost_flag() const { return lock_.lost_flag(); }
  /// \return True once the office is lost.
  bool lost() const noexcept { return lock_.lost(); }
  /// \return The held lock behind the office (its token, its resource).
  const HeldLock& lock() const noexcept { return lock_; }
  /// Stops renewal and releases the office's lock on every node (HeldLock::release), then
  /// clears the leader and announces the vacancy to observers. Blocking (not from a callback).
  /// \return The release's votes, or why not.
  ReleaseResult resign();

 private:
  friend class Election;
  // Clears the leader on the nodes after the release, and announces it (without blocking).
  void announce_vacancy() const;
  std::string name_;
  std::string value_;
  std::string key_;    // the office's lock key
  std::string token_;  // the grant's token
  std::weak_ptr<detail::ClientLink> link_;
  HeldLock lock_;
};

/// \brief Result of Election::campaign().
struct CampaignResult : Outcome {
  Office office;     ///< Held when ok().
  int attempts = 0;  ///< Acquire attempts made.
};

/// Runs on the client's loop thread with an observed office's leader, first at once and then
/// whenever it changes (another term, vacant, or a failed read). Keep it short.
using LeaderCallback = std::function<void(const LeaderResult&)>;

/// \brief Observes an office until destroyed or stop(). Move-only.
class REDLOCK_API LeaderWatch {
 public:
  /// An empty watch: observes nothing.
  LeaderWatch() = default;
  /// Takes over the watch of another LeaderWatch, which is left empty.
  LeaderWatch(LeaderWatch&&) noexcept = default;
  /// \brief Stops this watch, then takes over `other`'s.
  /// \param other Left empty.
  /// \return `*this`.
  LeaderWatch& operator=(LeaderWatch&& other) noexcept;
  LeaderWatch(const LeaderWatch&) = delete;
  LeaderWatch& operator=(const LeaderWatch&) = delete;
  /// Stops observing (without blocking).
  ~LeaderWatch();
  /// Stops observing: the callback is not called once this returns on the loop thread, and at
  /// most once more (a call under way) when it returns on another.
  void stop();
  /// \return True until stop() (or an empty watch).
  bool active() const noexcept;

 private:
  friend class Election;
  explicit LeaderWatch(std::shared_ptr<detail::WatchHandle> handle) : handle_(std::move(handle)) {}
  std::shared_ptr<detail::WatchHandle> handle_;
};

/// \brief Leader election over a Client's nodes. A view of the client: keep the client alive
/// while it is used (the Office and LeaderWatch handles it returns may outlive it).
class REDLOCK_API Election {
 public:
  /// \param client The client whose nodes hold the offices.
  explicit Election(Client& client) : client_(client) {}

  /// \brief Campaigns until it leads, its wait ends or it is cancelled: waits (woken by release
  /// notices, never polling) for the office's lock, fenced; the fencing token is the term; then
  /// writes the office's leader (term, value) on the nodes and announces it.
  /// \param request The office, the value, the lease and the wait.
  /// \param on_lost Runs once on the loop thread if the office is lost while held.
  /// \return The office, or why not: Errc::not_acquired (the wait ended), Errc::cancelled,
  /// Errc::invalid_argument (an empty office, a zero ttl, a value too long), Errc::no_quorum,
  /// Errc::redis_wrongtype (a key of the office holds another type), Errc::lock_lost (lost
  /// before the leader was written).
  CampaignResult campaign(CampaignRequest request, LostCallback on_lost = {});
  /// \brief campaign() with the lease Config::watchdog_lease.
  /// \param office The office's name.
  /// \param value What observers learn of the leader.
  /// \param wait How long to wait for the office.
  /// \return The office, or why not.
  CampaignResult campaign(std::string_view office, std::string_view value,
                          Milliseconds wait = forever);

  /// \brief The office's leader: the highest term that a quorum of nodes reports, with its
  /// value; vacant when a quorum reports none. Advice: it may have changed by the time it is
  /// read. Blocking.
  /// \param office The office's name.
  /// \return The leader; vacant (ok(), no leader); or why no quorum answered.
  LeaderResult leader(std::string_view office);
  /// \brief leader() in the asynchronous form (the callback runs once, on the loop thread).
  /// \param office The office's name.
  /// \param done Receives the result, as leader() returns it.
  void leader_async(std::string_view office, std::function<void(LeaderResult)> done);

  /// \brief Observes the office: `on_change` runs at once with its leader, then whenever the
  /// leader changes, without polling: woken by the office's notices (a new leader's write, a
  /// release), with a read at the leader's lease end (and after each re-subscription) catching
  /// a missed notice.
  /// \param office The office's name.
  /// \param on_change Runs on the loop thread with each new view of the leader.
  /// \return The watch; observing ends when it is destroyed. Empty (with no call) when the
  /// office name is bad or the client is gone.
  LeaderWatch observe(std::string_view office, LeaderCallback on_change);

 private:
  Client& client_;
};

}  // namespace redlock
