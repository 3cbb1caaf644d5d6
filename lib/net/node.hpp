// One Redis master: the session over one connection at a time, on the client's libuv loop.
//
// Loop thread only. The session owns what a connection means to us: AUTH and SELECT before
// anything else, the requests waiting for their replies in order, their timeouts, scripts
// preloaded and re-sent after NOSCRIPT, subscriptions, and reconnecting with back-off. Bytes
// move through a Transport (transport.hpp: the socket, batched writes, the pump where TLS will
// sit) and are cut into commands and replies by hiredis (protocol.hpp).
//
// Lifecycle of a connection (Conn): connecting -> open -> in session -> closing -> closed; a new
// Conn replaces it, at once after one that worked, after back-off otherwise. A Conn is freed
// only when its transport is gone, which is never inside one of its own callbacks.
#pragma once

#include <uv.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "../core/session.hpp"
#include "fifo.hpp"
#include "redlock/config.hpp"

struct redisReply;

namespace redlock::detail {

class ServerIds;

struct Script {
  const char* name;
  const char* body;
  const char* sha;
  // True when running the script later than commands sent after it on the same connection can
  // never matter (it only touches keys that hold the caller's own token, and only to delete them
  // or raise their ttl). Such a script is re-sent as EVAL after NOSCRIPT; a script that creates a
  // lock is re-sent only when nothing was sent behind it, or it could run after its own clean-up.
  bool order_free;
};

// A request to one node. The caller keeps it alive until its sink has been called.
struct Command {
  const Script* script = nullptr;  // script: EVALSHA sha numkeys keys... args...
  std::vector<std::string> keys;
  std::vector<std::string> args;  // without a script: the whole argv of a plain command
  // Lists the caller keeps alive as long as the command, read instead of `keys` and `args`
  // when set: one request to N nodes then copies no key and no argument (lib/client's
  // InFlight points them at its proto::Request).
  const std::vector<std::string>* keys_of = nullptr;
  const std::vector<std::string>* args_of = nullptr;

  const std::vector<std::string>& key_list() const noexcept { return keys_of ? *keys_of : keys; }
  const std::vector<std::string>& arg_list() const noexcept { return args_of ? *args_of : args; }
};

// What a node answered. Exactly one of `reply` (never an error reply) and `error` is set.
struct NodeReply {
  const redisReply* reply = nullptr;
  std::error_code error;
  std::string_view detail;  // server error text or connection error; valid during the call
  std::chrono::microseconds latency{0};
};

class ReplySink {
 public:
  virtual void on_node_reply(std::size_t node, const NodeReply& reply) = 0;

 protected:
  ~ReplySink() = default;
};

// Receives release notices on a subscriber node.
class MessageSink {
 public:
  // A message arrived on `channel`, carrying `payload`.
  virtual void on_message(std::size_t node, std::string_view channel, std::string_view payload) = 0;
  // The node confirmed a subscription to `channel` (also after every reconnect): notices sent
  // while it was not subscribed were missed.
  virtual void on_subscribed(std::size_t node, std::string_view channel) = 0;

 protected:
  ~MessageSink() = default;
};

// The handshake's pieces, shared by the loop's sessions and the caller's lane
// (lib/client/lane.hpp): the arguments of AUTH (empty without a password) and of SELECT (empty
// for db 0), and what an error reply to one of them means (a plain ERR to AUTH is a refused
// password, unless it is a server at maxclients greeting a connection it will not serve).
std::vector<std::string> auth_argv(const NodeAddress& address);
std::vector<std::string> select_argv(const NodeAddress& address);
std::error_code handshake_error(bool to_auth, std::string_view text);
// Appends `command` in RESP to `out` (EVALSHA, or EVAL with the script's body when `as_eval`).
// False (nothing appended) when out of memory.
bool format_command(std::string& out, const Command& command, bool as_eval);

// What the loop's session with a node lets the caller's lane know, from any thread: that the
// connection finished its handshake and passed the safeguards, to which address, and the
// server's run_id. Empty (not `in_session`) while the node is down or connecting.
struct SessionView {
  bool in_session = false;
  std::string ip;      // the numeric address the session is connected to
  std::string run_id;  // as INFO said; empty when no safeguard asked INFO, or it was unreadable
  // From then on the restart guard lets the node vote (steady clock).
  std::chrono::steady_clock::time_point eligible_from{};
  bool guarded = false;  // the session began under the restart guard (see Node::lane_votes)
};

class Node {
 public:
  // With a `subscriber`, the node is a pub/sub connection: it only subscribes to channels
  // (again after every reconnect) and hands messages to the sink; send() is not for it.
  // `preload`: scripts loaded (SCRIPT LOAD) on every new connection once its handshake is done,
  // so that EVALSHA finds them after a restart.
  Node(uv_loop_t* loop, std::size_t index, NodeAddress address, const Config& config,
       std::uint64_t seed, MessageSink* subscriber = nullptr,
       std::vector<const Script*> preload = {});
  ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  // The client's register of servers by run_id, for the duplicate check (restart safeguards).
  // Set before start(); data nodes only.
  void set_server_ids(ServerIds* ids) noexcept { server_ids_ = ids; }
  void start();
  // Either returns an error at once (the sink is never called) or calls sink->on_node_reply
  // exactly once later, on the loop thread, never from inside send(). While the node is
  // connecting (resolving its name, connecting, AUTH/SELECT), the command waits for the
  // session within its own timeout; while the node is down (backing off after failed
  // connects), it fails at once with the cause of the last failure.
  // `at`: the loop's clocks read once for several nodes (a fan-out); null reads them here.
  struct SendTime {
    std::uint64_t loop_ms;  // on the loop's clock (uv_now()'s), for request deadlines
    std::uint64_t hr_ns;    // on uv_hrtime()'s, for the replies' latency
    // One reading of CLOCK_MONOTONIC serves both: libuv's loop time is the same clock (or its
    // coarse version, at most a tick behind) in milliseconds. It is fresh: the loop's own time is
    // that of the start of its turn, and a slow callback earlier in the turn would leave a
    // deadline counted from it in the past already. (uv_update_time() would read the clock a
    // second time: a tenth of a microsecond per fan-out, about 3 % of an uncontended lock's
    // client CPU at N = 1.)
    static SendTime now(uv_loop_t*) { return at_ns(uv_hrtime()); }
    // The same from a reading of steady_clock taken just before (CLOCK_MONOTONIC, as
    // uv_hrtime()): no reading at all.
    static SendTime now(uv_loop_t*, std::chrono::steady_clock::time_point read) {
      return at_ns(static_cast<std::uint64_t>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(read.time_since_epoch()).count()));
    }
    static SendTime at_ns(std::uint64_t ns) { return SendTime{ns / 1000000, ns}; }
  };
  std::error_code send(const Command& command, ReplySink* sink, const SendTime* at = nullptr);
  // Fails everything pending with Errc::shutting_down and closes all handles.
  void shutdown();
  // Subscriber nodes: idempotent; remembered across reconnects.
  void subscribe(const std::string& channel);
  void unsubscribe(const std::string& channel);

  bool ready() const noexcept { return state_ == State::ready; }
  std::size_t index() const noexcept { return index_; }
  const std::string& address() const noexcept { return label_; }
  std::error_code last_error() const noexcept { return last_error_; }
  const std::string& last_error_detail() const noexcept { return last_error_detail_; }
  // What the restart safeguards warned about this node (each once), for `redlock status`.
  const std::vector<std::string>& warnings() const noexcept { return warnings_; }
  // Loop thread: the caller's lane asks this node to vote, as a send that may grant does: the
  // first such use after the restart guard's time tells the observer `connected`.
  void lane_votes() {
    if (state_ == State::ready) (void)ineligible();
  }
  // Any thread: where the current session stands (data nodes; a subscriber's is always empty).
  SessionView session_view() const;
  // Any thread: changes whenever the session is published or withdrawn (cheap to poll).
  std::uint64_t session_epoch() const noexcept {
    return view_epoch_.load(std::memory_order_acquire);
  }

 private:
  // idle: not started. connecting: resolving, connecting or in the handshake; callers'
  // commands wait. ready: in session. backoff: down, a reconnect is scheduled; callers'
  // commands fail at once.
  enum class State { idle, connecting, ready, backoff, shut_down };
  // handshake: AUTH, SELECT (a failure closes the connection), INFO (the restart safeguards);
  // internal: SCRIPT LOAD (its reply is not needed); probe: CONFIG GET appendfsync (its reply
  // may give a warning); orphan: a release sent again (see orphans_); user: a caller's command.
  enum class Kind : std::uint8_t { user, handshake, internal, probe, orphan };

  struct Pending {
    const Command* command;
    ReplySink* sink;
    std::uint64_t deadline_ms;  // in uv_now() time; 0: none (bounded by the commands around it)
    std::uint64_t sent_ns;      // uv_hrtime()
    Kind kind;
    bool as_eval;    // re-sent with the script body after NOSCRIPT
    bool timed_out;  // its deadline passed; the connection is being closed for it
  };

  class Conn;  // one connection's session state (node_conn.hpp)

  // From a connection's transport.
  void on_open(Conn& conn);
  void on_data(Conn& conn, const char* data, std::size_t len);
  void on_conn_error(Conn& conn, std::error_code error, std::string_view detail);
  void on_conn_closed(Conn& conn);

  // Where the current connection stands, for the gate (lib/core/session.hpp).
  SessionPhase phase() const noexcept;
  void connect();
  // Connects to a numeric address; names are resolved first, off the loop (uv_getaddrinfo).
  void connect_to(const std::string& ip);
  static void on_resolved(uv_getaddrinfo_t* req, int status, addrinfo* res);
  // Formats `pending` onto `conn` and records it; false (nothing recorded) when out of memory.
  bool issue(Conn& conn, const Pending& pending);
  void write_argv(Conn& conn, const char* const* argv, const std::size_t* lens, int argc);
  // The connection is open and its handshake succeeded: preload scripts, subscribe, and send
  // the commands that waited for it.
  void begin_session(Conn& conn);
  void load_script(Conn& conn, const Script& script);
  // The handshake's INFO: refuses the node (closing the connection: false), makes it
  // ineligible for a while, or warns.
  bool apply_info(Conn& conn, const redisReply* reply);
  void handle_probe(const redisReply* reply);
  // A release that failed without a known outcome (never sent, or its connection was lost) is
  // kept and sent again when a session begins: a failed attempt's key must not outlive it on a
  // node that was unreachable when the clean-up was due (its acquire may still run there).
  void keep_orphan(const Command& command);
  void send_orphans(Conn& conn);
  // Hands a warning about this node to Config::on_warning (or standard error), once per text.
  void warn(const std::string& text);
  // The restart guard: the error send() gives while the node is not eligible yet.
  bool ineligible();
  // INFO could not tell the node's age: with the guard on, it counts as just restarted.
  void unknown_age();
  void issue_subscription(Conn& conn, const char* verb, const std::string& channel);
  // A command that waited for a session past its deadline fails alone, never sent.
  void fail_unsent(const Pending& p, const char* why);
  // Fails every command that waits for a session (never sent) with `error`.
  void fail_held(std::error_code error, const std::string& detail);
  // One reply, in order, read at `received_ns` (uv_hrtime). False when it closed the connection.
  bool handle_reply(Conn& conn, const redisReply* reply, std::uint64_t received_ns);
  // A reply to AUTH, SELECT or INFO. False when it closed the connection.
  bool handle_handshake_reply(Conn& conn, const Pending& p, const redisReply* reply);
  void handle_push(const redisReply* reply);
  void check_timeouts();
  // Closes the current connection and fails what it had in flight; then opens a replacement
  // at once (it had worked) or backs off.
  void close_current(std::error_code reason, std::string detail);
  // A connection attempt failed (or a connection that never worked was lost): the next address
  // of the name at once, or back-off.
  void connection_gone(std::error_code reason, std::string detail);
  void arm_request_timer(std::uint64_t deadline_ms);
  std::string not_ready_reason() const;
  void note_error(std::error_code ec, std::string detail);
  std::uint64_t request_deadline() const;
  // Loop thread: publishes the current session to session_view() (`open`: in session), or
  // withdraws it.
  void publish_session(bool open);

  // The request timer only notes that a deadline passed; the verdict waits for the end of the
  // loop turn's I/O (a check handle, with an idle handle so that the poll does not block), so that
  // a reply which arrived while the loop was held up by a slow callback is read before it.
  static void on_request_timer(uv_timer_t* timer);
  static void on_after_poll(uv_check_t* check);
  static void on_connect_timer(uv_timer_t* timer);
  static void on_reconnect_timer(uv_timer_t* timer);

  uv_loop_t* loop_;
  std::size_t index_;
  NodeAddress address_;
  std::string label_;
  const Config& config_;
  std::mt19937_64 rng_;

  State state_ = State::idle;
  std::unique_ptr<Conn> current_;
  std::vector<std::unique_ptr<Conn>> closing_;  // closed, until their transports are gone
  // Callers' commands sent while connecting: not on any wire until a session has begun.
  Fifo<Pending> held_;
  int failures_ = 0;  // consecutive connects that never answered (back-off)
  std::error_code last_error_;
  std::string last_error_detail_;

  MessageSink* subscriber_;
  std::vector<const Script*> preload_;
  std::set<std::string> channels_;  // subscriber nodes: what to (re)subscribe to
  Command auth_;                    // AUTH [user] password, when the node has a password
  Command select_;                  // SELECT db, when db != 0
  Command info_;                    // INFO, when a restart safeguard is on (data nodes)
  ServerIds* server_ids_ = nullptr;
  std::uint64_t eligible_at_ = 0;  // uv_now() time from which the restart guard lets it vote
  std::int64_t uptime_s_ = 0;      // as INFO said (-1: unknown), for the guard's message
  bool told_restarting_ = false;   // the observer heard `restarting`, not yet `connected`
  bool ask_fsync_ = false;         // the session begins with CONFIG GET append*
  bool warn_if_unknown_ = false;   // ... asked while loading: no answer warns as aof_enabled:0
  std::vector<std::string> warnings_;
  std::string run_id_;  // the current connection's server, as its INFO said
  mutable std::mutex view_mutex_;
  SessionView view_;  // guarded by view_mutex_
  std::atomic<std::uint64_t> view_epoch_{0};
  struct Orphan {
    Command command;
    bool sent = false;  // on the current connection, awaiting its reply
  };
  std::list<Orphan> orphans_;  // stable addresses: a Pending points at its command
  static constexpr std::size_t kMaxOrphans = 4096;
  std::uint64_t armed_deadline_ = 0;  // deadline the request timer is armed for (uv_now time)

  uv_timer_t request_timer_{};
  uv_timer_t connect_timer_{};
  uv_timer_t reconnect_timer_{};
  uv_idle_t poll_now_{};     // keeps the poll of this turn from blocking
  uv_check_t after_poll_{};  // judges the deadlines after this turn's I/O
  uv_getaddrinfo_t resolve_{};
  bool resolving_ = false;
  bool numeric_host_ = false;
  std::vector<std::string> resolved_;  // addresses of a host name, tried in turn
  std::size_t next_address_ = 0;
};

}  // namespace redlock::detail
