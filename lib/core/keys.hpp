// Where a lock and its auxiliary data live on a node (docs/architecture.md, "Keys").
//
// A lock's key is the key prefix followed by the resource name. Its auxiliary keys (the waiting
// line, the turns, the sign-ups of waiters for several keys, the fence counter) are named from
// the lock's key, the reserved byte and a kind. No resource name and no prefix may contain the
// reserved byte (validated where names enter: Config, AcquireRequest), so no resource's lock key
// is ever another resource's auxiliary key: a lock of `x:queue` shares nothing with the line of
// `x`. Every key of one resource lies in the lock key's Redis Cluster hash slot, so that a voter
// that is a Redis Cluster can run each script (aux_key). The scripts (lib/scripts/*.lua) derive
// the same names from KEYS[i]. Pure; any thread.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

namespace redlock::detail {

// The byte no resource name or key prefix may contain.
inline constexpr char kReservedByte = '\0';

// The kinds of auxiliary key, as the scripts name them.
inline constexpr std::string_view kQueue = "queue";      // the line: a sorted set of tickets
inline constexpr std::string_view kTurns = "turns";      // turns that began: ticket -> due (ms)
inline constexpr std::string_view kOthers = "others";    // waiters for several keys
inline constexpr std::string_view kFence = "fence";      // the fence counter (no ttl)
inline constexpr std::string_view kPermits = "permits";  // a semaphore's k (acquire.lua)
inline constexpr std::string_view kSlot = "slot";        // a semaphore's slot i > 0: "slot<i>"
inline constexpr std::string_view kLeader = "leader";    // an office's leader (leader.lua)
// Never written: the key prefix's own (as the lock key of the empty resource, which no lock
// has), that status's write probe asks a SET XX of (probe.lua).
inline constexpr std::string_view kProbe = "probe";
// A read-write lock's readers: token -> the end of its lease on the node's clock (acquire.lua).
inline constexpr std::string_view kReaders = "readers";
// What the lock key holds while a reader of its read-write lock is unexpired on the node: the 8
// bytes "readers" NUL (no token holds a NUL), with a ttl that covers every reader.
inline constexpr std::string_view kReadersMarker{"readers\0", 8};

// A resource's lock key: the key prefix, then the resource, as node-redlock and redsync name it.
// Written over `key`, whose memory is kept (a reused request's).
inline void assign_lock_key(std::string& key, std::string_view prefix, std::string_view resource) {
  key.reserve(prefix.size() + resource.size());  // one allocation at most, none for kept memory
  key.assign(prefix).append(resource);
}

inline std::string lock_key(std::string_view prefix, std::string_view resource) {
  std::string key;
  assign_lock_key(key, prefix, resource);
  return key;
}

// True when Redis Cluster hashes `key` by a hash tag: the bytes between its first '{' and the
// first '}' after it, when there are any. A key without one hashes whole.
inline bool has_hash_tag(std::string_view key) {
  auto open = key.find('{');
  if (open == std::string_view::npos) return false;
  auto close = key.find('}', open + 1);
  return close != std::string_view::npos && close > open + 1;
}

// The auxiliary key of `kind` for the lock key `lock_key`, in the lock key's hash slot. It always
// begins with the lock key and NUL, so an ACL key pattern on the prefix covers it:
// - a lock key with neither '{' nor '}' ("orders:42", the common case): the lock key, NUL, the
//   lock key in braces, kind ("orders:42" NUL "{orders:42}queue"): its hash tag is the lock key;
// - a lock key with a hash tag ("{user:7}:lock"): the lock key, NUL, kind; the tag comes first;
// - any other ("a}b", "a{b"): the lock key, NUL, kind, which hashes elsewhere: no name but a
//   CRC16 collision would share its slot (cluster_ready()).
// No two lock keys share an auxiliary key: the part before the first NUL is the lock key, and no
// kind begins with '{'. The lock key itself is never renamed: node-redlock and redsync lock the
// same key.
inline std::string aux_key(std::string_view lock_key, std::string_view kind) {
  bool tag = lock_key.find_first_of("{}") == std::string_view::npos;
  std::string key;
  key.reserve((tag ? 2 * lock_key.size() + 3 : lock_key.size() + 1) + kind.size());
  key.append(lock_key).push_back(kReservedByte);
  if (tag) key.append("{").append(lock_key).append("}");
  key.append(kind);
  return key;
}

// The key of slot `slot` of the semaphore whose lock key is `lock_key` (docs/guide-semaphore.md):
// slot 0 is the lock key itself, so that a semaphore of one permit is the mutex; slot i > 0 is
// the auxiliary key "slot<i>", in the lock key's hash slot. Each slot is a mutex of its own.
inline std::string slot_key(std::string_view lock_key, unsigned slot) {
  if (slot == 0) return std::string(lock_key);
  std::string kind(kSlot);
  kind += std::to_string(slot);
  return aux_key(lock_key, kind);
}

// True when every auxiliary key of `lock_key` lies in its hash slot (aux_key).
inline bool cluster_ready(std::string_view lock_key) {
  return has_hash_tag(lock_key) || lock_key.find_first_of("{}") == std::string_view::npos;
}

// The names an auxiliary key had before (the fence counter is carried over from them:
// lib/scripts/acquire.lua, fence.lua; `redlock show` reads the line under them): the lock key,
// NUL, kind (until the Cluster layout), and the lock key, ':', kind (before that).
inline std::string nul_aux_key(std::string_view lock_key, std::string_view kind) {
  std::string key;
  key.reserve(lock_key.size() + 1 + kind.size());
  key.append(lock_key).push_back(kReservedByte);
  key.append(kind);
  return key;
}
inline std::string colon_aux_key(std::string_view lock_key, std::string_view kind) {
  std::string key;
  key.reserve(lock_key.size() + 1 + kind.size());
  key.append(lock_key).push_back(':');
  key.append(kind);
  return key;
}

// How long the nodes keep a sign-up of a waiter for several keys past its latest refused attempt
// (lib/scripts/acquire.lua, SIGN_UP): a crashed waiter's sign-ups are gone by then. A live waiter
// asks again at least every kSignUpRefresh, so its own never lapse.
inline constexpr std::chrono::milliseconds kSignUpLife{10'000};
inline constexpr std::chrono::milliseconds kSignUpRefresh{kSignUpLife / 2};

// True when `name` (a resource name or a key prefix) may be used: it has no reserved byte.
inline bool usable_name(std::string_view name) {
  return name.find(kReservedByte) == std::string_view::npos;
}

// Why a resource name may not be used, or nullptr. The reserved byte separates a lock's key from
// its auxiliary keys: "r\0queue" would name resource r's line. The client refuses such a name
// before any command is sent (lib/net/client.cpp); the simulator asks the same function.
inline const char* resource_name_problem(std::string_view name) {
  if (!usable_name(name)) return "resource name contains a NUL byte";
  return nullptr;
}

}  // namespace redlock::detail
