// The project's scripts (lib/scripts/*.lua) for the simulator: the same texts and SHA1 digests
// the library sends (generated at configure time by cmake/EmbedScripts.cmake). Pure.
#pragma once

#include <array>
#include <string_view>

#include "redlock_scripts.hpp"  // generated: redlock::detail::lua::<name>_body, <name>_sha

namespace redlock::sim {

struct ScriptText {
  std::string_view name;  // "acquire", "renew", "release", "fence", "leader"
  std::string_view body;
  std::string_view sha;  // 40 lowercase hex digits, as EVALSHA takes it
};

inline constexpr ScriptText kAcquire{"acquire", detail::lua::acquire_body,
                                     detail::lua::acquire_sha};
inline constexpr ScriptText kRenew{"renew", detail::lua::renew_body, detail::lua::renew_sha};
inline constexpr ScriptText kRelease{"release", detail::lua::release_body,
                                     detail::lua::release_sha};
inline constexpr ScriptText kFence{"fence", detail::lua::fence_body, detail::lua::fence_sha};
inline constexpr ScriptText kLeader{"leader", detail::lua::leader_body, detail::lua::leader_sha};
inline constexpr std::array<ScriptText, 5> kScripts{kAcquire, kRenew, kRelease, kFence, kLeader};

}  // namespace redlock::sim
