// Scenarios that need nothing but processes and signals: node crashes and restarts (empty,
// delayed, persistent), SIGSTOP of nodes and of a holder, `redlock run` losing its lock, extend,
// and crashes at a high rate.
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <thread>

#include "fault_proxy.hpp"
#include "record.hpp"
#include "scenarios.hpp"

namespace redlock::chaos {
namespace {

using namespace std::chrono_literals;
using Steady = std::chrono::steady_clock;

void no_faults(Run& run) {
  run.start_nodes(5);
  long d = run.phase(10000, 40000);
  spawn_mix(run, d, 500, true);
  run.sleep(Ms(d));
  run.wait_all(20s);
  // Waiters sleep until a release notice: with five contenders, a grant takes a handful of
  // attempts, not hundreds (a waiter woken by its own clean-up spins).
  long attempts = 0, grants = 0;
  for (const char* id : {"explicit1", "explicit2", "held"}) {
    for (const auto& r : read_records(run.records_path(id))) {
      if (r.kind != "section") continue;
      attempts += r.get_int("attempts");
      ++grants;
    }
  }
  double per_grant = grants ? static_cast<double>(attempts) / static_cast<double>(grants) : 0;
  char text[96];
  std::snprintf(text, sizeof text, "%.1f attempts per grant (explicit and held workers)",
                per_grant);
  run.note(text);
  run.check(per_grant < 50, std::string(text) + ": fewer than 50");
}

void minority_crash(Run& run) {
  run.start_nodes(5);
  long d = run.phase(10000, 30000);
  spawn_mix(run, d, 500, true);
  run.sleep(Ms(d / 4));
  run.crash(3);
  run.crash(4);  // and they stay down
  run.sleep(Ms(d - d / 4));
}

// --- deterministic restarts ----------------------------------------------------------------

enum class Restart { empty, delayed, fsync, guarded };
constexpr long kHolderTtl = 3000;

// Holder A takes the lock with a long ttl: on all five nodes, or (bare) on exactly nodes 0, 1, 2
// because 3 and 4 were paused during its acquire and then crashed, so they never ran its SET.
// Then the nodes of A's quorum that a second holder needs crash: node 0 (bare: 0 + 3 + 4 is a
// majority without A) or nodes 0, 1, 2. They come back empty at once (the negative controls),
// after the largest ttl in use, or with their data (appendfsync always). B then asks.
// Guarded: they come back empty at once, as in the negative controls, but the clients run
// with the restart guard (Config::restart_guard), which keeps a node whose uptime is below the
// largest lease from voting: the client-side delayed restart.
void restart_control(Run& run, bool bare, Restart how) {
  run.start_nodes(5, how == Restart::fsync);
  WorkerSpec spec;
  spec.ttl = kHolderTtl;
  if (how == Restart::guarded) spec.extra_args = {"--restart-guard", std::to_string(kHolderTtl)};
  // With appendfsync always a node answers a write only after its disk has it, which on a busy
  // machine can take longer than the suite's 150 ms (seen once in CI: A's one attempt found no
  // node in time, and the scenario had no critical section). The holder's ttl leaves room.
  if (how == Restart::fsync) spec.request_timeout = 1000;
  auto& a = run.control("A", spec);
  auto& b = run.control("B", spec);
  run.sleep(300ms);  // both clients connected
  // With the guard, fresh nodes vote once their uptime (whole seconds) reaches the lease.
  if (how == Restart::guarded) run.sleep(Ms(kHolderTtl + 1200));
  if (bare) {
    run.pause(3);
    run.pause(4);
  }
  auto sent = Steady::now();
  auto ra = a.call("acquire " + std::to_string(kHolderTtl) + " 0");
  run.check(granted(ra), "A acquires: " + ra);
  if (!granted(ra)) return;
  if (bare) run.check(ra.find(" 3/5 yes") != std::string::npos, "A holds a bare quorum: " + ra);
  a.call("read");
  if (bare) {
    // Paused, they never ran A's SET; coming back empty is harmless for them.
    for (std::size_t i : {3, 4}) {
      run.crash(i);
      run.restart(i);
    }
  }
  std::vector<std::size_t> victims =
      bare ? std::vector<std::size_t>{0} : std::vector<std::size_t>{0, 1, 2};
  if (how != Restart::empty) {
    // A careful holder: acts while valid, and holds to the end of its window.
    a.call("write_if_valid");
    for (const char* c : {"sleep_until_deadline 0", "end", "release"}) a.send(c);
  }
  for (auto i : victims) run.crash(i);
  if (how == Restart::delayed) {
    auto rb = b.call("acquire " + std::to_string(kHolderTtl) + " 0");
    run.check(!granted(rb), "B is refused while the crashed nodes are down: " + rb);
    if (granted(rb)) {
      b.call("end");
      b.call("release");
    }
    std::this_thread::sleep_until(sent + Ms(kHolderTtl + 300));
  }
  for (auto i : victims) run.restart(i);
  run.sleep(500ms);  // the clients reconnect
  if (how == Restart::guarded) {
    auto rb = b.call("acquire " + std::to_string(kHolderTtl) + " 0");
    run.check(!granted(rb), "B is refused while the restarted nodes are not eligible: " + rb);
    if (granted(rb)) {
      b.call("end");
      b.call("release");
    }
  }
  if (how == Restart::empty) {
    auto rb = b.call("acquire " + std::to_string(kHolderTtl) + " 2000");
    run.check(granted(rb), "B acquires while A's lock is still valid: " + rb);
    if (granted(rb))
      for (const char* c : {"read", "write", "end", "release"}) b.call(c);
    for (const char* c : {"write", "end", "release"}) a.call(c);  // A's write is stale
    return;
  }
  auto rb = b.call("acquire " + std::to_string(kHolderTtl) + " 8000", 12s);
  run.check(granted(rb), "B acquires once A's window is over: " + rb);
  if (granted(rb))
    for (const char* c : {"read", "write", "end", "release"}) b.call(c);
  for (int i = 0; i < 3; ++i) a.reply(8s);  // A's queued answers
}

// --- a holder paused past its ttl ------------------------------------------------------------

// Kleppmann's case, orchestrated three times. Round 1: A (explicit lock) is paused after reading
// the counter, B gets the lock once A's keys expire and updates the counter, A wakes up and
// writes its stale value: the claimed intervals do not overlap, the actual ones do, and an
// update is lost. Round 2: A holds a renewed HeldLock; after the pause valid() says no and A
// skips its write. Round 3: both ask for fencing tokens, and the storage rejects A's write, whose
// token is lower than B's: the cure for round 1.
void client_pause(Run& run) {
  run.start_nodes(5);
  WorkerSpec spec;
  spec.ttl = 600;
  auto& a = run.control("A", spec);
  auto& b = run.control("B", spec);
  run.sleep(300ms);
  const char* acquire[] = {"", "acquire 600 1000", "hold 1000", "acquire 600 1000 fenced"};
  for (int round = 1; round <= 3; ++round) {
    auto ra = a.call(acquire[round]);
    run.check(granted(ra), "A acquires (round " + std::to_string(round) + "): " + ra);
    if (!granted(ra)) return;
    a.call("read");
    ::kill(a.child().pid(), SIGSTOP);
    run.event("holder A paused (SIGSTOP)");
    auto rb = b.call(round == 3 ? "acquire 600 3000 fenced" : "acquire 600 3000", 5s);
    run.check(granted(rb), "B acquires once A's lock expired: " + rb);
    if (granted(rb))
      for (const char* c : {"read", "write", "end", "release"}) b.call(c);
    ::kill(a.child().pid(), SIGCONT);
    run.event("holder A resumed (SIGCONT)");
    auto w = a.call(round == 2 ? "write_if_valid" : "write");
    if (round == 2) run.check(w == "skipped", "A's HeldLock is invalid after the pause: " + w);
    if (round == 3) run.check(w == "rejected", "the storage rejects A's stale fencing token: " + w);
    a.call("end");
    auto rel = a.call("release");
    run.check(rel.rfind("release_fail", 0) == 0, "A's release finds the lock gone: " + rel);
  }
}

// --- node pauses -----------------------------------------------------------------------------

// `k` random nodes are stopped for 700 ms, then resumed, again and again: replies time out,
// requests sent meanwhile run when the node resumes (ghost SETs), and every failed attempt must
// have released them.
void pause_nodes(Run& run, std::size_t k) {
  run.start_nodes(5);
  long d = run.phase(10000, 25000);
  spawn_mix(run, d, 500, false);
  pause_rounds(run, d, k);
}

// --- crashes at a high rate ------------------------------------------------------------------

// Every node behind a fault proxy. Every 60-180 ms one more node fails (at most two at once):
// killed, and started again empty after the largest ttl (a delayed restart: inside the
// assumptions), or its proxy resets every connection, new ones at once, for 300-500 ms.
// Connections die under the clients' feet all the time and clients reconnect within 2-20 ms: a
// library that lets a write on a dead socket raise SIGPIPE kills its host, and the runner sees
// it.
void crash_storm(Run& run) {
  constexpr long ttl = 300;
  run.start_nodes(5);
  std::vector<std::unique_ptr<FaultProxy>> proxies;
  std::vector<std::uint16_t> ports;
  for (std::size_t i = 0; i < run.size(); ++i) {
    proxies.push_back(std::make_unique<FaultProxy>(run.client_port(i)));
    ports.push_back(proxies.back()->port());
  }
  long d = run.phase(10000, 25000);
  WorkerSpec s;
  s.ttl = ttl;
  s.duration = d;
  s.nodes = run.node_list(ports);
  s.extra_args = {"--reconnect-min", "2", "--reconnect-max", "20"};
  spawn_mix(run, s, true);
  run.fencing_not_judged("nodes restart empty, and their fence counters with them");
  std::mt19937_64 rng(std::random_device{}());
  const auto never = Steady::time_point::max();
  std::vector<Steady::time_point> back_at(5, never);
  std::vector<bool> crashed(5, false);
  auto end = Steady::now() + Ms(d - 500);
  int crashes = 0, resets = 0;
  while (Steady::now() < end) {
    run.sleep(Ms(60 + static_cast<long>(rng() % 120)));
    auto now = Steady::now();
    std::size_t down = 0;
    for (std::size_t i = 0; i < 5; ++i) {
      if (back_at[i] <= now) {
        if (crashed[i])
          run.restart(i);
        else
          proxies[i]->set_mode(ProxyMode::pass);
        crashed[i] = false;
        back_at[i] = never;
      }
      down += back_at[i] != never;
    }
    std::size_t victim = rng() % 5;
    if (down >= 2 || back_at[victim] != never) continue;
    if (rng() % 2 == 0) {
      run.crash(victim);
      crashed[victim] = true;
      back_at[victim] = Steady::now() + Ms(ttl + 150);
      ++crashes;
    } else {
      proxies[victim]->set_mode(ProxyMode::reset);
      run.event("proxy of node " + std::to_string(victim) + " resets every connection");
      back_at[victim] = Steady::now() + Ms(300 + static_cast<long>(rng() % 200));
      ++resets;
    }
  }
  for (std::size_t i = 0; i < 5; ++i) {
    if (back_at[i] == never) continue;
    std::this_thread::sleep_until(back_at[i]);
    if (crashed[i])
      run.restart(i);
    else
      proxies[i]->set_mode(ProxyMode::pass);
  }
  run.note(std::to_string(crashes) + " node crashes, " + std::to_string(resets) + " reset periods");
  run.wait_all(Ms(20000));  // the proxies must outlive the workers
}

// --- redlock run -----------------------------------------------------------------------------

bool alive(pid_t pid) {
  if (::waitpid(pid, nullptr, WNOHANG) == pid) return false;  // an orphan we reaped (subreaper)
  if (::kill(pid, 0) != 0) return false;
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid));
  FILE* f = std::fopen(path, "r");
  if (!f) return false;
  char buf[512] = {0};
  std::size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  const char* close = std::strrchr(buf, ')');
  return n > 0 && close != nullptr && close[1] == ' ' && close[2] != 'Z';
}

// `redlock run` holds the lock while its command runs; the command has a child of its own (a
// background job). A majority of nodes is stopped, renewals fail, the lock is lost before its
// deadline: `redlock run` must end the whole command (child and grandchild) and exit 4. A
// second worker gets the lock once the nodes are back: a survivor of the command overlaps it.
void run_lost_lock(Run& run) {
  constexpr long lease = 1500;
  run.start_nodes(5);
  const std::string id = "cmd";
  std::vector<std::string> argv = {run.settings().redlock_path,
                                   "--nodes",
                                   run.node_list(),
                                   "--ttl",
                                   std::to_string(lease),
                                   "--request-timeout",
                                   "150",
                                   "run",
                                   "--wait",
                                   "3000",
                                   "--kill-after",
                                   "2000",
                                   "chaos",
                                   "--"};
  WorkerSpec family;
  family.mode = "family";
  family.hold = 15000;
  family.hold_jitter = 0;
  auto wargs = run.worker_args(id, family);
  argv.insert(argv.end(), wargs.begin(), wargs.end());
  run.use_ttl(lease);
  auto& cli = run.spawn_process("redlock-run", argv);

  // Wait for the command and its background job to be up.
  std::vector<pid_t> pids;
  auto limit = Steady::now() + 5s;
  while (pids.size() < 2 && Steady::now() < limit) {
    run.sleep(20ms);
    pids.clear();
    for (const auto& r : read_records(run.records_path(id)))
      if (r.kind == "pid") pids.push_back(static_cast<pid_t>(r.get_int("pid")));
  }
  run.check(pids.size() == 2, "the command and its background job started");
  if (pids.size() != 2) return;

  WorkerSpec b;
  b.ttl = 500;
  b.duration = 7000;
  run.spawn("B", b);
  run.sleep(500ms);
  for (std::size_t i : {0, 1, 2}) run.pause(i);
  // From the moment the majority is stopped: a driver command may take a while.
  auto paused_at = raw_now_ns();
  run.sleep(Ms(lease + 1500));
  for (std::size_t i : {0, 1, 2}) run.resume(i);
  run.sleep(1000ms);  // B gets the lock: a survivor of the command now overlaps it

  bool exited = cli.wait(Ms(lease + 4000));
  run.check(exited, "redlock run exits after losing its lock");
  if (exited) {
    int st = cli.status();
    run.check(WIFEXITED(st) && WEXITSTATUS(st) == 4,
              "redlock run exits with 4 (lock lost), got " +
                  (WIFEXITED(st) ? std::to_string(WEXITSTATUS(st))
                                 : "signal " + std::to_string(WTERMSIG(st))));
  }
  for (pid_t p : pids) {
    bool survivor = alive(p);
    run.check(!survivor, "process " + std::to_string(p) + " of the command ended with it");
    if (survivor) {
      ::kill(p, SIGTERM);  // ours: a descendant of the runner
      for (int i = 0; i < 200 && alive(p); ++i) run.sleep(10ms);
    }
  }
  // How long the command's processes went on after the nodes stopped answering.
  for (const auto& r : read_records(run.records_path(id))) {
    if (r.kind != "section") continue;
    double after = static_cast<double>(r.get_int("end") - paused_at) / 1e6;
    run.note(r.get("worker") + " ended " + std::to_string(static_cast<long>(after)) +
             " ms after the majority stopped");
    run.check(after < lease + 1000, r.get("worker") +
                                        " ended within the lease + 1 s of the fault (" +
                                        std::to_string(static_cast<long>(after)) + " ms)");
  }
}

// --- extend ---------------------------------------------------------------------------------

// No fault at all: A extends its 3 s lock with a 400 ms ttl. Whatever extend does, the deadline
// A believes must not outlive the keys: B, asking meanwhile, must not get in while A's claimed
// window is open.
void extend_shorter(Run& run) {
  run.start_nodes(5);
  WorkerSpec spec;
  spec.ttl = 3000;
  auto& a = run.control("A", spec);
  auto& b = run.control("B", spec);
  run.sleep(300ms);
  auto ra = a.call("acquire 3000 0");
  run.check(granted(ra), "A acquires: " + ra);
  if (!granted(ra)) return;
  a.call("read");
  auto e = a.call("extend 400");
  run.note("A's extend to 400 ms: " + e.substr(0, 60));
  b.send("acquire 3000 2000");
  run.sleep(1000ms);
  for (const char* c : {"write_if_valid", "end", "release"}) a.call(c);
  auto rb = b.reply(5s);
  if (granted(rb))
    for (const char* c : {"read", "write", "end", "release"}) b.call(c);
}

}  // namespace

void add_process_scenarios(std::vector<Scenario>& out) {
  out.push_back({"no_faults",
                 Expect::safe,
                 true,
                 {},
                 "five healthy nodes, four API workers and `redlock run`: the baseline",
                 no_faults});
  out.push_back({"minority_crash",
                 Expect::safe,
                 true,
                 {},
                 "two of five nodes are killed and stay down: the rest keeps a quorum",
                 minority_crash});
  out.push_back({"bare_quorum_empty_restart",
                 Expect::caught,
                 true,
                 {},
                 "A holds nodes 0-2 only; node 0 restarts empty: B gets 0+3+4 (negative control)",
                 [](Run& r) { restart_control(r, true, Restart::empty); }});
  out.push_back({"bare_quorum_delayed_restart",
                 Expect::safe,
                 false,
                 {},
                 "the same, node 0 restarts after the largest ttl: B waits for A's window",
                 [](Run& r) { restart_control(r, true, Restart::delayed); }});
  out.push_back({"bare_quorum_guarded_restart",
                 Expect::safe,
                 true,
                 {},
                 "the empty restart again, clients with the restart guard: node 0 is not "
                 "eligible until the largest ttl has passed, so B waits for A's window",
                 [](Run& r) { restart_control(r, true, Restart::guarded); }});
  out.push_back({"bare_quorum_fsync_restart",
                 Expect::safe,
                 true,
                 {Tool::fsync_nodes},
                 "the same with appendfsync always: node 0 comes back with A's key",
                 [](Run& r) { restart_control(r, true, Restart::fsync); }});
  out.push_back({"majority_empty_restart",
                 Expect::caught,
                 true,
                 {},
                 "A holds all five; nodes 0-2 restart empty: B gets them (negative control)",
                 [](Run& r) { restart_control(r, false, Restart::empty); }});
  out.push_back({"majority_delayed_restart",
                 Expect::safe,
                 false,
                 {},
                 "nodes 0-2 restart after the largest ttl: B is refused meanwhile, then waits",
                 [](Run& r) { restart_control(r, false, Restart::delayed); }});
  out.push_back({"majority_fsync_restart",
                 Expect::safe,
                 false,
                 {Tool::fsync_nodes},
                 "nodes 0-2 restart at once with appendfsync always: A's keys survive",
                 [](Run& r) { restart_control(r, false, Restart::fsync); }});
  out.push_back({"pause_minority",
                 Expect::safe,
                 true,
                 {},
                 "two random nodes SIGSTOPped for 700 ms, again and again (ghost SETs)",
                 [](Run& r) { pause_nodes(r, 2); }});
  out.push_back({"pause_majority",
                 Expect::safe,
                 false,
                 {},
                 "three random nodes SIGSTOPped for 700 ms, again and again (ghost SETs)",
                 [](Run& r) { pause_nodes(r, 3); }});
  out.push_back(
      {"client_pause",
       Expect::actual_only,
       true,
       {},
       "a holder SIGSTOPped past its ttl: claimed safe, actual overlap; fencing rejects it",
       client_pause});
  out.push_back({"extend_shorter_ttl",
                 Expect::safe,
                 false,
                 {},
                 "extend to a shorter ttl: the holder's deadline must not outlive its keys",
                 extend_shorter});
  out.push_back({"run_lost_lock",
                 Expect::safe,
                 false,
                 {},
                 "`redlock run` loses its lock (majority stopped): the whole command ends, exit 4",
                 run_lost_lock});
  out.push_back({"crash_storm",
                 Expect::safe,
                 true,
                 {},
                 "nodes killed or resetting connections every ~120 ms: no SIGPIPE, no overlap",
                 crash_storm});
  // Those that need nothing but five nodes and the four driver verbs, and whose verdict holds
  // however the nodes were started, run against a deployment too. Not the empty restarts (a
  // deployment's node comes back with what its persistence kept; the fsync variants test that),
  // nor the crash storm (fault proxies in front of the nodes, restarts every few hundred ms).
  for (auto& s : out)
    for (const char* name :
         {"no_faults", "minority_crash", "bare_quorum_delayed_restart",
          "bare_quorum_guarded_restart", "bare_quorum_fsync_restart", "majority_delayed_restart",
          "majority_fsync_restart", "pause_minority", "pause_majority", "client_pause",
          "extend_shorter_ttl", "run_lost_lock"})
      if (s.name == name) s.deployment = true;
}

}  // namespace redlock::chaos
