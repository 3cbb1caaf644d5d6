// The verbs on a lock held by token: acquire (prints the token), extend, release.
#pragma once

#include <optional>
#include <string>

#include "common.hpp"

namespace redlock::cli {

int do_acquire(const Globals& g, Client& client, const std::string& key,
               std::optional<Milliseconds> wait, bool fencing);
int do_extend(const Globals& g, Client& client, const std::string& key, const std::string& token);
int do_release(const Globals& g, Client& client, const std::string& key, const std::string& token);

}  // namespace redlock::cli
