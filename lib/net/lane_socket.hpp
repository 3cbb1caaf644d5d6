// One plain TCP connection to a node, driven by the calling thread (the client's lane,
// lib/client/lane.hpp): no loop, no thread of its own. Writes are non-blocking and go out at
// once; the caller polls fd() with its own timeout and then calls receive(). The descriptor is
// non-blocking and close-on-exec, and a write to a peer that has gone fails with EPIPE instead of
// raising SIGPIPE (MSG_NOSIGNAL).
//
// open() connects and runs the handshake the loop's session runs (AUTH and SELECT, the same
// arguments: node.hpp), then asks INFO for the server's run_id, which must be the one the loop's
// session saw: the lane votes only on a server the loop has verified. One thread at a time.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <system_error>

#include "protocol.hpp"
#include "redlock/config.hpp"

namespace redlock::detail {

class LaneSocket {
 public:
  using Clock = std::chrono::steady_clock;

  LaneSocket() = default;
  ~LaneSocket() { close(); }
  LaneSocket(const LaneSocket&) = delete;
  LaneSocket& operator=(const LaneSocket&) = delete;

  // Connects to `ip` (numeric) at `address.port` and runs the handshake, all before `deadline`.
  // Fails (closed, `detail` says why) when the connection or a handshake command fails, or when
  // the server's run_id is not `run_id`.
  std::error_code open(const NodeAddress& address, const std::string& ip, const std::string& run_id,
                       Clock::time_point deadline, std::string& detail);
  void close() noexcept;
  bool is_open() const noexcept { return fd_ >= 0; }
  int fd() const noexcept { return fd_; }
  // What it is connected to (empty when closed): the lane reopens it when the loop's session
  // moved to another address or server.
  const std::string& ip() const noexcept { return ip_; }
  const std::string& run_id() const noexcept { return run_id_; }

  // Where commands are appended (append_command, format_command) before flush().
  std::string& output() noexcept { return out_; }
  // Writes what output() holds; waits for room in the socket (poll) only until `deadline`.
  std::error_code flush(Clock::time_point deadline, std::string& detail);
  // Reads what has arrived, without waiting, into the reader. An error when the peer closed the
  // connection or the socket failed.
  std::error_code receive(std::string& detail);
  ReplyReader& reader() noexcept { return *reader_; }

 private:
  // Waits for `events` on the socket until `deadline`; false on timeout or failure.
  bool wait_for(short events, Clock::time_point deadline) const;
  // One reply, waiting for it until `deadline`.
  std::error_code read_reply(ReplyPtr& reply, Clock::time_point deadline, std::string& detail);

  int fd_ = -1;
  std::string ip_;
  std::string run_id_;
  std::string out_;
  std::unique_ptr<ReplyReader> reader_;
};

}  // namespace redlock::detail
