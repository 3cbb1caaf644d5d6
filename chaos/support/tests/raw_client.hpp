// Test helper: a minimal RESP client on a raw non-blocking socket, every step bounded by a
// timeout, reporting exactly what the socket saw (a reply, silence, EOF, a reset). hiredis
// hides these differences; the fault tools' tests need them.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace redlock::chaos::test {

struct Reply {
  enum Kind { reply, timeout, eof, error } kind = timeout;
  std::string text;  // a status or error line as sent ("+PONG"), a bulk string's payload, ":1"
  int err = 0;       // errno when kind == error

  bool is(const std::string& expected) const { return kind == reply && text == expected; }
};

inline const char* kind_name(Reply::Kind k) {
  switch (k) {
    case Reply::reply:
      return "reply";
    case Reply::timeout:
      return "timeout";
    case Reply::eof:
      return "eof";
    case Reply::error:
      return "error";
  }
  return "?";
}

inline std::string describe(const Reply& r) {
  return std::string(kind_name(r.kind)) + (r.kind == Reply::reply ? " '" + r.text + "'" : "") +
         (r.kind == Reply::error ? " errno " + std::to_string(r.err) : "");
}

inline std::string resp(const std::vector<std::string>& argv) {
  std::string s = "*" + std::to_string(argv.size()) + "\r\n";
  for (const auto& a : argv) s += "$" + std::to_string(a.size()) + "\r\n" + a + "\r\n";
  return s;
}

class RawClient {
 public:
  using ms = std::chrono::milliseconds;

  // Connects to 127.0.0.1:port within `timeout`; connect_error() tells how it went.
  explicit RawClient(std::uint16_t port, ms timeout = ms(1000)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd_ < 0) {
      connect_error_ = errno;
      return;
    }
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(port);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) return;
    if (errno != EINPROGRESS) {
      connect_error_ = errno;
      return;
    }
    pollfd pfd{fd_, POLLOUT, 0};
    if (::poll(&pfd, 1, static_cast<int>(timeout.count())) <= 0) {
      connect_error_ = ETIMEDOUT;
      return;
    }
    int err = 0;
    socklen_t len = sizeof err;
    ::getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &len);
    connect_error_ = err;
  }
  ~RawClient() {
    if (fd_ >= 0) ::close(fd_);
  }
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  int connect_error() const { return connect_error_; }
  bool connected() const { return fd_ >= 0 && connect_error_ == 0; }
  int send_error() const { return send_error_; }

  // Sends one command (RESP array); false (send_error()) when the socket refused it.
  bool send(const std::vector<std::string>& argv, ms timeout = ms(2000)) {
    std::string data = resp(argv);
    std::size_t done = 0;
    auto end = std::chrono::steady_clock::now() + timeout;
    while (done < data.size()) {
      ssize_t n = ::send(fd_, data.data() + done, data.size() - done, MSG_NOSIGNAL);
      if (n > 0) {
        done += static_cast<std::size_t>(n);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
        send_error_ = errno;
        return false;
      }
      if (!wait_for(POLLOUT, end)) {
        send_error_ = ETIMEDOUT;
        return false;
      }
    }
    return true;
  }

  // The next reply: a status, error or integer line, or a bulk string's payload ("(nil)" for a
  // null bulk); arrays are not decoded.
  Reply read_reply(ms timeout) {
    auto end = std::chrono::steady_clock::now() + timeout;
    Reply r;
    std::size_t eol;
    while ((eol = buffer_.find("\r\n")) == std::string::npos) {
      if (!fill(end, r)) return r;
    }
    std::string line = buffer_.substr(0, eol);
    if (!line.empty() && line[0] == '$' && line != "$-1") {
      std::size_t len = std::stoul(line.substr(1));
      while (buffer_.size() < eol + 2 + len + 2) {
        if (!fill(end, r)) return r;
      }
      r.kind = Reply::reply;
      r.text = buffer_.substr(eol + 2, len);
      buffer_.erase(0, eol + 2 + len + 2);
      return r;
    }
    buffer_.erase(0, eol + 2);
    r.kind = Reply::reply;
    r.text = line == "$-1" ? "(nil)" : line;
    return r;
  }

  Reply command(const std::vector<std::string>& argv, ms timeout = ms(2000)) {
    if (!send(argv, timeout)) return Reply{Reply::error, {}, send_error_};
    return read_reply(timeout);
  }

 private:
  bool wait_for(short events, std::chrono::steady_clock::time_point end) {
    for (;;) {
      auto left = std::chrono::duration_cast<ms>(end - std::chrono::steady_clock::now());
      if (left.count() <= 0) return false;
      pollfd pfd{fd_, events, 0};
      int n = ::poll(&pfd, 1, static_cast<int>(left.count()));
      if (n > 0) return true;
      if (n < 0 && errno == EINTR) continue;
      if (n == 0) return false;
      return true;  // let the read or write report the error
    }
  }

  // Reads more into buffer_; false with r set when the read timed out, ended or failed.
  bool fill(std::chrono::steady_clock::time_point end, Reply& r) {
    for (;;) {
      char buf[64 * 1024];
      ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n > 0) {
        buffer_.append(buf, static_cast<std::size_t>(n));
        return true;
      }
      if (n == 0) {
        r.kind = Reply::eof;
        return false;
      }
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) {
        r.kind = Reply::error;
        r.err = errno;
        return false;
      }
      if (!wait_for(POLLIN, end)) {
        r.kind = Reply::timeout;
        return false;
      }
    }
  }

  int fd_ = -1;
  int connect_error_ = 0;
  int send_error_ = 0;
  std::string buffer_;
};

// A loopback port that was free a moment ago.
inline std::uint16_t free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  std::uint16_t port = 0;
  if (fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0)
    port = ntohs(addr.sin_port);
  if (fd >= 0) ::close(fd);
  return port;
}

}  // namespace redlock::chaos::test
