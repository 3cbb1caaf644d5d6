// redlock_sim: runs the deterministic simulator over a range of seeds (docs/simulation.md).
//
//   redlock_sim --seeds 0..9999 [--jobs 2] [--faults pause,reset] [--control wipe-majority]
//   redlock_sim --seed 1234 --trace          # replays one seed and prints its trace
//   redlock_sim --seed 1234 --trace-hash     # the trace's hash (the same seed, the same hash)
//   redlock_sim ... --shrink                 # a failing seed again with fewer fault kinds
//   redlock_sim --seed 1234 --only pause,reset --trace   # exactly these kinds (a shrunk run)
//   redlock_sim --control NAME --expect-caught K --seeds 0..K-1   # a negative control's test
//   redlock_sim --seeds 0..1999 --jobs 2 --first   # stop at the first failing seed (mutants)
//   redlock_sim --seeds 0..999 --with permits,election,rwlock   # these kinds on in every seed
//
// Prints seeds/second, events per seed and every violation with the command that replays it.
// Exit status: 0 when every seed passed (with --expect-caught: when the control was caught), 1
// on a violation, 2 on bad usage. --jobs N forks N processes over interleaved seeds.
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "world/world.hpp"

namespace {

using redlock::sim::Control;
using redlock::sim::RunOptions;

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "redlock_sim: %s\n"
               "usage: redlock_sim --seeds FROM..TO [--jobs N] [--faults k1,k2] "
               "[--control wipe-majority|clock-jump-quorum] [--with k1,k2] [--expect-caught] "
               "[--first]\n"
               "       redlock_sim --seed S [--trace | --trace-hash] [--faults ...] "
               "[--control ...]\n",
               why);
  std::exit(2);
}

std::uint64_t number(const char* s) {
  char* end = nullptr;
  auto v = std::strtoull(s, &end, 10);
  if (end == s || *end != '\0') usage("not a number");
  return v;
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= s.size()) {
    auto comma = s.find(',', start);
    if (comma == std::string::npos) comma = s.size();
    if (comma > start) out.push_back(s.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

// A comma list of fault kinds (--faults, --only, --with), each one fault_kinds() names.
std::vector<std::string> kinds_of(const std::string& list) {
  auto kinds = split(list);
  for (const auto& f : kinds) {
    bool known = false;
    for (const auto& k : redlock::sim::fault_kinds()) known = known || k == f;
    if (!known) usage(("unknown fault kind " + f).c_str());
  }
  return kinds;
}

struct Totals {
  std::uint64_t seeds = 0, events = 0, scripts = 0, failed = 0;
};

}  // namespace

int main(int argc, char** argv) {
  std::uint64_t from = 0, to = 0;
  bool have_range = false, trace = false, trace_hash = false, expect_caught = false;
  int jobs = 1;
  RunOptions base;
  std::string faults_arg, control_arg, with_arg;
  bool shrink = false;  // a failing seed is run again with fewer fault kinds
  // Stop at the first failing seed: tools/mutants.py only asks whether a mutant fails at all, and
  // the processes still running are ended as soon as one of them found one.
  bool first = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) usage(("missing value for " + a).c_str());
      return argv[++i];
    };
    if (a == "--seeds") {
      std::string r = value();
      auto dots = r.find("..");
      if (dots == std::string::npos) usage("--seeds takes FROM..TO");
      from = number(r.substr(0, dots).c_str());
      to = number(r.substr(dots + 2).c_str());
      if (to < from) usage("--seeds: TO below FROM");
      have_range = true;
    } else if (a == "--seed") {
      from = to = number(value());
      have_range = true;
    } else if (a == "--jobs") {
      jobs = static_cast<int>(number(value()));
      if (jobs < 1 || jobs > 64) usage("--jobs between 1 and 64");
    } else if (a == "--faults") {
      faults_arg = value();
      base.faults = kinds_of(faults_arg);
    } else if (a == "--control") {
      control_arg = value();
      if (control_arg == "wipe-majority")
        base.control = Control::wipe_majority;
      else if (control_arg == "clock-jump-quorum")
        base.control = Control::clock_jump_quorum;
      else
        usage("unknown control");
    } else if (a == "--only") {
      faults_arg = value();
      base.faults = faults_arg == "none" ? std::vector<std::string>() : kinds_of(faults_arg);
      base.only = true;
    } else if (a == "--with") {
      with_arg = value();
      base.with = kinds_of(with_arg);
    } else if (a == "--shrink") {
      shrink = true;
    } else if (a == "--first") {
      first = true;
    } else if (a == "--trace") {
      trace = true;
    } else if (a == "--trace-hash") {
      trace_hash = true;
    } else if (a == "--expect-caught") {
      expect_caught = true;
    } else {
      usage(("unknown argument " + a).c_str());
    }
  }
  if (!have_range) usage("give --seeds or --seed");
  std::string replay_extra;
  if (!faults_arg.empty()) replay_extra += (base.only ? " --only " : " --faults ") + faults_arg;
  if (!control_arg.empty()) replay_extra += " --control " + control_arg;
  if (!with_arg.empty()) replay_extra += " --with " + with_arg;

  if (trace || trace_hash) {
    base.seed = from;
    base.trace = true;
    auto r = redlock::sim::run_seed(base);
    if (trace) std::fputs(r.trace.c_str(), stdout);
    std::printf("seed %llu: %s\nevents %llu, scripts %llu, trace hash %016llx\n",
                static_cast<unsigned long long>(r.seed), r.summary.c_str(),
                static_cast<unsigned long long>(r.events),
                static_cast<unsigned long long>(r.scripts),
                static_cast<unsigned long long>(r.trace_hash));
    for (const auto& v : r.violations) std::printf("VIOLATION %s\n", v.c_str());
    return r.violations.empty() ? 0 : 1;
  }

  auto started = std::chrono::steady_clock::now();
  // Each process takes every jobs-th seed and reports its totals on a pipe.
  auto run_share = [&](int j) {
    Totals t;
    for (std::uint64_t s = from + static_cast<std::uint64_t>(j); s <= to;
         s += static_cast<std::uint64_t>(jobs)) {
      RunOptions o = base;
      o.seed = s;
      auto r = redlock::sim::run_seed(o);
      ++t.seeds;
      t.events += r.events;
      t.scripts += r.scripts;
      if (!r.violations.empty()) {
        ++t.failed;
        if (!expect_caught || t.failed == 1) {
          std::printf("seed %llu FAILED (%s)\n", static_cast<unsigned long long>(s),
                      r.summary.c_str());
          for (const auto& v : r.violations) std::printf("  %s\n", v.c_str());
          std::printf("  replay: redlock_sim --seed %llu%s --trace\n",
                      static_cast<unsigned long long>(s), replay_extra.c_str());
          if (shrink) {
            // Drop fault kinds one at a time while the seed still fails (the run with fewer
            // kinds is another scenario of the same seed, replayed with --only).
            auto kinds = r.enabled;
            for (std::size_t i = 0; i < kinds.size();) {
              RunOptions t = base;
              t.seed = s;
              t.only = true;
              t.with.clear();  // --only names every kind that is on
              t.faults = kinds;
              t.faults.erase(t.faults.begin() + static_cast<std::ptrdiff_t>(i));
              if (!redlock::sim::run_seed(t).violations.empty())
                kinds = t.faults;
              else
                ++i;
            }
            std::string only;
            for (const auto& k : kinds) only += (only.empty() ? "" : ",") + k;
            std::string extra =
                base.control == Control::none ? std::string() : " --control " + control_arg;
            std::printf("  shrunk: redlock_sim --seed %llu --only %s%s --trace\n",
                        static_cast<unsigned long long>(s), only.empty() ? "none" : only.c_str(),
                        extra.c_str());
          }
          std::fflush(stdout);
        }
        if (first) break;
      }
      if (to - s < static_cast<std::uint64_t>(jobs)) break;  // no overflow at the top
    }
    return t;
  };
  Totals all;
  auto add = [&all](const Totals& t) {
    all.seeds += t.seeds;
    all.events += t.events;
    all.scripts += t.scripts;
    all.failed += t.failed;
  };
  if (jobs == 1) {
    add(run_share(0));
  } else {
    std::vector<int> pipes;
    std::vector<pid_t> pids;
    std::fflush(stdout);
    for (int j = 0; j < jobs; ++j) {
      int fd[2];
      if (pipe(fd) != 0) {
        std::perror("pipe");
        return 2;
      }
      pid_t pid = fork();
      if (pid < 0) {
        std::perror("fork");
        return 2;
      }
      if (pid == 0) {
        close(fd[0]);
        Totals t = run_share(j);
        std::fflush(stdout);
        bool sent = write(fd[1], &t, sizeof t) == static_cast<ssize_t>(sizeof t);
        _exit(!sent ? 2 : t.failed != 0 ? 1 : 0);
      }
      close(fd[1]);
      pipes.push_back(fd[0]);
      pids.push_back(pid);
    }
    if (first) {
      // The first process to find a failing seed ends the others (its own children only).
      std::vector<bool> ended(pids.size(), false);
      for (std::size_t left = pids.size(); left > 0; --left) {
        int status = 0;
        pid_t done = wait(&status);
        if (done < 0) break;
        for (std::size_t j = 0; j < pids.size(); ++j)
          if (pids[j] == done) ended[j] = true;
        if (WIFEXITED(status) && WEXITSTATUS(status) == 1) {
          for (std::size_t j = 0; j < pids.size(); ++j)
            if (!ended[j]) kill(pids[j], SIGKILL);
          break;
        }
      }
    }
    for (int fd : pipes) {
      Totals t;
      if (read(fd, &t, sizeof t) == static_cast<ssize_t>(sizeof t)) add(t);
      close(fd);
    }
    for (auto pid : pids) waitpid(pid, nullptr, 0);
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::printf(
      "%llu seeds in %.1f s: %.0f seeds/s, %.0f events/seed, %.0f scripts/seed; %llu "
      "failed\n",
      static_cast<unsigned long long>(all.seeds), secs,
      secs > 0 ? static_cast<double>(all.seeds) / secs : 0.0,
      all.seeds ? static_cast<double>(all.events) / static_cast<double>(all.seeds) : 0.0,
      all.seeds ? static_cast<double>(all.scripts) / static_cast<double>(all.seeds) : 0.0,
      static_cast<unsigned long long>(all.failed));
  if (expect_caught) {
    if (all.failed == 0) {
      std::printf("control %s NOT caught in %llu seeds\n", control_arg.c_str(),
                  static_cast<unsigned long long>(all.seeds));
      return 1;
    }
    std::printf("control %s caught in %llu of %llu seeds\n", control_arg.c_str(),
                static_cast<unsigned long long>(all.failed),
                static_cast<unsigned long long>(all.seeds));
    return 0;
  }
  return all.failed == 0 ? 0 : 1;
}
