// Test support: a loopback server that is not Redis, for connection faults.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace redlock::test {

// A loopback server that is not Redis: it counts the connections it accepts and either closes
// each at once (a crashing node) or answers anything with bytes that are not RESP.
class FakeServer {
 public:
  enum class Mode { close_at_once, garbage };

  explicit FakeServer(Mode mode) : mode_(mode) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::listen(fd_, 128) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
      throw std::runtime_error("cannot listen");
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~FakeServer() {
    stop_ = true;
    thread_.join();
    for (int c : clients_) ::close(c);
    ::close(fd_);
  }
  FakeServer(const FakeServer&) = delete;
  FakeServer& operator=(const FakeServer&) = delete;

  std::string url() const { return "redis://127.0.0.1:" + std::to_string(port_); }
  int accepted() const { return accepted_.load(); }

 private:
  void serve() {
    while (!stop_) {
      std::vector<pollfd> fds{{fd_, POLLIN, 0}};
      for (int c : clients_) fds.push_back({c, POLLIN, 0});
      if (::poll(fds.data(), fds.size(), 20) <= 0) continue;
      if (fds[0].revents & POLLIN) {
        int c = ::accept(fd_, nullptr, nullptr);
        if (c >= 0) {
          ++accepted_;
          if (mode_ == Mode::close_at_once) {
            ::close(c);  // an orderly close, before reading anything
          } else {
            static const char kGarbage[] = "HTTP/1.1 400 Bad Request\r\n\r\n";
            (void)!::write(c, kGarbage, sizeof kGarbage - 1);
            clients_.push_back(c);
          }
        }
      }
      // Garbage mode: keep each connection until its client closes it.
      for (std::size_t i = 1; i < fds.size(); ++i) {
        if (fds[i].revents == 0) continue;
        char buf[4096];
        if (::read(fds[i].fd, buf, sizeof buf) > 0) continue;
        ::close(fds[i].fd);
        clients_.erase(std::find(clients_.begin(), clients_.end(), fds[i].fd));
      }
    }
  }

  Mode mode_;
  int fd_ = -1;
  std::uint16_t port_ = 0;
  std::vector<int> clients_;  // server thread only
  std::atomic<int> accepted_{0};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace redlock::test
