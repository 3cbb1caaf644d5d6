#include "lane_socket.hpp"

#include <arpa/inet.h>
#include <errno.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "../core/safeguards.hpp"
#include "node.hpp"
#include "redlock/errors.hpp"

namespace redlock::detail {
namespace {

int poll_timeout_ms(std::chrono::steady_clock::time_point deadline) {
  auto left =
      std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
  return static_cast<int>(std::clamp<std::chrono::milliseconds::rep>(left.count(), 0, 1 << 30));
}

std::string errno_text(const char* what, int err) {
  return std::string(what) + ": " + std::strerror(err);
}

}  // namespace

void LaneSocket::close() noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  ip_.clear();
  run_id_.clear();
  out_.clear();
  reader_.reset();
}

bool LaneSocket::wait_for(short events, Clock::time_point deadline) const {
  for (;;) {
    pollfd p{fd_, events, 0};
    int rc = ::poll(&p, 1, poll_timeout_ms(deadline));
    if (rc > 0) return true;  // ready, or an error the next call will name
    if (rc == 0) return false;
    if (errno != EINTR) return false;
  }
}

std::error_code LaneSocket::open(const NodeAddress& address, const std::string& ip,
                                 const std::string& run_id, Clock::time_point deadline,
                                 std::string& detail) {
  close();
  sockaddr_storage addr{};
  socklen_t len = 0;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&addr);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&addr);
  if (inet_pton(AF_INET, ip.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(address.port);
    len = sizeof *v4;
  } else if (inet_pton(AF_INET6, ip.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(address.port);
    len = sizeof *v6;
  } else {
    detail = "not an address: " + ip;
    return make_error_code(Errc::connect_failed);
  }
  fd_ = ::socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd_ < 0) {
    detail = errno_text("socket", errno);
    return make_error_code(Errc::connect_failed);
  }
  int one = 1;
  ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (::connect(fd_, reinterpret_cast<const sockaddr*>(&addr), len) != 0) {
    if (errno != EINPROGRESS) {
      detail = errno_text("connect", errno);
      close();
      return make_error_code(Errc::connect_failed);
    }
    if (!wait_for(POLLOUT, deadline)) {
      close();
      detail = "lane: no connection in time";
      return make_error_code(Errc::connect_timeout);
    }
    int err = 0;
    socklen_t err_len = sizeof err;
    ::getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &err_len);
    if (err != 0) {
      detail = errno_text("connect", err);
      close();
      return make_error_code(Errc::connect_failed);
    }
  }
  reader_ = std::make_unique<ReplyReader>();

  // The loop's handshake (node_handshake.cpp), then INFO for the server's identity.
  std::vector<std::vector<std::string>> commands;
  if (auto auth = auth_argv(address); !auth.empty()) commands.push_back(std::move(auth));
  if (auto select = select_argv(address); !select.empty()) commands.push_back(std::move(select));
  commands.push_back({"INFO", "server"});
  for (const auto& c : commands) {
    Argv argv;
    for (const auto& a : c) argv.push(a);
    if (!append_command(out_, argv)) {
      close();
      detail = "out of memory";
      return make_error_code(Errc::connect_failed);
    }
  }
  if (auto ec = flush(deadline, detail)) {
    close();
    return ec;
  }
  for (std::size_t i = 0; i < commands.size(); ++i) {
    ReplyPtr reply;
    if (auto ec = read_reply(reply, deadline, detail)) {
      close();
      return ec;
    }
    const redisReply* r = reply.get();
    if (r->type == REDIS_REPLY_ERROR) {
      std::string_view text(r->str, r->len);
      auto ec = handshake_error(commands[i].front() == "AUTH", text);
      detail = commands[i].front() + ": " + std::string(text);
      close();
      return ec;
    }
    if (i + 1 == commands.size()) {
      std::string seen;
      if (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS)
        seen = parse_info(std::string_view(r->str, r->len)).run_id;
      if (seen.empty() || seen != run_id) {
        detail = "lane: not the server the loop's session verified (run_id " +
                 (seen.empty() ? std::string("unknown") : seen.substr(0, 12)) + ")";
        close();
        return make_error_code(Errc::connect_failed);
      }
    }
  }
  ip_ = ip;
  run_id_ = run_id;
  return {};
}

std::error_code LaneSocket::flush(Clock::time_point deadline, std::string& detail) {
  std::size_t done = 0;
  while (done < out_.size()) {
    ssize_t n = ::send(fd_, out_.data() + done, out_.size() - done, MSG_NOSIGNAL);
    if (n > 0) {
      done += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (wait_for(POLLOUT, deadline)) continue;
      out_.clear();
      detail = "lane: the socket took no more bytes in time";
      return make_error_code(Errc::request_timeout);
    }
    detail = errno_text("write", errno);
    out_.clear();
    return make_error_code(Errc::connection_lost);
  }
  out_.clear();
  return {};
}

std::error_code LaneSocket::receive(std::string& detail) {
  char buf[16384];
  for (;;) {
    ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n > 0) {
      if (!reader_->feed(buf, static_cast<std::size_t>(n))) {
        detail = "out of memory";
        return make_error_code(Errc::connection_lost);
      }
      if (static_cast<std::size_t>(n) < sizeof buf) return {};
      continue;
    }
    if (n == 0) {
      detail = "connection closed by the server";
      return make_error_code(Errc::connection_lost);
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return {};
    detail = errno_text("read", errno);
    return make_error_code(Errc::connection_lost);
  }
}

std::error_code LaneSocket::read_reply(ReplyPtr& reply, Clock::time_point deadline,
                                       std::string& detail) {
  for (;;) {
    switch (reader_->next(reply)) {
      case ReplyReader::Status::reply:
        return {};
      case ReplyReader::Status::error:
        detail = std::string("not a Redis reply: ") + reader_->error_text();
        return make_error_code(Errc::protocol_error);
      case ReplyReader::Status::more:
        break;
    }
    if (!wait_for(POLLIN, deadline)) {
      detail = "lane: the handshake was not answered in time";
      return make_error_code(Errc::connect_timeout);
    }
    if (auto ec = receive(detail)) return ec;
  }
}

}  // namespace redlock::detail
