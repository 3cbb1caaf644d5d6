#include "scripts.hpp"

#include <charconv>

#include "../core/replies.hpp"
#include "redlock_scripts.hpp"  // generated (cmake/EmbedScripts.cmake)

namespace redlock::detail::proto {

std::string_view script_body(ScriptId script) noexcept {
  switch (script) {
    case ScriptId::acquire:
      return lua::acquire_body;
    case ScriptId::renew:
      return lua::renew_body;
    case ScriptId::release:
      return lua::release_body;
    case ScriptId::fence:
      return lua::fence_body;
    case ScriptId::leader:
      return lua::leader_body;
    case ScriptId::none:
      break;
  }
  return {};
}

std::string_view script_sha(ScriptId script) noexcept {
  switch (script) {
    case ScriptId::acquire:
      return lua::acquire_sha;
    case ScriptId::renew:
      return lua::renew_sha;
    case ScriptId::release:
      return lua::release_sha;
    case ScriptId::fence:
      return lua::fence_sha;
    case ScriptId::leader:
      return lua::leader_sha;
    case ScriptId::none:
      break;
  }
  return {};
}

std::string_view script_name(ScriptId script) noexcept {
  switch (script) {
    case ScriptId::acquire:
      return "acquire";
    case ScriptId::renew:
      return "renew";
    case ScriptId::release:
      return "release";
    case ScriptId::fence:
      return "fence";
    case ScriptId::leader:
      return "leader";
    case ScriptId::none:
      break;
  }
  return {};
}

bool script_order_free(ScriptId script) noexcept {
  // The leader's write acts only while the node holds the caller's token; its read writes nothing
  // that a later command could depend on.
  return script == ScriptId::renew || script == ScriptId::release || script == ScriptId::fence ||
         script == ScriptId::leader;
}

std::string ms_arg(Milliseconds d) { return std::to_string(d.count()); }

void ms_arg_into(std::string& out, Milliseconds d) {
  char digits[24];
  auto end = std::to_chars(digits, digits + sizeof digits, d.count()).ptr;
  out.assign(digits, static_cast<std::size_t>(end - digits));
}

Request acquire_request(const std::vector<std::string>& keys, const std::string& token,
                        Milliseconds ttl, bool fencing, const std::string& ticket,
                        const std::string& place, Milliseconds keep, Milliseconds turn_length) {
  Request r;
  r.script = ScriptId::acquire;
  r.decoder = Decoder::acquire;
  r.keys = keys;
  r.args.reserve(7);  // one allocation, no initializer list to copy the token from
  r.args.push_back(token);
  r.args.push_back(ms_arg(ttl));
  r.args.emplace_back(fencing ? "1" : "0");
  // Every acquire of one key through the script keeps to the line; only a waiter takes a place.
  r.args.push_back(ticket);
  r.args.push_back(ticket.empty() ? "0" : place);
  r.args.push_back(ms_arg(keep));
  r.args.push_back(ms_arg(turn_length));
  return r;
}

Request permit_request(const std::vector<std::string>& slot_keys, const std::string& token,
                       Milliseconds ttl, bool fencing, const std::string& ticket,
                       const std::string& place, Milliseconds keep, Milliseconds turn_length,
                       PermitAsk ask) {
  Request r = acquire_request(slot_keys, token, ttl, fencing, ticket, place, keep, turn_length);
  r.args.push_back(std::to_string(ask.permits));
  r.args.push_back(std::to_string(ask.slot));
  return r;
}

Request permit_release_request(const std::string& slot_key, const std::string& token, bool announce,
                               const Line* line) {
  Line none{"", "", Milliseconds(0)};
  Request r = release_request({slot_key}, token, announce, line != nullptr ? line : &none);
  r.args.emplace_back("permit");
  return r;
}

Request leave_permit_request(const std::vector<std::string>& slot_keys, const std::string& ticket) {
  Request r = leave_sign_ups_request(slot_keys, ticket);
  r.args.emplace_back("line");
  return r;
}

Request reader_request(const std::string& key, const std::string& token, Milliseconds ttl,
                       bool fencing, const std::string& ticket, const std::string& place,
                       Milliseconds keep, Milliseconds turn_length) {
  Request r = acquire_request({key}, token, ttl, fencing, ticket, place, keep, turn_length);
  r.args.emplace_back("shared");
  return r;
}

Request reader_release_request(const std::string& key, const std::string& token, bool announce,
                               const Line* line) {
  Line none{"", "", Milliseconds(0)};
  Request r = release_request({key}, token, announce, line != nullptr ? line : &none);
  r.args.emplace_back("shared");
  return r;
}

Request leave_reader_request(const std::string& key, const std::string& ticket) {
  Line line{ticket, "", Milliseconds(0)};
  return reader_release_request(key, "-", /*announce=*/false, &line);
}

Request quick_acquire_request(const std::string& key, const std::string& token, Milliseconds ttl) {
  Request r;
  fill_quick_acquire(r, key, token, ttl);
  return r;
}

void fill_quick_acquire(Request& r, const std::string& key, const std::string& token,
                        Milliseconds ttl) {
  r.script = ScriptId::none;
  r.decoder = Decoder::quick_acquire;
  r.items = 1;
  r.keys.clear();
  // Assigned one by one: a string that held as much before takes it without allocating. A
  // reused request holds the command's words already (checked, all of them: without NX the
  // command would overwrite another holder's key): only the key, the token and the ttl change.
  if (r.args.size() != 7 || r.args[0] != "SET" || r.args[3] != "NX" || r.args[4] != "PX" ||
      r.args[6] != "GET") {
    r.args.resize(7);
    r.args[0] = "SET";
    r.args[3] = "NX";
    r.args[4] = "PX";
    r.args[6] = "GET";
  }
  r.args[1] = key;
  r.args[2] = token;
  ms_arg_into(r.args[5], ttl);
}

bool is_syntax_error(const NodeVote& vote) {
  return vote.vote == Vote::failed && vote.detail.rfind("ERR syntax error", 0) == 0;
}

Request release_request(std::vector<std::string> keys, const std::string& token, bool announce,
                        const Line* line) {
  Request r;
  r.script = ScriptId::release;
  r.decoder = Decoder::release;
  r.keys = std::move(keys);
  // A real release of no line is the token alone (scripts/release.lua).
  r.args.reserve(line != nullptr ? 5 : 2);
  r.args.push_back(token);
  if (!announce || line != nullptr) r.args.push_back(announce ? "1" : "0");
  if (line != nullptr) {
    r.args.push_back(line->ticket);
    r.args.push_back(line->place);
    r.args.push_back(ms_arg(line->keep));
  }
  return r;
}

void fill_release(Request& r, const std::string& token) {
  r.script = ScriptId::release;
  r.decoder = Decoder::release;
  r.items = 1;
  // A real release of no line is the token alone (scripts/release.lua), as in release_request.
  r.args.resize(1);
  r.args[0] = token;
}

Request leave_line_request(const std::string& key, const std::string& ticket) {
  Line line{ticket, "", Milliseconds(0)};
  return release_request({key}, "-", /*announce=*/false, &line);
}

Request leave_sign_ups_request(const std::vector<std::string>& keys, const std::string& ticket) {
  Line line{ticket, "", Milliseconds(0)};
  return release_request(keys, "-", /*announce=*/false, &line);
}

Request leave_waiting_request(const std::vector<std::string>& keys, const std::string& ticket) {
  return keys.size() == 1 ? leave_line_request(keys[0], ticket)
                          : leave_sign_ups_request(keys, ticket);
}

Request renew_request(const std::vector<Renewal>& locks) {
  Request r;
  r.script = ScriptId::renew;
  r.decoder = Decoder::renew;
  r.items = locks.size();
  for (const auto& l : locks) {
    r.keys.insert(r.keys.end(), l.keys->begin(), l.keys->end());
    r.args.push_back(*l.token);
    r.args.push_back(ms_arg(l.ttl));
    auto n = static_cast<long long>(l.keys->size());
    if (l.shared)
      r.args.emplace_back("r");
    else
      r.args.push_back(std::to_string(l.permit ? -n : n));
  }
  return r;
}

Request fence_request(const std::vector<std::string>& keys, const std::string& token,
                      std::uint64_t fencing_token, bool shared) {
  Request r;
  r.script = ScriptId::fence;
  r.decoder = Decoder::fence;
  r.keys = keys;
  r.args = {token, std::to_string(fencing_token)};
  if (shared) r.args.emplace_back("shared");
  return r;
}

Request leader_write_request(const std::string& key, const std::string& token, std::uint64_t term,
                             const std::string& value) {
  Request r;
  r.script = ScriptId::leader;
  r.decoder = Decoder::leader_write;
  r.keys = {key};
  r.args = {"write", token, std::to_string(term), value};
  return r;
}

Request leader_read_request(const std::string& key) {
  Request r;
  r.script = ScriptId::leader;
  r.decoder = Decoder::leader_read;
  r.keys = {key};
  r.args = {"read"};
  return r;
}

Request leader_resign_request(const std::string& key, const std::string& token) {
  Request r;
  r.script = ScriptId::leader;
  r.decoder = Decoder::fence;
  r.keys = {key};
  r.args = {"resign", token};
  return r;
}

Request status_request() {
  Request r;
  r.decoder = Decoder::text;
  r.args = {"INFO", "server"};
  return r;
}

std::vector<NodeVote> decode_reply(const Request& request, const redisReply* reply) {
  std::vector<NodeVote> votes(request.items);
  if (!votes.empty()) {
    switch (request.decoder) {
      case Decoder::acquire:
        acquire_vote(reply, votes[0]);
        break;
      case Decoder::quick_acquire:
        quick_acquire_vote(reply, votes[0]);
        break;
      case Decoder::fence:
        fence_vote(reply, votes[0]);
        break;
      case Decoder::release:
        release_vote(reply, request.keys.size(), votes[0]);
        break;
      case Decoder::renew:
        renew_votes(reply, votes.data(), votes.size());
        break;
      case Decoder::text:
        text_vote(reply, votes[0]);
        break;
      case Decoder::leader_write:
        leader_write_vote(reply, votes[0]);
        break;
      case Decoder::leader_read:
        leader_read_vote(reply, votes[0]);
        break;
    }
  }
  for (auto& v : votes) {
    if (v.vote != Vote::pending) continue;
    v.vote = Vote::failed;
    v.error = make_error_code(Errc::protocol_error);
    v.detail = "unexpected reply";
  }
  return votes;
}

std::vector<NodeVote> failed_votes(std::size_t items, std::error_code error, std::string detail) {
  NodeVote v;
  v.vote = Vote::failed;
  v.error = error;
  v.detail = std::move(detail);
  return std::vector<NodeVote>(items, v);
}

}  // namespace redlock::detail::proto
