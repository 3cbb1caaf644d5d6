// The Lua scripts (lib/scripts/*.lua, embedded with their SHA1s at configure time).
#pragma once

#include "node.hpp"
#include "redlock_scripts.hpp"  // generated

namespace redlock::detail {

// The acquire script creates a lock: run out of order, it could run after its own clean-up.
inline constexpr Script script_acquire{"acquire", lua::acquire_body, lua::acquire_sha, false};
// Renewal only raises the ttl of keys that hold the caller's token; release only deletes them.
inline constexpr Script script_renew{"renew", lua::renew_body, lua::renew_sha, true};
inline constexpr Script script_release{"release", lua::release_body, lua::release_sha, true};
// The fencing write-back only raises counters while the node holds the caller's token.
inline constexpr Script script_fence{"fence", lua::fence_body, lua::fence_sha, true};
// The leader's write acts only while the node holds the caller's token (docs/guide-election.md).
inline constexpr Script script_leader{"leader", lua::leader_body, lua::leader_sha, true};
// Status's write probe writes nothing (a SET XX of a key that does not exist).
inline constexpr Script script_probe{"probe", lua::probe_body, lua::probe_sha, true};

}  // namespace redlock::detail
