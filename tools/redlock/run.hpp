// `redlock run KEY COMMAND...`: the command runs while the lock is held and renewed, in a
// process group of its own that ends when the lock is lost (docs/guide-run.md). `redlock elect`
// runs its command the same way while it leads an office (docs/guide-election.md).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common.hpp"

namespace redlock::cli {

struct RunOptions {
  std::optional<long> wait_ms;  // from `wait` (and kill_after_ms from `kill_after`), in main
  std::optional<std::string> wait;
  std::optional<std::string> kill_after;
  std::optional<int> conflict_exit_code;
  long kill_after_ms = 5000;
  unsigned permits = 0;  // --permits K: a permit of a semaphore of K, like `consul lock -n`
  bool shared = false;   // --shared: a reader of KEY's read-write lock, like `flock -s`
  std::vector<std::string> command;
};

// At start, before anything else: notes the dispositions and mask the command is to get back,
// and ignores SIGPIPE (a closed stdout or stderr must not kill redlock).
void note_startup_signals();

// Options of run after KEY as earlier versions took them, a leading `--`; a usage error for
// any other option there, or for no command. Returns kOk or the exit code.
int take_legacy_run_options(const Globals& g, RunOptions& o);

// Before the client exists (its loop thread inherits the signal mask, and opens descriptors).
void prepare_run();

int do_run(const Globals& g, Client& client, const std::string& key, const RunOptions& o);

// `redlock elect OFFICE VALUE COMMAND...`: the command runs while this process leads the office
// (docs/guide-election.md), as `run` runs it under a lock, with REDLOCK_TERM. Waits without end
// unless --wait.
int do_elect(const Globals& g, Client& client, const std::string& office, const std::string& value,
             const RunOptions& o);

}  // namespace redlock::cli
