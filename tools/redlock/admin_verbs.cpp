#include "admin_verbs.hpp"

#include <syslog.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <vector>

#include "core/keys.hpp"
#include "core/token.hpp"
#include "lock_verbs.hpp"
#include "node_connection.hpp"
#include "show.hpp"

namespace redlock::cli {
namespace {

// `text` as a glob that matches itself only: SCAN's MATCH treats * ? [ ] \ as special.
std::string glob_literal(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

bool all_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// One lock key as one node holds it.
struct Held {
  std::string holder;  // holder_name() of the value
  long long ttl_ms = -2;
};

// SCAN calls per node at most (each with COUNT 1000): a keyspace of millions is cut, not read.
constexpr int kMaxScans = 2000;

}  // namespace

int do_list(const Globals& g, const Config& config, const ListOptions& o) {
  (void)g;
  const std::string& prefix = config.key_prefix;
  const std::string match = glob_literal(prefix) + o.pattern;
  const std::size_t n = config.nodes.size(), quorum = n / 2 + 1;
  // key -> one entry per node that holds it
  std::map<std::string, std::vector<std::pair<std::size_t, Held>>> locks;
  std::vector<std::string> errors(n);
  std::size_t read = 0;
  bool cut = false;
  for (std::size_t i = 0; i < n; ++i) {
    try {
      NodeConnection conn(config.nodes[i], config.tls, config.connect_timeout,
                          std::max(config.request_timeout, Milliseconds(1000)));
      std::string cursor = "0";
      int scans = 0;
      do {
        if (++scans > kMaxScans) {
          cut = true;
          break;
        }
        auto r = must(conn, {"SCAN", cursor, "MATCH", match, "COUNT", "1000"});
        if (r->type != REDIS_REPLY_ARRAY || r->elements != 2)
          throw std::runtime_error("SCAN answered with something other than [cursor, keys]");
        cursor = reply_text(r->element[0]);
        const redisReply* keys = r->element[1];
        for (std::size_t k = 0; keys != nullptr && k < keys->elements; ++k) {
          std::string key = reply_text(keys->element[k]);
          // Auxiliary keys (the line, turns, sign-ups, fence: keys.hpp) are not locks.
          if (!redlock::detail::usable_name(key)) continue;
          if (locks.count(key) == 0 && locks.size() >= o.limit) {
            cut = true;
            continue;
          }
          if (reply_text(must(conn, {"TYPE", key}).get()) != "string") continue;
          std::string value = reply_text(must(conn, {"GET", key}).get());
          if (all_digits(value)) continue;  // a fence counter of older scripts ("<key>:fence")
          Held h;
          // A read-write lock's readers' marker (docs/guide-rwlock.md) is no holder's token.
          h.holder = value == kReadersMarker ? std::string("(readers)") : holder_name(value);
          h.ttl_ms = must(conn, {"PTTL", key})->integer;
          locks[key].emplace_back(i, h);
        }
      } while (cursor != "0");
      ++read;
    } catch (const std::exception& e) {
      errors[i] = e.what();
    }
  }

  std::size_t on_quorum = 0;
  std::string out;
  if (o.json) {
    out = "{\"prefix\":" + json_string(prefix) + ",\"quorum\":" + std::to_string(quorum) +
          ",\"nodes\":" + std::to_string(n) + ",\"nodes_read\":" + std::to_string(read) +
          ",\"truncated\":" + (cut ? "true" : "false") + ",\"errors\":[";
    bool first = true;
    for (std::size_t i = 0; i < n; ++i) {
      if (errors[i].empty()) continue;
      out += std::string(first ? "" : ",") +
             "{\"node\":" + json_string(config.nodes[i].to_string()) +
             ",\"error\":" + json_string(errors[i]) + "}";
      first = false;
    }
    out += "],\"locks\":[";
  } else {
    char line[256];
    std::snprintf(line, sizeof line, "%-32s %-16s %5s %12s\n", "RESOURCE", "HOLDER", "NODES",
                  "TTL");
    out += line;
  }
  bool first = true;
  for (const auto& [key, entries] : locks) {
    std::map<std::string, std::size_t> by_holder;
    for (const auto& [node, h] : entries) ++by_holder[h.holder];
    std::string majority;
    for (const auto& [name, count] : by_holder)
      if (count >= quorum) majority = name;
    // The quorum-th longest ttl among the majority holder's keys: what a quorum still holds.
    std::vector<long long> ttls;
    for (const auto& [node, h] : entries)
      if (!majority.empty() && h.holder == majority) ttls.push_back(h.ttl_ms);
    std::sort(ttls.rbegin(), ttls.rend());
    long long ttl = ttls.size() >= quorum ? ttls[quorum - 1] : -2;
    if (!majority.empty()) ++on_quorum;
    const std::string resource = key.substr(prefix.size());
    if (o.json) {
      out += std::string(first ? "" : ",") + "{\"resource\":" + json_string(resource) +
             ",\"key\":" + json_string(key) +
             ",\"holder\":" + (majority.empty() ? std::string("null") : json_string(majority)) +
             ",\"nodes_holding\":" + std::to_string(entries.size()) +
             ",\"holders\":" + std::to_string(by_holder.size()) +
             ",\"ttl_ms\":" + (ttl >= -1 ? std::to_string(ttl) : std::string("null")) + "}";
      first = false;
    } else {
      char line[512];
      std::string holder =
          majority.empty() ? (by_holder.size() > 1 ? "(split)" : "(minority)") : majority;
      std::string ttl_text = ttl == -1 ? "no ttl" : ttl < 0 ? "-" : std::to_string(ttl) + " ms";
      std::snprintf(line, sizeof line, "%-32s %-16s %2zu/%-2zu %12s\n", printable(resource).c_str(),
                    holder.c_str(), entries.size(), n, ttl_text.c_str());
      out += line;
    }
  }
  if (o.json) {
    out += "]}\n";
  } else {
    for (std::size_t i = 0; i < n; ++i)
      if (!errors[i].empty())
        out += "node " + printable(config.nodes[i].to_string()) +
               " not read: " + printable(errors[i]) + "\n";
    out += std::to_string(on_quorum) + " lock(s) held on a quorum (" + std::to_string(quorum) +
           " of " + std::to_string(n) + "), " + std::to_string(locks.size() - on_quorum) +
           " key(s) on fewer nodes; " + std::to_string(read) + " of " + std::to_string(n) +
           " nodes read";
    if (cut) out += "; the list was cut at " + std::to_string(o.limit) + " (--limit)";
    out += "\n";
  }
  if (!write_stdout(out)) {
    say("redlock: cannot write to stdout");
    return kUsage;
  }
  return read >= quorum ? kOk : kNoQuorum;
}

int do_break(const Globals& g, Client& client, const std::string& key, const BreakOptions& o) {
  if (!o.force) {
    say("redlock: break: refused without --force. Breaking '" + key +
        "' frees it while its holder may still be working: the next holder then overlaps it. "
        "Use it only for a holder that is gone for good, and only where writes are fenced "
        "(docs/configuration-and-cli.md, \"break\")");
    return kUsage;
  }
  const auto& config = client.config();
  const std::size_t n = config.nodes.size(), quorum = n / 2 + 1;
  const std::string lock_key = client.key_of(key);
  std::size_t read = 0;
  // The holders' tokens as the nodes hold them, in their unmarked form, with their names. Read
  // here and handed to the library's release, never shown: each key goes only if it still holds
  // that token (a new holder's lock, taken meanwhile, is not touched).
  std::map<std::string, std::string> tokens;  // token -> name
  for (std::size_t i = 0; i < n; ++i) {
    try {
      NodeConnection conn(config.nodes[i], config.tls, config.connect_timeout,
                          std::max(config.request_timeout, Milliseconds(1000)));
      const std::string type = reply_text(must(conn, {"TYPE", lock_key}).get());
      ++read;
      if (type != "string") continue;
      std::string value = reply_text(must(conn, {"GET", lock_key}).get());
      // A waiter's turn holds the key for a turn at most: nobody's lock, nothing to break.
      if (redlock::detail::is_turn_value(value)) continue;
      // The readers' marker of a read-write lock: breaking it would let a writer in beside
      // readers that still run. Readers are not broken: each ends with its lease.
      if (value == kReadersMarker) {
        diag(g, "break '" + key + "': node " + config.nodes[i].to_string() +
                    " holds readers (a read-write lock): left alone, they end with their leases");
        continue;
      }
      if (!value.empty() && value.back() == redlock::detail::kWaitedFor)
        value.back() = redlock::detail::kNobodyWaits;
      tokens.emplace(value, holder_name(value));
    } catch (const std::exception& e) {
      diag(g,
           "break '" + key + "': node " + config.nodes[i].to_string() + " not read: " + e.what());
    }
  }
  if (read < quorum) {
    say("redlock: break '" + key + "': only " + std::to_string(read) + " of " + std::to_string(n) +
        " nodes could be read (quorum " + std::to_string(quorum) + ")");
    return kNoQuorum;
  }
  std::size_t broken = 0;
  for (const auto& [token, name] : tokens) {
    if (o.holder && *o.holder != name) {
      diag(g, "break '" + key + "': left holder " + name + " alone (--holder " + *o.holder + ")");
      continue;
    }
    auto r = client.release(redlock::Lock(key, token));
    const std::string what =
        "broke '" + key + "': holder " + name + " " + release_summary(r) + "; its waiters told";
    // An administrator's act on a shared resource: also to the system log, for the record.
    ::openlog("redlock", LOG_PID, LOG_USER);
    ::syslog(LOG_WARNING, "%s", printable(what).c_str());
    ::closelog();
    say("redlock: " + what);
    if (r.released > 0) ++broken;
  }
  if (broken == 0) {
    say("redlock: break '" + key +
        "': " + (o.holder ? "not held by " + *o.holder : std::string("held by nobody")) +
        " on the nodes read");
    return kNotHeld;
  }
  return kOk;
}

}  // namespace redlock::cli
