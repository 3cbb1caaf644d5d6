// One Redis master: a hiredis async connection driven by the client's libuv loop.
//
// Loop thread only. Lifecycle of a connection (Conn):
//   connecting -> ready -> (closed by us | lost) ; a new Conn replaces it after back-off.
// A Conn is freed only after hiredis told us (through the adapter's cleanup hook) that it is
// done with it, and never from inside a hiredis callback.
#pragma once

#include <uv.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "redlock/config.hpp"

struct redisAsyncContext;
struct redisReply;

namespace redlock::detail {

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
  // A message arrived on `channel`.
  virtual void on_message(std::size_t node, std::string_view channel) = 0;
  // The node confirmed a subscription to `channel` (also after every reconnect): notices sent
  // while it was not subscribed were missed.
  virtual void on_subscribed(std::size_t node, std::string_view channel) = 0;

 protected:
  ~MessageSink() = default;
};

// Maps a Redis error reply ("WRONGTYPE ...", "OOM ...") to our code.
std::error_code error_from_reply_text(std::string_view text) noexcept;

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

  void start();
  // Either returns an error at once (the sink is never called) or calls sink->on_node_reply
  // exactly once later, on the loop thread, never from inside send().
  std::error_code send(const Command& command, ReplySink* sink);
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

 private:
  enum class State { idle, connecting, ready, backoff, shut_down };
  // handshake: AUTH, SELECT (a failure closes the connection); internal: SCRIPT LOAD (its reply
  // is not needed); user: a caller's command.
  enum class Kind : std::uint8_t { user, handshake, internal };

  struct Pending {
    const Command* command;
    ReplySink* sink;
    std::uint64_t deadline_ms;  // in uv_now() time
    std::uint64_t sent_ns;      // uv_hrtime()
    Kind kind;
    bool as_eval;    // re-sent with the script body after NOSCRIPT
    bool timed_out;  // its deadline passed; the connection is being closed for it
  };

  struct Conn {
    Node* node = nullptr;
    redisAsyncContext* ac = nullptr;
    std::deque<Pending> pending;  // issued to hiredis, in order, awaiting their replies
    // Until AUTH and SELECT have succeeded, callers' commands wait here, not on the wire: a
    // command pipelined behind a failing AUTH or SELECT would run as the default user or in
    // database 0.
    std::deque<Pending> held;
    std::size_t handshake_left = 0;  // AUTH / SELECT replies still to come
    bool connected = false;
    // The server answered a command with something other than an error: the connection worked,
    // so losing it is replaced at once, and the connect back-off starts again from the bottom.
    // A server that accepts and closes (or answers only errors) never gets here.
    bool answered = false;
    bool hiredis_done = false;  // hiredis ran its cleanup: safe to free from the loop
    void (*adapter_cleanup)(void*) = nullptr;
    std::error_code close_reason;  // why we closed it (for requests failed by the close)
    std::string close_detail;
  };

  static void on_connect(const redisAsyncContext* ac, int status);
  static void on_disconnect(const redisAsyncContext* ac, int status);
  static void on_reply(redisAsyncContext* ac, void* reply, void* privdata);
  static void on_subscription(redisAsyncContext* ac, void* reply, void* privdata);
  void issue_subscription(Conn& conn, const char* verb, const std::string& channel);
  static void on_cleanup(void* adapter_data);
  static void on_request_timer(uv_timer_t* timer);
  static void on_connect_timer(uv_timer_t* timer);
  static void on_reconnect_timer(uv_timer_t* timer);
  static void on_flush(uv_prepare_t* prepare);

  void connect();
  // Connects to a numeric address; names are resolved first, off the loop (uv_getaddrinfo).
  void connect_to(const std::string& ip);
  static void on_resolved(uv_getaddrinfo_t* req, int status, addrinfo* res);
  bool issue(Conn& conn, const Pending& pending);
  // Issues `pending` on `conn` and records it; false (nothing recorded) when hiredis refused.
  bool issue_and_track(Conn& conn, const Pending& pending);
  // The handshake of `conn` succeeded: preload scripts, subscribe, release held commands.
  void begin_session(Conn& conn);
  void load_script(Conn& conn, const Script& script);
  // Fails every command still held on `conn` (never sent) with `error`.
  void fail_held(Conn& conn, std::error_code error, const std::string& detail);
  void handle_reply(Conn& conn, const redisReply* reply);
  void check_timeouts();
  // Detaches and frees the current connection (not from inside a hiredis callback).
  void close_current(std::error_code reason, std::string detail);
  // Called when the current connection is gone: schedule the next one.
  void connection_gone(std::error_code reason, std::string detail, bool was_ready);
  void arm_request_timer(std::uint64_t deadline_ms);
  void sweep();
  void note_error(std::error_code ec, std::string detail);

  uv_loop_t* loop_;
  std::size_t index_;
  NodeAddress address_;
  std::string label_;
  const Config& config_;
  std::mt19937_64 rng_;

  State state_ = State::idle;
  Conn* current_ = nullptr;
  std::vector<std::unique_ptr<Conn>> conns_;  // current and retired connections
  int failures_ = 0;                          // consecutive failed connects (back-off)
  std::error_code last_error_;
  std::string last_error_detail_;

  MessageSink* subscriber_;
  std::vector<const Script*> preload_;
  std::set<std::string> channels_;    // subscriber nodes: what to (re)subscribe to
  Command auth_;                      // AUTH [user] password, when the node has a password
  Command select_;                    // SELECT db, when db != 0
  std::uint64_t armed_deadline_ = 0;  // deadline the request timer is armed for (uv_now time)

  uv_timer_t request_timer_{};
  uv_timer_t connect_timer_{};
  uv_timer_t reconnect_timer_{};
  // Runs once at the end of a loop turn in which commands were queued, and writes them all in
  // one go: without it hiredis waits for the next poll to report the socket writable, a whole
  // extra loop iteration per request.
  uv_prepare_t flush_{};
  uv_getaddrinfo_t resolve_{};
  bool resolving_ = false;
  bool numeric_host_ = false;
  std::vector<std::string> resolved_;  // addresses of a host name, tried in turn
  std::size_t next_address_ = 0;
};

}  // namespace redlock::detail
