// The verbs on a lock held by token: acquire (prints the token), extend, release; and leader,
// which prints an office's leader.
#pragma once

#include <optional>
#include <string>

#include "common.hpp"

namespace redlock::cli {

// `shared`: a reader's share of the read-write lock of `key` (--shared, REDLOCK_SHARED).
int do_acquire(const Globals& g, Client& client, const std::string& key,
               std::optional<Milliseconds> wait, bool fencing, bool shared = false);
// `permit`: the slot of a permit of a semaphore (--permit, REDLOCK_PERMIT), -1 for a mutex.
int do_extend(const Globals& g, Client& client, const std::string& key, const std::string& token,
              int permit = -1, bool shared = false);
int do_release(const Globals& g, Client& client, const std::string& key, const std::string& token,
               int permit = -1, bool shared = false);

// `redlock leader OFFICE`: prints "TERM VALUE" (the value escaped as printable() does) on stdout
// and exits 0 while a quorum reports a leader; exits 1 when the office is vacant, 3 when no
// quorum answered.
int do_leader(const Globals& g, Client& client, const std::string& office);

// What a release's quorum confirmed and what was still pending when it was decided, e.g.
// "deleted on 2 of 3 node(s), quorum 2 confirmed; 1 still pending (not confirmed; ...)".
std::string release_summary(const ReleaseResult& r);

}  // namespace redlock::cli
