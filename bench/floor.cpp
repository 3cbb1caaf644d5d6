// The floor: what any Redlock client must do on the wire, by hand with hiredis and poll(), and
// nothing more. Acquire = SET key token NX PX ttl to every node at once, done at the quorum;
// release = EVALSHA compare-and-delete to every node at once, done at the quorum. Commands
// queued during one turn of the loop are written together (as a libuv client would), replies
// that arrive after a verdict are read and dropped. No retries, no validity, no clean-up:
// the lower bound that the library is compared against in the same run.
#include <hiredis/hiredis.h>
#include <poll.h>

#include <deque>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common.hpp"
#include "scenarios.hpp"
#include "server_probe.hpp"

namespace bench {
namespace {

constexpr const char* kCompareAndDelete =
    "if redis.call('get',KEYS[1]) == ARGV[1] then return redis.call('del',KEYS[1]) "
    "else return 0 end";

class Floor {
 public:
  struct Cycle {
    double total_us, acquire_us, release_us;
    bool acquired;
  };
  using Done = std::function<void(int slot, const Cycle&)>;

  Floor(const std::vector<std::uint16_t>& ports, int slots, int ttl_ms, Done done)
      : slots_(static_cast<std::size_t>(slots)),
        ttl_(std::to_string(ttl_ms)),
        done_(std::move(done)) {
    for (auto port : ports) {
      redisContext* c = connect_local(port, "floor");
      conns_.push_back(Conn{c, {}});
      auto* r = static_cast<redisReply*>(redisCommand(c, "SCRIPT LOAD %s", kCompareAndDelete));
      if (r == nullptr || r->type != REDIS_REPLY_STRING)
        throw std::runtime_error("floor: SCRIPT LOAD failed on port " + std::to_string(port));
      sha_.assign(r->str, r->len);
      freeReplyObject(r);
    }
    quorum_ = conns_.size() / 2 + 1;
    tag_ = random_hex(8);
  }

  ~Floor() {
    for (auto& c : conns_) redisFree(c.ctx);
  }

  bool busy(int k) const { return slots_[static_cast<std::size_t>(k)].busy; }
  std::size_t quorum() const { return quorum_; }

  void begin(int k) {
    auto& s = slots_[static_cast<std::size_t>(k)];
    s.busy = true;
    s.key = "floor:" + tag_ + ":" + std::to_string(k) + ":" + std::to_string(s.cycle++);
    s.token = random_hex(32);
    s.t_acquire = Clock::now();
    send(k, 0);
  }

  // Writes everything queued, waits up to `timeout_ms` for replies and handles them.
  void turn(int timeout_ms) {
    std::vector<pollfd> fds(conns_.size());
    for (std::size_t i = 0; i < conns_.size(); ++i) {
      int done = 0;
      while (!done)
        if (redisBufferWrite(conns_[i].ctx, &done) == REDIS_ERR)
          throw std::runtime_error("floor: write failed");
      fds[i] =
          pollfd{conns_[i].ctx->fd, static_cast<short>(conns_[i].pending.empty() ? 0 : POLLIN), 0};
    }
    if (poll(fds.data(), fds.size(), timeout_ms) <= 0) return;
    for (std::size_t i = 0; i < conns_.size(); ++i) {
      if (!(fds[i].revents & (POLLIN | POLLERR | POLLHUP))) continue;
      if (redisBufferRead(conns_[i].ctx) == REDIS_ERR)
        throw std::runtime_error("floor: connection lost");
      void* reply = nullptr;
      while (redisGetReplyFromReader(conns_[i].ctx, &reply) == REDIS_OK && reply != nullptr) {
        on_reply(i, static_cast<redisReply*>(reply));
        freeReplyObject(reply);
      }
    }
  }

  bool pending() const {
    for (const auto& c : conns_)
      if (!c.pending.empty()) return true;
    return false;
  }

 private:
  struct Conn {
    redisContext* ctx;
    std::deque<std::pair<std::size_t, std::uint32_t>> pending;  // (slot, seq) per request
  };
  struct Slot {
    int phase = 0;  // 0 acquire, 1 release
    std::uint32_t seq = 0;
    std::size_t yes = 0, no = 0;
    bool busy = false, acquired = false;
    std::uint64_t cycle = 0;
    Clock::time_point t_acquire, t_release;
    std::string key, token;
  };

  void send(int k, int phase) {
    auto& s = slots_[static_cast<std::size_t>(k)];
    s.phase = phase;
    ++s.seq;
    s.yes = s.no = 0;
    for (auto& c : conns_) {
      if (phase == 0) {
        const char* argv[] = {"SET", s.key.c_str(), s.token.c_str(), "NX", "PX", ttl_.c_str()};
        redisAppendCommandArgv(c.ctx, 6, argv, nullptr);
      } else {
        const char* argv[] = {"EVALSHA", sha_.c_str(), "1", s.key.c_str(), s.token.c_str()};
        redisAppendCommandArgv(c.ctx, 5, argv, nullptr);
      }
      c.pending.emplace_back(static_cast<std::size_t>(k), s.seq);
    }
  }

  void on_reply(std::size_t conn, const redisReply* r) {
    auto [k, seq] = conns_[conn].pending.front();
    conns_[conn].pending.pop_front();
    auto& s = slots_[k];
    if (!s.busy || seq != s.seq) return;  // a late reply to a phase already decided
    bool yes = s.phase == 0 ? (r->type == REDIS_REPLY_STATUS && r->len == 2 && r->str[0] == 'O')
                            : (r->type == REDIS_REPLY_INTEGER && r->integer == 1);
    ++(yes ? s.yes : s.no);
    bool won = s.yes >= quorum_;
    bool lost = s.no > conns_.size() - quorum_;
    if (!won && !lost) return;
    auto now = Clock::now();
    if (s.phase == 0) {
      s.acquired = won;
      s.t_release = now;
      send(static_cast<int>(k), 1);  // release in any case: no partial grant stays behind
      return;
    }
    s.busy = false;
    ++s.seq;
    Cycle c{us_between(s.t_acquire, now), us_between(s.t_acquire, s.t_release),
            us_between(s.t_release, now), s.acquired};
    done_(static_cast<int>(k), c);
  }

  std::vector<Conn> conns_;
  std::vector<Slot> slots_;
  std::size_t quorum_ = 1;
  std::string ttl_, sha_, tag_;
  Done done_;
};

void emit_latency(const Options& o, const std::string& impl, std::size_t quorum,
                  const std::vector<double>& total, const std::vector<double>& acquire,
                  const std::vector<double>& release, long long failed) {
  JsonLine()
      .str("impl", impl)
      .str("label", o.label)
      .str("scenario", "uncontended_latency")
      .integer("nodes", static_cast<long long>(o.ports.size()))
      .integer("quorum", static_cast<long long>(quorum))
      .str("key", "fresh key per cycle")
      .integer("iters", o.iters)
      .integer("warmup", o.warmup)
      .stats("total_us", summarize(total))
      .stats("acquire_us", summarize(acquire))
      .stats("release_us", summarize(release))
      .integer("failed_acquires", failed)
      .emit();
}

}  // namespace

struct FloorCycles::Impl {
  explicit Impl(const Options& o)
      : floor(o.ports, 1, o.ttl_ms, [this](int, const Floor::Cycle& c) { last = c; }) {}
  Floor floor;
  Floor::Cycle last{};
};

FloorCycles::FloorCycles(const Options& o) : impl_(std::make_unique<Impl>(o)) {}
FloorCycles::~FloorCycles() = default;
std::size_t FloorCycles::quorum() const { return impl_->floor.quorum(); }

void FloorCycles::run(int iters, std::vector<double>& total, long long& failed,
                      Clock::time_point limit, std::vector<double>* acquire,
                      std::vector<double>* release) {
  auto& f = impl_->floor;
  for (int i = 0; i < iters && Clock::now() < limit; ++i) {
    f.begin(0);
    while (f.busy(0) && Clock::now() < limit) f.turn(1000);
    if (f.busy(0)) break;  // out of time inside a cycle: not one to count
    const auto& c = impl_->last;
    total.push_back(c.total_us);
    if (acquire != nullptr) acquire->push_back(c.acquire_us);
    if (release != nullptr) release->push_back(c.release_us);
    if (!c.acquired) ++failed;
  }
}

void floor_latency(const Options& o) {
  std::vector<double> warm, total, acquire, release;
  long long warm_failed = 0, failed = 0;
  FloorCycles f(o);
  auto limit = Clock::now() + std::chrono::seconds(60);
  f.run(o.warmup, warm, warm_failed, limit);
  f.run(o.iters, total, failed, limit, &acquire, &release);
  emit_latency(o, "hiredis-floor", f.quorum(), total, acquire, release, failed);
}

struct FloorLoad::Impl {
  explicit Impl(const Options& o)
      : floor(o.ports, o.tput_workers, o.ttl_ms,
              [this](int k, const Floor::Cycle& c) {
                if (measuring) {
                  ++w.locks;
                  w.total.push_back(c.total_us);
                  if (!c.acquired) ++w.failed;
                }
                if (!stopping) floor.begin(k);
              }),
        slots(o.tput_workers),
        pids(server_pids(o.ports)) {}
  Floor floor;
  int slots;
  std::vector<pid_t> pids;
  Window w;
  bool measuring = false, stopping = false;
};

FloorLoad::FloorLoad(const Options& o) : impl_(std::make_unique<Impl>(o)) {}
FloorLoad::~FloorLoad() = default;
std::size_t FloorLoad::quorum() const { return impl_->floor.quorum(); }

FloorLoad::Window FloorLoad::run(double warmup_s, double seconds) {
  auto& m = *impl_;
  auto& f = m.floor;
  m.w = Window{};
  m.stopping = false;
  for (int k = 0; k < m.slots; ++k) f.begin(k);
  auto warm_end = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                     std::chrono::duration<double>(warmup_s));
  while (Clock::now() < warm_end) f.turn(100);
  double cpu0 = self_cpu_seconds(), srv0 = servers_cpu_seconds(m.pids);
  auto t0 = Clock::now();
  auto end =
      t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  m.measuring = true;
  while (Clock::now() < end) f.turn(100);
  m.measuring = false;
  m.w.elapsed_s = std::chrono::duration<double>(Clock::now() - t0).count();
  m.w.client_cpu_s = self_cpu_seconds() - cpu0;
  double srv1 = servers_cpu_seconds(m.pids);
  if (srv0 >= 0 && srv1 >= 0) m.w.servers_cpu_s = srv1 - srv0;
  m.stopping = true;
  auto drain_end = Clock::now() + std::chrono::seconds(2);
  while (f.pending() && Clock::now() < drain_end) f.turn(100);
  return std::move(m.w);
}

void floor_throughput(const Options& o) {
  FloorLoad load(o);
  auto w = load.run(0.5, o.tput_duration_s);
  JsonLine j;
  j.str("impl", "hiredis-floor")
      .str("label", o.label)
      .str("scenario", "throughput")
      .integer("nodes", static_cast<long long>(o.ports.size()))
      .integer("quorum", static_cast<long long>(load.quorum()))
      .integer("workers", o.tput_workers)
      .integer("clients", o.tput_workers)
      .num("duration_s", w.elapsed_s)
      .integer("locks", w.locks)
      .num("ops_per_s", static_cast<double>(w.locks) / w.elapsed_s)
      .integer("failed_acquires", w.failed)
      .stats("total_us", summarize(w.total));
  if (w.locks > 0) {
    auto locks = static_cast<double>(w.locks);
    j.num("client_cpu_us_per_lock", w.client_cpu_s * 1e6 / locks)
        .num("client_cpu_util", w.client_cpu_s / w.elapsed_s);
    if (w.servers_cpu_s >= 0)
      j.num("servers_cpu_us_per_lock", w.servers_cpu_s * 1e6 / locks)
          .num("servers_cpu_util", w.servers_cpu_s / w.elapsed_s);
  }
  j.emit();
}

}  // namespace bench
