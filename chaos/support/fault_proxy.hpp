// A TCP fault proxy between clients and one redis-server: pass, delay, blackhole, drop replies
// or reset, switched at any moment from any thread.
//
// One thread per proxy runs an epoll loop over non-blocking sockets; the public members only
// set atomics or a mutex-guarded request and wake that thread through an eventfd. Every
// accepted connection gets its own connection to the target. Data is forwarded in the chunks
// it was read in; a chunk is either forwarded whole, held back (delay) or discarded whole.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

namespace redlock::chaos {

enum class ProxyMode {
  pass,          // forward both ways
  delay,         // forward both ways, every chunk held back `delay` (order kept per direction)
  blackhole,     // accept and read, forward nothing either way (a silent partition)
  drop_replies,  // forward client->server, discard server->client (commands run, replies lost)
  reset,  // close every connection with a TCP reset (SO_LINGER 0), and reset new ones at once
};

// "pass", "delay", "blackhole", "drop_replies", "reset".
const char* to_string(ProxyMode mode);
// The inverse of to_string; false when `text` names no mode.
bool parse_proxy_mode(const std::string& text, ProxyMode& mode);

// What the proxy does when the mode changes, on connections it already has:
// - to pass: chunks still held back by a delay are released at once (in order);
// - to delay: chunks read from then on are held back; the new delay applies to new chunks;
// - to blackhole or drop_replies: chunks not yet forwarded in a direction that is now silent are
//   discarded (a request cut in the middle leaves a broken stream: clients are expected to close
//   a connection after a timeout, as ours does);
// - to reset: every connection is reset.
// When the target refuses a connection or closes one, the client side is closed too, after the
// data already read from the target was forwarded; in blackhole mode that close is withheld
// until the mode changes (a partition hides the server's fate).
class FaultProxy {
 public:
  // Listens on 127.0.0.1:listen_port (0: a free port) and forwards every accepted connection to
  // 127.0.0.1:target_port. Throws std::runtime_error if it cannot listen.
  explicit FaultProxy(std::uint16_t target_port, std::uint16_t listen_port = 0);
  // The same, already in `mode` when the first connection can arrive.
  FaultProxy(std::uint16_t target_port, std::uint16_t listen_port, ProxyMode mode,
             std::chrono::milliseconds delay = std::chrono::milliseconds(0));
  ~FaultProxy();  // stops the thread, closes every socket
  FaultProxy(const FaultProxy&) = delete;
  FaultProxy& operator=(const FaultProxy&) = delete;

  std::uint16_t port() const { return port_; }  // where clients connect
  std::uint16_t target_port() const { return target_port_.load(); }
  // Takes effect on existing connections at once (before the next chunk is forwarded).
  void set_mode(ProxyMode mode, std::chrono::milliseconds delay = std::chrono::milliseconds(0));
  ProxyMode mode() const;
  std::chrono::milliseconds delay() const;
  void set_target(
      std::uint16_t target_port);  // new connections go there (a server restarted elsewhere)
  std::size_t connections_accepted() const { return accepted_.load(); }
  std::size_t connections_open() const { return open_.load(); }  // client sides not yet closed

 private:
  class Loop;
  void wake() const;

  int listen_fd_ = -1;
  int wake_fd_ = -1;   // eventfd: a mode change or the stop request
  int epoll_fd_ = -1;  // watched by the thread: the listener, the eventfd, every connection
  std::uint16_t port_ = 0;
  std::atomic<std::uint16_t> target_port_;
  mutable std::mutex mode_mutex_;
  ProxyMode mode_ = ProxyMode::pass;
  std::chrono::milliseconds delay_{0};
  std::atomic<std::uint64_t> mode_version_{0};  // bumped by every set_mode
  std::atomic<bool> stop_{false};
  std::atomic<std::size_t> accepted_{0};
  std::atomic<std::size_t> open_{0};
  std::thread thread_;  // last: started when everything above exists, joined first
};

}  // namespace redlock::chaos
