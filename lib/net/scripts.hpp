// The Lua scripts (lib/scripts/*.lua, embedded with their SHA1s at configure time).
#pragma once

#include "node.hpp"
#include "redlock_scripts.hpp"  // generated

namespace redlock::detail {

inline constexpr Script script_acquire{"acquire", lua::acquire_body, lua::acquire_sha};
inline constexpr Script script_renew{"renew", lua::renew_body, lua::renew_sha};
inline constexpr Script script_release{"release", lua::release_body, lua::release_sha};

}  // namespace redlock::detail
