// The read-write lock (AcquireRequest::shared, `redlock run --shared`; docs/guide-rwlock.md)
// under the faults of the mutex's scenarios: a paused minority, node crashes with persistence,
// and a negative control. Judged by the reader-writer checker (checker.hpp,
// find_reader_writer_overlaps): no reader's section overlaps a writer's, writers exclude each
// other (find_overlaps), and no reader sees the counter change inside its section (torn_reads).
// Readers never write the counter; writers (mutex holders of the same key) do, so a second
// writer still shows as a lost update.
#include <chrono>
#include <string>
#include <thread>

#include "scenarios.hpp"

namespace redlock::chaos {
namespace {

using namespace std::chrono_literals;
using Steady = std::chrono::steady_clock;

// Looping readers and writers on one resource: readers explicit (one fenced), held (renewed,
// fenced), a SharedMutex's lock_shared and, with `run_lane`, `redlock run --shared`; writers
// explicit (fenced), held, and a SharedMutex's lock (fenced).
void spawn_readers_writers(Run& run, long duration_ms, long ttl_ms, bool run_lane) {
  WorkerSpec s;
  s.ttl = ttl_ms;
  s.duration = duration_ms;
  const std::vector<std::string> reader = {"--shared"}, fenced_reader = {"--shared", "--fencing"},
                                 fenced = {"--fencing"};
  s.mode = "explicit";
  s.extra_args = reader;
  run.spawn("reader1", s);
  s.extra_args = fenced_reader;
  run.spawn("reader2", s);
  s.mode = "held";
  run.spawn("reader_held", s);
  s.mode = "shared_mutex";
  s.extra_args = reader;
  run.spawn("reader_sm", s);
  if (run_lane) {
    s.mode = "run";
    s.extra_args = reader;
    run.spawn("reader_cli", s);
  }
  s.mode = "explicit";
  s.extra_args = fenced;
  run.spawn("writer1", s);
  s.mode = "held";
  s.extra_args = {};
  run.spawn("writer_held", s);
  s.mode = "shared_mutex";
  s.extra_args = fenced;
  run.spawn("writer_sm", s);
}

// (a) Four readers and two writers; two random nodes SIGSTOPped for 700 ms, again and again:
// ghost grants (a reader's ZADD and marker, a writer's SET) run after a resume and must be
// cleaned up; a reader never beside a writer.
void rwlock_pause_minority(Run& run) {
  run.start_nodes(5);
  long d = run.phase(8000, 25000);
  spawn_readers_writers(run, d, 500, true);
  int rounds = pause_rounds(run, d, 2);
  run.note(std::to_string(rounds) + " rounds of two nodes paused for 700 ms");
}

// (b) The same readers and writers; nodes with appendonly yes + appendfsync always crash, one or
// two at a time, and restart after 200-600 ms with what their AOF kept: the readers' set and
// marker survive with the writers' keys.
void rwlock_crash_restart(Run& run) {
  run.start_nodes(5, true);
  long d = run.phase(10000, 25000);
  spawn_readers_writers(run, d, 500, false);
  int crashes = crash_restart_rounds(run, d);
  run.note(std::to_string(crashes) + " node crashes, each restarted with its AOF");
}

// Negative control: readers A and B hold on all five nodes and writer W is refused; nodes 0-2
// crash and restart empty (no restart guard): W is granted beside the readers and writes. Caught:
// a writer beside readers, and B reads the counter changed inside its section.
void rwlock_empty_restart(Run& run) {
  run.start_nodes(5);
  WorkerSpec reader;
  reader.ttl = 3000;
  reader.extra_args = {"--shared"};
  WorkerSpec writer;
  writer.ttl = 3000;
  auto& a = run.control("A", reader);
  auto& b = run.control("B", reader);
  auto& w = run.control("W", writer);
  run.sleep(300ms);
  auto ra = a.call("acquire 3000 0");
  auto rb = b.call("acquire 3000 0");
  run.check(granted(ra) && granted(rb), "A and B read together: " + ra + " / " + rb);
  if (!granted(ra) || !granted(rb)) return;
  a.call("read");
  b.call("read");
  auto rw = w.call("acquire 3000 0");
  run.check(!granted(rw), "W is refused while the readers hold: " + rw);
  if (granted(rw)) return;
  for (std::size_t i : {0, 1, 2}) run.crash(i);
  for (std::size_t i : {0, 1, 2}) run.restart(i);
  run.sleep(500ms);  // the clients reconnect
  rw = w.call("acquire 3000 2000");
  run.check(granted(rw), "W is granted beside the readers once a majority forgot them: " + rw);
  if (granted(rw))
    for (const char* cmd : {"read", "write", "end", "release"}) w.call(cmd);
  for (auto* r : {&a, &b})
    for (const char* cmd : {"reread", "end", "release"}) r->call(cmd);
}

}  // namespace

void add_rwlock_scenarios(std::vector<Scenario>& out) {
  out.push_back({"rwlock_pause_minority",
                 Expect::safe,
                 true,
                 {},
                 "read-write lock, five readers (one through redlock run --shared, one a "
                 "SharedMutex) and three writers; two random nodes SIGSTOPped for 700 ms, again "
                 "and again: no reader "
                 "beside a writer, no write inside a reader's section",
                 rwlock_pause_minority});
  out.push_back({"rwlock_crash_restart",
                 Expect::safe,
                 false,
                 {Tool::fsync_nodes},
                 "read-write lock, four readers and three writers; one or two nodes at a time "
                 "crash and restart with appendfsync always: no reader beside a writer",
                 rwlock_crash_restart});
  out.push_back({"rwlock_empty_restart",
                 Expect::caught,
                 false,
                 {},
                 "read-write lock, two readers hold; nodes 0-2 restart empty: a writer beside "
                 "them (negative control)",
                 rwlock_empty_restart});
}

}  // namespace redlock::chaos
