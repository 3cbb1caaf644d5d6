// The chaos runner's harness: one Run per scenario owns its redis-server processes, the storage
// server, the worker processes and the fault tools, and turns what the workers recorded into one
// report line.
//
// Everything runs on the runner's main thread. Every process it starts is known by its pid and
// stopped by that pid only; every wait is bounded.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "checker.hpp"
#include "driver.hpp"
#include "redis_server.hpp"

namespace redlock::chaos {

using Ms = std::chrono::milliseconds;

// Fault tools a scenario may need; a scenario whose tool is missing is skipped, not failed.
// fsync_nodes: nodes that keep every write across a crash (appendonly yes, appendfsync always);
// the runner's own nodes are started so, a deployment's are asked.
enum class Tool { netns_nft, proxy, clock_shim, fsync_nodes };
const char* to_string(Tool tool);

struct Settings {
  std::string worker_path;   // redlock_chaos_worker
  std::string redlock_path;  // the redlock CLI
  std::string out_dir;       // where each scenario's records and logs go
  bool smoke = false;        // smoke lengths (shorter loop phases)
  // --tls: the nodes speak TLS only to the clients (rediss://, certificates made at start;
  // workers and the CLI trust their CA through REDLOCK_TLS_CACERT).
  const test::TlsFiles* tls = nullptr;
  bool verbose = false;
  // A deployment the runner did not start (--driver): its five nodes, in the order the driver
  // numbers them, and the fault driver, run as `driver VERB INDEX` (driver.hpp). Empty driver:
  // the runner starts its own redis-server processes for every scenario.
  std::string driver;
  std::vector<std::string> deployment_urls;
  std::vector<NodeAddress> deployment;
  Ms driver_timeout{60000};  // one driver command, at most
  bool on_deployment() const { return !driver.empty(); }
};

// What a scenario must show.
enum class Expect {
  safe,         // no claimed overlap, no lost update, no grant with negative validity
  caught,       // negative control: the checker must find a claimed overlap and a lost update
  actual_only,  // a paused holder: no claimed overlap, but actual overlaps and lost updates
};
const char* to_string(Expect e);

// Parameters of one worker process (see worker.cpp for the modes).
struct WorkerSpec {
  std::string mode = "explicit";
  std::string resource = "chaos";
  long ttl = 500;  // the lease (explicit), or the watchdog lease (held, mutex, run)
  long wait = 2000;
  long hold = 2;
  long hold_jitter = 3;
  long duration = 10000;
  long max_sections = 0;
  bool until_deadline = false;
  bool extend = false;
  long request_timeout = 150;
  long connect_timeout = 300;
  double drift = 0.01;
  std::string nodes;  // empty: the run's node list
  int permits = 0;    // a permit of a semaphore of this many (worker --permits); 0: the mutex
  std::vector<std::string> extra_args;
};

// A process the runner started.
class Child {
 public:
  // Its stderr goes to `log_path`; its stdout too, unless `pipes`: then the runner writes to its
  // stdin and reads its stdout (a control worker).
  Child(const std::vector<std::string>& argv, const std::string& log_path, bool pipes);
  ~Child();  // SIGKILL if still running, then reaped
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  pid_t pid() const { return pid_; }
  bool running();
  // Waits up to `limit` for it to exit; false when it is still running.
  bool wait(Ms limit);
  void kill_now();  // SIGKILL and reap (counted as hung by the caller)
  bool exited() const { return done_; }
  bool killed_by_us() const { return killed_; }
  int status() const { return status_; }  // waitpid status once exited()

  // Control pipes.
  bool send(const std::string& line);
  // The next line of its stdout, or nullopt after `limit`.
  std::optional<std::string> read_line(Ms limit);

 private:
  pid_t pid_ = -1;
  int in_ = -1;
  int out_ = -1;
  std::string buffer_;
  bool done_ = false;
  bool killed_ = false;
  int status_ = 0;
};

// A worker in control mode: the runner says what it does, step by step.
class Control {
 public:
  Control(std::unique_ptr<Child> child, std::string id)
      : child_(std::move(child)), id_(std::move(id)) {}
  const std::string& id() const { return id_; }
  Child& child() { return *child_; }
  // Sends a command and waits for its answer ("" when none came within `limit`).
  std::string call(const std::string& command, Ms limit = Ms(5000));
  void send(const std::string& command);   // no wait...
  std::string reply(Ms limit = Ms(5000));  // ...for the answer later

 private:
  std::unique_ptr<Child> child_;
  std::string id_;
};

// One scenario's outcome: a report line.
struct Outcome {
  std::string name;
  Expect expect = Expect::safe;
  bool skipped = false;
  std::string skip_reason;
  std::size_t sections = 0;
  std::size_t claimed = 0;
  std::size_t actual = 0;
  std::size_t negative_validity = 0;
  std::int64_t lost_updates = 0;
  std::size_t fence_violations = 0;  // fenced grants whose token did not grow
  std::size_t rejected = 0;          // stale writes the storage refused by their fencing token
  long acquired = 0;
  long attempts = 0;
  std::map<std::string, long> failures;  // "not_acquired" -> n, "lost.lock_lost" -> n...
  std::size_t ghosts = 0;                // lock keys on the nodes right after the workers ended
  std::size_t leaked = 0;                // lock keys still there once every ttl had passed
  int signals = 0;                       // processes that died of a signal
  int hung = 0;                          // processes the runner had to kill
  std::string seen;
  bool pass = false;
  std::vector<std::string> problems;  // why it failed
  std::vector<std::string> notes;     // evidence worth reading (overlaps, timings)
  double seconds = 0;
};

class Run {
 public:
  Run(const Settings& settings, std::string name, Expect expect);
  ~Run();
  Run(const Run&) = delete;
  Run& operator=(const Run&) = delete;

  const Settings& settings() const { return settings_; }
  bool smoke() const { return settings_.smoke; }
  // A loop phase: `smoke_ms` in the smoke subset, `full_ms` in the full suite.
  long phase(long smoke_ms, long full_ms) const { return smoke() ? smoke_ms : full_ms; }
  const std::string& dir() const { return dir_; }

  // --- nodes -------------------------------------------------------------------------------
  // Starts n independent masters; `persistent`: appendonly yes + appendfsync always. On a
  // deployment: takes its nodes instead (n must be their number; their persistence is theirs;
  // a scenario that needs nodes of its own, `env_per_node` or node(), cannot run there).
  void start_nodes(std::size_t n, bool persistent = false,
                   std::vector<std::vector<std::string>> env_per_node = {});
  std::size_t size() const { return count_; }
  // The runner's own node i (throws on a deployment).
  test::RedisServer& node(std::size_t i);
  // The port the clients use: node i's TLS port under --tls, else its port (throws on a
  // deployment).
  std::uint16_t client_port(std::size_t i) const;
  // "redis://127.0.0.1:p1,..." (rediss:// under --tls) over the nodes' client ports, or over
  // `ports` when given; on a deployment, its node list.
  std::string node_list(const std::vector<std::uint16_t>& ports = {}) const;
  // The four faults, through the run's driver (driver.hpp): one code path for the runner's own
  // processes and for a deployment's. A fault the driver could not apply fails the scenario.
  void crash(std::size_t i);    // kill -9; stays down
  void restart(std::size_t i);  // start again on the same port (empty unless persistent)
  void pause(std::size_t i);    // SIGSTOP
  void resume(std::size_t i);   // SIGCONT
  // Lock keys on node i, fence counters and waiting lines aside (bounded by a timeout; none when
  // down or paused). On a deployment only the suite's own resource is looked at.
  std::vector<std::string> lock_keys(std::size_t i);
  // Network faults were healed just now: requests held back by them may still arrive (TCP
  // retransmits for a while after a partition heals), so the leak check waits longer.
  void network_healed();

  // --- workers -----------------------------------------------------------------------------
  // A worker in a loop mode, writing its records to <dir>/<id>.rec.
  void spawn(const std::string& id, WorkerSpec spec);
  // A worker in control mode.
  Control& control(const std::string& id, WorkerSpec spec = {});
  // Any other process (redlock run...): it must exit by itself and not die of a signal; its
  // exit status is for the scenario to judge (workers must exit 0).
  Child& spawn_process(const std::string& id, const std::vector<std::string>& argv);
  std::string records_path(const std::string& id) const { return dir_ + "/" + id + ".rec"; }
  std::vector<std::string> worker_args(const std::string& id, const WorkerSpec& spec) const;
  // Waits for every process to exit (kills and counts as hung those that do not, within limit).
  void wait_all(Ms limit);

  // --- timeline ------------------------------------------------------------------------------
  void sleep(Ms d) const;
  double elapsed() const;  // seconds since the run began
  void event(const std::string& what);
  // A check of the scenario itself (beyond overlaps): a failed one fails the scenario.
  void check(bool ok, const std::string& what);
  void note(const std::string& what);
  // The largest ttl in use, for the leak check (spawn() and control() note theirs).
  void use_ttl(long ttl_ms);
  // A safe scenario whose holders run past their deadline on purpose: actual overlaps are then
  // reported but do not fail it (claimed overlaps and lost updates still do).
  void allow_actual(const std::string& why);
  // Fencing tokens are only as monotonic as the nodes' fence counters: a scenario whose nodes
  // restart empty reports their violations without failing on them.
  void fencing_not_judged(const std::string& why);

  // Runs the body's aftermath: waits for the workers, checks, and fills the outcome.
  Outcome finish();
  Outcome& outcome() { return outcome_; }

 private:
  std::uint16_t storage_port() const;
  void apply(Fault verb, std::size_t i);
  // One command on node i (the runner's own, or the deployment's), as text.
  std::string node_text(std::size_t i, const std::vector<std::string>& argv) const;
  // Brings a deployment back as the scenario found it: paused nodes resumed, killed ones
  // restarted.
  void restore();

  Settings settings_;
  std::string dir_;
  Outcome outcome_;
  std::int64_t t0_ns_;
  std::chrono::steady_clock::time_point started_;
  std::unique_ptr<test::RedisServer> storage_;
  std::vector<std::unique_ptr<test::RedisServer>> nodes_;
  std::size_t count_ = 0;
  std::unique_ptr<NodeDriver> driver_;
  std::vector<bool> paused_;
  std::vector<bool> down_;
  std::vector<std::pair<std::string, std::unique_ptr<Child>>> children_;
  std::vector<std::string> own_status_;  // ids of processes whose exit status is not judged
  std::vector<std::unique_ptr<Control>> controls_;
  long max_ttl_ = 0;
  std::chrono::steady_clock::time_point last_fault_{};  // the last crash, restart, pause, resume
  std::chrono::steady_clock::time_point healed_{};      // the last network_healed()
  std::string actual_allowed_;
  std::string fencing_unjudged_;
  int log_fd_ = -1;
};

// A scenario of the suite.
struct Scenario {
  std::string name;
  Expect expect;
  bool smoke;
  std::vector<Tool> needs;
  std::string what;  // one line: what it does and what it proves
  std::function<void(Run&)> body;
  // It needs nothing but five nodes and the four driver verbs, and its verdict does not depend
  // on how the nodes were started: it can run against a deployment (--driver).
  bool deployment = false;
};

const std::vector<Scenario>& all_scenarios();

// Whether a tool works here (on the deployment, for fsync_nodes); `why` says what is missing.
bool tool_available(Tool tool, const Settings& settings, std::string& why);

// The report: a header, one line per outcome, and the totals.
std::string report_header();
std::string report_line(const Outcome& o);
std::string report_total(const std::vector<Outcome>& outcomes);

}  // namespace redlock::chaos
