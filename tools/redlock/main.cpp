// redlock: the command-line face of redlock-cpp, for shell scripts and operators. This file
// reads the command line and hands each verb to its file: lock_verbs (acquire, extend,
// release, leader), run (run, elect), status, show, list, break (admin_verbs). Exit codes:
// common.hpp. Only the token (acquire), the leader, the status table and show's view go to
// stdout; every diagnostic goes to stderr.
#include <fcntl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>

#include <cerrno>
#include <iostream>
#include <optional>
#include <string>

#include "admin_verbs.hpp"
#include "common.hpp"
#include "lock_verbs.hpp"
#include "metrics_file.hpp"
#include "run.hpp"
#include "show.hpp"
#include "status.hpp"

using namespace redlock::cli;  // NOLINT: this file is the tool's entry point
using redlock::Milliseconds;

int main(int argc, char** argv) {
  // A closed stdout or stderr (`redlock … | head -1`) makes our writes fail with EPIPE instead
  // of killing redlock, which must outlive its output to stop and release what it holds.
  note_startup_signals();
  // A closed stdin, stdout or stderr gets /dev/null, so that no socket or pipe of ours takes
  // its number and receives what is meant for the terminal. A closed stdout is remembered:
  // `acquire` must not hand its token to /dev/null.
  for (int fd = 0; fd <= 2; ++fd)
    if (::fcntl(fd, F_GETFD) < 0 && errno == EBADF) {
      if (fd == STDOUT_FILENO) g_stdout_was_closed = true;
      ::open("/dev/null", O_RDWR);
    }

  CLI::App app{"redlock: a distributed lock over N independent Redis masters (Redlock)"};
  app.fallthrough();  // global options are accepted after the verb as well
  app.require_subcommand(1);
  app.set_version_flag("-V,--version", std::string("redlock ") + REDLOCK_CLI_VERSION);
  app.footer(
      "Durations: 500ms, 30s, 1.5s, 2m, 1m30s, 1h; a plain number is milliseconds.\nExit codes: 0 "
      "ok, 1 not acquired / not held, 2 usage, configuration or "
      "stdout error, 3 no quorum, 4 run: lock lost, 5 status: a node cannot vote.\n");
  Globals g;
  app.add_option("--nodes", g.nodes, "redis[s]://[user:password@]host:port[/db],...")
      ->envname("REDLOCK_NODES");
  app.add_option("--ttl", g.ttl,
                 "lease: acquire and extend 10s by default; run 30s by default, renewed every "
                 "third of it")
      ->envname("REDLOCK_TTL");
  app.add_option("--restart-guard", g.restart_guard,
                 "nodes up for less than this (or the ttl, if larger) do not vote (default 0: off)")
      ->envname("REDLOCK_RESTART_GUARD");
  app.add_option("--prefix", g.prefix, "key prefix (default 'redlock:')")
      ->envname("REDLOCK_PREFIX");
  app.add_option("--connect-timeout", g.connect_timeout, "per node (default 1s)");
  app.add_option("--request-timeout", g.request_timeout, "per request (default 200ms)");
  app.add_option("--retry-count", g.retry_count,
                 "acquire without --wait: 1 + this many attempts; with a wait (run), this many "
                 "attempts in a row without a quorum end it (default 3)");
  app.add_option("--retry-delay", g.retry_delay, "between attempts (default 200ms)");
  app.add_option("--retry-jitter", g.retry_jitter, "random extra delay, up to (default 100ms)");
  app.add_option("--drift-factor", g.drift_factor, "clock drift allowance (default 0.01)");
  app.add_flag("-q,--quiet", g.quiet, "no diagnostics on stderr, except errors");
  app.add_flag("--no-persistence-warning", g.no_persistence_warning,
               "do not warn about nodes whose persistence can forget a lock (AOF off, "
               "appendfsync not always)")
      ->envname("REDLOCK_NO_PERSISTENCE_WARNING");
  // TLS, as in `redis-cli --tls`; each also from an environment variable.
  app.add_flag("--tls", g.tls, "TLS to every node, as if each were rediss://")
      ->envname("REDLOCK_TLS");
  app.add_option("--cacert", g.tls_options.ca_file, "trusted CA certificates (PEM file)")
      ->envname("REDLOCK_TLS_CACERT");
  app.add_option("--cacertdir", g.tls_options.ca_dir, "directory of trusted CA certificates")
      ->envname("REDLOCK_TLS_CACERTDIR");
  app.add_option("--cert", g.tls_options.cert_file, "client certificate (PEM), with --key")
      ->envname("REDLOCK_TLS_CERT");
  app.add_option("--key", g.tls_options.key_file, "client private key (PEM), with --cert")
      ->envname("REDLOCK_TLS_KEY");
  app.add_option("--sni", g.tls_options.server_name,
                 "server name to send and to check the certificate against (default: the host)")
      ->envname("REDLOCK_TLS_SNI");
  app.add_flag("--insecure", g.tls_options.insecure_skip_verify,
               "DANGER: do not verify the servers' certificates (anyone can impersonate them)")
      ->envname("REDLOCK_TLS_INSECURE");

  std::string key, token;
  std::optional<std::string> wait;
  auto* acquire = app.add_subcommand(
      "acquire", "acquire KEY for --ttl (default 10s); prints the token on stdout");
  acquire->add_option("KEY", key, "resource name")->required();
  acquire->add_option("-w,--wait", wait,
                      "keep trying this long (0: one attempt; default: 1 + --retry-count "
                      "attempts, 4 by default)");
  bool fencing = false;
  acquire->add_flag("--fencing", fencing,
                    "also print the grant's fencing token, after the token on the same line");
  auto* extend =
      app.add_subcommand("extend",
                         "extend KEY held with TOKEN to a lease of --ttl from now (default 10s); a "
                         "longer lease the nodes hold is kept, never shortened");
  extend->add_option("KEY", key, "resource name")->required();
  extend->add_option("TOKEN", token, "token printed by acquire")->required();
  auto* release = app.add_subcommand("release", "release KEY held with TOKEN");
  release->add_option("KEY", key, "resource name")->required();
  release->add_option("TOKEN", token, "token printed by acquire")->required();
  // A reader of a read-write lock (run --shared gives its command REDLOCK_SHARED=1).
  bool shared = false;
  acquire->add_flag("--shared", shared,
                    "a reader's share of KEY's read-write lock (readers share, a writer excludes "
                    "them)");
  for (auto* verb : {extend, release})
    verb->add_flag("--shared", shared,
                   "the token holds a reader's share of KEY (acquire --shared, run --shared)")
        ->envname("REDLOCK_SHARED");
  // A permit of a semaphore (run --permits K gives its command REDLOCK_PERMIT with the token).
  int permit = -1;
  for (auto* verb : {extend, release})
    verb->add_option("--permit", permit,
                     "the token holds this permit (slot) of KEY, a semaphore (run --permits)")
        ->envname("REDLOCK_PERMIT")
        ->check(CLI::Range(0, static_cast<int>(redlock::AcquireRequest::max_permits) - 1));
  auto* status = app.add_subcommand(
      "status",
      "per node: can it vote, round trip, version; exit 3 when fewer than a quorum vote, 5 "
      "when any node cannot vote (refused, down)");
  StatusOptions status_options;
  status->add_flag("--json", status_options.json, "one JSON object on stdout");
  status->add_flag("--strict", status_options.strict,
                   "exit 5 also when a node's persistence can forget a lock");
  status->add_flag("--allow-down", status_options.allow_down,
                   "exit 0 while a quorum votes although a node is down (unreachable); a refused "
                   "node still fails");
  auto* show = app.add_subcommand(
      "show",
      "each node's view of KEY: holder (by name, never the token), ttl, waiters, turn, "
      "fence");
  show->add_option("KEY", key, "resource name")->required();
  bool show_json = false;
  show->add_flag("--json", show_json, "one JSON object on stdout");
  ListOptions list_options;
  auto* list = app.add_subcommand(
      "list", "the locks held under the prefix: holder (by name, never the token), nodes, ttl");
  list->add_option("PATTERN", list_options.pattern,
                   "glob over resource names (default *: every lock under the prefix)");
  list->add_option("--limit", list_options.limit, "list at most this many locks (default 1000)")
      ->check(CLI::PositiveNumber);
  list->add_flag("--json", list_options.json, "one JSON object on stdout");
  BreakOptions break_options;
  auto* brk = app.add_subcommand(
      "break",
      "DANGER: an administrator's release of KEY without its token, for a holder that is gone "
      "for good; its holder, if alive, keeps running beside the next one. Needs --force");
  brk->add_option("KEY", key, "resource name")->required();
  brk->add_flag("--force", break_options.force, "yes, break it (refused without)");
  brk->add_option("--holder", break_options.holder,
                  "only if this holder (its name, as show and list print it) still holds it");

  RunOptions run_options;
  auto* run = app.add_subcommand(
      "run",
      "run COMMAND while holding KEY, like flock(1): lease --ttl (default 30s here), "
      "renewed every third of it. Everything after KEY is the command, with or without "
      "--; options of run go before KEY");
  run->positionals_at_end();  // after KEY, everything is the command's
  run->add_option("-w,--wait", run_options.wait,
                  "wait this long for the lock (default 0: one attempt)");
  run->add_option("-E,--conflict-exit-code", run_options.conflict_exit_code,
                  "exit code when the lock is held by another (default 1)");
  run->add_option("--permits", run_options.permits,
                  "hold one of K permits of KEY instead of KEY alone: at most K commands run at "
                  "once (a semaphore, like consul lock -n); every run of KEY gives the same K")
      ->check(CLI::Range(1u, redlock::AcquireRequest::max_permits));
  run->add_flag("--shared", run_options.shared,
                "hold a reader's share of KEY's read-write lock instead of KEY alone (like "
                "flock -s): readers run together, a run without --shared (a writer) runs alone; "
                "a waiting writer holds new readers back");
  run->add_option("--kill-after", run_options.kill_after,
                  "SIGKILL the command's process group this long after SIGTERM (default 5s)");
  std::optional<std::string> metrics_file;
  run->add_option("--metrics-file", metrics_file,
                  "write the run's metrics to this file, for node_exporter's textfile "
                  "collector (rewritten whole on each event)")
      ->envname("REDLOCK_METRICS_FILE");
  std::optional<std::string> shell_command;
  run->add_option("-c,--command", shell_command,
                  "run this command line through /bin/sh -c (like flock -c), instead of "
                  "COMMAND...");
  run->add_option("KEY", key, "resource name")->required();
  run->add_option("COMMAND", run_options.command, "the command and its arguments");

  // Leader election (docs/guide-election.md): elect runs a command while it leads, like
  // `etcdctl elect`; leader prints who leads.
  RunOptions elect_options;
  std::string value;
  auto* elect = app.add_subcommand(
      "elect",
      "campaign for OFFICE with VALUE (e.g. this host's address), waiting without end (or "
      "--wait), then run COMMAND while leading, as run does: lease --ttl (default 30s), renewed; "
      "the command gets REDLOCK_TERM, the term, a fencing token; exit 4 if the office is lost");
  elect->positionals_at_end();
  elect->add_option("-w,--wait", elect_options.wait,
                    "campaign this long (default: without end, until elected or a signal)");
  elect->add_option("-E,--conflict-exit-code", elect_options.conflict_exit_code,
                    "exit code when not elected within --wait (default 1)");
  elect->add_option("--kill-after", elect_options.kill_after,
                    "SIGKILL the command's process group this long after SIGTERM (default 5s)");
  std::optional<std::string> elect_shell;
  elect->add_option("-c,--command", elect_shell,
                    "run this command line through /bin/sh -c, instead of COMMAND...");
  elect->add_option("OFFICE", key, "office name (a resource name)")->required();
  elect->add_option("VALUE", value, "what observers learn of the leader")->required();
  elect->add_option("COMMAND", elect_options.command, "the command and its arguments");
  auto* leader = app.add_subcommand(
      "leader",
      "print OFFICE's leader as 'TERM VALUE' on stdout, as a quorum of nodes reports it; exit 1 "
      "when vacant");
  leader->add_option("OFFICE", key, "office name")->required();

  for (auto* option :
       {app.get_option("--ttl"), app.get_option("--restart-guard"),
        app.get_option("--connect-timeout"), app.get_option("--request-timeout"),
        app.get_option("--retry-delay"), app.get_option("--retry-jitter"),
        acquire->get_option("--wait"), run->get_option("--wait"), run->get_option("--kill-after"),
        elect->get_option("--wait"), elect->get_option("--kill-after")})
    option->type_name("DURATION");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // A word where the verb should be that is none: name it, rather than "a subcommand is
    // required".
    if (app.get_subcommands().empty()) {
      for (const auto& word : app.remaining()) {
        if (word.empty() || word[0] == '-') continue;
        say("redlock: unknown verb '" + word +
            "' (verbs: acquire, extend, release, status, show, list, break, run, elect, leader; "
            "see --help)");
        return kUsage;
      }
    }
    app.exit(e);
    return kUsage;
  }
  if (run->parsed()) {
    if (shell_command) {
      // Like flock -c: the line goes to the shell, and nothing may follow KEY.
      if (!run_options.command.empty()) {
        say("redlock: run: -c takes the whole command line; nothing may follow KEY (got '" +
            run_options.command.front() + "')");
        return kUsage;
      }
      run_options.command = {"/bin/sh", "-c", *shell_command};
    }
    if (int code = take_legacy_run_options(g, run_options); code != kOk) return code;
    if (run_options.shared && run_options.permits > 0) {
      say("redlock: run: --shared and --permits cannot be given together: a read-write lock's "
          "readers are not permits of a semaphore (docs/guide-rwlock.md)");
      return kUsage;
    }
  }
  if ((extend->parsed() || release->parsed()) && shared && permit >= 0) {
    say("redlock: --shared and --permit cannot be given together: a token holds a reader's share "
        "of a read-write lock or a permit of a semaphore, not both");
    return kUsage;
  }
  if (elect->parsed()) {
    if (elect_shell) {
      if (!elect_options.command.empty()) {
        say("redlock: elect: -c takes the whole command line; nothing may follow VALUE (got '" +
            elect_options.command.front() + "')");
        return kUsage;
      }
      elect_options.command = {"/bin/sh", "-c", *elect_shell};
    }
    auto& cmd = elect_options.command;
    if (!cmd.empty() && cmd.front() == "--") cmd.erase(cmd.begin());
    if (cmd.empty()) {
      say("redlock: elect: no command given (redlock elect OFFICE VALUE -- COMMAND...)");
      return kUsage;
    }
  }

  try {
    std::optional<Milliseconds> acquire_wait = duration_of("--wait", wait);
    if (run->parsed()) {
      run_options.wait_ms =
          duration_of("--wait", run_options.wait).value_or(Milliseconds(0)).count();
      if (auto d = duration_of("--kill-after", run_options.kill_after)) {
        if (d->count() < 0) usage_error("--kill-after: must not be negative");
        if (*d > redlock::longest_duration)
          usage_error("--kill-after: above the longest duration (2^40 ms, about 34.8 years)");
        run_options.kill_after_ms = d->count();
      }
      prepare_run();
    }
    if (elect->parsed()) {
      if (auto d = duration_of("--wait", elect_options.wait)) {
        if (d->count() < 0) usage_error("--wait: must not be negative");
        elect_options.wait_ms = d->count();
      }
      if (auto d = duration_of("--kill-after", elect_options.kill_after)) {
        if (d->count() < 0) usage_error("--kill-after: must not be negative");
        if (*d > redlock::longest_duration)
          usage_error("--kill-after: above the longest duration (2^40 ms, about 34.8 years)");
        elect_options.kill_after_ms = d->count();
      }
      prepare_run();
    }
    g.warnings_in_table = status->parsed();
    auto config = make_config(g);
    if (show->parsed() || list->parsed()) {
      std::string message;
      if (redlock::validate(config, message)) usage_error(message);
      return show->parsed() ? do_show(g, config, key, show_json) : do_list(g, config, list_options);
    }
    if (run->parsed() && metrics_file)
      config.observer = std::make_shared<TextfileObserver>(*metrics_file, key);
    redlock::Client client(config);
    if (run->parsed()) return do_run(g, client, key, run_options);
    if (elect->parsed()) return do_elect(g, client, key, value, elect_options);
    if (leader->parsed()) return do_leader(g, client, key);
    if (acquire->parsed()) return do_acquire(g, client, key, acquire_wait, fencing, shared);
    if (extend->parsed()) return do_extend(g, client, key, token, permit, shared);
    if (release->parsed()) return do_release(g, client, key, token, permit, shared);
    if (status->parsed()) return do_status(g, client, status_options);
    if (brk->parsed()) return do_break(g, client, key, break_options);
  } catch (const redlock::Error& e) {
    say(std::string("redlock: ") + e.what());
    return kUsage;
  } catch (const std::exception& e) {
    say(std::string("redlock: ") + e.what());
    return kNoQuorum;
  }
  return kUsage;
}
