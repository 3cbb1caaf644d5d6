// redlock_chaos_worker: one process, one independent redlock::Client, taking a lock over and over
// and recording every critical section for the checker (record.hpp).
//
// Each section: the lock is granted -> read the shared counter from the storage redis-server
// (never faulted) -> hold -> write counter + 1 if the lock is still valid -> end -> release.
// A second holder inside someone else's section shows as an overlap and as a lost update.
//
// Modes:
//   explicit  Client::acquire / extend / release with a fixed ttl
//   held      Client::hold: renewed by the watchdog (lease --ttl), HeldLock::release
//   mutex     redlock::Mutex::try_lock_for / unlock, renewed
//   elect     redlock::Election::campaign / Office::resign: each term a section, renewed while it
//             leads, its term the section's fencing token (checked by the storage), so that the
//             checker judges both rules of an office: no two leaders at once, and terms that
//             grow strictly from term to term (docs/guide-election.md)
//   shared_mutex  redlock::SharedMutex: try_lock_shared_for / unlock_shared with --shared (a
//             reader), try_lock_for / unlock without (a writer), renewed
//   run       runs `redlock run RESOURCE -- <this program> --mode section ...` again and again
//   section   one critical section, as the command of `redlock run` (no Client of its own)
//   family    as section, but forks a grandchild that holds too: `redlock run` must end both
//   control   commands on stdin, one per line, answers on stdout: the runner orchestrates
//             deterministic scenarios (see run_control)
//
// --permits K (explicit, held, run, control): a permit of a semaphore of K instead of the mutex
// (AcquireRequest::permits, `redlock run --permits`). Each section records `permits` and the
// `slot` it held. K holders legitimately overlap, so the read-modify-write goes to a counter of
// the slot (COUNTER:slot<S>): each slot is a mutex, and a lost update there is still a second
// holder of one slot.
//
// --shared (explicit, held, run, control): a reader of the resource's read-write lock instead of
// a writer (AcquireRequest::shared, `redlock run --shared`; docs/guide-rwlock.md). Readers share,
// so a reader never writes the counter: it reads it when its section begins and again before it
// ends, and records both (`read`, `reread`). A writer (the same resource without --shared, the
// mutex) that wrote inside a reader's section shows as the two differing. Each section records
// `shared`.
//
// The worker never ignores SIGPIPE: if the library let a socket raise it, the process dies of
// it and the runner reports that. SIGTERM ends the loop cleanly (the section in progress is
// finished and released).
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "record.hpp"
#include "redlock/redlock.hpp"
#include "redlock/shared_mutex.hpp"

namespace {

using namespace std::chrono_literals;
using redlock::Milliseconds;
using redlock::chaos::raw_now_ns;
using redlock::chaos::Record;

std::atomic<bool> g_stop{false};

extern "C" void on_term(int) { g_stop.store(true); }

struct Options {
  std::string id = "w";
  std::string mode = "explicit";
  std::string nodes;
  int storage_port = 0;
  std::string out;
  std::string resource = "chaos";
  std::string counter = "chaos:counter";
  long ttl = 1000;
  long restart_guard = 0;  // Config::restart_guard: 0 off
  long wait = 2000;
  long hold = 2;
  long hold_jitter = 0;
  bool until_deadline = false;  // hold until the deadline; write 50 ms before it
  bool fencing = false;         // ask for fencing tokens; the storage checks them
  bool extend = false;          // explicit: extend every ttl/3 while holding
  int permits = 0;              // a permit of a semaphore of this many; 0: the mutex
  bool shared = false;          // a reader of the resource's read-write lock (--shared)
  long duration = 10000;
  long max_sections = 0;
  long request_timeout = 150;
  long connect_timeout = 300;
  long retry_delay = 20;
  long retry_jitter = 20;
  int retry_count = 3;
  long reconnect_min = 20;
  long reconnect_max = 200;
  double drift = 0.01;
  std::string redlock_cli;  // run mode
  std::string self;         // argv[0]
};

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr,
               "redlock_chaos_worker: %s\n"
               "usage: redlock_chaos_worker --id ID --nodes LIST --storage PORT --out FILE\n"
               "  [--mode explicit|held|mutex|run|section|family|control] [--resource R]\n"
               "  [--ttl MS] [--wait MS] [--hold MS] [--hold-jitter MS] [--until-deadline]\n"
               "  [--extend] [--fencing] [--duration MS] [--max-sections N]\n"
               "  [--request-timeout MS]\n"
               "  [--connect-timeout MS] [--retry-delay MS] [--retry-jitter MS]\n"
               "  [--retry-count N] [--reconnect-min MS] [--reconnect-max MS] [--drift F]\n"
               "  [--counter KEY] [--redlock PATH] [--restart-guard MS] [--permits K] [--shared]\n",
               why.c_str());
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  o.self = argv[0];
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage("missing value after " + a);
      return argv[++i];
    };
    auto number = [&]() -> long {
      auto v = value();
      char* end = nullptr;
      long n = std::strtol(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0') usage("not a number after " + a + ": " + v);
      return n;
    };
    if (a == "--id")
      o.id = value();
    else if (a == "--mode")
      o.mode = value();
    else if (a == "--nodes")
      o.nodes = value();
    else if (a == "--storage")
      o.storage_port = static_cast<int>(number());
    else if (a == "--out")
      o.out = value();
    else if (a == "--resource")
      o.resource = value();
    else if (a == "--counter")
      o.counter = value();
    else if (a == "--ttl")
      o.ttl = number();
    else if (a == "--restart-guard")
      o.restart_guard = number();
    else if (a == "--wait")
      o.wait = number();
    else if (a == "--hold")
      o.hold = number();
    else if (a == "--hold-jitter")
      o.hold_jitter = number();
    else if (a == "--until-deadline")
      o.until_deadline = true;
    else if (a == "--extend")
      o.extend = true;
    else if (a == "--fencing")
      o.fencing = true;
    else if (a == "--duration")
      o.duration = number();
    else if (a == "--max-sections")
      o.max_sections = number();
    else if (a == "--request-timeout")
      o.request_timeout = number();
    else if (a == "--connect-timeout")
      o.connect_timeout = number();
    else if (a == "--retry-delay")
      o.retry_delay = number();
    else if (a == "--retry-jitter")
      o.retry_jitter = number();
    else if (a == "--retry-count")
      o.retry_count = static_cast<int>(number());
    else if (a == "--reconnect-min")
      o.reconnect_min = number();
    else if (a == "--reconnect-max")
      o.reconnect_max = number();
    else if (a == "--drift")
      o.drift = std::strtod(value().c_str(), nullptr);
    else if (a == "--redlock")
      o.redlock_cli = value();
    else if (a == "--permits")
      o.permits = static_cast<int>(number());
    else if (a == "--shared")
      o.shared = true;
    else
      usage("unknown option " + a);
  }
  if (o.out.empty()) usage("--out is required");
  if (o.storage_port <= 0) usage("--storage is required");
  bool needs_nodes = o.mode != "section" && o.mode != "family";
  if (needs_nodes && o.nodes.empty()) usage("--nodes is required");
  if (o.mode == "run" && o.redlock_cli.empty()) usage("--redlock is required in run mode");
  if (o.permits < 0) usage("--permits must be at least 1");
  if (o.permits > 0 && o.mode == "mutex") usage("--permits: redlock::Mutex takes no permits");
  if (o.permits > 0 && o.mode == "elect") usage("--permits: an office has one leader");
  if (o.shared && o.permits > 0) usage("--shared: a reader is not a permit (no --permits)");
  if (o.shared && o.mode == "mutex") usage("--shared: not in mutex mode (shared_mutex is)");
  if (o.permits > 0 && o.mode == "shared_mutex") usage("--permits: not in shared_mutex mode");
  return o;
}

// The storage redis-server: a blocking hiredis connection with timeouts, reopened after errors.
class Storage {
 public:
  explicit Storage(int port) : port_(port) {}
  ~Storage() {
    if (c_) redisFree(c_);
  }
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  std::optional<long long> get(const std::string& key) {
    auto* r = command({"GET", key});
    if (r == nullptr) return std::nullopt;
    std::optional<long long> v;
    if (r->type == REDIS_REPLY_NIL) v = 0;
    if (r->type == REDIS_REPLY_STRING) v = std::atoll(r->str);
    freeReplyObject(r);
    return v;
  }
  bool set(const std::string& key, long long value) {
    auto* r = command({"SET", key, std::to_string(value)});
    if (r == nullptr) return false;
    bool ok = r->type == REDIS_REPLY_STATUS;
    freeReplyObject(r);
    return ok;
  }
  // A storage that checks fencing tokens: the write is applied only if `fence` is at least the
  // highest token it has seen (kept in key + ":fence"). Nullopt when the storage did not answer.
  std::optional<bool> set_fenced(const std::string& key, long long value, std::uint64_t fence) {
    static const char* script =
        "local top = tonumber(redis.call('GET', KEYS[2]) or '0') "
        "if tonumber(ARGV[2]) < top then return 0 end "
        "redis.call('SET', KEYS[2], ARGV[2]) redis.call('SET', KEYS[1], ARGV[1]) return 1";
    auto* r = command(
        {"EVAL", script, "2", key, key + ":fence", std::to_string(value), std::to_string(fence)});
    if (r == nullptr) return std::nullopt;
    std::optional<bool> applied;
    if (r->type == REDIS_REPLY_INTEGER) applied = r->integer == 1;
    freeReplyObject(r);
    return applied;
  }

 private:
  redisReply* command(const std::vector<std::string>& argv) {
    for (int attempt = 0; attempt < 2; ++attempt) {
      if (!c_) {
        timeval tv{2, 0};
        c_ = redisConnectWithTimeout("127.0.0.1", port_, tv);
        if (c_ == nullptr || c_->err) {
          if (c_) redisFree(c_);
          c_ = nullptr;
          continue;
        }
        redisSetTimeout(c_, tv);
      }
      std::vector<const char*> p;
      std::vector<std::size_t> l;
      for (const auto& a : argv) {
        p.push_back(a.data());
        l.push_back(a.size());
      }
      auto* r = static_cast<redisReply*>(
          redisCommandArgv(c_, static_cast<int>(argv.size()), p.data(), l.data()));
      if (r != nullptr) return r;
      redisFree(c_);
      c_ = nullptr;
    }
    return nullptr;
  }

  int port_;
  redisContext* c_ = nullptr;
};

class Output {
 public:
  explicit Output(const std::string& path) {
    fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd_ < 0) {
      std::perror(path.c_str());
      std::exit(2);
    }
  }
  ~Output() { ::close(fd_); }
  Output(const Output&) = delete;
  Output& operator=(const Output&) = delete;
  void write(const Record& r) { redlock::chaos::append_record(fd_, r); }

 private:
  int fd_ = -1;
};

std::string errc_name(std::error_code ec) {
  if (!ec) return "ok";
  if (ec.category() == redlock::error_category())
    return redlock::errc_name(static_cast<redlock::Errc>(ec.value()));
  return ec.category().name() + std::string(":") + std::to_string(ec.value());
}

// A steady_clock deadline as CLOCK_MONOTONIC_RAW nanoseconds, read side by side with now.
std::int64_t to_raw(redlock::Clock::time_point t) {
  auto mono = redlock::Clock::now();
  auto raw = raw_now_ns();
  return raw + std::chrono::duration_cast<std::chrono::nanoseconds>(t - mono).count();
}

redlock::Config make_config(const Options& o) {
  auto c = redlock::Config::from_node_list(o.nodes);
  c.ttl = Milliseconds(o.ttl);
  c.watchdog_lease = Milliseconds(o.ttl);
  c.restart_guard = Milliseconds(o.restart_guard);
  c.request_timeout = Milliseconds(o.request_timeout);
  c.connect_timeout = Milliseconds(o.connect_timeout);
  c.retry_delay = Milliseconds(o.retry_delay);
  c.retry_jitter = Milliseconds(o.retry_jitter);
  c.retry_count = o.retry_count;
  c.reconnect_min = Milliseconds(o.reconnect_min);
  c.reconnect_max = Milliseconds(o.reconnect_max);
  c.drift_factor = o.drift;
  // The runner's --tls: the nodes are rediss://, signed by this CA.
  if (const char* ca = std::getenv("REDLOCK_TLS_CACERT")) c.tls.ca_file = ca;
  return c;
}

// One critical section in progress, whichever API holds the lock.
struct SectionState {
  std::int64_t start = 0;
  std::string token;
  std::uint64_t fence = 0;  // the grant's fencing token, 0 without fencing
  int attempts = 0;
  long long read = -1;
  bool wrote = false;
  bool rejected = false;  // the storage refused the write: a fencing token below one it saw
  bool lost = false;      // validity ended (or the lock was lost) before the holder was done
  int extends = 0;
  int extend_failures = 0;
  int slot = -1;          // the permit's slot (--permits); -1: the mutex
  long long reread = -1;  // --shared: the counter read again before the section ends
  std::string counter;    // the counter its read-modify-write goes to
};

// The counter a section updates: the shared one under the mutex, its slot's with --permits.
std::string counter_for(const Options& o, int slot) {
  if (o.permits <= 0) return o.counter;
  return o.counter + ":slot" + std::to_string(slot);
}

// A section that begins now, with the grant's slot.
SectionState begin_section(const Options& o, int slot) {
  SectionState s;
  s.start = raw_now_ns();
  s.slot = slot;
  s.counter = counter_for(o, slot);
  return s;
}

Record section_record(const Options& o, const SectionState& s, std::int64_t end,
                      std::int64_t deadline) {
  Record r("section");
  r.add("worker", o.id)
      .add("mode", o.mode)
      .add("resource", o.resource)
      .add("start", s.start)
      .add("end", end)
      .add("deadline", deadline)
      .add("token", s.token)
      .add("attempts", s.attempts)
      .add("read", s.read)
      .add("fence", static_cast<std::int64_t>(s.fence))
      .add("wrote", s.wrote ? 1 : 0)
      .add("rejected", s.rejected ? 1 : 0)
      .add("lost", s.lost ? 1 : 0);
  if (s.extends || s.extend_failures)
    r.add("extends", s.extends).add("extend_failures", s.extend_failures);
  if (o.permits > 0) r.add("permits", o.permits).add("slot", s.slot).add("counter", s.counter);
  if (o.shared) r.add("shared", 1).add("reread", s.reread);
  return r;
}

// counter + 1, through the fencing check when the grant has a token.
void write_counter(const Options& o, Storage& storage, SectionState& s) {
  (void)o;
  if (s.fence == 0) {
    s.wrote = storage.set(s.counter, s.read + 1);
    return;
  }
  auto applied = storage.set_fenced(s.counter, s.read + 1, s.fence);
  s.wrote = applied && *applied;
  s.rejected = applied && !*applied;
}

// Reads the counter, holds, and writes counter + 1 if `valid()` still says so (a careful holder
// checks before acting; 50 ms before the deadline in --until-deadline mode). `tick` runs every
// few ms while holding (renewal by extend, for instance).
template <typename Valid, typename Deadline, typename Tick>
void hold_section(const Options& o, Storage& storage, SectionState& s, std::mt19937_64& rng,
                  Valid valid, Deadline deadline_raw, Tick tick) {
  if (auto v = storage.get(s.counter)) s.read = *v;
  std::int64_t until = 0;
  if (o.until_deadline) {
    until = deadline_raw() - 50'000'000;
  } else {
    long jitter = o.hold_jitter > 0 ? static_cast<long>(rng() % (o.hold_jitter + 1)) : 0;
    until = raw_now_ns() + (o.hold + jitter) * 1'000'000;
  }
  while (raw_now_ns() < until) {
    if (!valid()) {
      s.lost = true;
      break;
    }
    tick();
    auto left = (until - raw_now_ns()) / 1'000'000;
    std::this_thread::sleep_for(Milliseconds(std::clamp<std::int64_t>(left, 0, 10)));
  }
  if (o.shared) {
    // A reader writes nothing: it reads again, and no writer may have written meanwhile.
    if (!s.lost && valid())
      if (auto v = storage.get(s.counter)) s.reread = *v;
  } else if (!s.lost && valid() && s.read >= 0) {
    write_counter(o, storage, s);
  }
  if (!valid()) s.lost = true;
  if (o.until_deadline && !s.lost) {
    // Hold on to the end of the promised window: the next holder must not get in before it.
    while (valid() && raw_now_ns() < deadline_raw()) std::this_thread::sleep_for(Milliseconds(1));
  }
}

void fail_record(Output& out, const Options& o, const char* op, std::error_code ec, int attempts,
                 const std::string& detail) {
  Record r("fail");
  r.add("worker", o.id).add("op", op).add("error", errc_name(ec)).add("attempts", attempts);
  if (!detail.empty()) r.add("votes", detail);
  out.write(r);
}

bool keep_going(const Options& o, std::int64_t stop_at, long sections) {
  if (g_stop.load()) return false;
  if (o.max_sections > 0 && sections >= o.max_sections) return false;
  return raw_now_ns() < stop_at;
}

// Not every failure deserves a record per attempt: contention is frequent. Counted, then one
// `counts` record at the end.
struct Counts {
  std::map<std::string, long> by_kind;
  void add(const std::string& k) { ++by_kind[k]; }
  Record record(const Options& o) const {
    Record r("counts");
    r.add("worker", o.id);
    for (const auto& [k, n] : by_kind) r.add(k, n);
    return r;
  }
};

int run_explicit(const Options& o, Output& out) {
  redlock::Client client(make_config(o));
  Storage storage(o.storage_port);
  std::mt19937_64 rng(std::random_device{}());
  Counts counts;
  auto stop_at = raw_now_ns() + o.duration * 1'000'000;
  long sections = 0;
  while (keep_going(o, stop_at, sections)) {
    redlock::AcquireRequest req({o.resource}, Milliseconds(o.ttl), Milliseconds(o.wait));
    req.fencing = o.fencing;
    req.permits = static_cast<unsigned>(o.permits);
    req.shared = o.shared;
    auto r = client.acquire(std::move(req));
    if (!r) {
      counts.add("fail." + errc_name(r.error));
      if (r.error != redlock::Errc::not_acquired)
        fail_record(out, o, "acquire", r.error, r.attempts, r.votes.to_string());
      if (r.error == redlock::Errc::no_quorum) std::this_thread::sleep_for(20ms);
      continue;
    }
    auto s = begin_section(o, r.lock.permit);
    s.token = r.lock.token;
    s.fence = r.lock.fencing_token;
    s.attempts = r.attempts;
    counts.add("acquired");
    auto& lock = r.lock;
    auto last_extend = redlock::Clock::now();
    hold_section(
        o, storage, s, rng, [&] { return lock.valid(); }, [&] { return to_raw(lock.valid_until); },
        [&] {
          if (!o.extend || redlock::Clock::now() - last_extend < lock.ttl / 3) return;
          last_extend = redlock::Clock::now();
          auto e = client.extend(lock, Milliseconds(o.ttl));
          if (e) {
            ++s.extends;
          } else {
            ++s.extend_failures;
            counts.add("extend_fail." + errc_name(e.error));
          }
        });
    auto end = raw_now_ns();
    auto deadline = to_raw(lock.valid_until);
    auto rel = client.release(lock);
    out.write(section_record(o, s, end, deadline));
    ++sections;
    if (!rel) counts.add("release_fail." + errc_name(rel.error));
  }
  out.write(counts.record(o));
  return 0;
}

int run_held(const Options& o, Output& out) {
  redlock::Client client(make_config(o));
  Storage storage(o.storage_port);
  std::mt19937_64 rng(std::random_device{}());
  Counts counts;
  auto stop_at = raw_now_ns() + o.duration * 1'000'000;
  long sections = 0;
  while (keep_going(o, stop_at, sections)) {
    redlock::AcquireRequest req({o.resource});  // no ttl: the watchdog lease, renewed
    req.wait = Milliseconds(o.wait);
    req.fencing = o.fencing;
    req.permits = static_cast<unsigned>(o.permits);
    req.shared = o.shared;
    auto h = client.hold(std::move(req));
    if (!h) {
      counts.add("fail." + errc_name(h.error));
      if (h.error != redlock::Errc::not_acquired)
        fail_record(out, o, "hold", h.error, h.attempts, h.votes.to_string());
      if (h.error == redlock::Errc::no_quorum) std::this_thread::sleep_for(20ms);
      continue;
    }
    auto s = begin_section(o, h.lock.permit());
    s.token = h.lock.token();
    s.fence = h.lock.fencing_token();
    s.attempts = h.attempts;
    counts.add("acquired");
    auto& lock = h.lock;
    hold_section(
        o, storage, s, rng, [&] { return lock.valid(); },
        [&] { return to_raw(lock.valid_until()); }, [] {});
    auto end = raw_now_ns();
    auto deadline = to_raw(lock.valid_until());
    if (lock.lost()) counts.add("lost." + errc_name(lock.lost_flag().reason()));
    auto rel = lock.release();
    out.write(section_record(o, s, end, deadline));
    ++sections;
    if (!rel) counts.add("release_fail." + errc_name(rel.error));
  }
  out.write(counts.record(o));
  return 0;
}

// Sections under a lockable of the resource (redlock::Mutex, redlock::SharedMutex): `lock(m)`
// tries for --wait, `unlock(m)` releases; `what` names the mode in failure records.
template <typename M, typename Lock, typename Unlock>
int run_lockable(const Options& o, Output& out, const char* what, Lock lock, Unlock unlock) {
  redlock::Client client(make_config(o));
  Storage storage(o.storage_port);
  std::mt19937_64 rng(std::random_device{}());
  Counts counts;
  redlock::MutexOptions mo;
  mo.fencing = o.fencing;
  mo.on_error = [&counts](std::error_code ec, const std::string&) {
    counts.add("unlock_fail." + errc_name(ec));
  };
  M m(client, o.resource, std::move(mo));
  auto stop_at = raw_now_ns() + o.duration * 1'000'000;
  long sections = 0;
  while (keep_going(o, stop_at, sections)) {
    bool locked = false;
    try {
      locked = lock(m);
    } catch (const std::system_error& e) {
      counts.add("fail." + errc_name(e.code()));
      fail_record(out, o, what, e.code(), 0, e.what());
      std::this_thread::sleep_for(20ms);
      continue;
    }
    if (!locked) {
      counts.add("fail.not_acquired");
      continue;
    }
    auto s = begin_section(o, -1);
    s.attempts = 1;
    s.fence = m.fencing_token();
    counts.add("acquired");
    hold_section(
        o, storage, s, rng, [&] { return m.valid(); }, [&] { return to_raw(m.valid_until()); },
        [] {});
    auto end = raw_now_ns();
    auto deadline = to_raw(m.valid_until());
    unlock(m);
    out.write(section_record(o, s, end, deadline));
    ++sections;
  }
  out.write(counts.record(o));
  return 0;
}

int run_mutex(const Options& o, Output& out) {
  return run_lockable<redlock::Mutex>(
      o, out, "mutex", [&](redlock::Mutex& m) { return m.try_lock_for(Milliseconds(o.wait)); },
      [](redlock::Mutex& m) { m.unlock(); });
}

// Campaigns for the office (the resource) again and again; each term is a section whose fencing
// token is the term. A leader resigns at the section's end, as a service that steps down does.
int run_elect(const Options& o, Output& out) {
  redlock::Client client(make_config(o));
  redlock::Election election(client);
  Storage storage(o.storage_port);
  std::mt19937_64 rng(std::random_device{}());
  Counts counts;
  auto stop_at = raw_now_ns() + o.duration * 1'000'000;
  long sections = 0;
  while (keep_going(o, stop_at, sections)) {
    redlock::CampaignRequest req;
    req.office = o.resource;
    req.value = o.id;
    req.ttl = Milliseconds(o.ttl);
    req.wait = Milliseconds(o.wait);
    auto c = election.campaign(std::move(req));
    if (!c) {
      counts.add("fail." + errc_name(c.error));
      if (c.error != redlock::Errc::not_acquired)
        fail_record(out, o, "campaign", c.error, c.attempts, c.votes.to_string());
      if (c.error == redlock::Errc::no_quorum) std::this_thread::sleep_for(20ms);
      continue;
    }
    auto& office = c.office;
    auto s = begin_section(o, -1);
    s.token = office.lock().token();
    s.fence = office.term();
    s.attempts = c.attempts;
    counts.add("acquired");
    hold_section(
        o, storage, s, rng, [&] { return office.valid(); },
        [&] { return to_raw(office.valid_until()); }, [] {});
    auto end = raw_now_ns();
    auto deadline = to_raw(office.valid_until());
    if (office.lost()) counts.add("lost." + errc_name(office.lost_flag().reason()));
    auto rel = office.resign();
    out.write(section_record(o, s, end, deadline));
    ++sections;
    if (!rel) counts.add("release_fail." + errc_name(rel.error));
  }
  out.write(counts.record(o));
  return 0;
}

// A redlock::SharedMutex of the resource: a reader with --shared, else a writer.
int run_shared_mutex(const Options& o, Output& out) {
  return run_lockable<redlock::SharedMutex>(
      o, out, "shared_mutex",
      [&](redlock::SharedMutex& m) {
        return o.shared ? m.try_lock_shared_for(Milliseconds(o.wait))
                        : m.try_lock_for(Milliseconds(o.wait));
      },
      [&](redlock::SharedMutex& m) {
        if (o.shared)
          m.unlock_shared();
        else
          m.unlock();
      });
}

// --- redlock run ---------------------------------------------------------------------------

// The command of `redlock run`: one section, no Client. The lock is renewed by `redlock run`
// for as long as the command runs, so the claim is the command's whole life (deadline 0); a lost
// lock must end it (SIGTERM).
int run_section(const Options& o, Output& out, bool family) {
  Storage storage(o.storage_port);
  std::mt19937_64 rng(std::random_device{}());
  Options me = o;
  const char* token = std::getenv("REDLOCK_TOKEN");
  pid_t grandchild = -1;
  if (family) {
    Record p("pid");
    p.add("worker", o.id).add("pid", ::getpid()).add("role", "child");
    out.write(p);
    grandchild = ::fork();
    if (grandchild == 0) {
      me.id = o.id + ".grandchild";
      Record q("pid");
      q.add("worker", me.id).add("pid", ::getpid()).add("role", "grandchild");
      out.write(q);
    }
  }
  // With --permits: `redlock run --permits` names the slot in REDLOCK_PERMIT.
  const char* permit = std::getenv("REDLOCK_PERMIT");
  // With --shared: `redlock run --shared` says so in REDLOCK_SHARED; the section is a reader's.
  if (const char* shared = std::getenv("REDLOCK_SHARED")) me.shared = std::string(shared) == "1";
  auto s = begin_section(o, permit ? std::atoi(permit) : -1);
  s.token = token ? token : "";
  if (const char* fence = std::getenv("REDLOCK_FENCING_TOKEN"))
    s.fence = std::strtoull(fence, nullptr, 10);
  s.attempts = 1;
  auto stop = [] { return !g_stop.load(); };
  hold_section(
      me, storage, s, rng, stop, [] { return std::int64_t{0}; }, [] {});
  auto end = raw_now_ns();
  out.write(section_record(me, s, end, 0));
  // Like a shell's `wait`, the child waits for its background job, unless told to stop: then it
  // leaves it behind, as a shell killed by SIGTERM does.
  if (family && grandchild > 0 && !g_stop.load()) ::waitpid(grandchild, nullptr, 0);
  return g_stop.load() ? 100 : 0;
}

// Runs `redlock run` for one section after another; its exit code is the outcome.
int run_cli(const Options& o, Output& out) {
  Counts counts;
  auto stop_at = raw_now_ns() + o.duration * 1'000'000;
  long sections = 0;
  long n = 0;
  while (keep_going(o, stop_at, sections)) {
    std::vector<std::string> args = {o.redlock_cli,
                                     "--nodes",
                                     o.nodes,
                                     "--ttl",
                                     std::to_string(o.ttl),
                                     "--request-timeout",
                                     std::to_string(o.request_timeout),
                                     "--connect-timeout",
                                     std::to_string(o.connect_timeout),
                                     "--retry-delay",
                                     std::to_string(o.retry_delay),
                                     "--retry-jitter",
                                     std::to_string(o.retry_jitter),
                                     "--quiet",
                                     "run",
                                     "--wait",
                                     std::to_string(o.wait),
                                     "--permits",
                                     std::to_string(o.permits),
                                     "--kill-after",
                                     "1000",
                                     o.resource,
                                     "--",
                                     o.self,
                                     "--mode",
                                     "section",
                                     "--id",
                                     o.id + "." + std::to_string(n++),
                                     "--storage",
                                     std::to_string(o.storage_port),
                                     "--out",
                                     o.out,
                                     "--resource",
                                     o.resource,
                                     "--counter",
                                     o.counter,
                                     "--hold",
                                     std::to_string(o.hold),
                                     "--hold-jitter",
                                     std::to_string(o.hold_jitter)};
    if (o.permits <= 0) {
      // The mutex: no --permits for `redlock run`, nor for its command.
      auto at = std::find(args.begin(), args.end(), "--permits");
      args.erase(at, at + 2);
    } else {
      args.push_back("--permits");
      args.push_back(std::to_string(o.permits));
    }
    // A reader: `redlock run --shared` (an option of run, before the resource); its command
    // learns it from REDLOCK_SHARED.
    if (o.shared) args.insert(std::find(args.begin(), args.end(), "run") + 1, "--shared");
    pid_t pid = ::fork();
    if (pid < 0) {
      std::this_thread::sleep_for(50ms);
      continue;
    }
    if (pid == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      int devnull = ::open("/dev/null", O_RDWR);
      if (devnull >= 0) ::dup2(devnull, 0);
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      sigset_t none;
      sigemptyset(&none);
      ::sigprocmask(SIG_SETMASK, &none, nullptr);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    // Bounded: the section's hold plus the wait plus a generous margin.
    auto limit = redlock::Clock::now() + Milliseconds(o.wait + o.hold + o.hold_jitter + 10'000);
    int status = 0;
    bool done = false;
    while (redlock::Clock::now() < limit) {
      pid_t r = ::waitpid(pid, &status, WNOHANG);
      if (r == pid) {
        done = true;
        break;
      }
      std::this_thread::sleep_for(2ms);
    }
    if (!done) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      counts.add("hung");
      Record d("hung");
      d.add("worker", o.id).add("what", "redlock run").add("pid", pid);
      out.write(d);
      continue;
    }
    if (WIFSIGNALED(status)) {
      Record d("died");
      d.add("worker", o.id)
          .add("what", "redlock run")
          .add("pid", pid)
          .add("signal", WTERMSIG(status));
      out.write(d);
      counts.add("died");
      continue;
    }
    int code = WEXITSTATUS(status);
    switch (code) {
      case 0:
        counts.add("acquired");
        ++sections;
        break;
      case 1:
        counts.add("fail.not_acquired");
        break;
      case 3:
        counts.add("fail.no_quorum");
        std::this_thread::sleep_for(20ms);
        break;
      case 4:
        counts.add("lost.lock_lost");
        ++sections;
        break;
      default:
        counts.add("exit." + std::to_string(code));
        break;
    }
  }
  out.write(counts.record(o));
  return 0;
}

// --- control -------------------------------------------------------------------------------

// One command per line on stdin, one answer line on stdout (flushed):
//   acquire TTL WAIT [fenced]  explicit acquire -> "ok VALIDITY_LEFT_MS TOKEN fence F VOTES"
//                                              | "fail ERRC VOTES"
//                        (with --permits: "ok VALIDITY_LEFT_MS TOKEN fence F slot S VOTES")
//   hold WAIT [fenced]   hold (renewed)    -> as acquire
//   elect TTL WAIT       campaign for the office (the resource), renewed while it leads
//                        -> as acquire, the term as the fence; release resigns
//   read                 GET the counter    -> "read V"
//   reread               GET the counter again, recorded as the section's `reread` (--shared)
//                        -> "reread V"
//   write                SET counter V + 1, valid or not (a stale write); through the
//                        storage's fencing check when the grant has a token
//                        -> "wrote" | "rejected" (by the fencing check)
//   write_if_valid       the same, only while the lock is valid -> ... | "skipped"
//   extend TTL           explicit extend   -> "extended VALIDITY_LEFT_MS" | "extend_fail ERRC"
//   sleep_until_deadline MARGIN_MS  sleeps until the deadline minus the margin -> "slept"
//   end                  records the section, ending now -> "ended"
//   claim                records the section as held to its deadline: what a holder that
//                        is about to be killed (SIGKILL) still claims -> "claimed"
//   release              -> "released N" | "release_fail ERRC"
//   valid                -> "valid 1|0"
//   quit
int run_control(const Options& o, Output& out) {
  redlock::Client client(make_config(o));
  Storage storage(o.storage_port);
  std::optional<redlock::Lock> lock;
  redlock::HeldLock held;
  redlock::Election election(client);
  std::optional<redlock::Office> office;
  SectionState s;
  s.counter = o.counter;
  Counts counts;
  bool open = false;
  auto valid = [&] { return lock ? lock->valid() : office ? office->valid() : held.valid(); };
  auto valid_until = [&] {
    return lock ? lock->valid_until : office ? office->valid_until() : held.valid_until();
  };
  auto answer = [](const std::string& line) {
    std::cout << line << std::endl;  // flushed: the runner waits for it
  };
  std::string line;
  while (std::getline(std::cin, line)) {
    std::vector<std::string> w;
    for (std::size_t pos = 0; pos < line.size();) {
      auto sp = line.find(' ', pos);
      if (sp == std::string::npos) sp = line.size();
      if (sp > pos) w.push_back(line.substr(pos, sp - pos));
      pos = sp + 1;
    }
    if (w.empty()) continue;
    const auto& cmd = w[0];
    if (cmd == "acquire" || cmd == "hold" || cmd == "elect") {
      redlock::Outcome result;
      int attempts = 0;
      bool fenced = w.back() == "fenced";
      if (cmd == "acquire" && w.size() >= 3) {
        redlock::AcquireRequest req({o.resource}, Milliseconds(std::stol(w[1])),
                                    Milliseconds(std::stol(w[2])));
        req.fencing = fenced;
        req.permits = static_cast<unsigned>(o.permits);
        req.shared = o.shared;
        auto r = client.acquire(std::move(req));
        attempts = r.attempts;
        if (r) lock = r.lock;
        result = r;
      } else if (cmd == "hold" && w.size() >= 2) {
        redlock::AcquireRequest req({o.resource});
        req.wait = Milliseconds(std::stol(w[1]));
        req.fencing = fenced;
        req.permits = static_cast<unsigned>(o.permits);
        req.shared = o.shared;
        auto h = client.hold(std::move(req));
        attempts = h.attempts;
        if (h) held = std::move(h.lock);
        result = h;
      } else if (cmd == "elect" && w.size() >= 3) {
        redlock::CampaignRequest req;
        req.office = o.resource;
        req.value = o.id;
        req.ttl = Milliseconds(std::stol(w[1]));
        req.wait = Milliseconds(std::stol(w[2]));
        auto c = election.campaign(std::move(req));
        attempts = c.attempts;
        if (c) office = std::move(c.office);
        result = c;
      } else {
        answer("error usage");
        continue;
      }
      if (!result) {
        counts.add("fail." + errc_name(result.error));
        fail_record(out, o, cmd.c_str(), result.error, attempts, result.votes.to_string());
        answer("fail " + errc_name(result.error) + " " + result.votes.to_string());
        continue;
      }
      counts.add("acquired");
      s = begin_section(o, lock ? lock->permit : held.permit());
      s.token = lock ? lock->token : office ? office->lock().token() : held.token();
      s.fence = lock ? lock->fencing_token : office ? office->term() : held.fencing_token();
      s.attempts = attempts;
      open = true;
      auto left =
          std::chrono::duration_cast<Milliseconds>(valid_until() - redlock::Clock::now()).count();
      std::string slot = o.permits > 0 ? " slot " + std::to_string(s.slot) : "";
      answer("ok " + std::to_string(left) + " " + s.token + " fence " + std::to_string(s.fence) +
             slot + " " + result.votes.to_string());
    } else if (cmd == "read") {
      auto v = storage.get(s.counter);
      s.read = v ? *v : -1;
      answer("read " + std::to_string(s.read));
    } else if (cmd == "reread") {
      auto v = storage.get(s.counter);
      s.reread = v ? *v : -1;
      answer("reread " + std::to_string(s.reread));
    } else if (cmd == "write" || cmd == "write_if_valid") {
      if (cmd == "write_if_valid" && !valid()) {
        s.lost = true;
        answer("skipped");
        continue;
      }
      if (s.read >= 0) write_counter(o, storage, s);
      answer(s.wrote ? "wrote" : s.rejected ? "rejected" : "write_failed");
    } else if (cmd == "extend" && w.size() >= 2 && lock) {
      auto e = client.extend(*lock, Milliseconds(std::stol(w[1])));
      if (e)
        ++s.extends;
      else
        ++s.extend_failures;
      auto left =
          std::chrono::duration_cast<Milliseconds>(lock->valid_until - redlock::Clock::now());
      answer(e ? "extended " + std::to_string(left.count())
               : "extend_fail " + errc_name(e.error) + " " + e.votes.to_string());
    } else if (cmd == "sleep_until_deadline" && w.size() >= 2) {
      auto until = valid_until() - Milliseconds(std::stol(w[1]));
      auto cap = redlock::Clock::now() + 60s;
      while (redlock::Clock::now() < std::min(until, cap) && !g_stop.load())
        std::this_thread::sleep_for(1ms);
      answer("slept");
    } else if (cmd == "valid") {
      answer(std::string("valid ") + (valid() ? "1" : "0"));
    } else if (cmd == "end") {
      if (open) {
        auto end = raw_now_ns();
        out.write(section_record(o, s, end, to_raw(valid_until())));
        open = false;
      }
      answer("ended");
    } else if (cmd == "claim") {
      if (open) {
        auto deadline = to_raw(valid_until());
        out.write(section_record(o, s, deadline, deadline));
        open = false;
      }
      answer("claimed");
    } else if (cmd == "release") {
      redlock::ReleaseResult r;
      if (lock) {
        r = client.release(*lock);
        lock.reset();
      } else if (office) {
        r = office->resign();
        office.reset();
      } else {
        r = held.release();
        held = redlock::HeldLock();
      }
      answer(r ? "released " + std::to_string(r.released)
               : "release_fail " + errc_name(r.error) + " " + r.votes.to_string());
    } else if (cmd == "quit") {
      break;
    } else {
      answer("error unknown command");
    }
  }
  if (open) out.write(section_record(o, s, raw_now_ns(), to_raw(valid_until())));
  out.write(counts.record(o));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o = parse(argc, argv);
  ::signal(SIGPIPE, SIG_DFL);  // whatever was inherited: a SIGPIPE must show
  struct sigaction sa {};
  sa.sa_handler = on_term;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGTERM, &sa, nullptr);
  ::sigaction(SIGINT, &sa, nullptr);
  Output out(o.out);
  try {
    if (o.mode == "explicit") return run_explicit(o, out);
    if (o.mode == "held") return run_held(o, out);
    if (o.mode == "mutex") return run_mutex(o, out);
    if (o.mode == "elect") return run_elect(o, out);
    if (o.mode == "shared_mutex") return run_shared_mutex(o, out);
    if (o.mode == "run") return run_cli(o, out);
    if (o.mode == "section") return run_section(o, out, false);
    if (o.mode == "family") return run_section(o, out, true);
    if (o.mode == "control") return run_control(o, out);
  } catch (const std::exception& e) {
    Record r("error");
    r.add("worker", o.id).add("what", e.what());
    out.write(r);
    std::fprintf(stderr, "redlock_chaos_worker %s: %s\n", o.id.c_str(), e.what());
    return 3;
  }
  usage("unknown mode " + o.mode);
}
