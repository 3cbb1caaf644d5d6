// HeldLock, LostFlag and CancelToken: handles used from any thread.
#include "redlock/held_lock.hpp"

#include "handles.hpp"
#include "handoff.hpp"

namespace redlock {

namespace detail {
std::shared_ptr<CancelState> cancel_state_of(const CancelToken& token) { return token.state_; }
}  // namespace detail

CancelToken::CancelToken() : state_(std::make_shared<detail::CancelState>()) {}

void CancelToken::cancel() const {
  std::vector<std::pair<std::uint64_t, std::function<void()>>> hooks;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    if (state_->cancelled) return;
    state_->cancelled = true;
    hooks.swap(state_->hooks);
  }
  for (auto& [id, hook] : hooks) hook();
}

bool CancelToken::cancelled() const noexcept {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->cancelled;
}

bool LostFlag::is_set() const noexcept {
  return !lease_ || lease_->lost() || lease_->released.load() ||
         Clock::now() >= lease_->valid_until();
}

std::error_code LostFlag::reason() const noexcept {
  if (!lease_) return make_error_code(Errc::not_held);
  if (int code = lease_->lost_code.load()) return make_error_code(static_cast<Errc>(code));
  if (lease_->released.load()) return make_error_code(Errc::not_held);
  if (Clock::now() >= lease_->valid_until()) return make_error_code(Errc::lock_lost);
  return {};
}

namespace {

// A release that failed while some node could not run it (down, paused, timed out) may have
// left our key there until its ttl: the caller may try again. Otherwise it is final: a node
// that said no does not hold our token, and one that has not answered yet has the command.
bool may_retry(const ReleaseResult& r) {
  if (r.ok()) return false;
  for (const auto& v : r.votes.nodes)
    if (v.vote == Vote::failed) return true;
  return false;
}

// Loop thread, after such a failed release: the lease stays unwatched (no renewal) and no
// longer valid, but held() again, so that release() and the destructor send it once more.
void reopen_for_retry(detail::Lease& lease) {
  int none = 0;
  lease.lost_code.compare_exchange_strong(none, static_cast<int>(Errc::not_held),
                                          std::memory_order_acq_rel);
  lease.released.store(false);
}

}  // namespace

HeldLock& HeldLock::operator=(HeldLock&& other) noexcept {
  if (this != &other) {
    HeldLock old(std::move(*this));  // released by its destructor
    lease_ = std::move(other.lease_);
  }
  return *this;
}

HeldLock::~HeldLock() {
  if (!lease_ || lease_->released.load()) return;
  // Dropped while held: stop renewing and release, without blocking the caller.
  detail::post_via(lease_->link, [lease = lease_](detail::LockHost& host) {
    host.release_lease(lease, [](ReleaseResult) {});
  });
}

bool HeldLock::held() const noexcept { return lease_ && !lease_->released.load(); }

bool HeldLock::valid() const noexcept {
  return held() && !lease_->lost() && Clock::now() < lease_->valid_until();
}

Clock::time_point HeldLock::valid_until() const noexcept {
  return lease_ ? lease_->valid_until() : Clock::time_point{};
}

LostFlag HeldLock::lost_flag() const { return LostFlag(lease_); }

const std::vector<std::string>& HeldLock::resources() const {
  static const std::vector<std::string> none;
  return lease_ ? lease_->resources : none;
}

const std::string& HeldLock::token() const {
  static const std::string none;
  return lease_ ? lease_->token : none;
}

int HeldLock::permit() const noexcept { return lease_ ? lease_->permit : -1; }
bool HeldLock::shared() const noexcept { return lease_ && lease_->shared; }

std::uint64_t HeldLock::fencing_token() const noexcept {
  return lease_ ? lease_->fencing_token : 0;
}

ReleaseResult HeldLock::release() {
  ReleaseResult r;
  if (!held()) {
    r.error = make_error_code(Errc::not_held);
    r.detail = lease_ ? "already released" : "nothing is held";
    return r;
  }
  auto lease = lease_;
  auto handoff = std::make_shared<detail::Handoff<ReleaseResult>>();
  bool posted = detail::post_via(lease->link, [lease, handoff](detail::LockHost& host) {
    host.release_lease(lease, [lease, handoff, &host](ReleaseResult rr) {
      if (may_retry(rr)) reopen_for_retry(*lease);
      host.check_inbox_before_sleep();  // the caller's next call needs no wake-up
      handoff->put(std::move(rr));
    });
  });
  if (!posted) {
    lease->released = true;
    r.error = make_error_code(Errc::shutting_down);
    r.detail = "the client is gone; the lock expires with its ttl";
    return r;
  }
  bool loop_thread = false;
  detail::with_client(lease->link,
                      [&](detail::LockHost& host) { loop_thread = host.in_loop_thread(); });
  if (loop_thread) {
    // Called from a callback: the release runs as soon as this callback returns.
    r.error = make_error_code(Errc::would_deadlock);
    r.detail = "release started asynchronously: a blocking call was made on the loop thread";
    return r;
  }
  return handoff->take();
}

}  // namespace redlock
