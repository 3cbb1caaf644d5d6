// Where a lock and its auxiliary data live on a node (docs/architecture.md, "Keys").
//
// A lock's key is the key prefix followed by the resource name. Its auxiliary keys (the waiting
// line, the turns, the sign-ups of waiters for several keys, the fence counter) are the lock's
// key, the reserved byte and a kind. No resource name and no prefix may contain the reserved
// byte (validated where names enter: Config, AcquireRequest), so no resource's lock key is ever
// another resource's auxiliary key: a lock of `x:queue` shares nothing with the line of `x`.
// The scripts (lib/scripts/*.lua) derive the same names from KEYS[i]. Pure; any thread.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

namespace redlock::detail {

// The byte no resource name or key prefix may contain.
inline constexpr char kReservedByte = '\0';

// The kinds of auxiliary key, as the scripts name them.
inline constexpr std::string_view kQueue = "queue";    // the line: a sorted set of tickets
inline constexpr std::string_view kTurns = "turns";    // turns that began: ticket -> due (ms)
inline constexpr std::string_view kOthers = "others";  // waiters for several keys
inline constexpr std::string_view kFence = "fence";    // the fence counter (no ttl)

inline std::string lock_key(std::string_view prefix, std::string_view resource) {
  std::string key;
  key.reserve(prefix.size() + resource.size());
  key.append(prefix).append(resource);
  return key;
}

inline std::string aux_key(std::string_view lock_key, std::string_view kind) {
  std::string key;
  key.reserve(lock_key.size() + 1 + kind.size());
  key.append(lock_key).push_back(kReservedByte);
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
