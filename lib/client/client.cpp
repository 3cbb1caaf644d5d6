// The public Client: validates input, hands work to the loop thread, and turns asynchronous
// completions into blocking calls.
#include "redlock/client.hpp"
#include "redlock/mutex.hpp"
#include "redlock/shared_mutex.hpp"

#include <thread>

#include "../core/keys.hpp"
#include "../core/observe.hpp"
#include "../core/recycled.hpp"
#include "../net/tls.hpp"
#include "client_impl.hpp"

namespace redlock {
namespace {

Config validated(Config config) {
  std::string message;
  if (auto ec = validate(config, message)) throw Error(ec, message);
  if (auto ec = detail::check_tls_config(config, message)) throw Error(ec, message);  // rediss://
  return config;
}

// Checks a lease given to one operation; empty string when fine.
std::string check_ttl(Milliseconds ttl, const Config& config) {
  if (ttl.count() <= 0) return "ttl " + std::to_string(ttl.count()) + "ms must be positive";
  if (ttl > longest_duration)
    return "ttl " + std::to_string(ttl.count()) + "ms is above the longest duration (" +
           std::to_string(longest_duration.count()) + "ms)";
  if (ttl <= drift_allowance(ttl, config.drift_factor))
    return "ttl " + std::to_string(ttl.count()) + "ms is not above its clock drift allowance";
  return {};
}

std::string check_resources(const std::vector<std::string>& resources) {
  if (resources.empty()) return "no resource given";
  for (std::size_t i = 0; i < resources.size(); ++i) {
    if (resources[i].empty()) return "resource name is empty";
    // The reserved byte separates a lock's key from its auxiliary keys (core/keys.hpp).
    if (auto bad = detail::resource_name_problem(resources[i])) return bad;
    for (std::size_t j = 0; j < i; ++j)
      if (resources[i] == resources[j]) return "resource '" + resources[i] + "' is listed twice";
  }
  return {};
}

// What is wrong with an acquire request, or empty.
std::string check_request(const AcquireRequest& request, Milliseconds ttl, const Config& config) {
  std::string bad = check_resources(request.resources);
  if (bad.empty()) bad = check_ttl(ttl, config);
  if (bad.empty() && request.wait && request.wait->count() < 0) bad = "wait must not be negative";
  if (bad.empty() && request.permits > AcquireRequest::max_permits)
    bad = "permits " + std::to_string(request.permits) + " is above the largest (" +
          std::to_string(AcquireRequest::max_permits) + ")";
  if (bad.empty() && request.permits > 0 && request.resources.size() != 1)
    bad = "a permit of a semaphore is of one resource";
  if (bad.empty() && request.shared && request.permits > 0)
    bad = "a reader of a read-write lock is not a permit of a semaphore";
  if (bad.empty() && request.shared && request.resources.size() != 1)
    bad = "a reader of a read-write lock is of one resource";
  return bad;
}

// What is wrong with a lock given to extend or release, or empty. A permit of a semaphore
// (Lock::permit) is one slot of one resource: extend and release act on that slot's key alone,
// and would leave the keys of any other resource held.
std::string check_lock(const Lock& lock) {
  std::string bad = check_resources(lock.resources);
  if (bad.empty() && lock.token.empty()) bad = "token is empty";
  if (bad.empty() && lock.permit >= 0 && lock.resources.size() != 1)
    bad = "a permit of a semaphore is of one resource";
  if (bad.empty() && lock.shared && (lock.permit >= 0 || lock.resources.size() != 1))
    bad = "a reader of a read-write lock is of one resource, and no permit";
  if (bad.empty() && lock.permit >= static_cast<int>(AcquireRequest::max_permits))
    bad = "permit " + std::to_string(lock.permit) + " is above the largest slot (" +
          std::to_string(AcquireRequest::max_permits - 1) + ")";
  return bad;
}

template <typename Result>
Result invalid(std::string detail) {
  Result r;
  r.error = make_error_code(Errc::invalid_argument);
  r.detail = std::move(detail);
  return r;
}

}  // namespace

Client::Impl::Impl(Config config)
    : config_(validated(std::move(config))),
      coordinator_(loop_.get(), config_),
      link_(std::make_shared<detail::ClientLink>()),
      mutexes_(std::make_shared<detail::MutexTable>(link_)) {
  link_->host = this;
  loop_.set_log_config(&config_);
  coordinator_.set_poster(
      [link = std::weak_ptr<detail::ClientLink>(link_)](std::function<void()> task) {
        detail::post_via(link, [task = std::move(task)](detail::LockHost&) { task(); });
      });
  std::vector<const detail::Node*> nodes;
  for (const auto& n : coordinator_.nodes()) nodes.push_back(n.get());
  detail::Lane::Loop to_loop;
  to_loop.release = [this](std::size_t node, std::shared_ptr<const detail::proto::Request> r) {
    loop_.post([this, node, r = std::move(r)]() mutable {
      coordinator_.send_release(node, std::move(r));
    });
  };
  to_loop.votes = [this](std::size_t node) {
    loop_.post([this, node] { coordinator_.lane_votes(node); });
  };
  to_loop.quick_acquire_off = [this] { return coordinator_.quick_acquire_off(); };
  to_loop.no_quick_acquire = [this] { loop_.post([this] { coordinator_.no_quick_acquire(); }); };
  to_loop.in_flight = [this] { return coordinator_.requests_in_flight(); };
  lane_ = std::make_unique<detail::Lane>(config_, std::move(nodes), std::move(to_loop),
                                         coordinator_.lost_tokens());
  loop_.start();
  loop_.post([this] { coordinator_.start(); });
}

Client::Impl::~Impl() {
  {
    std::lock_guard<std::mutex> lock(link_->mutex);
    link_->host = nullptr;  // handles that outlive us stop reaching in
  }
  int rc = loop_.stop([this] { coordinator_.shutdown(); });
  // As libuv's own tests do: a handle left open is a lifetime bug. Debug and sanitizer builds
  // stop here; release builds have reported it on stderr.
  assert(rc == 0 && "a libuv handle outlived its client");
  (void)rc;
}

bool detail::post_via(const std::weak_ptr<ClientLink>& link, std::function<void(LockHost&)> task) {
  auto l = link.lock();
  if (!l) return false;
  std::lock_guard<std::mutex> lock(l->mutex);
  if (l->host == nullptr) return false;
  LockHost* host = l->host;
  return host->post([host, task = std::move(task)] { task(*host); });
}

// Here rather than in mutex.cpp: the client hands its table to the mutex, which then knows the
// client only through the table's link.
Mutex::Mutex(Client& client, std::string resource, MutexOptions options)
    : table_(client.impl_->mutexes_),
      resource_(std::move(resource)),
      options_(std::move(options)) {}

SharedMutex::SharedMutex(Client& client, std::string resource, MutexOptions options)
    : table_(client.impl_->mutexes_),
      resource_(std::move(resource)),
      options_(std::move(options)) {}

void Client::Impl::hold_with(AcquireRequest request, LostCallback on_lost,
                             std::function<void(HoldResult)> done, bool renew_always) {
  auto shared = std::make_shared<std::function<void(HoldResult)>>(std::move(done));
  submit(
      [this, request = std::move(request), on_lost = std::move(on_lost), shared,
       renew_always]() mutable {
        bool renew = renew_always || !request.ttl;
        Milliseconds ttl = request.ttl.value_or(config_.watchdog_lease);
        if (auto bad = check_request(request, ttl, config_); !bad.empty()) {
          auto r = invalid<HoldResult>(std::move(bad));
          detail::deliver_guarded("hold", [&] { (*shared)(std::move(r)); });
          return;
        }
        coordinator_.hold(std::move(request), ttl, renew, std::move(on_lost), link_,
                          [shared](AcquireResult a, std::shared_ptr<detail::Lease> lease) {
                            HoldResult h;
                            h.error = a.error;
                            h.detail = std::move(a.detail);
                            h.votes = std::move(a.votes);
                            h.attempts = a.attempts;
                            if (lease) h.lock = HeldLock(std::move(lease));
                            detail::deliver_guarded("hold", [&] { (*shared)(std::move(h)); });
                          });
      },
      [shared] {
        HoldResult r;
        r.error = make_error_code(Errc::shutting_down);
        (*shared)(std::move(r));
      });
}

Client::Client(Config config) : impl_(std::make_unique<Impl>(std::move(config))) {}

Client::~Client() {
  if (impl_ && impl_->loop_.in_loop_thread()) {
    // Destroyed from one of its own callbacks: the loop thread cannot join itself. Another
    // thread finishes the destruction once this callback has returned: it stops the loop
    // (pending operations end with shutting_down, as always), joins the thread and frees it.
    std::thread([impl = std::move(impl_)]() mutable { impl.reset(); }).detach();
  }
}

const Config& Client::config() const noexcept { return impl_->config_; }

std::string Client::key_of(std::string_view resource) const {
  return impl_->config_.key_prefix + std::string(resource);
}

void Client::acquire_async(AcquireRequest request, AcquireCallback done) {
  auto* impl = impl_.get();
  // Its block is recycled by the thread that drops it last (RecyclingAllocator), mostly the loop.
  auto shared = std::allocate_shared<AcquireCallback>(detail::RecyclingAllocator<AcquireCallback>(),
                                                      std::move(done));
  impl->submit(
      [impl, request = std::move(request), shared]() mutable {
        const auto& config = impl->config_;
        Milliseconds ttl = request.ttl.value_or(config.ttl);
        if (auto bad = check_request(request, ttl, config); !bad.empty()) {
          auto r = invalid<AcquireResult>(std::move(bad));
          detail::deliver_guarded("acquire", [&] { (*shared)(std::move(r)); });
          return;
        }
        impl->coordinator_.acquire(std::move(request), ttl, std::move(*shared));
      },
      [shared] {
        AcquireResult r;
        r.error = make_error_code(Errc::shutting_down);
        (*shared)(std::move(r));
      });
}

void Client::extend_async(Lock lock, Milliseconds ttl, ExtendCallback done) {
  auto* impl = impl_.get();
  auto shared = std::make_shared<ExtendCallback>(std::move(done));
  impl->submit(
      [impl, lock = std::move(lock), ttl, shared]() mutable {
        std::string bad = check_lock(lock);
        if (bad.empty()) bad = check_ttl(ttl, impl->config_);
        if (!bad.empty()) {
          auto r = invalid<ExtendResult>(std::move(bad));
          r.valid_until = lock.valid_until;
          detail::deliver_guarded("extend", [&] { (*shared)(std::move(r)); });
          return;
        }
        impl->coordinator_.extend(std::move(lock), ttl, std::move(*shared));
      },
      [shared] {
        ExtendResult r;
        r.error = make_error_code(Errc::shutting_down);
        (*shared)(std::move(r));
      });
}

void Client::release_async(Lock lock, ReleaseCallback done) {
  auto* impl = impl_.get();
  // Its block is recycled by the thread that drops it last (RecyclingAllocator), mostly the loop.
  auto shared = std::allocate_shared<ReleaseCallback>(detail::RecyclingAllocator<ReleaseCallback>(),
                                                      std::move(done));
  impl->submit(
      [impl, lock = std::move(lock), shared]() mutable {
        std::string bad = check_lock(lock);
        if (!bad.empty()) {
          auto r = invalid<ReleaseResult>(std::move(bad));
          detail::deliver_guarded("release", [&] { (*shared)(std::move(r)); });
          return;
        }
        impl->coordinator_.release(std::move(lock), std::move(*shared));
      },
      [shared] {
        ReleaseResult r;
        r.error = make_error_code(Errc::shutting_down);
        (*shared)(std::move(r));
      });
}

void Client::status_async(StatusCallback done) {
  auto* impl = impl_.get();
  auto shared = std::make_shared<StatusCallback>(std::move(done));
  impl->submit([impl, shared] { impl->coordinator_.status(std::move(*shared)); },
               [shared] { (*shared)({}); });
}

// The blocking calls try the caller's lane first (lane.hpp): served there, or not at all (the
// loop then serves them, as it does a call made from the loop thread or with invalid input).
AcquireResult Client::acquire(AcquireRequest request) {
  if (!impl_->loop_.in_loop_thread()) {
    const auto& config = impl_->config_;
    Milliseconds ttl = request.ttl.value_or(config.ttl);
    if (check_request(request, ttl, config).empty())
      if (auto r = impl_->lane_->acquire(request, ttl)) return arrived(std::move(*r));
  }
  return arrived(impl_->wait<AcquireResult>(
      [&](AcquireCallback done) { acquire_async(std::move(request), std::move(done)); }));
}

// A grant whose validity ended before the blocking call could hand it over (the calling thread
// was descheduled, or woke late from the loop's hand-off) is no grant: it is released, and the
// call fails with validity_expired, as a grant with too little validity left does. A lock is
// never reported held past its validity (docs/safety.md).
AcquireResult Client::arrived(AcquireResult r) {
  if (!r.ok() || r.lock.valid()) return r;
  release_async(r.lock, [](ReleaseResult) {});
  r.error = make_error_code(Errc::validity_expired);
  r.detail = "granted, but its validity had ended when the call returned";
  r.lock = Lock();
  return r;
}

AcquireResult Client::try_acquire(std::string_view resource) {
  return acquire(AcquireRequest{{std::string(resource)}, std::nullopt, Milliseconds(0)});
}

AcquireResult Client::try_acquire(std::string_view resource, Milliseconds ttl) {
  return acquire(AcquireRequest{{std::string(resource)}, ttl, Milliseconds(0)});
}

AcquireResult Client::acquire(std::string_view resource, Milliseconds ttl, Milliseconds wait) {
  return acquire(AcquireRequest{{std::string(resource)}, ttl, wait});
}

ExtendResult Client::extend(Lock& lock) { return extend(lock, lock.ttl); }

ExtendResult Client::extend(Lock& lock, Milliseconds ttl) {
  std::optional<ExtendResult> on_lane;
  if (!impl_->loop_.in_loop_thread() && check_lock(lock).empty() &&
      check_ttl(ttl, impl_->config_).empty())
    on_lane = impl_->lane_->extend(lock, ttl);
  auto r = on_lane ? std::move(*on_lane) : impl_->wait<ExtendResult>([&](ExtendCallback done) {
    extend_async(lock, ttl, std::move(done));
  });
  if (r.ok()) {
    lock.valid_until = r.valid_until;
    lock.ttl = ttl;
  }
  return r;
}

ReleaseResult Client::release(const Lock& lock) {
  if (!impl_->loop_.in_loop_thread() && check_lock(lock).empty())
    if (auto r = impl_->lane_->release(lock)) return std::move(*r);
  return impl_->wait<ReleaseResult>(
      [&](ReleaseCallback done) { release_async(lock, std::move(done)); });
}

HoldResult Client::hold(AcquireRequest request, LostCallback on_lost) {
  return impl_->wait<HoldResult>([&](std::function<void(HoldResult)> done) {
    impl_->hold_async(std::move(request), std::move(on_lost), std::move(done));
  });
}

HoldResult Client::hold(std::string_view resource, Milliseconds wait) {
  return hold(AcquireRequest({std::string(resource)}, std::nullopt, wait));
}

std::vector<NodeStatus> Client::status() {
  if (impl_->loop_.in_loop_thread()) return {};
  auto handoff = std::make_shared<detail::Handoff<std::vector<NodeStatus>>>();
  status_async([handoff](std::vector<NodeStatus> rows) { handoff->put(std::move(rows)); });
  return handoff->take();
}

}  // namespace redlock
