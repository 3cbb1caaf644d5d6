// redlock_chaos: runs the chaos scenarios and prints one report line per scenario.
//
//   redlock_chaos --list            the scenarios, what each proves, which are in the smoke set
//   redlock_chaos --smoke           the smoke subset, with short phases (a few minutes)
//   redlock_chaos --all             every scenario
//   redlock_chaos NAME...           the named ones
// Options: --out DIR (records and logs; default a temporary directory, kept when a scenario
// fails), --worker PATH, --redlock PATH, -v (events on stderr as they happen), --tls (the
// nodes speak TLS to the clients: rediss://, certificates made with openssl at start).
//
// Exit status: 0 when every scenario that ran showed what it should; 1 when one did not, or a
// process died of a signal; 2 on usage errors.
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "harness.hpp"
#include "netfault.hpp"

#ifndef REDLOCK_CHAOS_WORKER_PATH
#define REDLOCK_CHAOS_WORKER_PATH "redlock_chaos_worker"
#endif
#ifndef REDLOCK_CLI_PATH
#define REDLOCK_CLI_PATH "redlock"
#endif

namespace {

using namespace redlock::chaos;

int usage() {
  std::fprintf(stderr,
               "usage: redlock_chaos [--list | --smoke | --all | NAME...] [--tls] [--out DIR]\n"
               "                     [--worker PATH] [--redlock PATH] [-v]\n");
  return 2;
}

bool on_path(const char* program) {
  const char* path = std::getenv("PATH");
  if (!path) return false;
  std::string p = path;
  std::size_t pos = 0;
  while (pos <= p.size()) {
    auto colon = p.find(':', pos);
    auto dir = p.substr(pos, colon == std::string::npos ? std::string::npos : colon - pos);
    if (!dir.empty() && ::access((dir + "/" + program).c_str(), X_OK) == 0) return true;
    if (colon == std::string::npos) break;
    pos = colon + 1;
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  Settings settings;
  settings.worker_path = REDLOCK_CHAOS_WORKER_PATH;
  settings.redlock_path = REDLOCK_CLI_PATH;
  bool list = false, all = false, tls = false;
  std::vector<std::string> names;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) std::exit(usage());
      return argv[++i];
    };
    if (a == "--list")
      list = true;
    else if (a == "--smoke")
      settings.smoke = true;
    else if (a == "--tls")
      tls = true;
    else if (a == "--all")
      all = true;
    else if (a == "--out")
      settings.out_dir = value();
    else if (a == "--worker")
      settings.worker_path = value();
    else if (a == "--redlock")
      settings.redlock_path = value();
    else if (a == "-v" || a == "--verbose")
      settings.verbose = true;
    else if (a == "-h" || a == "--help")
      return usage(), 0;
    else if (!a.empty() && a[0] == '-')
      return usage();
    else
      names.push_back(a);
  }

  const auto& scenarios = all_scenarios();
  if (list) {
    for (const auto& s : scenarios) {
      std::string needs;
      for (auto t : s.needs) needs += std::string(needs.empty() ? "" : ", ") + to_string(t);
      std::printf("%-28s %-11s %-5s %s%s\n", s.name.c_str(), to_string(s.expect),
                  s.smoke ? "smoke" : "", s.what.c_str(),
                  needs.empty() ? "" : (" [needs " + needs + "]").c_str());
    }
    return 0;
  }
  std::vector<const Scenario*> chosen;
  if (!names.empty()) {
    for (const auto& n : names) {
      const Scenario* found = nullptr;
      for (const auto& s : scenarios)
        if (s.name == n) found = &s;
      if (!found) {
        std::fprintf(stderr, "redlock_chaos: no scenario named '%s' (see --list)\n", n.c_str());
        return 2;
      }
      chosen.push_back(found);
    }
  } else if (all || settings.smoke) {
    for (const auto& s : scenarios)
      if (all || s.smoke) chosen.push_back(&s);
  } else {
    return usage();
  }

  if (!on_path("redis-server")) {
    std::fprintf(stderr,
                 "redlock_chaos: redis-server is not on PATH (apt-get install redis-server)\n");
    return 2;
  }
  // A fresh namespace starts with `lo` down; `ip` may not be installed.
  if (in_private_netns()) {
    try {
      bring_loopback_up();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "redlock_chaos: cannot bring lo up: %s\n", e.what());
      return 2;
    }
  }
  // --tls: certificates for this run; workers and the CLI (children, by the environment) trust
  // its CA. The nodes keep a plain port for the runner's own checks only.
  std::unique_ptr<redlock::test::TlsFiles> tls_files;
  if (tls) {
    try {
      tls_files = std::make_unique<redlock::test::TlsFiles>();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "redlock_chaos: --tls: %s\n", e.what());
      return 2;
    }
    settings.tls = tls_files.get();
    ::setenv("REDLOCK_TLS_CACERT", tls_files->ca_cert.c_str(), 1);
  }
  // The runner writes to control workers' pipes, which may close; it is not the library's host.
  // Its children get SIGPIPE back at its default (Child does that).
  ::signal(SIGPIPE, SIG_IGN);
  // Orphans of `redlock run`'s commands come to us, so that we can tell whether they live on.
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);

  bool temporary = settings.out_dir.empty();
  if (temporary) {
    char tmpl[] = "/tmp/redlock-chaos-XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) {
      std::perror("mkdtemp");
      return 2;
    }
    settings.out_dir = tmpl;
  }
  std::filesystem::create_directories(settings.out_dir);
  settings.out_dir = std::filesystem::absolute(settings.out_dir).string();

  std::printf("redlock chaos suite: %zu scenario(s)%s; records and logs in %s\n", chosen.size(),
              settings.smoke ? " (smoke lengths)" : "", settings.out_dir.c_str());
  std::printf("%s\n", report_header().c_str());
  std::fflush(stdout);
  std::vector<Outcome> outcomes;
  for (const auto* s : chosen) {
    Outcome o;
    std::string why;
    for (auto t : s->needs) {
      if (!tool_available(t, why)) {
        o.name = s->name;
        o.expect = s->expect;
        o.skipped = true;
        o.skip_reason = why;
        break;
      }
    }
    if (!o.skipped) {
      try {
        Run run(settings, s->name, s->expect);
        try {
          s->body(run);
        } catch (const std::exception& e) {
          run.check(false, std::string("scenario aborted: ") + e.what());
        }
        o = run.finish();
      } catch (const std::exception& e) {
        o.name = s->name;
        o.expect = s->expect;
        o.seen = "error";
        o.problems.push_back(std::string("cannot run: ") + e.what());
      }
    }
    std::printf("%s\n", report_line(o).c_str());
    for (std::size_t i = 0; i < o.problems.size(); ++i) {
      if (i == 6 && o.problems.size() > 7) {
        std::printf("    ... and %zu more problems (see %s/%s/events.log)\n", o.problems.size() - i,
                    settings.out_dir.c_str(), o.name.c_str());
        break;
      }
      std::printf("    problem: %s\n", o.problems[i].c_str());
    }
    std::size_t shown = 0;
    for (const auto& n : o.notes)
      if (shown++ < 4) std::printf("    note: %s\n", n.c_str());
    std::fflush(stdout);
    outcomes.push_back(std::move(o));
  }
  std::printf("%s\n", report_total(outcomes).c_str());

  bool ok = true;
  for (const auto& o : outcomes) ok = ok && (o.skipped || o.pass);
  if (temporary && ok) {
    std::error_code ec;
    std::filesystem::remove_all(settings.out_dir, ec);
  } else {
    std::printf("records and logs: %s\n", settings.out_dir.c_str());
  }
  return ok ? 0 : 1;
}
