// Leader election (docs/guide-election.md): an office is a fenced, renewed mutex on the office's
// lock key, and its term is the grant's fencing token. After the grant, leader.lua writes the
// office's leader (term, token, value) on every node and announces it; observers read it back
// from a quorum, woken by the office's notices. The public calls validate and hand work to the
// loop thread; the reads, the writes and the observers (Watcher) run there.
#include "redlock/election.hpp"

#include <uv.h>

#include <atomic>

#include "../core/keys.hpp"
#include "../core/observe.hpp"
#include "../proto/election.hpp"
#include "../proto/notices.hpp"
#include "../proto/scripts.hpp"
#include "client_impl.hpp"

namespace redlock {

namespace detail {

// What a LeaderWatch (any thread) shares with its Watcher (loop thread).
struct WatchHandle {
  std::weak_ptr<ClientLink> link;
  std::atomic<bool> active{true};
  std::uint64_t id = 0;  // set before the handle is shared
};

namespace {

// What is wrong with an office's name, or empty.
std::string check_office(std::string_view office) {
  if (office.empty()) return "office name is empty";
  if (auto bad = resource_name_problem(office)) return bad;
  return {};
}

LeaderResult leader_result(const proto::LeaderVerdict& v, Votes votes) {
  LeaderResult r;
  r.error = v.error;
  r.detail = v.detail;
  r.votes = std::move(votes);
  if (v.leads) r.leader = LeaderInfo{v.value, v.term};
  return r;
}

// Tells Config::observer that a campaign or a read of `office` begun at `started` ended.
void notify_election(const Config& config, Operation op, std::error_code error, const Votes& votes,
                     const std::string& office, Clock::time_point started,
                     std::uint64_t term) noexcept {
  observe(config, [&](Observer& o) {
    std::vector<std::string> resources{office};
    OperationEvent e;
    e.operation = op;
    e.error = error;
    e.resources = &resources;
    e.votes = &votes;
    e.term = term;
    e.latency = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - started);
    o.on_operation(e);
  });
}

// One read of an office's leader: leader.lua's read on every node, decided at the quorum.
// `done` runs once on the loop thread with the result and, when a leader leads, what is left of
// its lease (else -1).
void read_leader(Coordinator& co, const Config& config, const std::string& office,
                 std::function<void(LeaderResult, Milliseconds)> done) {
  struct State {
    Votes votes;
    bool decided = false;
    std::function<void(LeaderResult, Milliseconds)> done;
    const Config* config;
    std::string office;
    Clock::time_point started = Clock::now();
  };
  auto st = std::make_shared<State>();
  st->config = &config;
  st->office = office;
  const std::string key = lock_key(config.key_prefix, office);
  st->votes = co.empty_votes();
  st->done = std::move(done);
  co.broadcast(proto::leader_read_request(key), [st](std::size_t node, NodeVote vote) {
    if (st->decided) {
      st->votes.nodes[node] = std::move(vote);
      return;
    }
    st->votes.nodes[node] = std::move(vote);
    auto v = proto::leader_verdict(st->votes.nodes, st->votes.quorum);
    if (!v.decided) return;
    st->decided = true;
    auto r = leader_result(v, st->votes);
    notify_election(*st->config, Operation::leader, r.error, r.votes, st->office, st->started,
                    v.leads ? v.term : 0);
    st->done(std::move(r), v.leads ? v.ttl_left : Milliseconds(-1));
  });
}

// Outcome of the grant's write of the leader.
struct WriteResult : Outcome {};

// leader.lua's write on every node, decided at the quorum: ok when a quorum wrote it.
void write_leader(Coordinator& co, const std::string& key, const std::string& token,
                  std::uint64_t term, const std::string& value,
                  std::function<void(WriteResult)> done) {
  struct State {
    Votes votes;
    std::size_t yes = 0, answered = 0;
    bool decided = false;
    std::function<void(WriteResult)> done;
  };
  auto st = std::make_shared<State>();
  st->votes = co.empty_votes();
  st->done = std::move(done);
  co.broadcast(proto::leader_write_request(key, token, term, value),
               [st](std::size_t node, NodeVote vote) {
                 ++st->answered;
                 if (vote.vote == Vote::yes) ++st->yes;
                 st->votes.nodes[node] = std::move(vote);
                 if (st->decided) return;
                 const auto n = st->votes.nodes.size();
                 bool won = st->yes >= st->votes.quorum;
                 bool lost = st->yes + (n - st->answered) < st->votes.quorum;
                 if (!won && !lost) return;
                 st->decided = true;
                 WriteResult r;
                 if (lost) r.error = proto::leader_write_error(st->votes.nodes);
                 r.votes = st->votes;
                 st->done(std::move(r));
               });
}

}  // namespace

// An observer of one office, on the loop thread: listens to the office's channel and the lock's
// release channel, reads the leader on every notice, after every (re)subscription, and at the
// leader's lease end (the fallback that catches a missed notice); tells its callback when the
// leader changed.
struct Watcher : std::enable_shared_from_this<Watcher> {
  Watcher(Client::Impl& impl, std::string office, LeaderCallback cb, std::shared_ptr<WatchHandle> h)
      : impl(impl),
        office(std::move(office)),
        key(lock_key(impl.config_.key_prefix, this->office)),
        on_change(std::move(cb)),
        handle(std::move(h)) {}

  Client::Impl& impl;
  std::string office;
  std::string key;
  LeaderCallback on_change;
  std::shared_ptr<WatchHandle> handle;
  uv_timer_t* timer = nullptr;
  std::uint64_t listens[2] = {0, 0};
  bool stopped = false;
  bool reading = false;
  bool again = false;  // a notice came during a read: read once more after it
  bool told = false;   // the first result was delivered
  LeaderResult last;

  void start() {
    timer = new uv_timer_t;
    uv_timer_init(impl.coordinator_.loop(), timer);
    timer->data = this;
    std::weak_ptr<Watcher> weak = shared_from_this();
    auto heard = [weak](bool) {
      if (auto self = weak.lock()) self->read();
    };
    listens[0] = impl.coordinator_.listen(proto::leader_channel(key), heard);
    listens[1] = impl.coordinator_.listen(proto::released_channel(key), heard);
    read();
  }

  void read() {
    if (stopped) return;
    if (reading) {
      again = true;
      return;
    }
    reading = true;
    read_leader(impl.coordinator_, impl.config_, office,
                [self = shared_from_this()](LeaderResult r, Milliseconds left) {
                  self->reading = false;
                  if (self->stopped) return;
                  self->deliver(std::move(r));
                  self->arm(left);
                  if (self->again) {
                    self->again = false;
                    self->read();
                  }
                });
  }

  // Tells the callback when the leader changed (or on the first read).
  void deliver(LeaderResult r) {
    bool same = told && r.error == last.error && r.leader.has_value() == last.leader.has_value() &&
                (!r.leader ||
                 (r.leader->term == last.leader->term && r.leader->value == last.leader->value));
    told = true;
    last = r;
    if (same || !handle->active.load()) return;
    deliver_guarded("leader watch", [&] { on_change(r); });
  }

  // The fallback read: at the leader's lease end (plus a little, once it has ended), or, with
  // nobody leading or no answer, after one watchdog lease (a notice is rarely missed: every
  // re-subscription reads anew).
  void arm(Milliseconds left) {
    if (stopped) return;
    Milliseconds wait = left.count() >= 0 ? left + Milliseconds(5) : impl.config_.watchdog_lease;
    if (last.error) wait = std::min(wait, Milliseconds(1000));
    uv_timer_start(
        timer, [](uv_timer_t* t) { static_cast<Watcher*>(t->data)->read(); },
        static_cast<std::uint64_t>(std::max<Milliseconds::rep>(wait.count(), 1)), 0);
  }

  void stop() {
    if (stopped) return;
    stopped = true;
    handle->active = false;
    for (auto id : listens) impl.coordinator_.unlisten(id);
    uv_close(reinterpret_cast<uv_handle_t*>(timer),
             [](uv_handle_t* h) { delete reinterpret_cast<uv_timer_t*>(h); });
    timer = nullptr;
  }
};

namespace {

void stop_watcher(Client::Impl& impl, std::uint64_t id) {
  auto it = impl.watchers_.find(id);
  if (it == impl.watchers_.end()) return;
  auto w = std::move(it->second);
  impl.watchers_.erase(it);
  w->stop();
}

}  // namespace
}  // namespace detail

// ---------------------------------------------------------------------------------------------
// Election

CampaignResult Election::campaign(std::string_view office, std::string_view value,
                                  Milliseconds wait) {
  CampaignRequest r;
  r.office = std::string(office);
  r.value = std::string(value);
  r.wait = wait;
  return campaign(std::move(r));
}

CampaignResult Election::campaign(CampaignRequest request, LostCallback on_lost) {
  CampaignResult result;
  auto invalid = [&](std::string detail) {
    result.error = make_error_code(Errc::invalid_argument);
    result.detail = std::move(detail);
    return std::move(result);
  };
  if (auto bad = detail::check_office(request.office); !bad.empty()) return invalid(bad);
  if (request.value.size() > CampaignRequest::max_value)
    return invalid("value is " + std::to_string(request.value.size()) +
                   " bytes, above the largest (" + std::to_string(CampaignRequest::max_value) +
                   ")");
  if (request.ttl && request.ttl->count() <= 0)
    return invalid("ttl " + std::to_string(request.ttl->count()) + "ms must be positive");
  if (request.wait.count() < 0) return invalid("wait must not be negative");

  auto& impl = *client_.impl_;
  const auto started = Clock::now();
  AcquireRequest ask({request.office}, request.ttl, request.wait);
  ask.cancel = request.cancel;
  ask.fencing = true;  // the term
  HoldResult held = impl.wait<HoldResult>([&](auto done) {
    impl.hold_with(
        std::move(ask), std::move(on_lost),
        [&impl, office = request.office, started, done](HoldResult h) mutable {
          if (!h)  // the observer hears of it on the loop thread, before the caller
            detail::notify_election(impl.config_, Operation::campaign, h.error, h.votes, office,
                                    started, 0);
          done(std::move(h));
        },
        true);
  });
  result.attempts = held.attempts;
  if (!held) {
    result.error = held.error;
    result.detail = std::move(held.detail);
    result.votes = std::move(held.votes);
    return result;
  }
  // The leader's write: observers learn the term and value from a quorum that holds the grant.
  const std::string key = client_.key_of(request.office);
  const std::string token = held.lock.token();
  const std::uint64_t term = held.lock.fencing_token();
  auto wrote = impl.wait<detail::WriteResult>([&](auto done) {
    impl.submit(
        [&impl, key, token, term, value = request.value, office = request.office, started,
         done]() mutable {
          if (impl.coordinator_.shutting_down()) {
            detail::WriteResult r;
            r.error = make_error_code(Errc::shutting_down);
            done(std::move(r));
            return;
          }
          detail::write_leader(impl.coordinator_, key, token, term, value,
                               [&impl, office, started, term, done](detail::WriteResult r) {
                                 detail::notify_election(impl.config_, Operation::campaign, r.error,
                                                         r.votes, office, started,
                                                         r.ok() ? term : 0);
                                 done(std::move(r));
                               });
        },
        [done]() mutable {
          detail::WriteResult r;
          r.error = make_error_code(Errc::shutting_down);
          done(std::move(r));
        });
  });
  if (!wrote) {
    held.lock.release();  // nobody may believe it leads: it is no leader
    result.error = wrote.error;
    result.detail = wrote.detail.empty() ? "the leader was not written on a quorum of nodes"
                                         : std::move(wrote.detail);
    result.votes = std::move(wrote.votes);
    return result;
  }
  result.votes = std::move(held.votes);
  result.office.name_ = std::move(request.office);
  result.office.value_ = std::move(request.value);
  result.office.key_ = key;
  result.office.token_ = token;
  result.office.link_ = impl.link_;
  result.office.lock_ = std::move(held.lock);
  return result;
}

void Election::leader_async(std::string_view office, std::function<void(LeaderResult)> done) {
  auto shared = std::make_shared<std::function<void(LeaderResult)>>(std::move(done));
  auto& impl = *client_.impl_;
  if (auto bad = detail::check_office(office); !bad.empty()) {
    impl.submit(
        [shared, bad] {
          LeaderResult r;
          r.error = make_error_code(Errc::invalid_argument);
          r.detail = bad;
          detail::deliver_guarded("leader", [&] { (*shared)(std::move(r)); });
        },
        [shared] {
          LeaderResult r;
          r.error = make_error_code(Errc::shutting_down);
          (*shared)(std::move(r));
        });
    return;
  }
  impl.submit(
      [&impl, office = std::string(office), shared] {
        if (impl.coordinator_.shutting_down()) {
          LeaderResult r;
          r.error = make_error_code(Errc::shutting_down);
          (*shared)(std::move(r));
          return;
        }
        detail::read_leader(impl.coordinator_, impl.config_, office,
                            [shared](LeaderResult r, Milliseconds) {
                              detail::deliver_guarded("leader", [&] { (*shared)(std::move(r)); });
                            });
      },
      [shared] {
        LeaderResult r;
        r.error = make_error_code(Errc::shutting_down);
        (*shared)(std::move(r));
      });
}

LeaderResult Election::leader(std::string_view office) {
  auto& impl = *client_.impl_;
  return impl.wait<LeaderResult>([&](auto done) { leader_async(office, std::move(done)); });
}

LeaderWatch Election::observe(std::string_view office, LeaderCallback on_change) {
  if (!detail::check_office(office).empty() || !on_change) return LeaderWatch();
  auto& impl = *client_.impl_;
  static std::atomic<std::uint64_t> last_id{0};
  auto handle = std::make_shared<detail::WatchHandle>();
  handle->link = impl.link_;
  handle->id = ++last_id;
  bool posted = detail::post_via(impl.link_, [handle, key = std::string(office),
                                              cb = std::move(on_change)](detail::LockHost& host) {
    auto& im = static_cast<Client::Impl&>(host);
    if (!handle->active.load() || im.coordinator_.shutting_down()) return;
    if (!im.watchers_hooked_) {
      im.watchers_hooked_ = true;
      im.coordinator_.on_shutdown([&im] {
        while (!im.watchers_.empty()) detail::stop_watcher(im, im.watchers_.begin()->first);
      });
    }
    auto w = std::make_shared<detail::Watcher>(im, key, cb, handle);
    im.watchers_[handle->id] = w;
    w->start();
  });
  if (!posted) return LeaderWatch();
  return LeaderWatch(std::move(handle));
}

// ---------------------------------------------------------------------------------------------
// Office

void Office::announce_vacancy() const {
  // Sent after the release on each node's connection, so it runs there after it.
  detail::post_via(link_, [key = key_, token = token_](detail::LockHost& host) {
    auto& impl = static_cast<Client::Impl&>(host);
    if (impl.coordinator_.shutting_down()) return;
    impl.coordinator_.broadcast(detail::proto::leader_resign_request(key, token),
                                [](std::size_t, NodeVote) {});
  });
}

ReleaseResult Office::resign() {
  bool was_held = lock_.held();
  auto r = lock_.release();
  if (was_held) announce_vacancy();
  return r;
}

Office& Office::operator=(Office&& other) noexcept {
  if (this != &other) {
    Office old(std::move(*this));  // resigned by its destructor
    name_ = std::move(other.name_);
    value_ = std::move(other.value_);
    key_ = std::move(other.key_);
    token_ = std::move(other.token_);
    link_ = std::move(other.link_);
    lock_ = std::move(other.lock_);
  }
  return *this;
}

Office::~Office() {
  if (!lock_.held()) return;
  { HeldLock dropped(std::move(lock_)); }  // its release is posted first
  announce_vacancy();
}

// ---------------------------------------------------------------------------------------------
// LeaderWatch

LeaderWatch& LeaderWatch::operator=(LeaderWatch&& other) noexcept {
  if (this != &other) {
    stop();
    handle_ = std::move(other.handle_);
  }
  return *this;
}

LeaderWatch::~LeaderWatch() { stop(); }

bool LeaderWatch::active() const noexcept { return handle_ && handle_->active.load(); }

void LeaderWatch::stop() {
  if (!handle_) return;
  handle_->active = false;
  detail::post_via(handle_->link, [h = handle_](detail::LockHost& host) {
    detail::stop_watcher(static_cast<Client::Impl&>(host), h->id);
  });
  handle_.reset();
}

}  // namespace redlock
