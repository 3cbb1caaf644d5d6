// `redlock show KEY`: what each node holds for one lock (a mutex, a semaphore, an office or a
// read-write lock), read with plain read commands (TYPE, GET, PTTL, TIME, ZRANGE, HGETALL,
// SMEMBERS) over a connection of its own per node (TCP or TLS, node_connection.hpp). Never writes,
// never shows a token: a holder is shown by the name the scripts give it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common.hpp"
#include "redlock/config.hpp"

namespace redlock::cli {

struct Waiter {
  std::string name;  // the name its turn is announced under (16 hex digits of a digest)
  std::string place;
  bool reader = false;  // a reader of a read-write lock (its ticket ends "#r<n>@<ms>")
};

struct Turn {
  std::string name;
  long long left_ms = 0;  // due time on the node's clock, less the node's TIME; < 0: overdue
};

// A reader of a read-write lock on one node (docs/guide-rwlock.md).
struct Reader {
  std::string name;       // the name the scripts give its token (16 hex digits of a digest)
  long long left_ms = 0;  // its score (the end of its lease on the node's clock) less TIME
};

// The value the lock key holds while readers hold it: "readers" and a NUL (no token has one).
inline const std::string kReadersMarker("readers\0", 8);

// One node's view of one lock.
struct NodeView {
  std::string address;
  bool read = false;
  std::string error;  // why the node could not be read (read == false)

  std::string type = "none";        // TYPE of the lock key: "none", "string" (a lock), or another
  std::string holder;               // the holder's name (type "string")
  bool marked = false;              // its token is marked: a waiter asked for the lock once
  bool waited_for = false;          // marked, and somebody still stands in line or is signed up
  long long ttl_ms = -2;            // PTTL of the lock key (-1: none, -2: no key)
  std::vector<Waiter> line;         // in order of place
  std::vector<Turn> turns;          // turns that began
  std::vector<std::string> others;  // names of clients with waiters for several keys
  std::string fence;                // the fence counter, empty when none
  std::vector<std::string> notes;   // auxiliary keys of an unexpected type, legacy names read
  // A semaphore (docs/guide-semaphore.md): the k its permits key keeps (0: none kept), and the
  // holders of its slots 1 to k - 1 (slot 0 is the lock key above), "" where a slot is free.
  unsigned permits = 0;
  std::vector<std::pair<std::string, long long>> slots;  // holder name, PTTL
  // An office (docs/guide-election.md): the leader key's term, value and holder name (never
  // the token); empty term when none. It counts only while the lock key holds that holder.
  std::string leader_term;
  std::string leader_value;
  std::string leader_holder;
  // A read-write lock (docs/guide-rwlock.md): the lock key holds the readers' marker, and the
  // readers' sorted set names each unexpired reader (by its name, never its token).
  bool readers_marker = false;
  std::vector<Reader> readers;  // by name
};

// Reads `lock_key` and its auxiliary keys on every node of `config`, in node-list order.
// Each node over its own connection (node_connection.hpp), TLS included.
// With `only`, the nodes marked false are not asked (shown as not read).
std::vector<NodeView> read_lock(const Config& config, const std::string& lock_key,
                                const std::vector<bool>* only = nullptr);

// The name acquire.lua gives the holder of `token` (either form of its last character).
std::string holder_name(const std::string& token);

// Prints `views` as a table (human) or one JSON object; returns false when stdout failed.
bool print_views(const std::string& resource, const std::string& lock_key,
                 const std::vector<NodeView>& views, bool json);

// JSON string literal of `s`, bytes outside printable ASCII escaped as \u00XX.
std::string json_string(const std::string& s);

// `redlock show KEY`: prints read_lock()'s views; exit 3 when fewer than a quorum were read.
int do_show(const Globals& g, const Config& config, const std::string& key, bool json);

}  // namespace redlock::cli
