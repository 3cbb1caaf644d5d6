// `redlock status`: one row per node (or one JSON object), and an exit code for monitoring.
#pragma once

#include "common.hpp"

namespace redlock::cli {

int do_status(const Globals& g, Client& client, bool json, bool strict);

}  // namespace redlock::cli
