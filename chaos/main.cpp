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
// Against a deployment the runner did not start (docs/chaos.md, "Your own deployment"):
//   redlock_chaos --driver PROGRAM [--nodes LIST] [--driver-timeout MS] [--smoke|--all|NAME...]
// PROGRAM is run as `PROGRAM VERB INDEX` for every fault (driver.hpp); LIST, five nodes, is
// REDLOCK_NODES when not given. Only the scenarios marked "deploy" in --list run there.
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
               "                     [--worker PATH] [--redlock PATH] [-v]\n"
               "                     [--driver PROGRAM [--nodes LIST] [--driver-timeout MS]]\n");
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

// The driver as an absolute path: a name without a slash is looked up on PATH, as a shell
// would; the runner execs it without one.
std::string resolve_program(const std::string& program) {
  namespace fs = std::filesystem;
  if (program.find('/') != std::string::npos) return fs::absolute(program).string();
  const char* path = std::getenv("PATH");
  std::string p = path ? path : "";
  std::size_t pos = 0;
  while (pos <= p.size()) {
    auto colon = p.find(':', pos);
    auto dir = p.substr(pos, colon == std::string::npos ? std::string::npos : colon - pos);
    if (!dir.empty() && ::access((dir + "/" + program).c_str(), X_OK) == 0)
      return fs::absolute(dir + "/" + program).string();
    if (colon == std::string::npos) break;
    pos = colon + 1;
  }
  return program;
}

}  // namespace

int main(int argc, char** argv) {
  Settings settings;
  settings.worker_path = REDLOCK_CHAOS_WORKER_PATH;
  settings.redlock_path = REDLOCK_CLI_PATH;
  bool list = false, all = false, tls = false;
  std::vector<std::string> names;
  std::string nodes;
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
    else if (a == "--driver")
      settings.driver = value();
    else if (a == "--nodes")
      nodes = value();
    else if (a == "--driver-timeout") {
      char* end = nullptr;
      auto v = value();
      long ms = std::strtol(v.c_str(), &end, 10);
      if (end == v.c_str() || *end != '\0' || ms <= 0) return usage();
      settings.driver_timeout = Ms(ms);
    } else if (a == "-v" || a == "--verbose")
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
      std::printf("%-28s %-11s %-5s %-6s %s%s\n", s.name.c_str(), to_string(s.expect),
                  s.smoke ? "smoke" : "", s.deployment ? "deploy" : "", s.what.c_str(),
                  needs.empty() ? "" : (" [needs " + needs + "]").c_str());
    }
    return 0;
  }

  // A deployment: only with a driver, which says how to fault it. Never REDLOCK_NODES alone:
  // a variable set for everyday use must not turn a test run into one that kills those nodes.
  if (!nodes.empty() && !settings.on_deployment()) {
    std::fprintf(stderr,
                 "redlock_chaos: --nodes needs --driver (how to kill, pause, resume and "
                 "restart those nodes)\n");
    return 2;
  }
  if (settings.on_deployment()) {
    if (tls) {
      std::fprintf(stderr,
                   "redlock_chaos: --tls starts nodes of its own; a deployment's node "
                   "list says rediss:// itself\n");
      return 2;
    }
    if (nodes.empty()) {
      const char* env = std::getenv("REDLOCK_NODES");
      nodes = env ? env : "";
    }
    std::string message;
    if (nodes.empty()) {
      std::fprintf(stderr, "redlock_chaos: --driver needs the nodes (--nodes or REDLOCK_NODES)\n");
      return 2;
    }
    if (redlock::parse_node_list(nodes, settings.deployment, message)) {
      std::fprintf(stderr, "redlock_chaos: --nodes: %s\n", message.c_str());
      return 2;
    }
    if (settings.deployment.size() != 5) {
      std::fprintf(stderr,
                   "redlock_chaos: the scenarios fault nodes 0-4 of five; --nodes has %zu\n",
                   settings.deployment.size());
      return 2;
    }
    for (std::size_t pos = 0; pos <= nodes.size();) {
      auto comma = nodes.find(',', pos);
      if (comma == std::string::npos) comma = nodes.size();
      std::string url = nodes.substr(pos, comma - pos);
      while (!url.empty() && url.front() == ' ') url.erase(0, 1);
      while (!url.empty() && url.back() == ' ') url.pop_back();
      if (!url.empty()) settings.deployment_urls.push_back(url);
      pos = comma + 1;
    }
    if (settings.deployment_urls.size() != settings.deployment.size()) {
      std::fprintf(stderr, "redlock_chaos: --nodes: cannot split the list\n");
      return 2;
    }
    settings.driver = resolve_program(settings.driver);
    if (::access(settings.driver.c_str(), X_OK) != 0) {
      std::fprintf(stderr, "redlock_chaos: --driver %s: not an executable\n",
                   settings.driver.c_str());
      return 2;
    }
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
      if (settings.on_deployment() && !found->deployment) {
        std::fprintf(stderr,
                     "redlock_chaos: '%s' needs nodes of its own; it cannot run on a deployment "
                     "(--list marks those that can: deploy)\n",
                     n.c_str());
        return 2;
      }
      chosen.push_back(found);
    }
  } else if (all || settings.smoke) {
    for (const auto& s : scenarios)
      if ((all || s.smoke) && (s.deployment || !settings.on_deployment())) chosen.push_back(&s);
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
  if (settings.on_deployment()) {
    std::printf("against a deployment: these nodes will be killed, paused and restarted by %s\n",
                settings.driver.c_str());
    for (std::size_t i = 0; i < settings.deployment.size(); ++i)
      std::printf("  node %zu: %s\n", i, settings.deployment[i].to_string().c_str());
  }
  std::printf("%s\n", report_header().c_str());
  std::fflush(stdout);
  std::vector<Outcome> outcomes;
  for (const auto* s : chosen) {
    Outcome o;
    std::string why;
    for (auto t : s->needs) {
      if (!tool_available(t, settings, why)) {
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
