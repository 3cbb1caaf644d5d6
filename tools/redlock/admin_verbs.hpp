// The operator's verbs over the nodes' keys, beside `show`: `list` (the locks held under the
// prefix, as `show` shows one) and `break` (an administrator's release of a lock whose token is
// lost). Both read over connections of the tool's own (node_connection.hpp); `break` releases
// through the library, with the holder's own token read from the nodes, so that it removes
// exactly what `release` would and wakes the waiters the same way.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "common.hpp"

namespace redlock::cli {

struct ListOptions {
  std::string pattern = "*";  // a glob over resource names (SCAN's MATCH), after the prefix
  std::size_t limit = 1000;   // locks listed at most; more are counted as cut
  bool json = false;
};

// `redlock list [PATTERN]`: every lock key under the prefix on every node (SCAN, never KEYS),
// its holder by name (never the token), on how many nodes and the ttl left. Exit 3 when fewer
// than a quorum of nodes could be read.
int do_list(const Globals& g, const Config& config, const ListOptions& o);

struct BreakOptions {
  bool force = false;                 // required: breaking a lock is dangerous
  std::optional<std::string> holder;  // only this holder's lock (its name, as show prints it)
};

// `redlock break KEY --force [--holder NAME]`: releases KEY on every node for whoever holds
// it. Exit 2 without --force; 1 when nobody (or not NAME) holds it; 3 without a quorum.
int do_break(const Globals& g, Client& client, const std::string& key, const BreakOptions& o);

}  // namespace redlock::cli
