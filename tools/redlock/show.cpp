#include "show.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>

#include <iostream>

#include "core/keys.hpp"
#include "core/quorum.hpp"
#include "core/token.hpp"
#include "node_connection.hpp"

namespace redlock::cli {
namespace {

std::string digest(const std::string& text) { return redlock::detail::token_digest(text); }

// aux(L, 'readers'): a read-write lock's readers (docs/guide-rwlock.md).
constexpr std::string_view kReadersKind = "readers";

// A reader's ticket in the line: "<its client's channel>#r<n>@<ms>" (acquire.lua); a writer's
// has no 'r'.
bool is_reader_ticket(const std::string& ticket) {
  auto at = ticket.rfind('@');
  auto r = ticket.rfind("#r", at);
  if (at == std::string::npos || r == std::string::npos || at <= r + 2 || at + 1 >= ticket.size())
    return false;
  auto digits = [](const std::string& t) {
    return t.find_first_not_of("0123456789") == std::string::npos;
  };
  return digits(ticket.substr(r + 2, at - r - 2)) && digits(ticket.substr(at + 1));
}

// The auxiliary key of `kind`: keys.hpp's name, or a legacy one of older scripts (the lock key,
// NUL, kind; or "<key>:<kind>") when only that one exists. Returns the key and its type ("none"
// when none exists).
std::pair<std::string, std::string> aux(NodeConnection& conn, const std::string& lock_key,
                                        std::string_view kind, NodeView& view) {
  std::string key = redlock::detail::aux_key(lock_key, kind);
  std::string type = reply_text(must(conn, {"TYPE", key}).get());
  if (type != "none") return {key, type};
  for (const std::string& legacy : {redlock::detail::nul_aux_key(lock_key, kind),
                                    redlock::detail::colon_aux_key(lock_key, kind)}) {
    if (legacy == key) continue;
    std::string legacy_type = reply_text(must(conn, {"TYPE", legacy}).get());
    if (legacy_type != "none") {
      view.notes.push_back(std::string(kind) + " read under its legacy name '" + legacy + "'");
      return {legacy, legacy_type};
    }
  }
  return {key, type};
}

void read_node(NodeConnection& conn, const std::string& lock_key, NodeView& v) {
  v.type = reply_text(must(conn, {"TYPE", lock_key}).get());
  if (v.type == "string") {
    std::string value = reply_text(must(conn, {"GET", lock_key}).get());
    v.readers_marker = value == kReadersMarker;
    v.holder = v.readers_marker ? std::string() : holder_name(value);
    v.waited_for = !value.empty() && value.back() == '!';
  }
  if (v.type != "none") v.ttl_ms = must(conn, {"PTTL", lock_key})->integer;

  auto now = must(conn, {"TIME"});
  long long node_ms = 0;
  if (now->type == REDIS_REPLY_ARRAY && now->elements == 2)
    node_ms = std::stoll(reply_text(now->element[0])) * 1000 +
              std::stoll(reply_text(now->element[1])) / 1000;

  auto [queue, queue_type] = aux(conn, lock_key, redlock::detail::kQueue, v);
  if (queue_type == "zset") {
    auto r = must(conn, {"ZRANGE", queue, "0", "-1", "WITHSCORES"});
    for (std::size_t i = 0; i + 1 < r->elements; i += 2) {
      const std::string ticket = reply_text(r->element[i]);
      v.line.push_back({digest(ticket), reply_text(r->element[i + 1]), is_reader_ticket(ticket)});
    }
  } else if (queue_type != "none") {
    v.notes.push_back("the line's key holds a " + queue_type + ", not a sorted set");
  }
  auto [turns, turns_type] = aux(conn, lock_key, redlock::detail::kTurns, v);
  if (turns_type == "hash") {
    auto r = must(conn, {"HGETALL", turns});
    for (std::size_t i = 0; i + 1 < r->elements; i += 2) {
      long long due = 0;
      try {
        due = std::stoll(reply_text(r->element[i + 1]));
      } catch (const std::exception&) {
        v.notes.push_back("a turn with a due time that is not a number");
        continue;
      }
      v.turns.push_back({digest(reply_text(r->element[i])), due - node_ms});
    }
  } else if (turns_type != "none") {
    v.notes.push_back("the turns' key holds a " + turns_type + ", not a hash");
  }
  auto [others, others_type] = aux(conn, lock_key, redlock::detail::kOthers, v);
  if (others_type == "zset") {
    // A sign-up's score is when it lapses (acquire.lua, SIGN_UP): a lapsed one is a waiter that
    // left (its wait ran out, or it crashed) whose entry the next script run prunes.
    auto r = must(conn, {"ZRANGE", others, "0", "-1", "WITHSCORES"});
    for (std::size_t i = 0; i + 1 < r->elements; i += 2) {
      long long ends = 0;
      try {
        ends = std::stoll(reply_text(r->element[i + 1]));
      } catch (const std::exception&) {
      }
      if (ends > node_ms) v.others.push_back(digest(reply_text(r->element[i])));
    }
    std::sort(v.others.begin(), v.others.end());
  } else if (others_type == "set") {  // the sign-ups of older scripts, without a lapse time
    auto r = must(conn, {"SMEMBERS", others});
    for (std::size_t i = 0; i < r->elements; ++i)
      v.others.push_back(digest(reply_text(r->element[i])));
    std::sort(v.others.begin(), v.others.end());
  } else if (others_type != "none") {
    v.notes.push_back("the others' key holds a " + others_type);
  }
  // The mark stays on the holder's token after the last waiter left (its wait ran out): it is
  // "waited for" only while somebody still stands in line or is signed up for it.
  v.marked = v.waited_for;
  v.waited_for = v.marked && (!v.line.empty() || !v.others.empty());
  auto [permits, permits_type] = aux(conn, lock_key, redlock::detail::kPermits, v);
  if (permits_type == "string") {
    std::string k = reply_text(must(conn, {"GET", permits}).get());
    // The form acquire.lua compares (the decimal k a client sends): a value with more to it
    // ("2x", "1e3", " 2") refuses every acquire (permits_mismatch), and is shown as it is.
    unsigned long n = 0;
    if (!k.empty() && k.size() <= 4 && k.find_first_not_of("0123456789") == std::string::npos &&
        k[0] != '0')
      n = std::stoul(k);
    if (n >= 1 && n <= redlock::AcquireRequest::max_permits) {
      v.permits = static_cast<unsigned>(n);
      for (unsigned i = 1; i < v.permits; ++i) {
        std::string slot = redlock::detail::slot_key(lock_key, i);
        auto value = must(conn, {"GET", slot});
        bool held = value->type == REDIS_REPLY_STRING;
        v.slots.emplace_back(held ? holder_name(reply_text(value.get())) : std::string(),
                             held ? must(conn, {"PTTL", slot})->integer : -2);
      }
    } else {
      v.notes.push_back("the permits key holds '" + k + "', not a number of permits");
    }
  } else if (permits_type != "none") {
    v.notes.push_back("the permits key holds a " + permits_type);
  }
  auto [leader, leader_type] = aux(conn, lock_key, redlock::detail::kLeader, v);
  if (leader_type == "string") {
    // "term|token|value" (leader.lua)
    std::string text = reply_text(must(conn, {"GET", leader}).get());
    auto bar = text.find('|');
    auto bar2 = bar == std::string::npos ? bar : text.find('|', bar + 1);
    if (bar != std::string::npos && bar > 0 && bar2 != std::string::npos &&
        text.find_first_not_of("0123456789") == bar) {
      v.leader_term = text.substr(0, bar);
      v.leader_holder = holder_name(text.substr(bar + 1, bar2 - bar - 1));
      v.leader_value = text.substr(bar2 + 1);
    } else {
      v.notes.push_back("the leader key holds a string not of our form");
    }
  } else if (leader_type != "none") {
    v.notes.push_back("the leader key holds a " + leader_type);
  }
  // A read-write lock's readers: token -> the end of its lease on the node's clock. A score at
  // or before TIME is a reader whose lease ended, which the next script run prunes: not shown.
  auto [readers, readers_type] = aux(conn, lock_key, kReadersKind, v);
  if (readers_type == "zset") {
    auto r = must(conn, {"ZRANGE", readers, "0", "-1", "WITHSCORES"});
    for (std::size_t i = 0; i + 1 < r->elements; i += 2) {
      long long ends = 0;
      try {
        ends = std::stoll(reply_text(r->element[i + 1]));
      } catch (const std::exception&) {
        v.notes.push_back("a reader with an end that is not a number");
        continue;
      }
      if (ends > node_ms)
        v.readers.push_back({holder_name(reply_text(r->element[i])), ends - node_ms});
    }
    std::sort(v.readers.begin(), v.readers.end(),
              [](const Reader& a, const Reader& b) { return a.name < b.name; });
  } else if (readers_type != "none") {
    v.notes.push_back("the readers' key holds a " + readers_type + ", not a sorted set");
  }
  if (v.readers_marker && v.readers.empty())
    v.notes.push_back("the readers' marker without a reader whose lease has not ended");
  if (!v.readers_marker && !v.readers.empty())
    v.notes.push_back("readers without the readers' marker on the lock key");
  auto [fence, fence_type] = aux(conn, lock_key, redlock::detail::kFence, v);
  if (fence_type == "string")
    v.fence = reply_text(must(conn, {"GET", fence}).get());
  else if (fence_type != "none")
    v.notes.push_back("the fence key holds a " + fence_type + ", not a counter");
}

std::string ttl_text(long long ms) {
  if (ms == -1) return "no ttl";
  if (ms < 0) return "-";
  return std::to_string(ms) + " ms";
}

}  // namespace

std::string holder_name(const std::string& token) {
  return redlock::detail::holder_of_value(token);
}

std::vector<NodeView> read_lock(const Config& config, const std::string& lock_key,
                                const std::vector<bool>* only) {
  std::vector<NodeView> views;
  for (std::size_t i = 0; i < config.nodes.size(); ++i) {
    const auto& node = config.nodes[i];
    NodeView v;
    v.address = node.to_string();
    views.push_back(v);
    auto& view = views.back();
    if (only != nullptr && (i >= only->size() || !(*only)[i])) {
      view.error = "not asked";
      continue;
    }
    try {
      NodeConnection conn(node, config.tls, config.connect_timeout,
                          std::max(config.request_timeout, Milliseconds(1000)));
      read_node(conn, lock_key, view);
      view.read = true;
    } catch (const std::exception& e) {
      view = NodeView{};
      view.address = node.to_string();
      view.error = e.what();
    }
  }
  return views;
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20 || c >= 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

bool print_views(const std::string& resource, const std::string& lock_key,
                 const std::vector<NodeView>& views, bool json) {
  std::size_t quorum = views.size() / 2 + 1, read = 0, foreign = 0;
  std::map<std::string, std::size_t> holders;
  for (const auto& v : views) {
    if (v.read) ++read;
    if (v.read && v.type == "string" && !v.readers_marker) ++holders[v.holder];
    if (v.read && v.type != "string" && v.type != "none") ++foreign;
  }
  std::string majority;
  for (const auto& [name, n] : holders)
    if (n >= quorum) majority = name;
  // A read-write lock: the nodes whose lock key holds the readers' marker, and the readers that
  // hold on a quorum of the nodes read (each a reader's share granted, or renewed, there).
  std::size_t marked = 0;
  std::map<std::string, std::size_t> reader_nodes;
  for (const auto& v : views) {
    if (!v.read) continue;
    if (v.readers_marker) ++marked;
    for (const auto& r : v.readers) ++reader_nodes[r.name];
  }
  std::vector<std::string> readers;  // on a quorum, by name
  for (const auto& [name, n] : reader_nodes)
    if (n >= quorum) readers.push_back(name);

  if (json) {
    std::string o = "{\"resource\":" + json_string(resource) + ",\"key\":" + json_string(lock_key) +
                    ",\"quorum\":" + std::to_string(quorum) +
                    ",\"holder\":" + (majority.empty() ? "null" : json_string(majority));
    if (marked > 0 || !reader_nodes.empty()) {
      o += ",\"readers\":[";  // the readers on a quorum
      for (std::size_t j = 0; j < readers.size(); ++j)
        o += (j ? "," : "") + json_string(readers[j]);
      o += "]";
    }
    o += ",\"nodes\":[";
    for (std::size_t i = 0; i < views.size(); ++i) {
      const auto& v = views[i];
      if (i > 0) o += ',';
      o += "{\"node\":" + json_string(v.address) + ",\"read\":" + (v.read ? "true" : "false");
      if (!v.read) {
        o += ",\"error\":" + json_string(v.error) + "}";
        continue;
      }
      o += ",\"type\":" + json_string(v.type);
      o += ",\"holder\":" +
           (v.type == "string" && !v.readers_marker ? json_string(v.holder) : std::string("null"));
      o += ",\"waited_for\":" + std::string(v.waited_for ? "true" : "false");
      o += ",\"marked\":" + std::string(v.marked ? "true" : "false");
      o += ",\"ttl_ms\":" + std::to_string(v.ttl_ms);
      o += ",\"line\":[";
      for (std::size_t j = 0; j < v.line.size(); ++j)
        o += (j ? "," : "") + std::string("{\"name\":") + json_string(v.line[j].name) +
             ",\"place\":" + json_string(v.line[j].place) +
             (v.line[j].reader ? ",\"reader\":true}" : "}");
      o += "],\"turns\":[";
      for (std::size_t j = 0; j < v.turns.size(); ++j)
        o += (j ? "," : "") + std::string("{\"name\":") + json_string(v.turns[j].name) +
             ",\"left_ms\":" + std::to_string(v.turns[j].left_ms) + "}";
      o += "],\"others\":[";
      for (std::size_t j = 0; j < v.others.size(); ++j)
        o += (j ? "," : "") + json_string(v.others[j]);
      o += "],\"fence\":" + (v.fence.empty() ? std::string("null") : json_string(v.fence));
      if (v.permits > 0) {
        o += ",\"permits\":" + std::to_string(v.permits) + ",\"slots\":[";
        for (std::size_t j = 0; j < v.slots.size(); ++j)
          o += (j ? "," : "") + std::string("{\"slot\":") + std::to_string(j + 1) + ",\"holder\":" +
               (v.slots[j].first.empty() ? std::string("null") : json_string(v.slots[j].first)) +
               ",\"ttl_ms\":" + std::to_string(v.slots[j].second) + "}";
        o += "]";
      }
      if (v.readers_marker || !v.readers.empty()) {
        o += ",\"readers_marker\":" + std::string(v.readers_marker ? "true" : "false") +
             ",\"readers\":[";
        for (std::size_t j = 0; j < v.readers.size(); ++j)
          o += (j ? "," : "") + std::string("{\"name\":") + json_string(v.readers[j].name) +
               ",\"ttl_ms\":" + std::to_string(v.readers[j].left_ms) + "}";
        o += "]";
      }
      if (!v.leader_term.empty())
        o += ",\"leader\":{\"term\":" + v.leader_term +
             ",\"value\":" + json_string(v.leader_value) +
             ",\"holder\":" + json_string(v.leader_holder) + ",\"current\":" +
             (v.type == "string" && v.holder == v.leader_holder ? "true" : "false") + "}";
      o += ",\"notes\":[";
      for (std::size_t j = 0; j < v.notes.size(); ++j)
        o += (j ? "," : "") + json_string(v.notes[j]);
      o += "]}";
    }
    o += "]}\n";
    std::fputs(o.c_str(), stdout);
    return std::fflush(stdout) == 0 && !std::ferror(stdout);
  }

  std::printf("%s (key %s)\n", printable(resource).c_str(), printable(lock_key).c_str());
  for (const auto& v : views) {
    if (!v.read) {
      std::printf("  %-26s not read: %s\n", printable(v.address).c_str(),
                  printable(v.error).c_str());
      continue;
    }
    if (v.type == "none")
      std::printf("  %-26s free", printable(v.address).c_str());
    else if (v.readers_marker)
      std::printf("  %-26s read-locked by %zu reader(s), %s left", printable(v.address).c_str(),
                  v.readers.size(), ttl_text(v.ttl_ms).c_str());
    else if (v.type == "string")
      std::printf("  %-26s held by %s, %s left%s", printable(v.address).c_str(), v.holder.c_str(),
                  ttl_text(v.ttl_ms).c_str(), v.waited_for ? ", waited for" : "");
    else
      std::printf("  %-26s NOT A LOCK: the key holds a %s (%s)", printable(v.address).c_str(),
                  v.type.c_str(), ttl_text(v.ttl_ms).c_str());
    std::printf("; fence %s\n", v.fence.empty() ? "-" : printable(v.fence).c_str());
    for (const auto& r : v.readers)
      std::printf("    reader: %s, %lld ms left\n", r.name.c_str(), r.left_ms);
    if (!v.line.empty()) {
      std::printf("    line:");
      for (const auto& w : v.line) std::printf(" %s%s", w.name.c_str(), w.reader ? "(r)" : "");
      std::printf("\n");
    }
    for (const auto& t : v.turns)
      std::printf("    turn: %s, %lld ms %s\n", t.name.c_str(),
                  t.left_ms < 0 ? -t.left_ms : t.left_ms, t.left_ms < 0 ? "overdue" : "left");
    if (!v.others.empty())
      std::printf("    waiting for several keys or a permit: %zu client(s)\n", v.others.size());
    if (v.permits > 0) {
      std::printf("    semaphore of %u permits; the line above is slot 0\n", v.permits);
      for (std::size_t j = 0; j < v.slots.size(); ++j) {
        if (v.slots[j].first.empty()) continue;
        std::printf("    slot %zu: held by %s, %s left\n", j + 1, v.slots[j].first.c_str(),
                    ttl_text(v.slots[j].second).c_str());
      }
    }
    if (!v.leader_term.empty())
      std::printf("    leader: term %s, value %s (%s)%s\n", v.leader_term.c_str(),
                  printable(v.leader_value).c_str(), v.leader_holder.c_str(),
                  v.type == "string" && v.holder == v.leader_holder
                      ? ""
                      : "; stale: the lock is not its holder's here");
    for (const auto& n : v.notes) std::printf("    note: %s\n", printable(n).c_str());
  }
  // A semaphore: how many of its slots a holder has on a quorum of the nodes read.
  unsigned permits = 0;
  for (const auto& v : views) permits = std::max(permits, v.read ? v.permits : 0u);
  if (permits > 0) {
    unsigned held = majority.empty() ? 0 : 1;
    for (unsigned slot = 1; slot < permits; ++slot) {
      std::map<std::string, std::size_t> by;
      for (const auto& v : views)
        if (v.read && slot - 1 < v.slots.size() && !v.slots[slot - 1].first.empty())
          ++by[v.slots[slot - 1].first];
      for (const auto& [name, n] : by) held += n >= quorum ? 1 : 0;
    }
    std::printf("semaphore: %u of %u permits held on a quorum\n", held, permits);
  }
  std::string reader_list;
  for (const auto& r : readers) reader_list += (reader_list.empty() ? ": " : ", ") + r;
  if (read < quorum)
    std::printf("%zu of %zu nodes read: no quorum (%zu)\n", read, views.size(), quorum);
  else if (majority.empty() && marked >= quorum)
    std::printf("read-locked on %zu of %zu nodes (quorum %zu): %zu reader(s) on a quorum%s\n",
                marked, views.size(), quorum, readers.size(), reader_list.c_str());
  else if (!majority.empty())
    std::printf("held by %s on %zu of %zu nodes (quorum %zu)\n", majority.c_str(),
                holders[majority], views.size(), quorum);
  else if (holders.empty() && foreign == 0 && marked == 0 && reader_nodes.empty())
    std::printf("free on every node read (%zu of %zu)\n", read, views.size());
  else if (holders.empty() && marked == 0 && foreign > 0)
    std::printf("no lock: %zu node(s) hold a key of another type there\n", foreign);
  else
    std::printf("held on some nodes, by no holder on a quorum (%zu)\n", quorum);
  return std::fflush(stdout) == 0 && !std::ferror(stdout);
}

// Each node's view of one lock (show.hpp); exit 3 when fewer than a quorum could be read.
int do_show(const Globals& g, const Config& config, const std::string& key, bool json) {
  (void)g;
  const std::string lock_key = config.key_prefix + key;
  auto views = read_lock(config, lock_key);
  std::size_t read = 0;
  for (const auto& v : views) read += v.read ? 1 : 0;
  if (!print_views(key, lock_key, views, json)) {
    std::cerr << "redlock: cannot write to stdout\n";
    return kUsage;
  }
  return read >= views.size() / 2 + 1 ? kOk : kNoQuorum;
}

}  // namespace redlock::cli
