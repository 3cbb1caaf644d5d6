#include "lock_verbs.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <vector>

#include "redlock/election.hpp"
#include "show.hpp"

namespace redlock::cli {

int do_acquire(const Globals& g, redlock::Client& client, const std::string& key,
               std::optional<Milliseconds> wait, bool fencing, bool shared) {
  if (g_stdout_was_closed) {
    // Nothing acquired: the token would go nowhere, and the lock would stay taken for its ttl.
    say("redlock: stdout is closed: the token could not be delivered; '" + key + "' not acquired");
    return kUsage;
  }
  redlock::AcquireRequest req;
  req.resources = {key};
  req.ttl = client.config().ttl;
  req.fencing = fencing;
  req.shared = shared;
  req.wait = wait;
  auto r = client.acquire(req);
  if (!r) return fail(r, "not acquired '" + key + "'");
  // The token alone; with --fencing, the token and the fencing token on one line:
  //   read -r token fencing < <(redlock acquire --fencing KEY)
  std::string line = r.lock.token;
  if (fencing) line += ' ' + std::to_string(r.lock.fencing_token);
  if (!write_stdout(line + '\n')) {
    // Nobody got the token (a closed pipe, a full disk): give the lock back rather than leave
    // it held.
    const int error = errno;
    auto rel = client.release(r.lock);
    say("redlock: cannot write the token to stdout (" + std::string(std::strerror(error)) + "); " +
        (rel ? "released '" + key + "'"
             : "'" + key + "' not released (" + rel.message() + "): it expires with its ttl"));
    return kUsage;
  }
  diag(g, std::string(shared ? "acquired a reader's share of '" : "acquired '") + key + "' (key " +
              client.key_of(key) + ") for " + std::to_string(r.lock.ttl.count()) +
              " ms, valid for " + std::to_string(r.lock.validity_left().count()) + " ms after " +
              std::to_string(r.attempts) + " attempt(s); votes " + r.votes.to_string());
  return kOk;
}

// What a quorum of nodes now guarantees: renew.lua raises a key's ttl to the new lease but
// never shortens it, so the keys may live longer than --ttl. Read back (show.hpp) and
// reported as the quorum-th longest ttl of the keys that hold our token, less the drift
// allowance; when fewer than a quorum can be read, the library's own lower bound, said to be one.
int do_extend(const Globals& g, redlock::Client& client, const std::string& key,
              const std::string& token, int permit, bool shared) {
  redlock::Lock lock(key, token);
  lock.permit = permit;
  lock.shared = shared;
  const auto ttl = client.config().ttl;
  const auto start = redlock::Clock::now();
  auto r = client.extend(lock, ttl);
  if (!r) return fail(r, "not extended '" + key + "'");
  if (g.quiet) return kOk;
  if (permit >= 0 || shared) {  // the read-back below reads the lock key's holder alone
    diag(g, (shared ? std::string("extended a reader's share")
                    : "extended permit " + std::to_string(permit)) +
                " of '" + key + "': valid for at least " +
                std::to_string(r.valid_until > redlock::Clock::now()
                                   ? std::chrono::duration_cast<Milliseconds>(r.valid_until -
                                                                              redlock::Clock::now())
                                         .count()
                                   : 0) +
                " ms; votes " + r.votes.to_string());
    return kOk;
  }
  const auto& config = client.config();
  // Only the nodes that extended it: one that did not answer could hold up the read-back for
  // a connect timeout, and holds nothing of ours that counts.
  std::vector<bool> extended;
  for (const auto& v : r.votes.nodes) extended.push_back(v.vote == redlock::Vote::yes);
  const auto views = read_lock(config, client.key_of(key), &extended);
  const std::string ours = holder_name(token);
  std::vector<long long> ttls;
  for (const auto& v : views)
    if (v.read && v.type == "string" && v.holder == ours && v.ttl_ms >= 0) ttls.push_back(v.ttl_ms);
  std::sort(ttls.rbegin(), ttls.rend());
  const std::size_t quorum = config.nodes.size() / 2 + 1;
  std::string said;
  if (ttls.size() >= quorum) {
    auto elapsed = std::chrono::duration_cast<Milliseconds>(redlock::Clock::now() - start).count();
    long long kept = ttls[quorum - 1];
    auto drift = static_cast<long long>(static_cast<double>(kept) * config.drift_factor) + 2;
    long long valid = std::max<long long>(0, kept - drift - elapsed);
    said = "a quorum holds it for " + std::to_string(kept) + " ms more, valid for " +
           std::to_string(valid) + " ms";
    if (kept > ttl.count() + 50)
      said += " (--ttl " + std::to_string(ttl.count()) +
              " ms asked for less: a node never shortens a lease, it kept the longer one)";
  } else {
    said = "valid for at least " + std::to_string(lock.validity_left().count()) +
           " ms (a node never shortens a lease: it may hold it longer)";
  }
  diag(g, "extended '" + key + "': " + said + "; votes " + r.votes.to_string());
  return kOk;
}

int do_release(const Globals& g, redlock::Client& client, const std::string& key,
               const std::string& token, int permit, bool shared) {
  redlock::Lock lock(key, token);
  lock.permit = permit;
  lock.shared = shared;
  auto r = client.release(lock);
  if (!r) return fail(r, "not released '" + key + "'");
  diag(g, "released '" + key + "': " + release_summary(r) + "; votes " + r.votes.to_string());
  return kOk;
}

std::string release_summary(const redlock::ReleaseResult& r) {
  const auto& v = r.votes;
  const std::size_t n = v.nodes.size();
  std::string s = "deleted on " + std::to_string(r.released) + " of " + std::to_string(n) +
                  " node(s), quorum " + std::to_string(v.quorum) +
                  (r.released >= v.quorum ? " confirmed" : " not confirmed");
  // The verdict comes at the quorum: a node that had not answered by then may still run the
  // release, or never get it (a process that exits does not wait), and nothing here knows which.
  if (std::size_t pending = v.count(redlock::Vote::pending); pending > 0)
    s += "; " + std::to_string(pending) +
         " still pending (not confirmed; a key left there expires with its ttl)";
  if (std::size_t gone = v.no(); gone > 0) s += "; " + std::to_string(gone) + " held it no more";
  if (std::size_t failed = v.failed(); failed > 0) s += "; " + std::to_string(failed) + " failed";
  return s;
}

int do_leader(const Globals& g, Client& client, const std::string& office) {
  redlock::Election election(client);
  auto r = election.leader(office);
  if (!r) return fail(r, "cannot read the leader of '" + office + "'");
  if (!r.leader) {
    diag(g, "'" + office + "' is vacant; votes " + r.votes.to_string());
    return kNotHeld;
  }
  if (!write_stdout(std::to_string(r.leader->term) + " " + printable(r.leader->value) + "\n")) {
    say("redlock: cannot write the leader to stdout");
    return kUsage;
  }
  return kOk;
}

}  // namespace redlock::cli
