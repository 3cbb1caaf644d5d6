// `redlock status`: one row per node (or one JSON object), and an exit code for monitoring.
#pragma once

#include <system_error>

#include "common.hpp"

namespace redlock::cli {

// What a node can do for the lock, as status reports it (text and JSON alike).
enum class VoteState {
  up,       // connected and accepted by the safeguards: it votes
  refused,  // it answered, but may not or cannot vote: a replica, a Cluster node, listed twice,
            // restarting, authentication or permission refused, a TLS failure, a bad reply
  down,     // unreachable or not answering: refused connection, timeouts, a lost connection
};

// The one classification of a node's status row, used by the text and the JSON.
VoteState vote_state(bool up, std::error_code error);
const char* to_string(VoteState s);

struct StatusOptions {
  bool json = false;
  bool strict = false;      // persistence that can forget a lock fails the check too
  bool allow_down = false;  // an unreachable node does not fail the check while a quorum votes
};

// Exit 3 when fewer than a quorum vote; 5 when a node is refused, when a node is down (unless
// --allow-down), or with --strict when a node's persistence can forget a lock; else 0.
int do_status(const Globals& g, Client& client, const StatusOptions& o);

}  // namespace redlock::cli
