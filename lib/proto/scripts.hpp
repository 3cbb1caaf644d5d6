// The contracts of our scripts in one place: the arguments each script takes (lib/scripts/*.lua
// say what they mean), the decoder that reads its reply, and the script texts themselves. lib/net,
// the simulator and the CLI build every request here, so that a script's arguments are written
// once. Pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "actions.hpp"

struct redisReply;

namespace redlock::detail::proto {

// The Lua text of a script (lib/scripts/<name>.lua, embedded at configure time) and its SHA1, the
// name EVALSHA gives it. Empty for ScriptId::none.
std::string_view script_body(ScriptId script) noexcept;
std::string_view script_sha(ScriptId script) noexcept;
// "acquire", "renew", "release", "fence", "leader"; "" for none.
std::string_view script_name(ScriptId script) noexcept;
// True when running the script later than commands sent after it on the same connection can
// never matter (it only deletes keys or raises ttls of keys that hold the caller's token): it may
// be re-sent as EVAL after NOSCRIPT whatever went behind it. The acquire script creates a lock.
bool script_order_free(ScriptId script) noexcept;

std::string ms_arg(Milliseconds d);
// The same written over `out`, whose memory is kept (a reused request's).
void ms_arg_into(std::string& out, Milliseconds d);

// A waiter's place in a key's line, as the scripts take it (acquire.lua ARGV[4..6], release.lua
// ARGV[3..5]).
struct Line {
  std::string ticket;  // "<turn channel>#<job>@<turn length in ms>"
  std::string place;   // a number, the same on every node; '' to leave the line
  Milliseconds keep{0};
};

// acquire.lua: token, ttl, '1'/'0' fencing, then the line: the ticket ('' when it does not wait),
// its place ('0' without a ticket), how long the nodes keep the queue, the turn length (present:
// the acquire keeps to the line). Decoder::acquire.
Request acquire_request(const std::vector<std::string>& keys, const std::string& token,
                        Milliseconds ttl, bool fencing, const std::string& ticket,
                        const std::string& place, Milliseconds keep, Milliseconds turn_length);

// A permit of a semaphore (acquire.lua ARGV[8..9]): its number of permits and the slot asked for.
struct PermitAsk {
  unsigned permits = 0;
  unsigned slot = 0;
};
// acquire.lua for a permit: `slot_keys` the semaphore's k slot keys in slot order (slot_key),
// then the arguments of acquire_request and the permit's two.
Request permit_request(const std::vector<std::string>& slot_keys, const std::string& token,
                       Milliseconds ttl, bool fencing, const std::string& ticket,
                       const std::string& place, Milliseconds keep, Milliseconds turn_length,
                       PermitAsk ask);
// The release of a permit (Lock::permit): release.lua on its slot key, ARGV[6] 'permit', which
// lets the semaphore's k go where no slot is held any more. Without `announce`, the clean-up of a
// failed attempt at a permit: silent, and it lets k go as a release does (a failed attempt's
// grant on some nodes must not keep another k out for its ttl once every permit is released);
// with `line`, it puts the waiter back in its semaphore's line there, as release_request does.
Request permit_release_request(const std::string& slot_key, const std::string& token,
                               bool announce = true, const Line* line = nullptr);
// A waiter for a permit that is gone leaves its semaphore's line (`slot_keys` the k slot keys,
// slot_key): its place, its turn, and the slot its turn holds, which is then the next one's
// turn. release.lua's line form, ARGV[6] 'line'.
Request leave_permit_request(const std::vector<std::string>& slot_keys, const std::string& ticket);

// A reader of a read-write lock (AcquireRequest::shared): acquire.lua on its lock key, the
// arguments of acquire_request, then 'shared' (ARGV[8]). The reader's ticket says it is a reader
// (Context::new_ticket). Decoder::acquire, the mutex's reply shapes.
Request reader_request(const std::string& key, const std::string& token, Milliseconds ttl,
                       bool fencing, const std::string& ticket, const std::string& place,
                       Milliseconds keep, Milliseconds turn_length);
// The release of a reader (Lock::shared): release.lua's reader form on its lock key (token,
// '1'/'0' announce, ticket, place, keep, 'shared'). Without `announce`, the clean-up of a failed
// attempt (silent); with `line`, it puts the waiter back in line there. Decoder::release.
Request reader_release_request(const std::string& key, const std::string& token,
                               bool announce = true, const Line* line = nullptr);
// A reader waiter that is gone leaves the line of `key` (the token "-": nothing is released).
Request leave_reader_request(const std::string& key, const std::string& ticket);

// The quick acquire, one plain command: SET key token NX PX ttl GET (Redis 7.0 or newer).
// Decoder::quick_acquire. A server too old for it answers "ERR syntax error" (is_syntax_error).
Request quick_acquire_request(const std::string& key, const std::string& token, Milliseconds ttl);
// The same, written into `r` (every field of it): the strings and lists of a reused request
// (Context::request) keep their memory.
void fill_quick_acquire(Request& r, const std::string& key, const std::string& token,
                        Milliseconds ttl);
// True when a failed vote is the refusal of a command's form (the quick acquire on Redis < 7).
bool is_syntax_error(const NodeVote& vote);

// release.lua, in its forms:
// - a real release (announced) of no line: the token alone;
// - otherwise token, '1'/'0' announce, and with a line: ticket, place ('' leaves), keep ms.
// Decoder::release. `keys` by value: a caller's fresh list moves in.
Request release_request(std::vector<std::string> keys, const std::string& token,
                        bool announce = true, const Line* line = nullptr);
// A real release of no line (release_request(r.keys, token)) written into `r`, whose keys the
// caller has set; every other field is written here (see fill_quick_acquire).
void fill_release(Request& r, const std::string& token);
// A waiter that is gone leaves `key`'s line: the token "-" is no token, nothing is deleted.
Request leave_line_request(const std::string& key, const std::string& ticket);
// A waiter for several keys that is gone takes its sign-ups (each key's `others`) out: the same
// release form, with the ticket and no place.
Request leave_sign_ups_request(const std::vector<std::string>& keys, const std::string& ticket);
// The one of the two that fits a waiter for `keys`.
Request leave_waiting_request(const std::vector<std::string>& keys, const std::string& ticket);

// renew.lua: per lock, its keys (in KEYS, lock after lock) and token, ttl, number of keys (negated
// for a permit, whose semaphore's permits key is kept as long; 'r' for a reader). Decoder::renew,
// one item per lock.
struct Renewal {
  const std::vector<std::string>* keys;
  const std::string* token;
  Milliseconds ttl;
  bool permit = false;  // a permit of a semaphore (Lock::permit): its one slot key
  bool shared = false;  // a reader of a read-write lock (Lock::shared): its lock key, sent as 'r'
};
Request renew_request(const std::vector<Renewal>& locks);

// fence.lua: token, the fencing token, and 'shared' for a reader (its lock key). Decoder::fence.
Request fence_request(const std::vector<std::string>& keys, const std::string& token,
                      std::uint64_t fencing_token, bool shared = false);

// leader.lua (docs/guide-election.md): the grant's write of the office's leader (token, term,
// value; Decoder::leader_write), and the read of it (Decoder::leader_read).
Request leader_write_request(const std::string& key, const std::string& token, std::uint64_t term,
                             const std::string& value);
Request leader_read_request(const std::string& key);
// leader.lua's resign form, after the office's release: clears the leader and announces the
// vacancy (Decoder::fence: 1 or 0).
Request leader_resign_request(const std::string& key, const std::string& token);

// INFO server (status). Decoder::text.
Request status_request();

// A node's reply to `request`, as votes (request.items of them): by the request's decoder; a
// vote the decoder left pending (a shape the script never returns) becomes a failed vote with
// Errc::protocol_error. `reply` is never an error reply (see failed_votes).
std::vector<NodeVote> decode_reply(const Request& request, const redisReply* reply);
// What a node that could not answer (an error reply, a timeout, a connection lost, a request
// it refused to send) votes on each of `items`.
std::vector<NodeVote> failed_votes(std::size_t items, std::error_code error, std::string detail);

}  // namespace redlock::detail::proto
